// SPDX-License-Identifier: GPL-2.0-only
/*
 * The two-site key: two distinct functions, each a real 5-byte NOP site of
 * pokelab_small_key that a flip patches live in one two-entry batch.
 */
#include <linux/mutex.h>

#include <workloads/small_key.h>

DEFINE_STATIC_KEY_FALSE(pokelab_small_key);

namespace pokelab {

namespace {

template<int N>
__noinline unsigned int small_key_site(const BpfCtx *ctx)
{
	unsigned int ret = (unsigned int)(ctx->arg * (N + 3)) & 0xffff;

	if (static_branch_unlikely(&pokelab_small_key))
		return ret | kBpfRanWithStats;
	return ret;
}

const BpfProgFn progs[kNrSmallKeySites] = {&small_key_site<0>, &small_key_site<1>};

DEFINE_MUTEX(small_key_mutex);
int saved_val;

} /* namespace */

const BpfProgFn *smallKeyProgs()
{
	return progs;
}

int small_key_write(int val)
{
	if (val < 0 || val > 1)
		return -EINVAL;

	mutex_lock(&small_key_mutex);
	if (val != saved_val) {
		if (val)
			static_key_slow_inc(&pokelab_small_key.key);
		else
			static_key_slow_dec(&pokelab_small_key.key);
		saved_val = val;
	}
	mutex_unlock(&small_key_mutex);
	return 0;
}

} /* namespace pokelab */
