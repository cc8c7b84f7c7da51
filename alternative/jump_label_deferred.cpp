// SPDX-License-Identifier: GPL-2.0-only
/*
 * Rate-limited static keys (linux/jump_label_ratelimit.h).
 *
 * Port of jump_label_update_timeout(), __static_key_slow_dec_deferred(),
 * __static_key_deferred_flush() and jump_label_rate_limit(),
 * kernel/jump_label.c, v7.3 (in a file of its own: jump_label.cpp is long
 * enough). The last decrement of a deferred key goes to a delayed work
 * item; a kworker (linux/workqueue.h) runs it when the timer expires and
 * patches the sites from there.
 */
#include <linux/bug.h>
#include <linux/jump_label_ratelimit.h>
#include <linux/list.h>
#include <linux/workqueue.h>

#include "jump_label_internal.h"

/* Port of jump_label_update_timeout(), kernel/jump_label.c, v7.3 */
void jump_label_update_timeout(struct work_struct *work)
{
	struct static_key_deferred *key =
		container_of(work, struct static_key_deferred, work.work);
	__static_key_slow_dec(&key->key);
}

/* Port of __static_key_slow_dec_deferred(), kernel/jump_label.c, v7.3 */
void __static_key_slow_dec_deferred(struct static_key *key,
				    struct delayed_work *work,
				    unsigned long timeout)
{
	STATIC_KEY_CHECK_USE(key);

	if (static_key_dec_not_one(key))
		return;

	schedule_delayed_work(work, timeout);
}

/* Port of __static_key_deferred_flush(), kernel/jump_label.c, v7.3 */
void __static_key_deferred_flush(void *key, struct delayed_work *work)
{
	STATIC_KEY_CHECK_USE(key);
	flush_delayed_work(work);
}

/* Port of jump_label_rate_limit(), kernel/jump_label.c, v7.3 */
void jump_label_rate_limit(struct static_key_deferred *key,
		unsigned long rl)
{
	STATIC_KEY_CHECK_USE(key);
	key->timeout = rl;
	INIT_DELAYED_WORK(&key->work, jump_label_update_timeout);
}
