// SPDX-License-Identifier: GPL-2.0-only
/*
 * Rate-limited static keys (alternative/jump_label_deferred.cpp,
 * linux/jump_label_ratelimit.h): the last decrement of a deferred key is a
 * delayed work item, so a key that flips on and off within its rate limit
 * patches its sites once on and once off; the off comes from CPU 0's
 * kworker when the timer expires or the key is flushed, while CPU 1 keeps
 * running the site.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <atomic>

#include <kernel_shim/cpu.h>
#include <kernel_shim/sched.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/jump_label_ratelimit.h>
#include <linux/workqueue.h>
#include <pokelab/text_poke_stats.h>

#include "booted.h"

DEFINE_STATIC_KEY_DEFERRED_FALSE(pl_dkey, 3600 * HZ);

extern "C" __attribute__((noinline)) int pl_dkey_site(void)
{
	if (static_branch_unlikely(&pl_dkey.key))
		return 2;
	return 1;
}

namespace {

class StaticKeyDeferred : public pokelab::test::Booted
{
protected:
	void SetUp() override
	{
		Booted::SetUp();
		jump_label_rate_limit((struct static_key_deferred *)&pl_dkey, 3600 * HZ);
		runner = false;
		stop = false;
		bad = 0;
		kshim::cpuRun(1, [this] {
			runner = true;
			while (!stop.load(std::memory_order_relaxed)) {
				int v = pl_dkey_site();

				if (v != 1 && v != 2)
					bad++;
				kshim::schedTick();
			}
		});
		while (!runner.load())
			;
	}

	void TearDown() override
	{
		stop = true;
		kshim::cpuWait(1);
		EXPECT_EQ(bad.load(), 0u);
		EXPECT_EQ(static_key_count(&pl_dkey.key.key), 0);
		Booted::TearDown();
	}

	std::atomic<bool> runner{false}, stop{false};
	std::atomic<unsigned long> bad{0};
};

TEST_F(StaticKeyDeferred, FlipsWithinTheRateLimitPatchOnceEachWay)
{
	unsigned long b0 = pokelab::textPokeStats().batches;
	unsigned long k0 = kshim::kworkerRuns(0);

	EXPECT_EQ(pl_dkey_site(), 1);
	static_branch_deferred_inc(&pl_dkey);
	EXPECT_EQ(pl_dkey_site(), 2);
	EXPECT_EQ(pokelab::textPokeStats().batches, b0 + 1);
	for (int i = 0; i < 100; i++) {
		static_branch_slow_dec_deferred(&pl_dkey);
		/* the last reference went to the timer: the key stays on */
		EXPECT_EQ(static_key_count(&pl_dkey.key.key), 1);
		EXPECT_TRUE(delayed_work_pending(&pl_dkey.work));
		static_branch_deferred_inc(&pl_dkey);
		EXPECT_EQ(static_key_count(&pl_dkey.key.key), 2);
	}
	/* the dec of a count of 2 is immediate; the timer's still holds one */
	static_branch_slow_dec_deferred(&pl_dkey);
	EXPECT_EQ(static_key_count(&pl_dkey.key.key), 1);
	EXPECT_EQ(pl_dkey_site(), 2);
	EXPECT_EQ(pokelab::textPokeStats().batches, b0 + 1) << "patched while rate-limited";

	/* the deferred decrement, now: CPU 0's kworker patches the sites off */
	static_key_deferred_flush(&pl_dkey);
	EXPECT_EQ(static_key_count(&pl_dkey.key.key), 0);
	EXPECT_EQ(pl_dkey_site(), 1);
	EXPECT_EQ(pokelab::textPokeStats().batches, b0 + 2);
	EXPECT_EQ(kshim::kworkerRuns(0), k0 + 1);
	EXPECT_FALSE(delayed_work_pending(&pl_dkey.work));
}

TEST_F(StaticKeyDeferred, TheTimerDisablesTheKey)
{
	jump_label_rate_limit((struct static_key_deferred *)&pl_dkey, 1);
	static_branch_deferred_inc(&pl_dkey);
	EXPECT_EQ(pl_dkey_site(), 2);
	static_branch_slow_dec_deferred(&pl_dkey);
	/* CPU 0 sleeps: the timer expires, its kworker runs the decrement */
	for (int i = 0; i < 30000 && static_key_count(&pl_dkey.key.key); i++)
		msleep(1);
	EXPECT_EQ(static_key_count(&pl_dkey.key.key), 0);
	EXPECT_EQ(pl_dkey_site(), 1);
}

TEST_F(StaticKeyDeferred, ShutdownRunsThePendingDecrement)
{
	static_branch_deferred_inc(&pl_dkey);
	static_branch_slow_dec_deferred(&pl_dkey);
	EXPECT_EQ(static_key_count(&pl_dkey.key.key), 1);
	stop = true;
	kshim::cpuWait(1);
	kshim::shutdown();
	EXPECT_EQ(static_key_count(&pl_dkey.key.key), 0);
	EXPECT_EQ(pl_dkey_site(), 1);
}

} /* namespace */
