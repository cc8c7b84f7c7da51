// SPDX-License-Identifier: GPL-2.0-only
/*
 * Executable memory near the text (linux/execmem.h).
 */
#include <fcntl.h>
#include <map>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

#include <asm/tlbflush.h>
#include <kernel_shim/xmc.h>
#include <linux/bug.h>
#include <linux/execmem.h>

extern "C" char __executable_start[];

namespace {

constexpr unsigned long kPage = 4096;
unsigned long cursor;

/*
 * The memfd behind every page (-1: not tried yet; -2: the host refuses
 * executable memfd mappings, so pages are anonymous), its size in pages,
 * the offsets freed pages gave back, and page address -> offset.
 */
int memfd = -1;
long memfdPages;
std::vector<long> freeOffsets;
std::map<unsigned long, long> pageOffset;
std::mutex lock;

/* Once: can this host map a memfd page executable? (vm.memfd_noexec, noexec mounts) */
bool memfdUsable()
{
	if (memfd == -1) {
		int fd = memfd_create("pokelab-execmem", MFD_CLOEXEC);
		void *p = fd >= 0 && !ftruncate(fd, kPage)
				  ? mmap(nullptr, kPage, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0)
				  : MAP_FAILED;

		if (p == MAP_FAILED) {
			if (fd >= 0)
				close(fd);
			memfd = -2;
		} else {
			munmap(p, kPage);
			memfd = fd;
			memfdPages = 1;
			freeOffsets.push_back(0);
		}
	}
	return memfd >= 0;
}

long takeOffset()
{
	long off;

	if (!freeOffsets.empty()) {
		off = freeOffsets.back();
		freeOffsets.pop_back();
		return off;
	}
	if (ftruncate(memfd, (memfdPages + 1) * kPage))
		return -1;
	return memfdPages++ * kPage;
}

/* One page at @hint: from the memfd where possible, else anonymous. */
void *mapPage(unsigned long hint)
{
	std::lock_guard<std::mutex> lk(lock);
	long off = memfdUsable() ? takeOffset() : -1;
	void *p;

	if (off >= 0)
		p = mmap((void *)hint, kPage, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED_NOREPLACE, memfd, off);
	else
		p = mmap((void *)hint, kPage, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED || p != (void *)hint) {
		if (p != MAP_FAILED)	/* a kernel without MAP_FIXED_NOREPLACE */
			munmap(p, kPage);
		if (off >= 0)
			freeOffsets.push_back(off);
		return nullptr;
	}
	if (off >= 0)
		pageOffset[hint] = off;
	return p;
}

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
		p = mapPage(hint);
		if (!p)
			continue;
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
	kshim::tlbKernelRangeChanged((unsigned long)ptr, (unsigned long)ptr + kPage);	/* MODEL */
	{
		std::lock_guard<std::mutex> lk(lock);
		auto it = pageOffset.find((unsigned long)ptr);

		if (it != pageOffset.end()) {
			/* Its bytes go; the offset is reused by a later page. */
			fallocate(memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, it->second, kPage);
			freeOffsets.push_back(it->second);
			pageOffset.erase(it);
		}
	}
	flush_tlb_kernel_range((unsigned long)ptr, (unsigned long)ptr + kPage);
}

/* Port of set_memory_rox(), arch/x86/mm/pat/set_memory.c */
int set_memory_rox(unsigned long addr, int numpages)
{
	BUG_ON(mprotect((void *)addr, numpages * kPage, PROT_READ | PROT_EXEC));
	kshim::tlbKernelRangeChanged(addr, addr + numpages * kPage);	/* MODEL */
	/* userspace: cpa_flush() of a few pages; the scenario counts flush_tlb_all() */
	flush_tlb_all();
	return 0;
}

namespace kshim {

bool execmemAlias(const void *addr, int *fd, long *off)
{
	std::lock_guard<std::mutex> lk(lock);
	auto it = pageOffset.find((unsigned long)addr & ~(kPage - 1));

	if (it == pageOffset.end())
		return false;
	*fd = memfd;
	*off = it->second;
	return true;
}

} /* namespace kshim */
