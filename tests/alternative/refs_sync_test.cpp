// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab.refs=percpu|global and pokelab.sync=ipi|membarrier: each mode is
 * reported on the machine line, the live batch stays correct under it (no
 * stale call, INT3s emulated on the running CPUs), and a bad value is a
 * one-line boot error. text_poke_set_refs_mode() switches the refs on the
 * running machine: refused while a batch is queued, and once done the
 * next batch publishes and drains the other mode's counts.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <asm/text-patching.h>
#include <workloads/bpf_stats.h>
#include <kernel_shim/boot.h>
#include <linux/cpumask.h>
#include <linux/mutex.h>
#include <pokelab/text_poke_stats.h>

#include "booted.h"
#include "scratch_text.h"

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

class RefsSwitch : public pltest::ScratchBooted
{
};

/* A queued batch keeps its mode: the switch waits for the finish. */
TEST_F(RefsSwitch, RefusedWhileABatchIsQueued)
{
	unsigned char jmp[5];
	unsigned long w0 = pokelab::refsPatcherWrites(), w1;

	pltest::gen_rel32(jmp, JMP32_INSN_OPCODE, pltest::site(0), pl_ret_neg);
	mutex_lock(&text_mutex);
	smp_text_poke_batch_add(pltest::site(0), jmp, 5, NULL);
	EXPECT_EQ(text_poke_set_refs_mode(true), -EBUSY);
	EXPECT_FALSE(pokelab::textPokeStats().refsGlobal);
	smp_text_poke_batch_finish();
	w1 = pokelab::refsPatcherWrites();
	/* per-CPU: publish and drain write each CPU's line */
	EXPECT_EQ(w1 - w0, 2u * nr_cpu_ids);
	EXPECT_EQ(text_poke_set_refs_mode(true), 0);
	EXPECT_EQ(text_poke_set_refs_mode(true), 0);	/* already global: nothing to do */
	EXPECT_TRUE(pokelab::textPokeStats().refsGlobal);
	smp_text_poke_batch_add(pltest::site(0), pltest::nop5, 5, NULL);
	smp_text_poke_batch_finish();
	mutex_unlock(&text_mutex);
	/* global: publish and drain write the one shared line */
	EXPECT_EQ(pokelab::refsPatcherWrites() - w1, 2u);
	EXPECT_EQ(pltest::call_slot(0, 1), 2);
	EXPECT_NE(kshim::machineLine().find("refs global"), std::string::npos)
		<< kshim::machineLine();
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
