/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Die notifiers: who else may claim an INT3 the batch handler declined.
 *
 * PORT: written fresh after include/linux/kdebug.h and
 * arch/x86/include/asm/kdebug.h (DIE_INT3 only). Registration is task
 * context; the chain is walked from the SIGTRAP handler, lock-free.
 */
#pragma once

#include <asm/ptrace.h>
#include <linux/notifier.h>

enum die_val {
	DIE_OOPS = 1,
	DIE_INT3,
};


struct die_args {
	struct pt_regs *regs;
	const char *str;
	long err;
	int trapnr;
	int signr;
};


/* Returns 0, or -ENOSPC when the (fixed, 8-entry) chain is full. */
int register_die_notifier(struct notifier_block *nb);
int unregister_die_notifier(struct notifier_block *nb);

/* Walks the chain in priority order; async-signal-safe. */
int notify_die(enum die_val val, const char *str, struct pt_regs *regs, long err, int trap,
	       int sig);
