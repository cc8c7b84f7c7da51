// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab.refs=percpu|global and pokelab.sync=ipi|membarrier: each mode is
 * reported on the machine line, the live batch stays correct under it (no
 * stale call, INT3s emulated on the running CPUs), and a bad value is a
 * one-line boot error. text_poke_set_refs_mode() switches the refs on the
 * running machine: refused while a batch is queued, and once done the
 * next batch publishes and drains the other mode's counts, which the
 * cross-modifying-code model reads too.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <asm/ptrace.h>
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

/*
 * issue 33 item 8: a late INT3. CPU 1 executed a batch's INT3, and its
 * handler runs only once the batch has finished: the refs are drained and
 * the site holds its new bytes. Upstream's handler gets no ref and returns
 * 0, so the trap goes on to do_int3() and dies as "Oops: int3"
 * (kernel-map 7: the class of bug a sync that does not wait for the
 * handler lets in). It must not rewind the CPU to the site and call the
 * trap handled, whichever sync back-end the batch used.
 */
int lateTrapAfterFinish(int i, unsigned long *ip)
{
	unsigned char jmp[5];
	struct pt_regs regs = {};
	int ret;

	pltest::gen_rel32(jmp, JMP32_INSN_OPCODE, pltest::site(i), pl_ret_neg);
	mutex_lock(&text_mutex);
	smp_text_poke_batch_add(pltest::site(i), jmp, 5, NULL);
	smp_text_poke_batch_finish();
	mutex_unlock(&text_mutex);
	/* the trap reports the byte after the INT3 */
	regs.ip = (unsigned long)pltest::site(i) + INT3_INSN_SIZE;
	ret = smp_text_poke_int3_handler(&regs);
	*ip = regs.ip;
	return ret;
}

class LateInt3Ipi : public pltest::ScratchBooted
{
};

TEST_F(LateInt3Ipi, HandlerDeclinesATrapAfterItsBatchFinished)
{
	unsigned long ip;

	EXPECT_EQ(lateTrapAfterFinish(1, &ip), 0);
	EXPECT_EQ(ip, (unsigned long)pltest::site(1) + INT3_INSN_SIZE);
}

class LateInt3Membarrier : public pltest::ScratchBooted
{
protected:
	std::string extraParams() const override { return "pokelab.sync=membarrier"; }
};

TEST_F(LateInt3Membarrier, HandlerDeclinesATrapAfterItsBatchFinished)
{
	unsigned long ip;

	if (!pokelab::textPokeStats().syncMembarrier)
		GTEST_SKIP() << "the host refuses MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE";
	EXPECT_EQ(lateTrapAfterFinish(1, &ip), 0);
	EXPECT_EQ(ip, (unsigned long)pltest::site(1) + INT3_INSN_SIZE);
}

int setRefsMode(bool global)
{
	int ret;

	mutex_lock(&text_mutex);
	ret = text_poke_set_refs_mode(global);
	mutex_unlock(&text_mutex);
	return ret;
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

/*
 * Flip by flip with the sites running on every other CPU: each flip's
 * census shows the mode it ran in (publish/drain writes, the shared line's
 * cross-CPU writes), every flip stays clean, and the model, which reads
 * the handler's own mode flag, finds no violation in either mode (were it
 * to read the per-CPU counts under refs=global it would see them 0 at
 * every INT3 armed for a fetching CPU).
 */
TEST_F(RefsSwitch, EachFlipRunsInTheModeSetBeforeIt)
{
	pokelab::BpfStatsConfig cfg;
	const unsigned int kFlips = 6;
	/* percpu, global, global, percpu, percpu, global */
	const bool global[kFlips] = {false, true, true, false, false, true};

	cfg.flips = kFlips;
	cfg.beforeFlip = [&](unsigned int f) {
		ASSERT_EQ(setRefsMode(global[f - 1]), 0);
		EXPECT_EQ(pokelab::textPokeStats().refsGlobal, global[f - 1]);
	};

	pokelab::BpfStatsResult r = pokelab::runBpfStats(cfg);

	EXPECT_TRUE(r.ok()) << r.staleCalls << " stale, " << r.violations << " violations";
	ASSERT_EQ(r.flipCensus.size(), kFlips);
	for (unsigned int f = 0; f < kFlips; f++) {
		const pokelab::BpfStatsFlip &c = r.flipCensus[f];

		SCOPED_TRACE(fmt::format("flip {} ({})", f + 1, global[f] ? "global" : "percpu"));
		/* one batch a flip: its publish and drain write 1 line, or one per CPU */
		EXPECT_EQ(c.refsPatcherWrites, global[f] ? 2u : 2u * nr_cpu_ids);
		EXPECT_EQ(c.xmc.violations, 0u);
		EXPECT_GT(c.xmc.int3Checks, 0u);
		EXPECT_EQ(c.staleCalls, 0u);
		/* per-CPU lines cross over through the patcher only: at most 2 per line */
		if (!global[f]) {
			EXPECT_LE(c.refsXcpu, c.refsPatcherWrites);
		}
	}
	EXPECT_EQ(r.batches, kFlips);
	EXPECT_EQ(r.violations, 0u);
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
