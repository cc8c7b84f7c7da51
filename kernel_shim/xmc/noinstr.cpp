// SPDX-License-Identifier: GPL-2.0-only
/*
 * Which text is noinstr, from the section tables: the program's
 * noinstr_text section (kernel_shim/elf_image.h) and each loaded module's
 * (xmcModuleTables()). R1 judges every CPU for a noinstr byte (an entering
 * CPU runs noinstr code before any flush), R2 never exempts a CPU that
 * could still fetch one: so the model must know a module's noinstr text as
 * well as the program's, and from its sections, not from the code under
 * test's is_kernel_noinstr_text() or is_module_noinstr_text_address().
 *
 * The writer reads the ranges at each text write; the loader adds and
 * removes them. A lock of the model's own (task context on both sides).
 */
#include <algorithm>
#include <mutex>
#include <vector>

#include <kernel_shim/elf_image.h>

#define XMC_PRIVATE
#include "xmc_internal.h"

namespace kshim {

namespace xmc {

namespace {

struct NoinstrRange {
	const void *owner;
	unsigned long start, end;
};

std::mutex noinstrLock;
std::vector<NoinstrRange> ranges;
bool programKnown;
/* bumped under noinstrLock at every change of @ranges: a reader's copy is current while equal */
unsigned long rangesGen = 1;

void knowProgram()
{
	unsigned long a, n;

	if (programKnown)
		return;
	programKnown = true;
	if (elfProgramSection("noinstr_text", &a, &n) && n)
		ranges.push_back({nullptr, a, a + n});
}

} /* namespace */

void noinstrAdd(const void *owner, unsigned long start, unsigned long end)
{
	std::lock_guard<std::mutex> lk(noinstrLock);

	knowProgram();
	ranges.push_back({owner, start, end});
	__atomic_store_n(&rangesGen, rangesGen + 1, __ATOMIC_RELEASE);
}

void noinstrRemove(const void *owner)
{
	std::lock_guard<std::mutex> lk(noinstrLock);

	ranges.erase(std::remove_if(ranges.begin(), ranges.end(),
				    [owner](const NoinstrRange &r) { return owner && r.owner == owner; }),
		     ranges.end());
	__atomic_store_n(&rangesGen, rangesGen + 1, __ATOMIC_RELEASE);
}

bool noinstrText(unsigned long addr)
{
	/* asked at every text write: the lock only when a module's ranges came or went */
	for (const NoinstrRange &r : threadCopy(ranges, noinstrLock, rangesGen, knowProgram))
		if (addr >= r.start && addr < r.end)
			return true;
	return false;
}

} /* namespace xmc */

} /* namespace kshim */
