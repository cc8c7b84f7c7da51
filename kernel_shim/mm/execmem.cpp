// SPDX-License-Identifier: GPL-2.0-only
/*
 * Executable memory near the text (linux/execmem.h).
 */
#include <cstring>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <set>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

#include <asm/sections.h>
#include <asm/tlbflush.h>
#include <kernel_shim/xmc.h>
#include <linux/bug.h>
#include <linux/execmem.h>
#include <linux/vmalloc.h>

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

/*
 * The ROX cache: its pages, the free ones (reused last-freed first), the
 * pages of each allocation of more than one (its first page -> how many;
 * the kernel's busy_areas), one grower at a time.
 */
constexpr unsigned int kCacheGrowPages = 16;
std::set<unsigned long> cachePages;
std::vector<void *> cacheFree;
std::map<unsigned long, unsigned int> cacheBusy;
std::mutex cacheLock;
void (*fillRox)(void *ptr, size_t size);

/* The read-write areas of more than one page: first page -> pages (vfree()'s vm_struct). */
std::map<unsigned long, unsigned int> areaPages;
std::mutex areaLock;

/* PAGE_ALIGN(@size) in pages; at least one (a zero-sized allocation still takes a page) */
unsigned int pagesOf(size_t size)
{
	return size <= kPage ? 1 : (unsigned int)((size + kPage - 1) / kPage);
}

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

/* Unmap a page mapPage() mapped (its memfd offset back to the free list). */
void unmapPage(unsigned long a)
{
	std::lock_guard<std::mutex> lk(lock);
	auto it = pageOffset.find(a);

	BUG_ON(munmap((void *)a, kPage));
	if (it != pageOffset.end()) {
		/* Its bytes go; the offset is reused by a later page. */
		fallocate(memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, it->second, kPage);
		freeOffsets.push_back(it->second);
		pageOffset.erase(it);
	}
}

/* @n contiguous pages in the window near the text, read-write, hidden; or NULL */
void *mapPages(unsigned int n)
{
	unsigned long base = (unsigned long)__executable_start & ~((1ul << 21) - 1);
	bool below = base > (2ul << 30);
	unsigned long lo = below ? base - (1ul << 30) : base + (512ul << 20);
	unsigned long hi = below ? base - (512ul << 20) : base + (1ul << 30);

	if (!cursor)
		cursor = lo;
	for (unsigned int tries = 0; tries < 4096; tries++) {
		unsigned long hint = cursor;
		unsigned int done = 0;

		cursor += (n + 15) / 16 * 16 * kPage + 16 * kPage;
		if (cursor >= hi)
			cursor = lo;
		while (done < n && mapPage(hint + done * kPage))
			done++;
		if (done < n) {
			while (done--)
				unmapPage(hint + done * kPage);
			continue;
		}
		/* userspace: nothing runs it until its owner publishes it */
		kshim::xmcTextHidden((void *)hint, n * kPage);
		return (void *)hint;
	}
	return NULL;
}

/*
 * Port of execmem_cache_populate(), mm/execmem.c: INT3-filled, then ROX
 * (cacheLock held). userspace: at least @n pages, in steps of
 * kCacheGrowPages (the kernel: a PMD-sized area, or just @size).
 */
bool execmem_cache_populate(unsigned int n)
{
	unsigned int grow = (n + kCacheGrowPages - 1) / kCacheGrowPages * kCacheGrowPages;
	void *p = mapPages(grow);

	if (!p)
		return false;
	execmem_fill_trapping_insns(p, grow * kPage, true);
	set_memory_rox((unsigned long)p, grow);
	for (unsigned int i = grow; i--;) {
		cachePages.insert((unsigned long)p + i * kPage);
		cacheFree.push_back((char *)p + i * kPage);
	}
	return true;
}

/* @n contiguous free pages of the cache, taken off the free list; NULL if none (cacheLock held) */
void *cacheTakeRun(unsigned int n)
{
	std::set<unsigned long> free;
	unsigned long run = 0, len = 0;

	if (n == 1) {
		void *p = cacheFree.back();

		cacheFree.pop_back();
		return p;
	}
	for (void *p : cacheFree)
		free.insert((unsigned long)p);
	for (unsigned long a : free) {
		if (len && a == run + len * kPage)
			len++;
		else
			run = a, len = 1;
		if (len == n)
			break;
	}
	if (len < n)
		return NULL;
	std::erase_if(cacheFree, [&](void *p) {
		return (unsigned long)p >= run && (unsigned long)p < run + n * kPage;
	});
	cacheBusy[run] = n;
	return (void *)run;
}

/* Port of execmem_cache_alloc(), mm/execmem.c: @size bytes, in whole pages */
void *execmem_cache_alloc(size_t size)
{
	std::lock_guard<std::mutex> lk(cacheLock);
	unsigned int n = pagesOf(size);
	void *p = cacheFree.empty() ? NULL : cacheTakeRun(n);

	if (!p && (!execmem_cache_populate(n) || !(p = cacheTakeRun(n))))
		return NULL;
	kshim::xmcTextHidden(p, n * kPage);	/* userspace: its own hidden range from now on */
	return p;
}

/* Port of execmem_cache_free(), mm/execmem.c: INT3 over it, back to the cache */
bool execmem_cache_free(void *ptr)
{
	unsigned int n = 1;

	{
		std::lock_guard<std::mutex> lk(cacheLock);
		auto it = cacheBusy.find((unsigned long)ptr);

		if (!cachePages.count((unsigned long)ptr))
			return false;
		if (it != cacheBusy.end()) {
			n = it->second;
			cacheBusy.erase(it);
		}
	}
	/* userspace: its owner is done with it (module gone, program detached) */
	kshim::xmcTextHidden(ptr, n * kPage);
	execmem_fill_trapping_insns(ptr, n * kPage, false);
	std::lock_guard<std::mutex> lk(cacheLock);
	for (unsigned int i = n; i--;)
		cacheFree.push_back((char *)ptr + i * kPage);
	return true;
}

} /* namespace */

/* Port of execmem_alloc(), mm/execmem.c (whole pages; see linux/execmem.h) */
void *execmem_alloc(enum execmem_type type, size_t size)
{
	/*
	 * arch/x86/mm/init.c, execmem_arch_setup() (v7.3): module text comes
	 * from the ROX cache; EXECMEM_BPF is PAGE_KERNEL memory, which
	 * bpf_prog_pack fills and makes ROX itself (set_memory_rox()).
	 */
	if (type == EXECMEM_MODULE_TEXT)
		return execmem_cache_alloc(size);
	return execmem_alloc_rw(type, size);
}

/* Port of execmem_alloc_rw(), mm/execmem.c (never the ROX cache here: linux/execmem.h) */
void *execmem_alloc_rw(enum execmem_type type, size_t size)
{
	unsigned int n = pagesOf(size);
	void *p;

	(void)type;
	p = mapPages(n);
	if (p && n > 1) {
		std::lock_guard<std::mutex> lk(areaLock);

		areaPages[(unsigned long)p] = n;
	}
	return p;
}

/* Port of execmem_free(), mm/execmem.c: to the ROX cache, or vfree() with VM_FLUSH_RESET_PERMS */
void execmem_free(void *ptr)
{
	unsigned long a = (unsigned long)ptr, end;
	unsigned int n = 1;

	if (!ptr || execmem_cache_free(ptr))
		return;
	{
		std::lock_guard<std::mutex> lk(areaLock);
		auto it = areaPages.find(a);

		if (it != areaPages.end()) {
			n = it->second;
			areaPages.erase(it);
		}
	}
	end = a + n * kPage;
	kshim::xmcTextPublish(ptr, n * kPage);	/* userspace: the model forgets the range */
	for (unsigned int i = 0; i < n; i++)
		unmapPage(a + i * kPage);
	kshim::tlbKernelRangeCleared(a, end);	/* MODEL: vunmap clears the PTEs */
	/* vm_reset_perms(): one flush for it and every lazily freed area */
	kshim::vmUnmapAliases(a, end, true);
}

/* Port of set_memory_rox(), arch/x86/mm/pat/set_memory.c */
int set_memory_rox(unsigned long addr, int numpages)
{
	BUG_ON(mprotect((void *)addr, numpages * kPage, PROT_READ | PROT_EXEC));
	kshim::tlbKernelRangeChanged(addr, addr + numpages * kPage);	/* MODEL */
	/*
	 * userspace: cpa_flush() sends __cpa_flush_tlb to every CPU up to 33
	 * pages and flush_tlb_all() above; the ROX cache grows by a 2 MiB page
	 * in the kernel, so flush_tlb_all() here whatever the size.
	 */
	flush_tlb_all();
	return 0;
}

/* Port of execmem_fill_trapping_insns(), arch/x86/mm/init.c */
void execmem_fill_trapping_insns(void *ptr, size_t size, bool writable)
{
	if (writable) {
		memset(ptr, 0xcc, size);	/* INT3_INSN_OPCODE */
		return;
	}
	BUG_ON(!fillRox);	/* userspace: the text-patching layer is not linked in */
	fillRox(ptr, size);
}

namespace kshim {

void execmemSetFill(void (*fill)(void *ptr, size_t size))
{
	fillRox = fill;
}

unsigned long execmemCachePages()
{
	std::lock_guard<std::mutex> lk(cacheLock);

	return cachePages.size();
}

unsigned long execmemCacheFree()
{
	std::lock_guard<std::mutex> lk(cacheLock);

	return cacheFree.size();
}

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
