/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Notifier blocks and a blocking notifier chain.
 *
 * PORT: written fresh after include/linux/notifier.h and kernel/notifier.c:
 * struct notifier_block, the NOTIFY_* results, and the blocking chain the
 * module notifiers use (register in priority order, call in order until a
 * callee returns NOTIFY_STOP). The die chain (linux/kdebug.h) keeps its own
 * lock-free walk, since the SIGTRAP handler calls it.
 *
 * The blocking chain: task context; register/unregister/call take the
 * chain's mutex (the kernel: an rwsem), so a callee must not touch its own
 * chain. Not async-signal-safe.
 */
#pragma once

#include <mutex>

#define NOTIFY_DONE	0x0000
#define NOTIFY_OK	0x0001
#define NOTIFY_STOP_MASK 0x8000
#define NOTIFY_STOP	(NOTIFY_OK | NOTIFY_STOP_MASK)

/* An errno as a notifier's result (0: NOTIFY_OK), and back; as include/linux/notifier.h. */
static inline int notifier_from_errno(int err)
{
	return err ? NOTIFY_STOP_MASK | (NOTIFY_OK - err) : NOTIFY_OK;
}

static inline int notifier_to_errno(int ret)
{
	ret &= ~NOTIFY_STOP_MASK;
	return ret > NOTIFY_OK ? NOTIFY_OK - ret : 0;
}

struct notifier_block {
	int (*notifier_call)(struct notifier_block *nb, unsigned long action, void *data);
	struct notifier_block *next;
	int priority;
};

struct blocking_notifier_head {
	std::mutex rwsem;	/* userspace: a mutex for the kernel's rw_semaphore */
	struct notifier_block *head;
};

#define BLOCKING_NOTIFIER_HEAD(name) struct blocking_notifier_head name

/* 0; a block already on the chain WARNs and returns -EEXIST. */
int blocking_notifier_chain_register(struct blocking_notifier_head *nh, struct notifier_block *nb);
/* 0, or -ENOENT when @nb is not on the chain. */
int blocking_notifier_chain_unregister(struct blocking_notifier_head *nh,
				       struct notifier_block *nb);
/* Each block in priority order (highest first); the last result, with NOTIFY_STOP_MASK honoured. */
int blocking_notifier_call_chain(struct blocking_notifier_head *nh, unsigned long val, void *v);
