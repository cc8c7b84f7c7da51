// SPDX-License-Identifier: GPL-2.0-only
/*
 * v7 28-31 (CONFIG_COALESCE_TLBI) as posted: only mm/vmalloc.c's flushes,
 * flush_tlb_kernel_range_deferrable() (v7 30/31), skip a nohz_full CPU in
 * user mode; plain flush_tlb_kernel_range() still IPIs it. The entry's
 * kernel TLB flush (v7 29/31's COALESCE_TLBI) runs only on CPUs in
 * tick_nohz_full_mask; v8's catch-up (pokelab's reconstruction of an RFC,
 * not posted code) runs on every CPU.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include <asm/tlbflush.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/cpu_events.h>
#include <kernel_shim/xmc.h>
#include <kernel_shim/xmc_verdict.h>
#include <linux/context_tracking.h>
#include <linux/vmalloc.h>
#include <pokelab/ct_entry.h>

#include "booted.h"
#include "stale_tlb.h"

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

	kshim::tlbKernelRangeCleared(r, r + 4096);
	flush_tlb_kernel_range(r, r + 4096);
	EXPECT_EQ(rangeFlushes(kIsolated), before + 1) << "plain flush_tlb_kernel_range() is never gated";
	kshim::tlbKernelRangeCleared(r, r + 4096);
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

/*
 * The flusher's side of the gate (v7 30/31) has no barrier: vunmap's
 * ptep_get_and_clear() is an XCHG on x86-64, and no load passes it. CPU 0
 * the only housekeeping CPU, CPU 1 in user mode: the gate's first read of
 * kernel_cr3_loaded follows the clear with nothing locked between (the
 * local CPU's flush runs after the others' conds). The XCHG must satisfy
 * R8; a clear by plain store (pte_clear(), pokelab.busted=pte-clear-plain)
 * must not, with no smp_mb() in the flush to hide it.
 */
class TlbVunmapClear : public pokelab::test::Booted
{
protected:
	unsigned int cpus() const override { return 2; }
	std::string extraParams() const override
	{
		return "nohz_full=1 pokelab.ct_defer=v7-tlbi" + busted();
	}
	virtual std::string busted() const { return ""; }

	/* Clear the range's PTEs on CPU 0 and flush it, CPU 1 in user mode; R8 reports. */
	unsigned long clearAndFlush()
	{
		unsigned long r = (unsigned long)range, n = 0;
		unsigned long before = kshim::tlbRangeFlushRuns(1);

		stop_ = false;
		kshim::cpuRun(1, [this] {
			pokelab::UserLoopConfig cfg;

			cfg.stop = &stop_;
			cfg.syscallPeriodNs = 60000000000ull;
			pokelab::ctUserLoop(cfg);
		});
		while (ct_state_cpu(1) != CT_STATE_USER)
			std::this_thread::yield();
		kshim::tlbKernelRangeCleared(r, r + 4096);
		flush_tlb_kernel_range_deferrable(r, r + 4096);
		EXPECT_EQ(kshim::tlbRangeFlushRuns(1), before) << "the gate skips CPU 1 in user mode";
		stop_ = true;
		kshim::cpuWait(1);
		kshim::xmcQuiesce();
		for (const kshim::XmcViolation &v : kshim::xmcViolations()) {
			if (v.rule != kshim::XmcRule::MissingFence)
				continue;
			n++;
			EXPECT_EQ(v.cpu, 0);
			EXPECT_EQ(v.pair, kshim::FENCE_PAIR_PT_CHANGE);
		}
		return n;
	}

	std::atomic<bool> stop_{false};
};

class TlbVunmapClearPlain : public TlbVunmapClear
{
protected:
	std::string busted() const override { return " pokelab.busted=pte-clear-plain"; }
	bool xmcViolationsExpected() const override { return true; }
};

TEST_F(TlbVunmapClear, TheXchgOrdersTheClearBeforeTheGate)
{
	EXPECT_EQ(clearAndFlush(), 0u);
}

TEST_F(TlbVunmapClearPlain, APlainStoreClearIsReportedAtTheGate)
{
	EXPECT_EQ(clearAndFlush(), 1u);
}

/*
 * v6 26/29 declares kernel_cr3_loaded a bool and stores it with movl, as
 * the port now does: each entry and exit writes 4 bytes at the flag, the
 * 3 past it with zeroes. In pokelab they are the slot's padding; in the
 * kernel whatever per-CPU data the linker put there
 * (docs/context_tracking.md, "kernel_cr3_loaded's width").
 */
class KernelCr3LoadedWidth : public pokelab::test::Booted
{
protected:
	unsigned int cpus() const override { return 2; }
	std::string extraParams() const override { return "nohz_full=1 pokelab.ct_defer=v7-tlbi"; }
};

TEST_F(KernelCr3LoadedWidth, IsABoolStoredWithMovlAsPosted)
{
	static u8 afterExit[4], afterEntry[4];

	EXPECT_EQ(sizeof(*per_cpu_ptr(&kernel_cr3_loaded, 1)), 1u) << "v6 26/29: bool";
	kshim::cpuRun(1, [] {
		u8 *flag = (u8 *)per_cpu_ptr(&kernel_cr3_loaded, 1);

		memset(flag + 1, 0xa5, 3);
		pokelab::ctReturnToUser();		/* NOTE_SWITCH_TO_USER_CR3: movl $0 */
		memcpy(afterExit, flag, 4);
		memset(flag + 1, 0xa5, 3);
		pokelab::ctEnterKernelForGood();	/* COALESCE_TLBI: movl $1 */
		memcpy(afterEntry, flag, 4);
	});
	kshim::cpuWait(1);
	EXPECT_EQ(afterExit[0], 0);
	EXPECT_EQ(afterEntry[0], 1);
	for (int i = 1; i < 4; i++) {
		EXPECT_EQ(afterExit[i], 0) << "byte " << i << " past the flag, after the exit";
		EXPECT_EQ(afterEntry[i], 0) << "byte " << i << " past the flag, after the entry";
	}
}

/*
 * A range flush covers a change only if it covers all of it: a purge's
 * flush one page short leaves the rest of the last area in every TLB, and
 * a reader of the reused page is told so (R6); the whole range is quiet.
 */
alignas(4096) unsigned char twoPages[2 * 4096];

class TlbPartialFlush : public pokelab::test::Booted
{
protected:
	unsigned int cpus() const override { return 2; }

	/* Change both pages, flush [first, first + @flushPages), read the second page on CPU 1. */
	unsigned long readAfterFlushOf(unsigned int flushPages)
	{
		unsigned long r = (unsigned long)twoPages, before = pokelab::test::staleTlbReports();

		kshim::tlbKernelRangeCleared(r, r + 2 * 4096);
		flush_tlb_kernel_range(r, r + flushPages * 4096);
		kshim::cpuRun(1, [r] { kshim::tlbTouch(r + 4096); });
		kshim::cpuWait(1);
		return pokelab::test::staleTlbReports() - before;
	}
};

class TlbPartialFlushShort : public TlbPartialFlush
{
protected:
	bool xmcViolationsExpected() const override { return true; }
};

TEST_F(TlbPartialFlush, AFlushOfTheWholeChangeCoversIt)
{
	EXPECT_EQ(readAfterFlushOf(2), 0u);
}

TEST_F(TlbPartialFlushShort, AFlushOnePageShortLeavesTheChangeStale)
{
	EXPECT_EQ(readAfterFlushOf(1), 1u);
}

/*
 * vfree() records its PTE clear before the area goes on the lazy list, as
 * the kernel clears them (vunmap_range_noflush()) before
 * free_vmap_area_noflush(): a purge that takes the area at once, here
 * from the hook as another CPU's could, flushes after the change and so
 * covers it. The model used to record the clear after the area was on the
 * list: such a purge's flush predated the change, a later flush of part
 * of the range (a reuse's) marked it returned, and a correct run read a
 * stale TLB (once in about 11 loaded `torture --seed 7 --ops 20000`).
 */
class TlbVfreePurge : public pokelab::test::Booted
{
protected:
	unsigned int cpus() const override { return 2; }
	/* counted below: a report must fail the test, not the fixture */
	bool xmcViolationsExpected() const override { return true; }
};

TEST_F(TlbVfreePurge, APurgeThatTakesTheAreaAtOnceCoversItsClear)
{
	unsigned long before = pokelab::test::staleTlbReports(), r;
	u8 *p = (u8 *)vmalloc(2 * 4096);

	ASSERT_TRUE(p);
	r = (unsigned long)p;
	kshim::vfreeLazyHook = [](const void *) { vm_unmap_aliases(); };
	vfree(p);
	kshim::vfreeLazyHook = nullptr;
	/* a later flush of the first page alone, then a read of the second on CPU 1 */
	flush_tlb_kernel_range(r, r + 4096);
	kshim::cpuRun(1, [r] { kshim::tlbTouch(r + 4096); });
	kshim::cpuWait(1);
	EXPECT_EQ(pokelab::test::staleTlbReports() - before, 0u);
}

} /* namespace */
