// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab.refs=percpu|global and pokelab.sync=ipi|membarrier: each mode is
 * reported on the machine line, the live batch stays correct under it (no
 * stale call, INT3s emulated on the running CPUs), and a bad value is a
 * one-line boot error.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <workloads/bpf_stats.h>
#include <kernel_shim/boot.h>
#include <pokelab/text_poke_stats.h>

#include "booted.h"

namespace {

void expectCleanFlips()
{
	pokelab::BpfStatsConfig cfg;
	cfg.flips = 6;

	pokelab::BpfStatsResult r = pokelab::runBpfStats(cfg);

	EXPECT_EQ(r.batches, 6u);
	EXPECT_EQ(r.staleCalls, 0u);
	EXPECT_GT(r.checkedCalls, 0u);
	for (unsigned int rounds : r.syncRoundsPerBatch)
		EXPECT_EQ(rounds, 3u);
}

class RefsGlobal : public pokelab::test::Booted
{
protected:
	std::string extraParams() const override { return "pokelab.refs=global"; }
};

TEST_F(RefsGlobal, ReportedAndCorrect)
{
	EXPECT_TRUE(pokelab::textPokeStats().refsGlobal);
	EXPECT_NE(kshim::machineLine().find("refs global"), std::string::npos)
		<< kshim::machineLine();
	expectCleanFlips();
}

class RefsPercpuDefault : public pokelab::test::Booted
{
};

TEST_F(RefsPercpuDefault, DefaultsArePercpuAndIpi)
{
	EXPECT_FALSE(pokelab::textPokeStats().refsGlobal);
	EXPECT_FALSE(pokelab::textPokeStats().syncMembarrier);
	EXPECT_NE(kshim::machineLine().find("refs percpu"), std::string::npos);
	EXPECT_NE(kshim::machineLine().find("sync ipi"), std::string::npos);
}

class SyncMembarrier : public pokelab::test::Booted
{
protected:
	std::string extraParams() const override { return "pokelab.sync=membarrier"; }
};

TEST_F(SyncMembarrier, ReportedAndCorrect)
{
	/* Where the host refuses SYNC_CORE, boot falls back to ipi and says so. */
	bool mb = pokelab::textPokeStats().syncMembarrier;

	EXPECT_NE(kshim::machineLine().find(mb ? "sync membarrier" : "sync ipi"),
		  std::string::npos) << kshim::machineLine();
	expectCleanFlips();
}

TEST(RefsSyncParams, BadValuesAreOneLineErrors)
{
	std::string err;

	EXPECT_EQ(kshim::boot("pokelab.refs=shared", &err, true), -EINVAL);
	EXPECT_EQ(err, "pokelab.refs=shared: unknown mode; accepted: pokelab.refs=percpu|global");
	EXPECT_EQ(kshim::boot("pokelab.sync=rcu", &err, true), -EINVAL);
	EXPECT_EQ(err, "pokelab.sync=rcu: unknown back-end; accepted: pokelab.sync=ipi|membarrier");
}

} /* namespace */
