// SPDX-License-Identifier: GPL-2.0-only
/*
 * Bug replays of the static-key reference counts: each function is the code
 * of before one upstream fix, called from the public function the fix
 * changed when its test switch (pokelab/bug_switches.h) is on. Test-only.
 */
#include <linux/atomic.h>
#include <linux/bug.h>
#include <linux/jump_label.h>
#include <pokelab/bug_switches.h>

#include "jump_label_internal.h"

/*
 * static_key_disable_cpuslocked() before 224fa3552029 ("jump_label: Fix the
 * fix, brown paper bags galore"): it patched whenever the cmpxchg returned
 * anything but 0, so a concurrent increment (2 -> disabled under it) made it
 * patch a key still in use.
 */
void static_key_disable_cpuslocked_pre_224fa3552029(struct static_key *key)
{
	if (atomic_read(&key->enabled) != 1) {
		WARN_ON_ONCE(atomic_read(&key->enabled) != 0);
		return;
	}

	/* userspace: the test's window, as in the fixed function */
	if (unlikely(pokelab_hooks.disable_before_lock))
		pokelab_hooks.disable_before_lock(key);

	jump_label_lock();
	if (atomic_cmpxchg(&key->enabled, 1, 0) != 0)
		jump_label_update(key);
	jump_label_unlock();
}

/*
 * static_key_slow_try_dec() before 83ab38ef0a0b ("jump_label: Fix
 * concurrency issues in static_key_slow_dec()"): fetch_add_unless() lets 0
 * and -1 be decremented.
 */
static bool static_key_slow_try_dec_pre_83ab38ef0a0b(struct static_key *key)
{
	int val;

	val = atomic_fetch_add_unless(&key->enabled, -1, 1);
	if (val == 1)
		return false;
	WARN_ON(val < 0);
	return true;
}

/* __static_key_slow_dec_cpuslocked() before 83ab38ef0a0b */
void __static_key_slow_dec_cpuslocked_pre_83ab38ef0a0b(struct static_key *key)
{
	if (static_key_slow_try_dec_pre_83ab38ef0a0b(key))
		return;

	/* userspace: the test's window, as in the fixed function */
	if (unlikely(pokelab_hooks.slow_dec_before_lock))
		pokelab_hooks.slow_dec_before_lock(key);

	jump_label_lock();
	if (atomic_dec_and_test(&key->enabled))
		jump_label_update(key);
	jump_label_unlock();
}
