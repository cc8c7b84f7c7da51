// SPDX-License-Identifier: GPL-2.0-only
/*
 * A 164-site flip while the other CPUs execute the sites: no CPU takes the
 * old branch once smp_text_poke_batch_finish() has returned, every batch
 * takes exactly three sync rounds, and the INT3 handler really emulated
 * traps on the running CPUs.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <numeric>

#include <workloads/bpf_stats.h>

#include "booted.h"

namespace {

class BatchFlipTest : public pokelab::test::Booted
{
};

TEST_F(BatchFlipTest, NoStaleCallsAndThreeSyncRoundsPerBatch)
{
	pokelab::BpfStatsConfig cfg;
	cfg.flips = 12;

	pokelab::BpfStatsResult r = pokelab::runBpfStats(cfg);

	EXPECT_EQ(r.sites, pokelab::kNrBpfSites);
	EXPECT_EQ(r.batches, 12u);
	ASSERT_EQ(r.syncRoundsPerBatch.size(), 12u);
	for (unsigned int rounds : r.syncRoundsPerBatch)
		EXPECT_EQ(rounds, 3u);
	EXPECT_EQ(r.syncRounds, 36u);
	EXPECT_EQ(r.staleCalls, 0u);
	EXPECT_GT(r.checkedCalls, 0u);
	EXPECT_EQ(r.deadLoops, 0u);

	unsigned long calls = 0;
	for (const pokelab::BpfStatsCpu &c : r.cpus) {
		if (c.cpu == 0)
			continue;
		EXPECT_GT(c.calls, 0u) << "CPU " << c.cpu;
		/* every sync round IPIs every other CPU once */
		EXPECT_GE(c.ipiReceived, 36u) << "CPU " << c.cpu;
		calls += c.calls;
	}
	EXPECT_GT(calls, 0u);
}

} /* namespace */

namespace {

/*
 * A stop that comes before the first flip (a Ctrl-C while 512 CPUs start):
 * no batch ran, so the report checks nothing and says so; loops that had
 * not made their first call yet are not dead.
 */
TEST_F(BatchFlipTest, StopBeforeTheFirstFlipChecksNothingAndFailsNothing)
{
	static const std::atomic<bool> stopped{true};
	pokelab::BpfStatsConfig cfg;

	cfg.flips = 12;
	cfg.stop = &stopped;
	pokelab::BpfStatsResult r = pokelab::runBpfStats(cfg);
	std::string report = pokelab::formatBpfStats(r);

	EXPECT_TRUE(r.interrupted);
	EXPECT_EQ(r.flips, 0u);
	EXPECT_EQ(r.batches, 0u);
	EXPECT_EQ(r.deadLoops, 0u);
	EXPECT_NE(report.find("verdict: NOTHING CHECKED (interrupted before the first flip)"),
		  std::string::npos) << report;
	EXPECT_EQ(report.find("FAIL"), std::string::npos) << report;
}

} /* namespace */
