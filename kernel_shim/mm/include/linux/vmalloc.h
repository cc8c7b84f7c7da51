/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * vmalloc() and vfree() with the lazy vmap purge, for the kernel TLB model.
 *
 * PORT: written fresh after mm/vmalloc.c (vmalloc(), vfree(),
 * free_vmap_area_noflush(), __purge_vmap_area_lazy(), vm_unmap_aliases(),
 * _vm_unmap_aliases()), for what pokelab's scenarios need.
 *
 * As in the kernel, vfree() unmaps the pages at once but flushes no TLB:
 * the area goes on a lazy list, its virtual addresses stay reserved, and
 * once more than lazy_max_pages() pages are lazy, vfree() queues
 * drain_vmap_work on the calling CPU's kworker (system_wq, as v7.3's
 * free_vmap_area_noflush()), and there, or at once in a caller that asks
 * (vm_unmap_aliases(), vm_reset_perms()), one flush covers every lazy
 * area from the lowest start to the highest end and the addresses are
 * reused. That single flush, a flush_tlb_kernel_range_deferrable() (the
 * deferral series v7 30/31), is what sends most of the do_flush_tlb_all
 * and do_kernel_range_flush CSDs of the series' census, and what v7 28-31
 * gate.
 *
 * userspace: the "vmalloc space" is one reserved host mapping (64 MiB,
 * PROT_NONE) far from the module area; a vmalloc()ed page is made
 * read-write, a vfree()d one PROT_NONE again (the unmapped PTE), and the
 * model records the clear (kshim::tlbKernelRangeCleared()). The host
 * flushes its own TLB; the flush IPIs and the model's translations are
 * pokelab's. lazy_max_pages() is a model constant (8 pages); the kernel's
 * is 32 MiB scaled by log2 of the CPUs.
 *
 * Task context on a CPU (the purge's flush is a cross-call; vfree() may
 * queue work); not async-signal-safe (a lock).
 */
#pragma once

#include <cstddef>

/* Page-aligned, zeroed, read-write memory of @size bytes, or NULL. */
void *vmalloc(size_t size);
/* Unmap @addr's area and queue it for the lazy purge. NULL is a no-op; a bad pointer WARNs once. */
void vfree(const void *addr);
/* Purge every lazily freed area now, with one flush. */
void vm_unmap_aliases(void);

namespace kshim {

/*
 * mm/vmalloc.c's _vm_unmap_aliases(@start, @end, flush): purge the lazy
 * areas and flush [@start, @end) widened to cover them, in one
 * flush_tlb_kernel_range(); with nothing lazy and @flush, just
 * [@start, @end). vm_reset_perms() calls it for an area freed with
 * VM_FLUSH_RESET_PERMS (every execmem allocation).
 */
void vmUnmapAliases(unsigned long start, unsigned long end, bool flush);

/*
 * Wait for a queued drain_vmap_work to finish (flush_work()); true if one
 * was pending or running. Task context on a CPU; sleeps (lends the CPU to
 * its kworker). A test's or a scenario's wait, not a kernel interface.
 */
bool vmapDrainFlush();

/*
 * Test hook, NULL but in tests: called by vfree() with the area on the
 * lazy list (a purge on another CPU may take it from then on), before
 * vfree() returns. Task context, no lock held.
 */
extern void (*vfreeLazyHook)(const void *addr);

/* Pages on the lazy list now, purges since the process began, and kworker drains among them. */
unsigned long vmapLazyPages() noexcept;
unsigned long vmapPurges() noexcept;
unsigned long vmapDrains() noexcept;

} /* namespace kshim */
