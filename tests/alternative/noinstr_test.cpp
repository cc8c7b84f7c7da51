// SPDX-License-Identifier: GPL-2.0-only
/*
 * The noinstr rules of the deferral series: static keys used in noinstr
 * text must be _RO (written only during boot) or _NOINSTR (flipped at run
 * time, and then every batch touching them IPIs every CPU, isolated or
 * not). The boot check accepts this binary's noinstr sites, an _RO key
 * written after boot is a BUG, and a batch with a noinstr site reaches the
 * isolated CPUs with IPIs while an ordinary batch defers to them.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <thread>

#include <asm/sections.h>
#include <kernel_shim/cpu.h>
#include <linux/context_tracking.h>
#include <linux/jump_label.h>
#include <pokelab/ct_entry.h>
#include <pokelab/text_poke_stats.h>

#include "booted.h"

DEFINE_STATIC_KEY_FALSE_RO(test_noinstr_ro_key);
DEFINE_STATIC_KEY_FALSE_NOINSTR(test_noinstr_flip_key);
DEFINE_STATIC_KEY_FALSE(test_ordinary_key);

noinstr int test_noinstr_ro_user(void)
{
	return static_branch_unlikely(&test_noinstr_ro_key) ? 1 : 0;
}

noinstr int test_noinstr_flip_user(void)
{
	return static_branch_unlikely(&test_noinstr_flip_key) ? 1 : 0;
}

__noinline int test_ordinary_user(void)
{
	return static_branch_unlikely(&test_ordinary_key) ? 1 : 0;
}

namespace {

class Noinstr : public pokelab::test::Booted
{
protected:
	std::string extraParams() const override { return "nohz_full=2-3 pokelab.ct_defer=v7"; }
};

TEST_F(Noinstr, BootCheckAcceptsRoAndNoinstrKeys)
{
	std::string err;
	unsigned int checked = 0;

	EXPECT_EQ(jump_label_check_noinstr(err, &checked), 0) << err;
	/* the two sites above, at least (the entry code may add its own) */
	EXPECT_GE(checked, 2u);
	EXPECT_TRUE(is_kernel_noinstr_text((unsigned long)test_noinstr_ro_user));
	EXPECT_FALSE(is_kernel_noinstr_text((unsigned long)test_ordinary_user));
}

TEST_F(Noinstr, WritingAnRoKeyAfterBootIsABug)
{
	EXPECT_DEATH(static_branch_enable(&test_noinstr_ro_key), "__ro_after_init");
}

struct UserParked {
	std::atomic<bool> stop{false};
	pokelab::UserLoopConfig cfg;

	UserParked()
	{
		cfg.stop = &stop;
		cfg.syscallPeriodNs = 0;
		for (int cpu = 2; cpu <= 3; cpu++)
			kshim::cpuRun(cpu, [this] { pokelab::ctUserLoop(cfg); });
		for (int cpu = 2; cpu <= 3; cpu++)
			while (ct_state_cpu(cpu) != CT_STATE_USER)
				std::this_thread::yield();
	}

	~UserParked()
	{
		stop = true;
		kshim::cpuWait(2);
		kshim::cpuWait(3);
	}
};

TEST_F(Noinstr, BatchWithANoinstrSiteIpisIsolatedCpus)
{
	UserParked parked;
	unsigned long runs = pokelab::syncCoreRuns(2), deferred = pokelab::syncsDeferred(2);

	/* An ordinary key: the isolated CPUs in user mode get the sync deferred. */
	static_branch_enable(&test_ordinary_key);
	EXPECT_EQ(pokelab::syncCoreRuns(2), runs);
	EXPECT_EQ(pokelab::syncsDeferred(2), deferred + 3);
	EXPECT_EQ(test_ordinary_user(), 1);

	/* A key used in noinstr text: all three rounds IPI them. */
	static_branch_enable(&test_noinstr_flip_key);
	EXPECT_EQ(pokelab::syncCoreRuns(2), runs + 3);
	EXPECT_EQ(pokelab::syncsDeferred(2), deferred + 3);
	EXPECT_EQ(test_noinstr_flip_user(), 1);

	static_branch_disable(&test_noinstr_flip_key);
	static_branch_disable(&test_ordinary_key);
}

} /* namespace */
