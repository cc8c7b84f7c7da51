// SPDX-License-Identifier: GPL-2.0-only
/*
 * Kernel-range TLB flushes (asm/tlbflush.h).
 */
#include <atomic>

#include <asm/tlbflush.h>
#include <linux/bug.h>
#include <linux/smp.h>
#include <linux/threads.h>

namespace {
std::atomic<unsigned long> flushAllRuns[NR_CPUS];
std::atomic<unsigned long> rangeFlushRuns[NR_CPUS];
} /* namespace */

/* Port of do_flush_tlb_all(), arch/x86/mm/tlb.c (the count stands in for __flush_tlb_all()) */
extern "C" void do_flush_tlb_all(void *info)
{
	(void)info;
	flushAllRuns[smp_processor_id()].fetch_add(1, std::memory_order_relaxed);
}

/* Port of do_kernel_range_flush(), arch/x86/mm/tlb.c (counted, see asm/tlbflush.h) */
extern "C" void do_kernel_range_flush(void *info)
{
	struct flush_tlb_info *f = (struct flush_tlb_info *)info;

	/* userspace: one flush_tlb_one_kernel() per page, counted once per call */
	BUG_ON(f->end <= f->start);
	rangeFlushRuns[smp_processor_id()].fetch_add(1, std::memory_order_relaxed);
}

/* Port of flush_tlb_all(), arch/x86/mm/tlb.c */
void flush_tlb_all(void)
{
	on_each_cpu(do_flush_tlb_all, NULL, 1);
}

/* Port of flush_tlb_kernel_range(), arch/x86/mm/tlb.c */
void flush_tlb_kernel_range(unsigned long start, unsigned long end)
{
	struct flush_tlb_info info = {start, end};

	if ((end - start) >> 12 > tlb_single_page_flush_ceiling)
		on_each_cpu(do_flush_tlb_all, NULL, 1);
	else
		on_each_cpu(do_kernel_range_flush, &info, 1);
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

} /* namespace kshim */
