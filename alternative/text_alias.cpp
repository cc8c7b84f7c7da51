// SPDX-License-Identifier: GPL-2.0-only
/*
 * The writable alias of the program's text: see text_alias.h.
 *
 * userspace: the kernel writes text through a temporary mm that only the
 * poking CPU has loaded; a process cannot have a private mm per thread, so
 * the rw- view is visible to every thread while it is mapped. It is never
 * executable, and it exists only while text_mutex is held, as the kernel's
 * poking mapping exists only inside __text_poke(). Mapping it per batch
 * rather than per write keeps the host's TLB shootdowns (one per munmap()
 * of a page other threads may have cached) to one per text_mutex hold.
 */
#include <cerrno>
#include <cstring>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <asm/text-patching.h>
#include <linux/bug.h>
#include <linux/execmem.h>
#include <linux/mutex.h>

#include <pokelab/text_alias.h>

namespace pokelab {

namespace {

unsigned long segStart, segEnd;	/* the moved executable segment, page-aligned */
int memfd = -1;
char *rw;			/* the rw- view, or nullptr */
TextAliasStats stats;

/* Views of execmem pages mapped in this text_mutex hold: (memfd, offset) -> view. */
struct PageView {
	int fd;
	long off;
	char *p;
};
constexpr unsigned int kPageViews = 16;
PageView pageViews[kPageViews];
unsigned int nPageViews;

int findSegment(struct dl_phdr_info *info, size_t, void *)
{
	/* The first object is the program itself. */
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) &ph = info->dlpi_phdr[i];

		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		segStart = (info->dlpi_addr + ph.p_vaddr) & ~4095ul;
		segEnd = (info->dlpi_addr + ph.p_vaddr + ph.p_memsz + 4095) & ~4095ul;
		break;
	}
	return 1;
}

void unmapView()
{
	for (unsigned int i = 0; i < nPageViews; i++) {
		BUG_ON(munmap(pageViews[i].p, 4096));
		stats.unmaps++;
	}
	nPageViews = 0;
	if (!rw)
		return;
	BUG_ON(munmap(rw, segEnd - segStart));
	rw = nullptr;
	stats.unmaps++;
}

/* The rw- view of the execmem page at @page, mapped now if this hold has none. */
char *pageView(unsigned long page)
{
	int fd;
	long off;

	if (!kshim::execmemAlias((const void *)page, &fd, &off))
		return nullptr;
	for (unsigned int i = 0; i < nPageViews; i++)
		if (pageViews[i].fd == fd && pageViews[i].off == off)
			return pageViews[i].p;
	if (nPageViews == kPageViews)
		unmapView();	/* a hold that touches many pages: start again */
	void *p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);

	BUG_ON(p == MAP_FAILED);
	pageViews[nPageViews++] = PageView{fd, off, (char *)p};
	stats.maps++;
	return (char *)p;
}

/* Write @len bytes at @a, within one execmem page, through its view. */
bool writeExecmem(unsigned long a, const void *src, size_t len)
{
	unsigned long page = a & ~4095ul;
	char *v;

	if ((a + len - 1) / 4096 != a / 4096 || !(v = pageView(page)))
		return false;
	memcpy(v + (a - page), src, len);
	return true;
}

/*
 * Move the segment: copy it into the memfd, then map the memfd r-x over it
 * in one mmap(MAP_FIXED), which replaces the old pages atomically; the code
 * running here returns into the same bytes. Only CPU 0 runs (boot).
 */
int moveSegment(std::string &note)
{
	size_t len;
	void *tmp, *p;

	dl_iterate_phdr(findSegment, nullptr);
	len = segEnd - segStart;
	if (!len) {
		note = "no executable segment found";
		return -ENOENT;
	}
	memfd = memfd_create("pokelab-text", MFD_CLOEXEC);
	if (memfd < 0 || ftruncate(memfd, len)) {
		note = std::string("memfd_create/ftruncate: ") + strerror(errno);
		return -errno;
	}
	tmp = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (tmp == MAP_FAILED) {
		note = std::string("mmap of the memfd: ") + strerror(errno);
		return -errno;
	}
	memcpy(tmp, (const void *)segStart, len);
	munmap(tmp, len);
	/*
	 * First ask whether the host lets a memfd be mapped executable at all
	 * (vm.memfd_noexec=2, a noexec mount): if it refuses, the text stays
	 * where it is. The MAP_FIXED itself then cannot fail on permissions;
	 * a failure past that point may have unmapped the old text, and
	 * nothing could run on.
	 */
	tmp = mmap(nullptr, len, PROT_READ | PROT_EXEC, MAP_SHARED, memfd, 0);
	if (tmp == MAP_FAILED) {
		note = std::string("the host refuses an executable memfd mapping: ") +
		       strerror(errno);
		return -errno;
	}
	munmap(tmp, len);
	p = mmap((void *)segStart, len, PROT_READ | PROT_EXEC, MAP_SHARED | MAP_FIXED, memfd, 0);
	BUG_ON(p != (void *)segStart);
	return 0;
}

/* Write through the program segment's view, mapped now if this hold has none. */
void writeSegment(unsigned long a, const void *src, size_t len)
{
	if (!rw) {
		void *p = mmap(nullptr, segEnd - segStart, PROT_READ | PROT_WRITE, MAP_SHARED, memfd,
			       0);

		BUG_ON(p == MAP_FAILED);
		rw = (char *)p;
		stats.maps++;
	}
	memcpy(rw + (a - segStart), src, len);
}

} /* namespace */

const char *textAliasInit(bool want, std::string &note)
{
	if (memfd < 0 && want && moveSegment(note)) {
		if (memfd >= 0)
			close(memfd);
		memfd = -1;
		segStart = segEnd = 0;
	}
	/* userspace: text_mutex's release takes the views down (linux/mutex.h) */
	text_mutex.on_release = unmapView;
	return memfd >= 0 ? "alias" : "procmem";
}

bool textAliasWrite(void *dst, const void *src, size_t len)
{
	unsigned long a = (unsigned long)dst;

	if (memfd >= 0 && a >= segStart && a + len <= segEnd)
		writeSegment(a, src, len);
	else if (!writeExecmem(a, src, len))	/* execmem text, within one page */
		return false;
	stats.writes++;
	/* Not under text_mutex (text_poke_early(), boot's own writes): the views go at once. */
	if (text_mutex.owner.load(std::memory_order_relaxed) != kshim::currentTask())
		unmapView();
	return true;
}

TextAliasStats textAliasStats()
{
	return stats;
}

} /* namespace pokelab */
