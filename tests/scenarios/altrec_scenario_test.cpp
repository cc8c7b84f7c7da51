// SPDX-License-Identifier: GPL-2.0-only
/*
 * Cases 004 and 002 at test size: the counts behind `pokelab run
 * alternatives` (sync_core() calls per pass, identical bytes) and `pokelab
 * run recursion` (hits per guard, misses exactly when provoked). Never
 * times.
 */
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <asm/sync_core.h>
#include <linux/jump_label.h>
#include <workloads/alt_pass.h>
#include <workloads/bpf_recursion.h>

#include "booted.h"

/*
 * userspace: jump_label.cpp needs a __jump_table section in the program;
 * this binary has no static key of its own otherwise.
 */
static DEFINE_STATIC_KEY_FALSE(t_unused_key);

__noinline int t_unused_branch(void)
{
	return static_branch_unlikely(&t_unused_key) ? 1 : 0;
}

namespace {

using namespace pokelab::scenario;

unsigned long countedSyncs;

void countingSync(void)
{
	countedSyncs++;
	iret_to_self();
}

class AltPassScenario : public pokelab::test::Booted
{
protected:
	/*
	 * The experiment is apply_alternatives() at boot, before the other
	 * CPUs start: it rewrites the program's own sites, which any CPU could
	 * run, so no other CPU may be up (the cross-modifying-code model would
	 * rightly report them).
	 */
	unsigned int cpus() const override { return 1; }

	void TearDown() override
	{
		altPassRestore();
		altSetGeneratedSites(altGeneratedSitesMax());
		/* Leave the program's own sites as boot patched them. */
		std::vector<pokelab_alt_table> t = altPassTables();
		struct pokelab_alt_pass pass = {false, iret_to_self_fn, 0, 0};

		pokelab_apply_alternatives_pass(t.data(), 1, &pass);
		Booted::TearDown();
	}

	static void iret_to_self_fn(void) { iret_to_self(); }
};

TEST_F(AltPassScenario, PerSiteSyncsOncePerSiteBatchedOncePerPass)
{
	altSetGeneratedSites(300);
	std::vector<u8> pristine, perSite, batched;
	unsigned long own = __stop_altinstructions - __start_altinstructions;

	altPassRestore();
	pristine = altPassBytes();

	countedSyncs = 0;
	AltPassResult a = altRunPass(false, countingSync);
	perSite = altPassBytes();
	EXPECT_GE(a.sites, 300ul);
	EXPECT_LE(a.sites, 300ul + own);
	EXPECT_EQ(a.syncs, a.sites);
	EXPECT_EQ(countedSyncs, a.sites);

	countedSyncs = 0;
	AltPassResult b = altRunPass(true, countingSync);
	batched = altPassBytes();
	EXPECT_EQ(b.sites, a.sites);
	EXPECT_EQ(b.syncs, 1ul);
	EXPECT_EQ(countedSyncs, 1ul);

	/* Same bytes either way, and the pass changed the text (ALWAYS sites). */
	EXPECT_EQ(perSite, batched);
	EXPECT_NE(perSite, pristine);

	/* Restore puts the compiler's bytes back, so every pass starts alike. */
	altPassRestore();
	EXPECT_EQ(altPassBytes(), pristine);
}

TEST_F(AltPassScenario, EveryFlavourGivesTheSameBytes)
{
	std::vector<u8> first;

	altSetGeneratedSites(60);
	for (const AltSyncFlavour &f : altSyncFlavours()) {
		if (!f.present)
			continue;
		AltPassResult r = altRunPass(true, f.fn);

		EXPECT_EQ(r.syncs, 1ul) << f.name;
		if (first.empty())
			first = altPassBytes();
		else
			EXPECT_EQ(altPassBytes(), first) << f.name;
	}
	EXPECT_FALSE(first.empty());
}

class RecursionScenario : public pokelab::test::Booted
{
};

const RecursionGuard kGuards[] = {RecursionGuard::Atomic, RecursionGuard::PerCtxU8,
				  RecursionGuard::NonLockedInc};

TEST_F(RecursionScenario, NoMissWithoutRecursion)
{
	for (RecursionGuard g : kGuards) {
		recursionAttach(g);
		recursionTrigger(1000);
		RecursionCounts c = recursionCounts();

		EXPECT_EQ(c.hits, 1000ul) << recursionGuardName(g);
		EXPECT_EQ(c.misses, 0ul) << recursionGuardName(g);
	}
}

TEST_F(RecursionScenario, ProvokedRecursionIsAMissInEveryGuard)
{
	for (RecursionGuard g : kGuards) {
		recursionAttach(g, 5);
		recursionTrigger(1000);
		RecursionCounts c = recursionCounts();

		/* The nested call never runs the program: hits stay the outer calls. */
		EXPECT_EQ(c.hits, 1000ul) << recursionGuardName(g);
		EXPECT_EQ(c.misses, 200ul) << recursionGuardName(g);

		/* The guard was given back each time: a clean run after misses none. */
		recursionAttach(g);
		recursionTrigger(10);
		EXPECT_EQ(recursionCounts().misses, 0ul) << recursionGuardName(g);
	}
}

TEST_F(RecursionScenario, BenchCountsHitsPerGuard)
{
	for (RecursionGuard g : kGuards) {
		std::string lines;
		std::vector<double> rates =
			recursionBench(g, 1, 20, 1, 2, &lines, nullptr, nullptr);
		RecursionCounts c = recursionCounts();

		EXPECT_EQ(rates.size(), 2u) << recursionGuardName(g);
		EXPECT_GT(c.hits, 0ul) << recursionGuardName(g);
		EXPECT_EQ(c.misses, 0ul) << recursionGuardName(g);
		EXPECT_NE(lines.find("Iter   0 ("), std::string::npos) << lines;
		EXPECT_NE(lines.find("M/prod)"), std::string::npos) << lines;
	}
}

/* The checker fires: a guard that never refuses (broken) would show 0 misses. */
TEST_F(RecursionScenario, BrokenExpectationIsCaught)
{
	recursionAttach(RecursionGuard::PerCtxU8, 5);
	recursionTrigger(100);
	EXPECT_NONFATAL_FAILURE(EXPECT_EQ(recursionCounts().misses, 0ul), "misses");
}

} /* namespace */
