// SPDX-License-Identifier: GPL-2.0-only
/*
 * vmalloc() / vfree() and the lazy vmap purge (linux/vmalloc.h).
 */
#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <sys/mman.h>
#include <vector>

#include <asm/tlbflush.h>
#include <linux/bug.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>

namespace {

constexpr unsigned long kPage = 4096;
constexpr unsigned long kSpacePages = 16384;	/* 64 MiB */
/* mm/vmalloc.c's lazy_max_pages(): a model constant here (linux/vmalloc.h) */
constexpr unsigned long kLazyMaxPages = 8;

enum PageState : unsigned char { Free, Used, Lazy };

unsigned long space;			/* the reserved "vmalloc space" */
std::vector<PageState> pages;		/* per page of it */
std::map<unsigned long, unsigned long> areas;	/* start -> pages, used or lazy */
unsigned long lazyPages;
std::atomic<unsigned long> purges;
std::atomic<unsigned long> drains;		/* drain_vmap_area_work() runs */
std::mutex areaLock;			/* vmap_area_lock */
std::mutex purgeLock;			/* vmap_purge_lock: one purge at a time */

bool reserveSpace()
{
	void *p;

	if (space)
		return true;
	p = mmap(nullptr, kSpacePages * kPage, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return false;
	space = (unsigned long)p;
	pages.assign(kSpacePages, Free);
	return true;
}

/* Port of __purge_vmap_area_lazy(), mm/vmalloc.c: one flush for all lazy areas, then reuse */
bool purge_vmap_area_lazy(unsigned long start, unsigned long end)
{
	std::vector<std::pair<unsigned long, unsigned long>> lazy;

	{
		std::lock_guard<std::mutex> lk(areaLock);

		for (const auto &[a, n] : areas)
			if (pages[(a - space) / kPage] == Lazy)
				lazy.push_back({a, n});
	}
	for (const auto &[a, n] : lazy) {
		start = std::min(start, a);
		end = std::max(end, a + n * kPage);
	}
	if (lazy.empty())
		return false;
	/* userspace: the deferral series v7 30/31's call, ungated without CONFIG_COALESCE_TLBI */
	flush_tlb_kernel_range_deferrable(start, end);
	/* Only now may the addresses be handed out again: no CPU holds them. */
	std::lock_guard<std::mutex> lk(areaLock);
	for (const auto &[a, n] : lazy) {
		BUG_ON(madvise((void *)a, n * kPage, MADV_DONTNEED));
		std::fill_n(pages.begin() + (a - space) / kPage, n, Free);
		areas.erase(a);
		lazyPages -= n;
	}
	purges.fetch_add(1, std::memory_order_relaxed);
	return true;
}

/* Port of drain_vmap_area_work(), mm/vmalloc.c, v7.3: on system_wq's kworker */
void drain_vmap_area_work(struct work_struct *work)
{
	(void)work;
	std::lock_guard<std::mutex> lk(purgeLock);	/* mutex_lock(&vmap_purge_lock) */

	purge_vmap_area_lazy(~0UL, 0);
	drains.fetch_add(1, std::memory_order_relaxed);	/* userspace: counted */
}

DECLARE_WORK(drain_vmap_work, drain_vmap_area_work);

} /* namespace */

/* Port of vmalloc(), mm/vmalloc.c (first fit in the reserved space; see linux/vmalloc.h) */
void *vmalloc(size_t size)
{
	unsigned long n = (size + kPage - 1) / kPage;
	std::lock_guard<std::mutex> lk(areaLock);

	if (!n || !reserveSpace())
		return NULL;
	for (unsigned long i = 0, run = 0; i < kSpacePages; i++) {
		run = pages[i] == Free ? run + 1 : 0;
		if (run < n)
			continue;

		unsigned long first = i + 1 - n, a = space + first * kPage;

		if (mprotect((void *)a, n * kPage, PROT_READ | PROT_WRITE))
			return NULL;
		std::fill_n(pages.begin() + first, n, Used);
		areas[a] = n;
		return (void *)a;
	}
	return NULL;
}

/*
 * Port of vfree(), mm/vmalloc.c: unmap now, flush lazily. Past
 * lazy_max_pages() free_vmap_area_noflush() (v7.3) queues drain_vmap_work
 * on this CPU's kworker, which purges and sends the flush IPIs.
 */
void vfree(const void *addr)
{
	unsigned long a = (unsigned long)addr, n;
	bool over;

	if (!addr)
		return;
	{
		std::lock_guard<std::mutex> lk(areaLock);
		auto it = areas.find(a);

		/* as the kernel: "Trying to vfree() nonexistent vm area" warns and returns */
		if (WARN_ON_ONCE(it == areas.end() || pages[(a - space) / kPage] != Used))
			return;
		n = it->second;
		BUG_ON(mprotect((void *)a, n * kPage, PROT_NONE));
		/*
		 * MODEL: vunmap clears the PTEs, before the area goes on the
		 * lazy list: a purge that takes it from there flushes after
		 * the change, as the kernel's (vunmap_range_noflush() comes
		 * before free_vmap_area_noflush()).
		 */
		kshim::tlbKernelRangeCleared(a, a + n * kPage);
		std::fill_n(pages.begin() + (a - space) / kPage, n, Lazy);
		lazyPages += n;
		over = lazyPages > kLazyMaxPages;
	}
	if (unlikely(kshim::vfreeLazyHook))	/* userspace: test hook */
		kshim::vfreeLazyHook(addr);
	/* free_vmap_area_noflush(): after this point, the area may be freed at any time */
	if (unlikely(over))
		schedule_work(&drain_vmap_work);
}

/* Port of vm_unmap_aliases(), mm/vmalloc.c */
void vm_unmap_aliases(void)
{
	kshim::vmUnmapAliases(~0UL, 0, false);
}

namespace kshim {

void (*vfreeLazyHook)(const void *addr);

/* Port of _vm_unmap_aliases(), mm/vmalloc.c (no vmap blocks: no per-CPU vb queues) */
void vmUnmapAliases(unsigned long start, unsigned long end, bool flush)
{
	std::lock_guard<std::mutex> lk(purgeLock);

	if (!purge_vmap_area_lazy(start, end) && flush && start < end)
		flush_tlb_kernel_range_deferrable(start, end);	/* userspace: series v7 30/31 */
}

bool vmapDrainFlush()
{
	return flush_work(&drain_vmap_work);
}

unsigned long vmapDrains() noexcept
{
	return drains.load(std::memory_order_relaxed);
}

unsigned long vmapLazyPages() noexcept
{
	std::lock_guard<std::mutex> lk(areaLock);

	return lazyPages;
}

unsigned long vmapPurges() noexcept
{
	return purges.load(std::memory_order_relaxed);
}

} /* namespace kshim */
