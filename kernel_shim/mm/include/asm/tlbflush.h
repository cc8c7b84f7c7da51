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
 *
 * MODEL: a kernel TLB, as bookkeeping (docs/context_tracking.md). Every
 * change of a kernel range's page tables (tlbKernelRangeChanged(), where
 * the kernel would unmap or change protections) gets a generation; each
 * CPU holds translations as of its last full flush (do_flush_tlb_all(),
 * the flush at kernel entry under v7 28-31) or as of the range flushes
 * it ran. A CPU outside an EQS that touches a range (tlbTouch()) through a
 * translation older than a change whose flush_tlb_kernel_range() has
 * returned is a violation, reported by the cross-modifying-code model
 * (rule "stale TLB").
 *
 * v7 28-31 (CONFIG_COALESCE_TLBI, pokelab.ct_defer=v7-tlbi): v7 30/31's
 * flush_tlb_kernel_range_deferrable(), which only mm/vmalloc.c calls,
 * sends its IPIs only to CPUs that are housekeeping or have
 * kernel_cr3_loaded set; plain flush_tlb_kernel_range() and
 * flush_tlb_all() still IPI every CPU. A nohz_full CPU entering the kernel
 * sets kernel_cr3_loaded and then flushes its kernel TLB (v7 29/31's
 * COALESCE_TLBI, only on CPUs in tick_nohz_full_mask), a CPU leaving
 * clears it:
 *
 *	flusher					entering CPU
 *	clear the PTEs (XCHG, generation G)	kernel_cr3_loaded = 1
 *						smp_mb()
 *	read kernel_cr3_loaded: 1 -> IPI	flush: sees G
 *
 * either the flusher sees 1 and IPIs, or the CPU's flush sees G. The
 * flusher's side needs no barrier of its own: vunmap clears each PTE with
 * ptep_get_and_clear(), an XCHG on x86-64, which no later load passes. The
 * posted order (v6 27/29's flush right after the switch, then the store)
 * loses that: pokelab.busted=cr3-loaded-late.
 */
#pragma once

#include <linux/percpu.h>
#include <linux/types.h>

/* v7 28-31: this CPU runs with the kernel CR3 (set at entry before the flush, cleared at exit). */
DECLARE_PER_CPU(bool, kernel_cr3_loaded);	/* series v6 26/29: bool, stored with movl */

/*
 * series v6 26/29: the store of COALESCE_TLBI (1) and NOTE_SWITCH_TO_USER_CR3
 * (0), movl to the bool, as posted: 4 bytes, the 3 past the flag written
 * with zeroes. userspace: the macros' store as C, for the paranoid entry's
 * C model (context_tracking/nmi.cpp); the entry stub's asm has its own.
 * Calling CPU; noinstr-safe, async-signal-safe (one instruction).
 */
static __always_inline void note_kernel_cr3_loaded(int v)
{
	asm volatile("movl %1, %0"
		     : "=m"(*(u32 *)this_cpu_ptr(&kernel_cr3_loaded))
		     : "ir"(v)
		     : "memory");
}

/* Port of struct flush_tlb_info, arch/x86/include/asm/tlbflush.h, v7.3 */
struct flush_tlb_info {
	unsigned long start;
	unsigned long end;
	u64 gen;	/* MODEL: the page-table generation the flush is for */
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
/*
 * As flush_tlb_kernel_range(), but under v7 28-31 (tlbSetCoalesce())
 * skips the CPUs that are not housekeeping and read kernel_cr3_loaded == 0:
 * mm/vmalloc.c's flushes (v7 30/31). No barrier of its own: the caller's
 * PTE clear (tlbKernelRangeCleared(), an XCHG) orders its change before
 * those reads. Task context, IRQs on; waits.
 */
void flush_tlb_kernel_range_deferrable(unsigned long start, unsigned long end);

namespace kshim {
/* do_flush_tlb_all() / do_kernel_range_flush() runs on @cpu since boot. */
unsigned long tlbFlushAllRuns(int cpu) noexcept;
unsigned long tlbRangeFlushRuns(int cpu) noexcept;

/* Gate flush_tlb_kernel_range_deferrable() on kernel_cr3_loaded (v7 28-31)? Boot, before SMP. */
void tlbSetCoalesce(bool on) noexcept;
bool tlbCoalesce() noexcept;

/*
 * MODEL: [@start, @end) of kernel virtual memory had its protections
 * changed (CPA's set_pte(), a plain store); flush_tlb_all() must follow.
 * The store of the checker's PT_CHANGE pair (kernel_shim/cpu_events.h):
 * a gated flush's read of kernel_cr3_loaded would need a full fence after
 * it. Task context, any CPU; takes a lock of the model's own, which the
 * checker does not count as a fence of the kernel's.
 */
void tlbKernelRangeChanged(unsigned long start, unsigned long end);

/*
 * MODEL: [@start, @end) was unmapped the way vunmap does it,
 * vunmap_pte_range()'s ptep_get_and_clear() on each PTE: on x86-64 SMP an
 * XCHG, so the PT_CHANGE store and a full fence, which orders the change
 * before the gate's reads of kernel_cr3_loaded (v7 30/31). Under
 * pokelab.busted=pte-clear-plain the clear is pte_clear()'s plain store,
 * and a gate read with no other fence before it is an R8 violation. Task
 * context, any CPU; the model's lock, as above.
 */
void tlbKernelRangeCleared(unsigned long start, unsigned long end);

/*
 * MODEL: the calling CPU flushes its whole kernel TLB (do_flush_tlb_all(),
 * the flush at kernel entry). Reads the page-table generation; call it
 * after the smp_mb() that orders it. Async-signal-safe, noinstr-safe (no
 * call out, no lock).
 */
void tlbFlushLocal() noexcept;

/*
 * MODEL: the calling CPU, in the kernel, uses a translation of @addr (it
 * runs or reads module or JIT memory there). Checks the TLB rule; a
 * violation goes to the cross-modifying-code model's report. @ip: where
 * (0: the caller). Task context on a CPU.
 */
void tlbTouch(unsigned long addr, unsigned long ip = 0);

/* How many kernel-range changes the model has seen, and touches checked. */
unsigned long tlbChanges() noexcept;
unsigned long tlbTouches() noexcept;
} /* namespace kshim */
