// SPDX-License-Identifier: GPL-2.0-only
/*
 * The v7 30/31 review's race (D. Hansen, 2025-11-19/21), replayed with the
 * interleaving forced. CPU 1, isolated, enters the kernel from user mode
 * while CPU 0 changes a kernel range's page tables and flushes it; the hook
 * parks CPU 1 inside the window between kernel_cr3_loaded and its kernel
 * TLB flush until CPU 0's flush returned (or 50 ms passed):
 *
 *	v7 order (cr3-loaded-late)		the fixed order
 *	CPU 1: flush (old tables)		CPU 1: kernel_cr3_loaded = 1; smp_mb()
 *	CPU 0: clear (XCHG)			CPU 0: clear (XCHG)
 *	CPU 0: reads 0, no IPI, returns		CPU 0: reads 1, IPIs CPU 1, waits
 *	CPU 1: kernel_cr3_loaded = 1		CPU 1: flush (new tables), takes the IPI
 *	CPU 1: touches the range: stale		CPU 1: touches the range: current
 *
 * The model's TLB rule must report the first and not the second.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <atomic>

#include <asm/processor.h>
#include <asm/tlbflush.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/xmc.h>
#include <kernel_shim/xmc_verdict.h>
#include <linux/execmem.h>
#include <pokelab/ct_entry.h>

#include "booted.h"
#include "stale_tlb.h"

namespace {

std::atomic<bool> inWindow, flushed, go;
unsigned long range;

void parkInWindow(unsigned int cpu)
{
	u64 until = kshim::clockNs() + 50000000ull;

	if (cpu != 1 || !go.load())
		return;
	go.store(false);
	inWindow.store(true);
	while (!flushed.load() && kshim::clockNs() < until)
		cpu_relax();
}

void touchRange(void *)
{
	kshim::tlbTouch(range);
}

class TlbiReplay : public pokelab::test::Booted
{
protected:
	unsigned int cpus() const override { return 2; }

	/* Returns the number of stale-TLB violations the race produced. */
	unsigned long race()
	{
		void *page = execmem_alloc_rw(EXECMEM_MODULE_DATA, 4096);
		unsigned long before;

		EXPECT_NE(page, nullptr);
		if (!page)
			return 0;
		range = (unsigned long)page;
		inWindow = flushed = go = false;
		pokelab::entryCr3Hook = parkInWindow;
		before = pokelab::test::staleTlbReports();

		kshim::cpuRun(1, [] {
			pokelab::ctReturnToUser();
			EXPECT_EQ(*per_cpu_ptr(&kernel_cr3_loaded, 1), 0);
			go.store(true);
			pokelab::ctSyscall(touchRange, nullptr);
			pokelab::ctEnterKernelForGood();
		});
		while (!inWindow.load())
			cpu_relax();
		unsigned long ipis = kshim::tlbRangeFlushRuns(1);

		kshim::tlbKernelRangeCleared(range, range + 4096);
		flush_tlb_kernel_range_deferrable(range, range + 4096);
		flushed.store(true);
		kshim::cpuWait(1);
		flushIpis = kshim::tlbRangeFlushRuns(1) - ipis;
		pokelab::entryCr3Hook = nullptr;

		unsigned long after = pokelab::test::staleTlbReports(range);

		execmem_free(page);
		return after - before;
	}

	unsigned long flushIpis = 0;	/* CPU 1's range flushes from the race's flush */
};

class TlbiFixed : public TlbiReplay
{
protected:
	std::string extraParams() const override
	{
		return "nohz_full=1 pokelab.ct_defer=v7-tlbi";
	}
};

class TlbiCr3LoadedLate : public TlbiReplay
{
protected:
	std::string extraParams() const override
	{
		return "nohz_full=1 pokelab.ct_defer=v7-tlbi pokelab.busted=cr3-loaded-late";
	}
	bool xmcViolationsExpected() const override { return true; }
};

TEST_F(TlbiFixed, TheFlushAtEntryCoversTheRace)
{
	EXPECT_EQ(race(), 0u);
	/* the flusher saw kernel_cr3_loaded = 1 and sent CPU 1 its IPI */
	EXPECT_EQ(flushIpis, 1u);
	EXPECT_GT(kshim::tlbTouches(), 0u);
}

TEST_F(TlbiCr3LoadedLate, TheLateStoreLosesTheFlush)
{
	EXPECT_EQ(race(), 1u);
	/* the flusher read 0 and skipped CPU 1 */
	EXPECT_EQ(flushIpis, 0u);
}

/* Not isolated, or no gate: every CPU gets the flush, whatever the order. */
class TlbiOff : public TlbiReplay
{
protected:
	std::string extraParams() const override { return "nohz_full=1 pokelab.ct_defer=v7"; }
};

TEST_F(TlbiOff, V7WithoutTheGateIpisEveryCpu)
{
	unsigned long ipis = kshim::tlbRangeFlushRuns(1);
	void *page = execmem_alloc_rw(EXECMEM_MODULE_DATA, 4096);

	ASSERT_NE(page, nullptr);
	kshim::cpuRun(1, [] {
		pokelab::ctReturnToUser();
		go.store(true);
		while (go.load())
			cpu_relax();
		pokelab::ctEnterKernelForGood();
	});
	while (!go.load())
		cpu_relax();
	execmem_free(page);	/* its range flush reaches CPU 1 in user mode */
	go.store(false);
	kshim::cpuWait(1);
	EXPECT_EQ(kshim::tlbRangeFlushRuns(1), ipis + 1);
}

} /* namespace */
