// SPDX-License-Identifier: GPL-2.0-only
/*
 * The kernel's static-key self-test (jump_label_test(), kernel/jump_label.c):
 * true and false keys, likely and unlikely branches; enable, disable and
 * back, checking static_key_enabled() and the branch taken each time. And
 * the sealing of the _RO keys at the end of boot (jump_label_init_ro()).
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <linux/bug.h>
#include <linux/jump_label.h>
#include <pokelab/text_poke_stats.h>

#include "booted.h"

/* alternative/jump_label_internal.h: the port's jump_label_update(), jump_label_mutex held */
void jump_label_update(struct static_key *key);

namespace {

DEFINE_STATIC_KEY_TRUE(sk_true);
DEFINE_STATIC_KEY_FALSE(sk_false);
/* __ro_after_init keys, each with one site: sealed once boot ends */
DEFINE_STATIC_KEY_FALSE_RO(sk_sealed_false);
DEFINE_STATIC_KEY_TRUE_RO(sk_sealed_true);

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

__noinline bool unlikely_sealed_false()
{
	return static_branch_unlikely(&sk_sealed_false);
}

__noinline bool likely_sealed_true()
{
	return static_branch_likely(&sk_sealed_true);
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

/*
 * jump_label_init_ro(), at the end of boot: an _RO key keeps only its
 * initial polarity and the linked bit, with no list behind it; an ordinary
 * key keeps its entries. The sites stay where they were.
 */
TEST_F(StaticKeyTest, RoKeysAreSealedAtBootEnd)
{
	EXPECT_EQ(sk_sealed_false.key.type, JUMP_TYPE_LINKED);
	EXPECT_EQ(sk_sealed_true.key.type, JUMP_TYPE_LINKED | JUMP_TYPE_TRUE);
	EXPECT_FALSE(sk_false.key.type & JUMP_TYPE_LINKED);
	EXPECT_NE(sk_false.key.type & ~JUMP_TYPE_MASK, 0ul);

	/* the program's table still holds their sites */
	EXPECT_EQ(jump_label_nr_sites(&sk_sealed_false.key), 1u);
	EXPECT_EQ(jump_label_nr_sites(&sk_sealed_true.key), 1u);
	EXPECT_FALSE(unlikely_sealed_false());
	EXPECT_TRUE(likely_sealed_true());

	/* sealing again (the next boot's call) changes nothing */
	jump_label_init_ro();
	EXPECT_EQ(sk_sealed_false.key.type, JUMP_TYPE_LINKED);
	EXPECT_EQ(sk_sealed_true.key.type, JUMP_TYPE_LINKED | JUMP_TYPE_TRUE);
}

/*
 * A sealed key's update is refused as upstream refuses it: its list is
 * empty, so jump_label_update() patches none of its sites, and without a
 * WARN (upstream has none on this path: the kernel's write to the
 * __ro_after_init count faults first, which pokelab's BUG stands in for).
 * The count is written behind the API's back to get there; the model then
 * sees the site left stale, which is the point.
 */
TEST_F(StaticKeyTest, SealedKeyUpdatePatchesNothing)
{
	unsigned long warns = kshim::warnCount();
	unsigned long violations = kshim::xmcStats().violations;
	pokelab::TextPokeStats before = pokelab::textPokeStats();
	std::string err;

	expectXmcViolations();
	atomic_set(&sk_sealed_false.key.enabled, 1);
	jump_label_lock();
	jump_label_update(&sk_sealed_false.key);
	jump_label_unlock();

	EXPECT_FALSE(unlikely_sealed_false()) << "a sealed key's site was patched";
	EXPECT_EQ(jump_label_check_sites(&sk_sealed_false.key, &err), 1u);
	EXPECT_NE(err.find("where JMP wants"), std::string::npos) << err;
	EXPECT_EQ(pokelab::textPokeStats().batches, before.batches);
	EXPECT_EQ(kshim::warnCount(), warns);
	kshim::xmcQuiesce();
	EXPECT_GT(kshim::xmcStats().violations, violations);
	EXPECT_EQ(sk_sealed_false.key.type, JUMP_TYPE_LINKED);

	atomic_set(&sk_sealed_false.key.enabled, 0);
	EXPECT_EQ(jump_label_check_sites(&sk_sealed_false.key, &err), 0u);
}

/* Through the API, a sealed key's write BUGs (the kernel's fault) */
TEST_F(StaticKeyTest, WritingASealedKeyIsABug)
{
	EXPECT_DEATH(static_branch_enable(&sk_sealed_false), "__ro_after_init");
	EXPECT_DEATH(static_branch_dec(&sk_sealed_true), "__ro_after_init");
}

} /* namespace */
