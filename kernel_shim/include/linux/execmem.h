/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Executable memory for module text and JIT images.
 *
 * PORT: written fresh after include/linux/execmem.h and mm/execmem.c, and
 * set_memory_rox() of arch/x86/mm/pat/set_memory.c, for what pokelab's
 * scenarios need: one page at a time.
 * userspace: an allocation is one read-write page mapped within 1 GiB of
 * the executable (MAP_FIXED_NOREPLACE), in a window 512 MiB away from it
 * (below a PIE's text, above a non-PIE's and its heap), so that a batch's
 * s32 rel_addr reaches it, as the kernel's module area is within 2 GiB of
 * its text. It is hidden from the cross-modifying-code model until its
 * owner publishes it (kshim::xmcTextPublish(): the module went live, the
 * program was attached). set_memory_rox() is mprotect() plus the
 * flush_tlb_all() of cpa_flush(); execmem_free() is munmap() plus the
 * flush_tlb_kernel_range() of the lazy vfree purge.
 * userspace: each page is a page of one memfd, mapped shared, so that the
 * text writer can reach it through a writable view of its own once it is
 * ROX (kshim::execmemAlias(), pokelab/text_alias.h); where the host refuses
 * executable memfd mappings, pages are anonymous and written with pwrite().
 *
 * Task context on a CPU (the flushes are cross-calls).
 */
#pragma once

#include <cstddef>

enum execmem_type {
	EXECMEM_DEFAULT,
	EXECMEM_MODULE_TEXT = EXECMEM_DEFAULT,
	EXECMEM_BPF,
};

/* A page of RW memory for @type near the text, or NULL (@size > 4096, or none free). */
void *execmem_alloc(enum execmem_type type, size_t size);
/* Unmap it and flush the kernel range on every CPU. NULL is a no-op. */
void execmem_free(void *ptr);
/* Make @numpages pages at @addr read-only and executable, then flush every CPU. */
int set_memory_rox(unsigned long addr, int numpages);

namespace kshim {

/*
 * The memfd and the offset behind the execmem page holding @addr: true and
 * *@fd, *@off set if @addr lies in a live, memfd-backed execmem page.
 * Task context, any thread; not async-signal-safe (takes a lock).
 */
bool execmemAlias(const void *addr, int *fd, long *off);

} /* namespace kshim */
