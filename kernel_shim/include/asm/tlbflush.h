/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Kernel-range TLB flushes, and the IPI callbacks they send.
 *
 * PORT: written fresh after arch/x86/mm/tlb.c (flush_tlb_all(),
 * flush_tlb_kernel_range(), do_flush_tlb_all(), do_kernel_range_flush()).
 * userspace: there is no kernel TLB to flush; the host kernel already shot
 * down its own entries in the mprotect()/munmap() that made the flush
 * necessary. The IPIs and their handlers are real (and traced under the
 * kernel's names); the callbacks count instead of flushing. No INVLPGB,
 * no lazy-TLB filtering.
 *
 * The flushes are cross-calls: task context on a CPU, IRQs on. The
 * callbacks run in the IPI handler. The counters may be read anywhere.
 */
#pragma once

#include <linux/types.h>

struct flush_tlb_info {
	unsigned long start;
	unsigned long end;
};

/* arch/x86/mm/tlb.c: ranges above this many pages flush everything. */
#define tlb_single_page_flush_ceiling 33UL

/* The IPI callbacks (C linkage, so that %ps in the trace prints the kernel's names). */
extern "C" void do_flush_tlb_all(void *info);
extern "C" void do_kernel_range_flush(void *info);

/* Every CPU flushes everything; waits. */
void flush_tlb_all(void);
/* Every CPU flushes [@start, @end) (all of it above the ceiling); waits. */
void flush_tlb_kernel_range(unsigned long start, unsigned long end);

namespace kshim {
/* do_flush_tlb_all() / do_kernel_range_flush() runs on @cpu since boot. */
unsigned long tlbFlushAllRuns(int cpu) noexcept;
unsigned long tlbRangeFlushRuns(int cpu) noexcept;
} /* namespace kshim */
