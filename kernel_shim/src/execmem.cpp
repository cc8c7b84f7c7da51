// SPDX-License-Identifier: GPL-2.0-only
/*
 * Executable memory near the text (linux/execmem.h).
 */
#include <sys/mman.h>

#include <asm/tlbflush.h>
#include <kernel_shim/xmc.h>
#include <linux/bug.h>
#include <linux/execmem.h>

extern "C" char __executable_start[];

namespace {

constexpr unsigned long kPage = 4096;
unsigned long cursor;

} /* namespace */

/* Port of execmem_alloc(), mm/execmem.c (one page; see linux/execmem.h) */
void *execmem_alloc(enum execmem_type type, size_t size)
{
	unsigned long base = (unsigned long)__executable_start & ~((1ul << 21) - 1);
	bool below = base > (2ul << 30);
	unsigned long lo = below ? base - (1ul << 30) : base + (512ul << 20);
	unsigned long hi = below ? base - (512ul << 20) : base + (1ul << 30);

	(void)type;
	if (size > kPage)
		return NULL;
	if (!cursor)
		cursor = lo;
	for (unsigned int tries = 0; tries < 4096; tries++) {
		unsigned long hint = cursor;
		void *p;

		cursor += 16 * kPage;
		if (cursor >= hi)
			cursor = lo;
		p = mmap((void *)hint, kPage, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p == MAP_FAILED)
			continue;
		if (p != (void *)hint) {	/* a kernel without MAP_FIXED_NOREPLACE */
			munmap(p, kPage);
			continue;
		}
		/* userspace: nothing runs it until its owner publishes it */
		kshim::xmcTextHidden(p, kPage);
		return p;
	}
	return NULL;
}

/* Port of execmem_free(), mm/execmem.c: vfree(), then the lazy purge's kernel-range flush */
void execmem_free(void *ptr)
{
	if (!ptr)
		return;
	BUG_ON(munmap(ptr, kPage));
	flush_tlb_kernel_range((unsigned long)ptr, (unsigned long)ptr + kPage);
}

/* Port of set_memory_rox(), arch/x86/mm/pat/set_memory.c */
int set_memory_rox(unsigned long addr, int numpages)
{
	BUG_ON(mprotect((void *)addr, numpages * kPage, PROT_READ | PROT_EXEC));
	/* userspace: cpa_flush() of a few pages; the scenario counts flush_tlb_all() */
	flush_tlb_all();
	return 0;
}
