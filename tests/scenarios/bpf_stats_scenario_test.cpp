// SPDX-License-Identifier: GPL-2.0-only
/*
 * The bpf-stats scenario (seeds 000/001) at test size: the 164-site and
 * two-site key flips under refs=global and refs=percpu, asserting counts
 * and orderings only (never times).
 */
#include <gtest/gtest.h>

#include "booted.h"

#include <pokelab/text_poke_stats.h>

#include <workloads/bpf_stats.h>
#include <workloads/refs_compare.h>

namespace pokelab {
namespace {

constexpr unsigned int kFlips = 4;

void expectBatches(const RefsModeResult &r)
{
	SCOPED_TRACE("refs=" + r.mode);
	EXPECT_TRUE(r.ok()) << r.staleCalls << " stale, " << r.deadLoops << " dead loops";
	EXPECT_EQ(r.staleCalls, 0u);
	EXPECT_GT(r.checkedCalls, 0u);
	EXPECT_EQ(r.sites, kNrBpfSites);
	EXPECT_EQ(r.smallSites, 2u);
	ASSERT_EQ(r.batchNs.size(), kFlips);
	ASSERT_EQ(r.smallBatchNs.size(), kFlips);
	for (unsigned int f = 0; f < kFlips; f++) {
		EXPECT_EQ(r.nrEntries[f], kNrBpfSites) << "flip " << f + 1;
		EXPECT_EQ(r.syncRounds[f], 3u) << "flip " << f + 1;
		EXPECT_EQ(r.smallEntries[f], 2u) << "flip " << f + 1;
		EXPECT_EQ(r.smallSyncRounds[f], 3u) << "flip " << f + 1;
	}
	/* The hot loops ran into the INT3s and the handler's time was measured. */
	EXPECT_GT(r.int3Hits, 0u);
	EXPECT_GT(r.int3Ns, 0u);
	EXPECT_GT(r.calls, 0u);
}

TEST(BpfStatsScenario, GlobalRefsShareALinePercpuDoNot)
{
	RefsCompareConfig cfg;
	RefsModeResult m[2];
	std::string err, why;
	unsigned int cpus = std::max(4u, test::testCpus());

	cfg.cpus = cpus;
	cfg.flips = kFlips;
	cfg.rounds = 2;
	ASSERT_EQ(runRefsCompare(cfg, m, &err), 0) << err;
	expectBatches(m[0]);
	expectBatches(m[1]);

	/* Publish and drain write every refs line once per batch: 2 batches per flip. */
	EXPECT_EQ(m[0].refsPatcherWrites, 2u * 2 * kFlips);
	EXPECT_EQ(m[1].refsPatcherWrites, 2u * 2 * kFlips * cpus);
	/* Per-CPU lines cross over only through the patcher: at most 2 per line per batch. */
	EXPECT_LE(m[1].refsXcpu, m[1].refsPatcherWrites);
	/* One shared line: every hot CPU's get/put crosses over. */
	EXPECT_GT(m[0].refsXcpu, m[1].refsXcpu);
	EXPECT_GT(m[0].refsXcpu, m[0].refsPatcherWrites);
	EXPECT_TRUE(refsClaimHolds(m, &why)) << why;
}

/* With one CPU running the sites there is no sharing between site CPUs to count. */
TEST(BpfStatsScenario, OneSiteCpuCrossesOnlyThroughThePatcher)
{
	RefsCompareConfig cfg;
	RefsModeResult m[2];
	std::string err;

	cfg.cpus = 2;
	cfg.flips = kFlips;
	cfg.rounds = 1;
	ASSERT_EQ(runRefsCompare(cfg, m, &err), 0) << err;
	expectBatches(m[0]);
	expectBatches(m[1]);
	/* CPU 1 then CPU 0 on the line: at most 2 per batch in either mode. */
	EXPECT_LE(m[0].refsXcpu, 2u * 2 * kFlips);
	EXPECT_LE(m[1].refsXcpu, 2u * 2 * kFlips);
}

/* The claim checker fires on each broken count. */
TEST(BpfStatsScenario, ClaimCheckerFires)
{
	RefsModeResult m[2];
	std::string why;

	for (int i = 0; i < 2; i++) {
		m[i].mode = i ? "percpu" : "global";
		m[i].sites = kNrBpfSites;
		m[i].smallSites = 2;
		m[i].batchNs = {1};
		m[i].nrEntries = {kNrBpfSites};
		m[i].syncRounds = {3};
		m[i].smallBatchNs = {1};
		m[i].smallEntries = {2};
		m[i].smallSyncRounds = {3};
	}
	m[0].refsXcpu = 100;
	m[1].refsXcpu = 4;
	m[1].refsPatcherWrites = 8;
	ASSERT_TRUE(refsClaimHolds(m, &why)) << why;

	RefsModeResult b[2] = {m[0], m[1]};
	b[0].refsXcpu = 4;	/* no more sharing with one line than with per-CPU lines */
	EXPECT_FALSE(refsClaimHolds(b, &why));
	EXPECT_NE(why.find("global 4 <= percpu 4"), std::string::npos) << why;

	b[0] = m[0];
	b[1].refsXcpu = 9;	/* per-CPU lines shared beyond the patcher's writes */
	b[1].refsPatcherWrites = 8;
	b[0].refsXcpu = 100;
	EXPECT_FALSE(refsClaimHolds(b, &why));
	EXPECT_NE(why.find("exceed"), std::string::npos) << why;

	b[1] = m[1];
	b[1].syncRounds = {2};	/* a batch with two sync rounds */
	EXPECT_FALSE(refsClaimHolds(b, &why));

	b[1] = m[1];
	b[1].staleCalls = 1;
	EXPECT_FALSE(refsClaimHolds(b, &why));
}

} /* namespace */
} /* namespace pokelab */
