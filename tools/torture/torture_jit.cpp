// SPDX-License-Identifier: GPL-2.0-only
/*
 * JIT-like images for the kernel TLB model (torture_jit.h).
 *
 * A housekeeping CPU replaces one of kNrImages images as a JIT unloads a
 * program and loads the next: unpublish the old image, wait until no
 * reader holds it, free it through one of the real callers of the lazy
 * purge, then vmalloc() the next of 2-4 pages (first fit: most often where
 * a purge just handed addresses back), write it and publish it:
 *
 *	vfree()				lazy; past lazy_max_pages() it queues
 *					drain_vmap_work, whose purge flushes (1 in 4)
 *	vfree() + vm_unmap_aliases()	the purge at once, on this CPU (2 in 4)
 *	vfree() + execmem_free()	an EXECMEM_BPF image freed: vm_reset_perms()'s
 *					_vm_unmap_aliases() purges the lazy areas (1 in 4)
 *
 * Module unload (torture --module) is the fourth: free_module()'s
 * execmem_free(). The purge's flush_tlb_kernel_range_deferrable() (series
 * v7 30/31) is all that stands between a reader and a translation of
 * freed memory: vmalloc() hands the addresses out again right after it,
 * and the readers (system calls, IRQs and NMIs on every CPU) touch the
 * new images through the model's TLB, so a CPU the flush missed reads a
 * reused address through the old translation (xmc: stale TLB).
 *
 * userspace: readers hold an image by a per-image count, lock-free and
 * async-signal-safe (the NMI handler reads too), where a kernel JIT's
 * callers hold RCU; the writer waits for the count as synchronize_rcu()
 * would.
 */
#include <atomic>
#include <cstring>

#include <asm/processor.h>
#include <asm/tlbflush.h>
#include <linux/execmem.h>
#include <linux/vmalloc.h>

#include "torture_jit.h"

namespace pokelab::torture {

namespace {

constexpr unsigned int kNrImages = 4;
constexpr unsigned long kPage = 4096;

struct alignas(64) Image {
	std::atomic<u8 *> base{nullptr};
	std::atomic<unsigned long> readers{0};
};

Image images[kNrImages];

/*
 * A JIT's output: an INT3-filled image with a RET at its entry and its
 * size in pages in the byte after (the readers' header; never run: the
 * model reads it).
 */
void writeImage(u8 *p, unsigned long size)
{
	memset(p, 0xcc, size);
	p[0] = 0xc3;
	p[1] = (u8)(size / kPage);
}

} /* namespace */

void jitReplace(u64 d)
{
	Image &im = images[(d >> 8) % kNrImages];
	unsigned long size = (2 + (d >> 12) % 3) * kPage;
	u8 *old = im.base.exchange(nullptr, std::memory_order_seq_cst), *p;

	/* the grace period: every reader that might hold @old is done (Dekker with jitTouch()) */
	while (im.readers.load(std::memory_order_seq_cst))
		cpu_relax();
	if (old) {
		vfree(old);
		switch ((d >> 16) & 3) {
		case 1:
		case 2:
			vm_unmap_aliases();
			break;
		case 3: {
			void *x = execmem_alloc(EXECMEM_BPF, kPage);

			if (x) {
				writeImage((u8 *)x, kPage);
				execmem_free(x);
			}
			break;
		}
		default:	/* vfree() alone: the drain on the kworker, past lazy_max_pages() */
			break;
		}
	}
	/* the next program, first fit: most often at addresses a purge just handed back */
	p = (u8 *)vmalloc(size);
	if (!p)
		return;
	writeImage(p, size);
	im.base.store(p, std::memory_order_seq_cst);	/* published */
}

void jitTouch(u64 d)
{
	for (Image &im : images) {
		u8 *p = im.base.load(std::memory_order_seq_cst);

		if (!p)
			continue;
		im.readers.fetch_add(1, std::memory_order_seq_cst);
		if (im.base.load(std::memory_order_seq_cst) == p) {
			unsigned long ip = (unsigned long)__builtin_return_address(0);
			volatile u8 *at;

			/* its header, then a byte of one of its pages */
			kshim::tlbTouch((unsigned long)p + 1, ip);
			at = p + ((d >> 20) % (((volatile u8 *)p)[1] * kPage));
			kshim::tlbTouch((unsigned long)at, ip);
			(void)*at;
		}
		im.readers.fetch_sub(1, std::memory_order_seq_cst);
	}
}

} /* namespace pokelab::torture */
