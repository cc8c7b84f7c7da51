// SPDX-License-Identifier: GPL-2.0-only
/*
 * v7 28-31 (CONFIG_COALESCE_TLBI) as posted: only mm/vmalloc.c's flushes,
 * flush_tlb_kernel_range_deferrable() (v7 30/31), skip a nohz_full CPU in
 * user mode; plain flush_tlb_kernel_range() still IPIs it. The entry's
 * kernel TLB flush (v7 29/31's COALESCE_TLBI) runs only on CPUs in
 * tick_nohz_full_mask; v8's catch-up runs on every CPU.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include <asm/tlbflush.h>
#include <kernel_shim/cpu.h>
#include <linux/context_tracking.h>
#include <pokelab/ct_entry.h>

#include "booted.h"

namespace {

const int kHousekeeping = 1;
const int kIsolated = 2;

alignas(4096) unsigned char range[4096];

class TlbDeferrable : public pokelab::test::Booted
{
protected:
	unsigned int cpus() const override { return 4; }
	std::string extraParams() const override
	{
		return "nohz_full=2-3 pokelab.ct_defer=" + policy();
	}
	virtual std::string policy() const { return "v7-tlbi"; }

	/* A user loop on @cpu with a system call every @periodNs; returns once it is in user mode. */
	void startUserLoop(int cpu, u64 periodNs)
	{
		pokelab::UserLoopConfig &cfg = cfg_[cpu];

		cfg.stop = &stop_;
		cfg.syscallPeriodNs = periodNs;
		kshim::cpuRun(cpu, [&cfg] { pokelab::ctUserLoop(cfg); });
		while (ct_state_cpu(cpu) != CT_STATE_USER)
			std::this_thread::yield();
	}

	void stopUserLoops(std::initializer_list<int> cpus)
	{
		stop_ = true;
		for (int cpu : cpus)
			kshim::cpuWait(cpu);
	}

	unsigned long rangeFlushes(int cpu)
	{
		return kshim::tlbRangeFlushRuns(cpu);
	}

	std::atomic<bool> stop_{false};
	pokelab::UserLoopConfig cfg_[4];
};

class TlbDeferrableV8 : public TlbDeferrable
{
protected:
	std::string policy() const override { return "v8"; }
};

TEST_F(TlbDeferrable, OnlyTheDeferrableFlushSkipsAUserModeNohzFullCpu)
{
	unsigned long r = (unsigned long)range;

	/* no system call for a minute: the isolated CPU stays in user mode */
	startUserLoop(kIsolated, 60000000000ull);
	unsigned long before = rangeFlushes(kIsolated), hk = rangeFlushes(kHousekeeping);

	kshim::tlbKernelRangeChanged(r, r + 4096);
	flush_tlb_kernel_range(r, r + 4096);
	EXPECT_EQ(rangeFlushes(kIsolated), before + 1) << "plain flush_tlb_kernel_range() is never gated";
	kshim::tlbKernelRangeChanged(r, r + 4096);
	flush_tlb_kernel_range_deferrable(r, r + 4096);
	EXPECT_EQ(rangeFlushes(kIsolated), before + 1) << "the deferrable flush skips it";
	EXPECT_EQ(ct_state_cpu(kIsolated), CT_STATE_USER);
	/* a housekeeping CPU gets both */
	EXPECT_EQ(rangeFlushes(kHousekeeping), hk + 2);
	stopUserLoops({kIsolated});
}

TEST_F(TlbDeferrable, TheEntryFlushesOnlyOnNohzFullCpus)
{
	unsigned long hk = pokelab::ctEntryTlbFlushes(kHousekeeping);
	unsigned long iso = pokelab::ctEntryTlbFlushes(kIsolated);

	startUserLoop(kHousekeeping, 100000);
	startUserLoop(kIsolated, 100000);
	while (pokelab::ctEntryTlbFlushes(kIsolated) < iso + 5)
		std::this_thread::yield();
	stopUserLoops({kHousekeeping, kIsolated});
	EXPECT_GE(pokelab::ctEntryTlbFlushes(kIsolated), iso + 5);
	EXPECT_EQ(pokelab::ctEntryTlbFlushes(kHousekeeping), hk)
		<< "COALESCE_TLBI tests tick_nohz_full_mask: a housekeeping CPU gets every IPI";
}

TEST_F(TlbDeferrableV8, TheCatchUpFlushesOnEveryCpu)
{
	unsigned long hk = pokelab::ctEntryTlbFlushes(kHousekeeping);

	startUserLoop(kHousekeeping, 100000);
	while (pokelab::ctEntryTlbFlushes(kHousekeeping) < hk + 5)
		std::this_thread::yield();
	stopUserLoops({kHousekeeping});
	EXPECT_GE(pokelab::ctEntryTlbFlushes(kHousekeeping), hk + 5);
}

} /* namespace */
