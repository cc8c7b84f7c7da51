/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Rate-limited static keys: a decrement that would disable the key waits
 * a while first, so that a key flipping on and off often patches once.
 *
 * PORT: written fresh after include/linux/jump_label_ratelimit.h, v7.3.
 * The delayed decrement is a delayed work item (linux/workqueue.h) run by
 * a kworker: jump_label_update_timeout() then patches from there.
 *
 * Use:
 *	DEFINE_STATIC_KEY_DEFERRED_FALSE(my_key, HZ);	// one second
 *	static_branch_deferred_inc(&my_key);		// on now, patched
 *	static_branch_slow_dec_deferred(&my_key);	// off in a second, unless
 *							// an inc comes first
 *	static_key_deferred_flush(&my_key);		// do the pending one now
 *
 * The increments are static_key_slow_inc()'s; a decrement that leaves the
 * count above 1 is immediate and lock-free (static_key_dec_not_one()),
 * the last one is queued. Task context on a CPU (the work goes to its
 * pool, a nohz_full CPU's timer to a housekeeping CPU); the flush sleeps.
 */
#pragma once

#include <linux/jump_label.h>
#include <linux/workqueue.h>

struct static_key_deferred {
	struct static_key key;
	unsigned long timeout;	/* jiffies */
	struct delayed_work work;
};

struct static_key_true_deferred {
	struct static_key_true key;
	unsigned long timeout;
	struct delayed_work work;
};

struct static_key_false_deferred {
	struct static_key_false key;
	unsigned long timeout;
	struct delayed_work work;
};

#define static_key_slow_dec_deferred(x)					\
	__static_key_slow_dec_deferred(&(x)->key, &(x)->work, (x)->timeout)
#define static_branch_slow_dec_deferred(x)				\
	__static_key_slow_dec_deferred(&(x)->key.key, &(x)->work, (x)->timeout)
#define static_branch_deferred_inc(x) static_branch_inc(&(x)->key)

#define static_key_deferred_flush(x)					\
	__static_key_deferred_flush((x), &(x)->work)

/* Drop one reference of @key; the last one after @timeout jiffies, through @work. */
void __static_key_slow_dec_deferred(struct static_key *key, struct delayed_work *work,
				    unsigned long timeout);
/* Run @work now if it is pending (a deferred last decrement). Sleeps. */
void __static_key_deferred_flush(void *key, struct delayed_work *work);
/* Make @key's last decrement wait @rl jiffies. */
void jump_label_rate_limit(struct static_key_deferred *key, unsigned long rl);
/* The deferred decrement itself (the work item's function). */
void jump_label_update_timeout(struct work_struct *work);

#define DEFINE_STATIC_KEY_DEFERRED_TRUE(name, rl)				\
	struct static_key_true_deferred name = {				\
		{ STATIC_KEY_INIT_TRUE }, (rl),					\
		__DELAYED_WORK_INITIALIZER((name).work, jump_label_update_timeout),	\
	}

#define DEFINE_STATIC_KEY_DEFERRED_FALSE(name, rl)				\
	struct static_key_false_deferred name = {				\
		{ STATIC_KEY_INIT_FALSE }, (rl),				\
		__DELAYED_WORK_INITIALIZER((name).work, jump_label_update_timeout),	\
	}
