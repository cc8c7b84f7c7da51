// SPDX-License-Identifier: GPL-2.0-only
/*
 * execmem's ROX cache with text_poke_copy()/text_poke_set(), and vfree()'s
 * lazy purge: which of them change page tables and which flush whom.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>

#include <asm/tlbflush.h>
#include <asm/text-patching.h>
#include <kernel_shim/xmc.h>
#include <linux/bug.h>
#include <linux/execmem.h>
#include <linux/vmalloc.h>

#include "booted.h"

namespace {

/* The permissions /proc/self/maps shows for the page holding @p ("r-xs", ...). */
std::string perms(const void *p)
{
	std::ifstream maps("/proc/self/maps");
	std::string line;

	while (std::getline(maps, line)) {
		unsigned long lo, hi;
		char pr[8];

		if (sscanf(line.c_str(), "%lx-%lx %7s", &lo, &hi, pr) == 3 &&
		    (unsigned long)p >= lo && (unsigned long)p < hi)
			return pr;
	}
	return "";
}

/* Every CPU's TLB-flush callbacks run so far: full and range. */
unsigned long flushesOn(int cpu)
{
	return kshim::tlbFlushAllRuns(cpu) + kshim::tlbRangeFlushRuns(cpu);
}

class ExecmemRox : public pokelab::test::Booted
{
protected:
	unsigned int cpus() const override { return 2; }
};

TEST_F(ExecmemRox, CachePageIsRoxInt3FilledAndReusedWithoutAFlush)
{
	/* mov eax, imm32; ret */
	const u8 code[6] = {0xb8, 0x78, 0x56, 0x34, 0x12, 0xc3};
	void *warm = execmem_alloc(EXECMEM_MODULE_TEXT, 4096);

	ASSERT_NE(warm, nullptr);
	execmem_free(warm);
	unsigned long flushes = flushesOn(1), changes = kshim::tlbChanges();
	unsigned long pages = kshim::execmemCachePages(), free = kshim::execmemCacheFree();
	u8 *p = (u8 *)execmem_alloc(EXECMEM_MODULE_TEXT, 4096);

	ASSERT_EQ((void *)p, warm);	/* the last page freed is the next handed out */
	EXPECT_EQ(kshim::execmemCacheFree(), free - 1);
	EXPECT_EQ(perms(p).substr(0, 3), "r-x");
	for (unsigned int i = 0; i < 4096; i++)
		ASSERT_EQ(p[i], 0xcc) << "byte " << i;
	EXPECT_EQ(text_poke_copy(p, code, sizeof(code)), p);
	EXPECT_EQ(memcmp(p, code, sizeof(code)), 0);
	kshim::xmcTextPublish(p, 4096);
	EXPECT_EQ(((u32(*)(void))p)(), 0x12345678u);
	execmem_free(p);
	for (unsigned int i = 0; i < sizeof(code); i++)
		EXPECT_EQ(p[i], 0xcc) << "byte " << i << " after free";
	/* the cache neither grew nor lost the page */
	EXPECT_EQ(kshim::execmemCachePages(), pages);
	EXPECT_EQ(kshim::execmemCacheFree(), free);
	/* no page table changed: no flush reached CPU 1, the model saw no change */
	EXPECT_EQ(flushesOn(1), flushes);
	EXPECT_EQ(kshim::tlbChanges(), changes);
}

TEST_F(ExecmemRox, TextPokeSetFillsAcrossAPageBoundary)
{
	u8 *p = (u8 *)execmem_alloc(EXECMEM_MODULE_TEXT, 4096);
	u8 *q = (u8 *)execmem_alloc(EXECMEM_MODULE_TEXT, 4096);
	u8 *lo = std::min(p, q);

	ASSERT_NE(p, nullptr);
	ASSERT_NE(q, nullptr);
	if (std::max(p, q) != lo + 4096)
		GTEST_SKIP() << "the two cache pages are not adjacent";
	EXPECT_EQ(text_poke_set(lo + 4090, 0x90, 12), lo + 4090);
	for (unsigned int i = 0; i < 12; i++)
		EXPECT_EQ(lo[4090 + i], 0x90) << "byte " << i;
	EXPECT_EQ(lo[4089], 0xcc);
	EXPECT_EQ(lo[4102], 0xcc);
	execmem_free(p);
	execmem_free(q);
}

TEST_F(ExecmemRox, TextPokeCopyRefusesTheProgramsOwnText)
{
	u8 byte = 0x90;

	/* WARN once, NULL, nothing written */
	EXPECT_EQ(text_poke_copy((void *)&perms, &byte, 1), nullptr);
	EXPECT_EQ(text_poke_set((void *)&perms, 0x90, 1), nullptr);
	EXPECT_NE(*(const u8 *)(void *)&perms, 0x90);
}

TEST_F(ExecmemRox, VfreeFlushesLazilyInOnePurge)
{
	void *a[9];
	unsigned long purges = kshim::vmapPurges();

	vm_unmap_aliases();
	unsigned long flushes = flushesOn(1);

	for (void *&p : a) {
		p = vmalloc(4096);
		ASSERT_NE(p, nullptr);
		memset(p, 0x5a, 4096);
	}
	for (unsigned int i = 0; i < 8; i++)
		vfree(a[i]);
	/* eight lazy pages: unmapped, not yet flushed */
	EXPECT_EQ(kshim::vmapLazyPages(), 8u);
	EXPECT_EQ(flushesOn(1), flushes);
	EXPECT_EQ(perms(a[0]), "---p");
	unsigned long drains = kshim::vmapDrains();

	/*
	 * The ninth passes lazy_max_pages: as free_vmap_area_noflush() (v7.3)
	 * it queues drain_vmap_work on this CPU's kworker, which runs once
	 * this CPU sleeps; there, one flush for all nine.
	 */
	vfree(a[8]);
	EXPECT_EQ(kshim::vmapLazyPages(), 9u);
	EXPECT_EQ(flushesOn(1), flushes);
	EXPECT_TRUE(kshim::vmapDrainFlush());
	EXPECT_EQ(kshim::vmapDrains(), drains + 1);
	EXPECT_EQ(kshim::vmapLazyPages(), 0u);
	EXPECT_EQ(kshim::vmapPurges(), purges + 1);
	EXPECT_EQ(flushesOn(1), flushes + 1);
	/* the addresses are reused, zeroed */
	void *again = vmalloc(4096);

	ASSERT_NE(again, nullptr);
	EXPECT_EQ(*(const u8 *)again, 0);
	vfree(again);
	vm_unmap_aliases();
}

TEST_F(ExecmemRox, VfreeOfANonexistentAreaWarnsAndReturns)
{
	void *p = vmalloc(4096);
	unsigned long warns = kshim::warnCount();

	ASSERT_NE(p, nullptr);
	vfree((char *)p + 8);	/* not an area's start */
	EXPECT_EQ(kshim::warnCount(), warns + 1);
	EXPECT_EQ(kshim::vmapLazyPages(), 0u);
	vfree(p);
	EXPECT_EQ(kshim::vmapLazyPages(), 1u);
	vm_unmap_aliases();
}

TEST_F(ExecmemRox, ResetPermsFlushWidensToTheLazyAreas)
{
	vm_unmap_aliases();
	unsigned long all = kshim::tlbFlushAllRuns(1), range = kshim::tlbRangeFlushRuns(1);
	void *data = execmem_alloc(EXECMEM_MODULE_DATA, 4096);
	void *alone = execmem_alloc(EXECMEM_MODULE_DATA, 4096);
	void *lazy = vmalloc(4096);

	ASSERT_NE(data, nullptr);
	ASSERT_NE(alone, nullptr);
	ASSERT_NE(lazy, nullptr);
	EXPECT_EQ(perms(data).substr(0, 2), "rw");
	vfree(lazy);
	/* module area to vmalloc space: far above the ceiling, a full flush */
	execmem_free(data);
	EXPECT_EQ(kshim::tlbFlushAllRuns(1), all + 1);
	EXPECT_EQ(kshim::tlbRangeFlushRuns(1), range);
	EXPECT_EQ(kshim::vmapLazyPages(), 0u);
	/* nothing lazy: its own page */
	execmem_free(alone);
	EXPECT_EQ(kshim::tlbFlushAllRuns(1), all + 1);
	EXPECT_EQ(kshim::tlbRangeFlushRuns(1), range + 1);
}

} /* namespace */
