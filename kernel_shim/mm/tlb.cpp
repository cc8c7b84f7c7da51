// SPDX-License-Identifier: GPL-2.0-only
/*
 * Kernel-range TLB flushes (asm/tlbflush.h), v7 30/31's gate on
 * kernel_cr3_loaded for mm/vmalloc.c's flushes, and the model of a kernel TLB that checks them.
 *
 * MODEL: the page-table changes of kernel ranges are kept in a ring of
 * records, each with its generation, the CPUs that ran a range flush for
 * it and whether its flush_tlb_kernel_range() returned. A CPU's kernel TLB
 * is the generation of its last full flush. One writer at a time adds
 * records (a lock, task context); the flush handlers and tlbTouch() read
 * them without one, as a seqcount: a record's generation is 0 while it is
 * refilled, and a reader that finds it changed after reading the fields
 * ignores what it read. A CPU that has not flushed for 256 changes is no
 * longer checked against the oldest of them.
 */
#include <algorithm>
#include <atomic>
#include <mutex>

#include <asm/barrier.h>
#include <asm/tlbflush.h>
#include <kernel_shim/busted.h>
#include <kernel_shim/torture.h>
#include <kernel_shim/xmc.h>
#include <linux/bug.h>
#include <linux/cpumask.h>
#include <linux/sched/isolation.h>
#include <linux/smp.h>
#include <linux/threads.h>

/*
 * series v6 26/29: a bool, as posted (arch/x86/entry/syscall_64.c, = true),
 * though every store the series makes to it is a movl: 4 bytes at a
 * 1-byte variable (note_kernel_cr3_loaded(), docs/context_tracking.md).
 * userspace: pokelab's per-CPU slots are a cache line each, so the 3 bytes
 * past the bool are the slot's padding; the kernel's are its neighbours'.
 */
DEFINE_PER_CPU(bool, kernel_cr3_loaded);

namespace {

std::atomic<unsigned long> flushAllRuns[NR_CPUS];
std::atomic<unsigned long> rangeFlushRuns[NR_CPUS];
bool coalesce;

constexpr unsigned int kChanges = 256;
constexpr unsigned int kWords = NR_CPUS / (8 * sizeof(unsigned long));

struct Change {
	std::atomic<u64> gen{0};		/* 0: being filled or never used */
	std::atomic<unsigned long> start{0}, end{0};	/* relaxed: the seqcount orders them */
	std::atomic<unsigned long> covered[kWords];	/* CPUs that ran a range flush for it */
	std::atomic<unsigned long> reported[kWords];	/* CPUs reported stale on it */
	std::atomic<bool> returned{false};	/* its flush returned */
};

Change changes[kChanges];
std::mutex changeLock;
/* The page tables' generation: bumped by each change (the "page-table update"). */
std::atomic<u64> ptGen{0};
/* Per CPU: ptGen as of its last full flush. */
std::atomic<u64> fullGen[NR_CPUS];
std::atomic<unsigned long> nrTouches;

bool overlaps(const Change &c, unsigned long start, unsigned long end)
{
	return c.start.load(std::memory_order_relaxed) < end &&
	       start < c.end.load(std::memory_order_relaxed);
}

/* @c's range lies inside [@start, @end) */
bool contains(const Change &c, unsigned long start, unsigned long end)
{
	return start <= c.start.load(std::memory_order_relaxed) &&
	       c.end.load(std::memory_order_relaxed) <= end;
}

/* The flush of [@start, @end) as of generation @upTo returned: its changes are done. */
void flushReturned(unsigned long start, unsigned long end, u64 upTo)
{
	for (Change &c : changes) {
		u64 g = c.gen.load(std::memory_order_acquire);

		if (g && g <= upTo && overlaps(c, start, end))
			c.returned.store(true, std::memory_order_release);
	}
}

/* v7 28-31: IPI a CPU only if it is housekeeping or runs with the kernel CR3. */
/* Port of flush_tlb_kernel_cond(), arch/x86/mm/tlb.c, series v7 30/31 */
bool flush_tlb_kernel_cond(int cpu, void *info)
{
	(void)info;
	/*
	 * Pairs with the smp_mb() between the entering CPU's store of
	 * kernel_cr3_loaded and its flush (the entry stub): what orders the
	 * caller's page-table change before this load is the change itself,
	 * vunmap's ptep_get_and_clear(), a locked XCHG on x86-64.
	 */
	if (housekeeping_cpu(cpu, HK_TYPE_KERNEL_NOISE))
		return true;
	/* userspace: the checker's store→load rule, the page-table change before this load */
	kshim::xmcFenceCheck(kshim::FENCE_PAIR_PT_CHANGE);
	torture_delay(kshim::TortureDelay::FlusherBeforeRead);	/* userspace: delay point */
	if (BUSTED(GATE_NO_CR3))	/* userspace: BUSTED, the kernel_cr3_loaded test deleted */
		return false;
	return READ_ONCE(*per_cpu_ptr(&kernel_cr3_loaded, cpu));
}

} /* namespace */

/* Port of do_flush_tlb_all(), arch/x86/mm/tlb.c (counted; __flush_tlb_all() is the model's) */
extern "C" void do_flush_tlb_all(void *info)
{
	(void)info;
	flushAllRuns[smp_processor_id()].fetch_add(1, std::memory_order_relaxed);
	kshim::tlbFlushLocal();
}

/* Port of do_kernel_range_flush(), arch/x86/mm/tlb.c (counted, see asm/tlbflush.h) */
extern "C" void do_kernel_range_flush(void *info)
{
	struct flush_tlb_info *f = (struct flush_tlb_info *)info;
	int cpu = smp_processor_id();

	/* userspace: one flush_tlb_one_kernel() per page, counted once per call */
	BUG_ON(f->end <= f->start);
	rangeFlushRuns[cpu].fetch_add(1, std::memory_order_relaxed);
	/*
	 * MODEL: this CPU holds no translation of the range older than the
	 * caller's change; a change only part of which the flush covered
	 * keeps the rest's: not covered (a purge flush a page short).
	 */
	for (Change &c : changes) {
		u64 g = c.gen.load(std::memory_order_acquire);

		if (g && g <= f->gen && contains(c, f->start, f->end))
			c.covered[cpu / BITS_PER_LONG].fetch_or(1UL << (cpu % BITS_PER_LONG),
								std::memory_order_release);
	}
}

/* Port of flush_tlb_all(), arch/x86/mm/tlb.c */
void flush_tlb_all(void)
{
	u64 g = ptGen.load(std::memory_order_seq_cst);

	on_each_cpu(do_flush_tlb_all, NULL, 1);
	flushReturned(0, ~0UL, g);	/* userspace: the model */
}

/*
 * flush_tlb_kernel_range() and the deferral series' v7 30/31
 * flush_tlb_kernel_range_deferrable(): both send @fn to every CPU that
 * @cond allows (all of them for NULL) and wait.
 * userspace: one flush_tlb_info with the model's generation; upstream's
 * kernel_tlb_flush_all() / kernel_tlb_flush_range() are the @fn choice.
 */
/* Port of __flush_tlb_kernel_range(), arch/x86/mm/tlb.c, series v7 30/31 */
static void __flush_tlb_kernel_range(smp_cond_func_t cond, unsigned long start, unsigned long end)
{
	struct flush_tlb_info info = {start, end, ptGen.load(std::memory_order_seq_cst)};
	smp_call_func_t fn = (end - start) >> 12 > tlb_single_page_flush_ceiling
				     ? do_flush_tlb_all
				     : do_kernel_range_flush;

	/* no barrier: the caller's PTE clear (an XCHG) orders it before the cond's reads */
	if (cond)
		on_each_cpu_cond(cond, fn, &info, 1);
	else
		on_each_cpu(fn, &info, 1);
	flushReturned(start, end, info.gen);	/* userspace: the model */
}

/* Port of flush_tlb_kernel_range(), arch/x86/mm/tlb.c: every CPU, never deferred */
void flush_tlb_kernel_range(unsigned long start, unsigned long end)
{
	__flush_tlb_kernel_range(NULL, start, end);
}

/*
 * Port of flush_tlb_kernel_range_deferrable(), deferral series v7 30/31
 * (arch/x86/mm/tlb.c): mm/vmalloc.c's flushes, which skip the CPUs in user
 * mode under CONFIG_COALESCE_TLBI (their entry flushes instead).
 */
void flush_tlb_kernel_range_deferrable(unsigned long start, unsigned long end)
{
	__flush_tlb_kernel_range(coalesce ? flush_tlb_kernel_cond : NULL, start, end);
}

namespace kshim {

unsigned long tlbFlushAllRuns(int cpu) noexcept
{
	return flushAllRuns[cpu].load(std::memory_order_relaxed);
}

unsigned long tlbRangeFlushRuns(int cpu) noexcept
{
	return rangeFlushRuns[cpu].load(std::memory_order_relaxed);
}

void tlbSetCoalesce(bool on) noexcept
{
	coalesce = on;
	/* every CPU starts in the kernel, on the kernel CR3, its TLB current */
	for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++) {
		*per_cpu_ptr(&kernel_cr3_loaded, cpu) = 1;
		fullGen[cpu].store(ptGen.load());
	}
}

noinstr bool tlbCoalesce() noexcept
{
	return coalesce;
}

/* The model's record of a change of [@start, @end); returns its generation. Under changeLock. */
static u64 recordChange(unsigned long start, unsigned long end)
{
	u64 g = ptGen.load(std::memory_order_relaxed) + 1;
	Change &c = changes[g % kChanges];

	c.gen.store(0, std::memory_order_relaxed);
	/* pairs with the acquire fence in tlbTouch(): gen reads 0 before the fields change */
	std::atomic_thread_fence(std::memory_order_release);
	c.start.store(start, std::memory_order_relaxed);
	c.end.store(end, std::memory_order_relaxed);
	for (unsigned int w = 0; w < kWords; w++) {
		c.covered[w].store(0, std::memory_order_relaxed);
		c.reported[w].store(0, std::memory_order_relaxed);
	}
	c.returned.store(false, std::memory_order_relaxed);
	c.gen.store(g, std::memory_order_release);
	return g;
}

void tlbKernelRangeChanged(unsigned long start, unsigned long end)
{
	std::lock_guard<std::mutex> lk(changeLock);
	u64 g = recordChange(start, end);

	/*
	 * The page-table update itself, a plain store as set_pte() is (CPA's
	 * protection changes): its flush is flush_tlb_all(), never gated.
	 */
	ptGen.store(g, std::memory_order_release);
	kshim::cpuFenceStore(kshim::FENCE_PAIR_PT_CHANGE);
}

void tlbKernelRangeCleared(unsigned long start, unsigned long end)
{
	std::lock_guard<std::mutex> lk(changeLock);
	u64 g = recordChange(start, end);

	if (BUSTED(PTE_CLEAR_PLAIN)) {	/* userspace: BUSTED, pte_clear()'s plain store */
		ptGen.store(g, std::memory_order_release);
		kshim::cpuFenceStore(kshim::FENCE_PAIR_PT_CHANGE);
		return;
	}
	/*
	 * vunmap_pte_range()'s ptep_get_and_clear(): on x86-64 SMP an XCHG,
	 * locked by definition, so a full fence; the host's exchange is one
	 * too, and the checker counts it as the kernel's.
	 */
	ptGen.exchange(g, std::memory_order_seq_cst);
	kshim::cpuFenceStore(kshim::FENCE_PAIR_PT_CHANGE);
	kshim::cpuFenceEvent();
}

noinstr void tlbFlushLocal() noexcept
{
	int cpu = smp_processor_id();

	if (cpu >= 0)
		fullGen[cpu].store(ptGen.load(std::memory_order_seq_cst), std::memory_order_relaxed);
}

void tlbTouch(unsigned long addr, unsigned long ip)
{
	int cpu = smp_processor_id();
	u64 mine;

	if (cpu < 0)
		return;
	nrTouches.fetch_add(1, std::memory_order_relaxed);
	mine = fullGen[cpu].load(std::memory_order_relaxed);
	for (Change &c : changes) {
		u64 g = c.gen.load(std::memory_order_acquire);
		unsigned long bit = 1UL << (cpu % BITS_PER_LONG);

		unsigned long s = c.start.load(std::memory_order_relaxed);
		unsigned long e = c.end.load(std::memory_order_relaxed);

		if (!g || g <= mine || addr < s || addr >= e ||
		    !c.returned.load(std::memory_order_acquire) ||
		    (c.covered[cpu / BITS_PER_LONG].load(std::memory_order_acquire) & bit))
			continue;
		/* the record was refilled for a later change while it was read: not this one */
		std::atomic_thread_fence(std::memory_order_acquire);
		if (c.gen.load(std::memory_order_relaxed) != g)
			continue;
		/* one report per CPU and change */
		if (c.reported[cpu / BITS_PER_LONG].fetch_or(bit) & bit)
			continue;
		kshim::xmcTlbStale(cpu, s, e, g, mine,
				   ip ? ip : (unsigned long)__builtin_return_address(0));
	}
}

unsigned long tlbChanges() noexcept
{
	return ptGen.load(std::memory_order_relaxed);
}

unsigned long tlbTouches() noexcept
{
	return nrTouches.load(std::memory_order_relaxed);
}

} /* namespace kshim */
