/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Executable memory for module text and JIT images.
 *
 * PORT: written fresh after include/linux/execmem.h and mm/execmem.c (the
 * ROX cache, EXECMEM_ROX_CACHE, x86-64 since v6.14; execmem_alloc_rw(),
 * v6.17), arch/x86/mm/init.c's execmem_fill_trapping_insns(), and
 * set_memory_rox() of arch/x86/mm/pat/set_memory.c, in whole pages: an
 * allocation of @size bytes is PAGE_ALIGN(@size) bytes of contiguous pages
 * (one page for a @size of 0).
 *
 * Two kinds of allocation, as on x86-64 today:
 *  - execmem_alloc(EXECMEM_MODULE_TEXT): pages of the ROX cache. They are
 *    read-only and executable from the start and filled with INT3; their
 *    owner writes them with text_poke_copy(), and execmem_free() fills
 *    them with INT3 again (text_poke_set()) and keeps them for the next
 *    allocation. No page-table change, hence no TLB flush, per allocation.
 *    The cache grows by 16 pages at a time, or as many more as one
 *    allocation needs (the kernel: a 2 MiB page), made ROX by
 *    set_memory_rox(), whose cpa_flush() is a direct flush_tlb_all() that
 *    v7 28-31 do not gate: growing it IPIs every CPU. An allocation of
 *    several pages takes a run of contiguous free ones.
 *  - execmem_alloc_rw() (and execmem_alloc() of any other type, EXECMEM_BPF
 *    included): read-write pages (module memory, text included, which the
 *    loader makes ROX with set_memory_rox(); text bpf_prog_pack and
 *    ftrace's trampolines make ROX the same way). userspace: upstream's
 *    execmem_alloc_rw() takes module text from the ROX cache and makes it
 *    writable (execmem_force_rw()); here it never takes the cache, so a
 *    module's text is not is_rox and needs no execmem_restore_rox().
 *    execmem_free() unmaps them and, as vfree() of a VM_FLUSH_RESET_PERMS
 *    area does (vm_reset_perms()), flushes their range widened to every
 *    lazily freed vmalloc area (kshim::vmUnmapAliases(), linux/vmalloc.h).
 *
 * userspace: pages are mapped within 1 GiB of the executable
 * (MAP_FIXED_NOREPLACE), in a window 512 MiB away from it (below a PIE's
 * text, above a non-PIE's and its heap), so that a batch's s32 rel_addr
 * reaches it, as the kernel's module area is within 2 GiB of its text. It
 * is hidden from the cross-modifying-code model until its owner publishes
 * it (kshim::xmcTextPublish(): the module went live, the program was
 * attached), and hidden again when freed. Each page is a page of one
 * memfd, mapped shared, so that the text writer can reach it through a
 * writable view of its own once it is ROX (kshim::execmemAlias(),
 * pokelab/text_alias.h); where the host refuses executable memfd mappings,
 * pages are anonymous and written with pwrite().
 *
 * Task context on a CPU (the flushes are cross-calls); not
 * async-signal-safe (locks).
 */
#pragma once

#include <cstddef>

/* Port of enum execmem_type, include/linux/execmem.h, v7.3 */
enum execmem_type {
	EXECMEM_DEFAULT,
	EXECMEM_MODULE_TEXT = EXECMEM_DEFAULT,
	EXECMEM_BPF,
	EXECMEM_MODULE_DATA,
};

/*
 * PAGE_ALIGN(@size) bytes of contiguous pages for @type near the text, or
 * NULL (no room): module text from the ROX cache (read-only, INT3-filled;
 * write it with text_poke_copy()), any other type (BPF's too) read-write.
 */
void *execmem_alloc(enum execmem_type type, size_t size);
/* The same read-write, never from the ROX cache, or NULL. */
void *execmem_alloc_rw(enum execmem_type type, size_t size);
/*
 * Free what execmem_alloc() or execmem_alloc_rw() returned, all its pages:
 * ROX cache pages are INT3-filled and kept; any others unmapped, and their
 * range (widened to the lazy vmalloc areas) flushed on every CPU. NULL is a
 * no-op.
 */
void execmem_free(void *ptr);
/* Make @numpages pages at @addr read-only and executable, then flush every CPU. */
int set_memory_rox(unsigned long addr, int numpages);

/*
 * arch/x86/mm/init.c: fill @size bytes at @ptr with INT3; @writable: by a
 * plain store (the page is not yet ROX), else with text_poke_set(). The
 * text-patching layer installs it (kshim::execmemSetFill()); task context.
 */
void execmem_fill_trapping_insns(void *ptr, size_t size, bool writable);

namespace kshim {

/* Install the non-writable half of execmem_fill_trapping_insns() (text_poke_set()). Boot. */
void execmemSetFill(void (*fill)(void *ptr, size_t size));

/* The ROX cache: its pages and how many are free. Any thread; takes a lock. */
unsigned long execmemCachePages();
unsigned long execmemCacheFree();

/*
 * The memfd and the offset behind the execmem page holding @addr: true and
 * *@fd, *@off set if @addr lies in a live, memfd-backed execmem page.
 * Task context, any thread; not async-signal-safe (takes a lock).
 */
bool execmemAlias(const void *addr, int *fd, long *off);

} /* namespace kshim */
