// SPDX-License-Identifier: GPL-2.0-only
/*
 * The bpf-stats scenario (cases 000/001) at test size: the 164-site and
 * two-site key flips under refs=global and refs=percpu, interleaved flip by
 * flip, asserting counts and orderings only (never times).
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
	EXPECT_EQ(r.flips, kFlips);
	ASSERT_EQ(r.batchNs.size(), kFlips);
	ASSERT_EQ(r.smallBatchNs.size(), kFlips);
	/* a census window per flip, for the per-pair ns per call */
	ASSERT_EQ(r.flipLoopNs.size(), kFlips);
	ASSERT_EQ(r.flipCalls.size(), kFlips);
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
	/* every pair complete: one flip of each mode; two pairs a quad */
	EXPECT_EQ(refsPairs(m), kFlips);
	EXPECT_EQ(refsQuads(m), kFlips / 2);

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

/*
 * Five pairs over two machines: a quad on the first (g, p, p, g), a quad
 * and the lone fifth pair on the second (g, p, p, g, g, p). Each machine
 * boots in its first flip's mode and switches between flips; each mode's
 * figures get its own flips' census.
 */
TEST(BpfStatsScenario, PairsAlternateTheirOrderInQuads)
{
	const int want[] = {0, 1, 1, 0, 0, 1, 1, 0};
	RefsCompareConfig cfg;
	RefsModeResult m[2];
	std::vector<std::string> booted, shut;
	std::vector<unsigned int> flipsOf;
	std::string err;

	for (unsigned int f = 0; f < 8; f++)
		EXPECT_EQ(refsModeOfFlip(f), want[f]) << "flip " << f;
	/* one machine a quad at most, and at least one */
	EXPECT_EQ(refsMachines(1, 2), 1u);
	EXPECT_EQ(refsMachines(2, 100), 1u);
	EXPECT_EQ(refsMachines(5, 3), 2u);
	EXPECT_EQ(refsMachines(40, 2), 2u);

	cfg.cpus = 2;
	cfg.flips = 5;
	cfg.rounds = 3;
	cfg.onBooted = [&](const std::string &mode) {
		booted.push_back(mode);
		EXPECT_EQ(textPokeStats().refsGlobal, mode == "global");
	};
	cfg.onShutdown = [&](const std::string &mode) {
		shut.push_back(mode);
		EXPECT_EQ(textPokeStats().refsGlobal, mode == "global");
	};
	cfg.onFlip = [&](unsigned int i, unsigned int n) {
		if (i == 1)
			flipsOf.push_back(n);
	};
	ASSERT_EQ(runRefsCompare(cfg, m, &err), 0) << err;
	EXPECT_EQ(booted, (std::vector<std::string>{"global", "global"}));
	EXPECT_EQ(shut, (std::vector<std::string>{"global", "percpu"}));
	EXPECT_EQ(flipsOf, (std::vector<unsigned int>{4, 6}));
	EXPECT_EQ(m[0].flips, 5u);
	EXPECT_EQ(m[1].flips, 5u);
	EXPECT_EQ(refsPairs(m), 5u);
	EXPECT_EQ(refsQuads(m), 2u);
	/* publish and drain of 2 batches a flip: the one shared line, or one line per CPU */
	EXPECT_EQ(m[0].refsPatcherWrites, 2u * 2 * 5);
	EXPECT_EQ(m[1].refsPatcherWrites, 2u * 2 * 5 * cfg.cpus);
	EXPECT_EQ(m[0].violations + m[1].violations, 0u);
	EXPECT_EQ(m[0].staleCalls + m[1].staleCalls, 0u);
	EXPECT_NE(m[0].machineLine.find("refs global"), std::string::npos) << m[0].machineLine;
	EXPECT_NE(m[1].machineLine.find("refs percpu"), std::string::npos) << m[1].machineLine;
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
