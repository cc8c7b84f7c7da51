// SPDX-License-Identifier: GPL-2.0-only
/*
 * The kernel's static-key self-test (jump_label_test(), kernel/jump_label.c):
 * true and false keys, likely and unlikely branches; enable, disable and
 * back, checking static_key_enabled() and the branch taken each time.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <linux/bug.h>
#include <linux/jump_label.h>
#include <pokelab/text_poke_stats.h>

#include "booted.h"

namespace {

DEFINE_STATIC_KEY_TRUE(sk_true);
DEFINE_STATIC_KEY_FALSE(sk_false);

__noinline bool likely_true()
{
	return static_branch_likely(&sk_true);
}

__noinline bool unlikely_true()
{
	return static_branch_unlikely(&sk_true);
}

__noinline bool likely_false()
{
	return static_branch_likely(&sk_false);
}

__noinline bool unlikely_false()
{
	return static_branch_unlikely(&sk_false);
}

class StaticKeyTest : public pokelab::test::Booted
{
protected:
	void expectState(bool t, bool f)
	{
		EXPECT_EQ(static_key_enabled(&sk_true), t);
		EXPECT_EQ(likely_true(), t);
		EXPECT_EQ(unlikely_true(), t);
		EXPECT_EQ(static_key_enabled(&sk_false), f);
		EXPECT_EQ(likely_false(), f);
		EXPECT_EQ(unlikely_false(), f);
	}
};

TEST_F(StaticKeyTest, SelfTestMatrix)
{
	EXPECT_EQ(jump_label_nr_sites(&sk_true.key), 2u);
	EXPECT_EQ(jump_label_nr_sites(&sk_false.key), 2u);

	for (int pass = 0; pass < 2; pass++) {
		expectState(true, false);

		static_branch_disable(&sk_true);
		static_branch_enable(&sk_false);
		expectState(false, true);

		static_branch_enable(&sk_true);
		static_branch_disable(&sk_false);
		expectState(true, false);
	}
}

TEST_F(StaticKeyTest, EachUpdateIsOneBatchOfThreeSyncRounds)
{
	pokelab::TextPokeStats before = pokelab::textPokeStats();

	static_branch_enable(&sk_false);
	pokelab::TextPokeStats after = pokelab::textPokeStats();
	EXPECT_EQ(after.batches - before.batches, 1u);
	EXPECT_EQ(after.lastNrEntries, 2u);
	EXPECT_EQ(after.syncRounds - before.syncRounds, 3u);

	/* Enabling an enabled key patches nothing. */
	static_branch_enable(&sk_false);
	EXPECT_EQ(pokelab::textPokeStats().batches, after.batches);

	static_branch_disable(&sk_false);
	expectState(true, false);
}

TEST_F(StaticKeyTest, SlowIncDecCountsReferences)
{
	static_branch_inc(&sk_false);
	static_branch_inc(&sk_false);
	EXPECT_EQ(static_key_count(&sk_false.key), 2);
	EXPECT_TRUE(unlikely_false());
	static_branch_dec(&sk_false);
	EXPECT_TRUE(unlikely_false());
	static_branch_dec(&sk_false);
	EXPECT_FALSE(unlikely_false());
	EXPECT_EQ(static_key_count(&sk_false.key), 0);
}

/* STATIC_KEY_CHECK_USE(): a key changed before jump_label_init() WARNs, each time */
TEST_F(StaticKeyTest, UseBeforeJumpLabelInitWarns)
{
	unsigned long warns = kshim::warnCount();

	ASSERT_TRUE(static_key_initialized);
	static_branch_enable(&sk_false);
	static_branch_disable(&sk_false);
	EXPECT_EQ(kshim::warnCount(), warns);

	static_key_initialized = false;	/* as before jump_label_init() */
	testing::internal::CaptureStderr();
	static_branch_enable(&sk_false);
	static_branch_disable(&sk_false);
	std::string out = testing::internal::GetCapturedStderr();
	static_key_initialized = true;
	EXPECT_EQ(kshim::warnCount(), warns + 2);
	EXPECT_NE(out.find("!static_key_initialized"), std::string::npos) << out;
	expectState(true, false);
}

} /* namespace */
