// SPDX-License-Identifier: GPL-2.0-only
/*
 * The text's writable alias (pokelab/text_alias.h): after boot the
 * program's text is a shared r-x memfd mapping; its rw- view exists only
 * while text_mutex is held; no mapping of the process is ever writable and
 * executable; a static-key flip leaves no view behind; an execmem page is
 * a shared memfd page, written through a view of its own once ROX.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <asm/text-patching.h>
#include <kernel_shim/machine.h>
#include <kernel_shim/xmc.h>
#include <linux/execmem.h>
#include <linux/jump_label.h>
#include <linux/mutex.h>
#include <pokelab/text_alias.h>

#include "booted.h"

DEFINE_STATIC_KEY_FALSE(alias_test_key);

namespace {

__attribute__((noinline)) int aliasTestSite()
{
	if (static_branch_unlikely(&alias_test_key))
		return 1;
	return 0;
}

struct MapLine {
	unsigned long lo, hi;
	std::string perms, path;
};

std::vector<MapLine> maps()
{
	std::ifstream f("/proc/self/maps");
	std::vector<MapLine> v;
	std::string line;

	while (std::getline(f, line)) {
		MapLine m;
		char perms[8] = {}, path[512] = {};

		if (sscanf(line.c_str(), "%lx-%lx %7s %*s %*s %*s %511[^\n]", &m.lo, &m.hi, perms,
			   path) < 3)
			continue;
		m.perms = perms;
		m.path = path;
		v.push_back(m);
	}
	return v;
}

unsigned int rwViews()
{
	unsigned int n = 0;

	for (const MapLine &m : maps())
		if (m.path.find("memfd:pokelab-text") != std::string::npos && m.perms[1] == 'w')
			n++;
	return n;
}

void expectNoWritableExecutable()
{
	for (const MapLine &m : maps())
		EXPECT_FALSE(m.perms[1] == 'w' && m.perms[2] == 'x')
			<< std::hex << m.lo << "-" << m.hi << " " << m.perms << " " << m.path;
}

class TextAliasTest : public pokelab::test::Booted
{
protected:
	unsigned int cpus() const override { return 2; }
	void SetUp() override
	{
		pokelab::test::Booted::SetUp();
		/* A host with vm.memfd_noexec=2 (or a noexec mount) keeps the old writer. */
		if (kshim::machineLine().find("poke alias") == std::string::npos)
			GTEST_SKIP() << "the host refuses executable memfd mappings: "
				     << kshim::machineLine();
	}
};

TEST_F(TextAliasTest, ProgramTextIsASharedReadOnlyMemfdMapping)
{
	unsigned long a = (unsigned long)&aliasTestSite;
	bool found = false;

	for (const MapLine &m : maps()) {
		if (a < m.lo || a >= m.hi)
			continue;
		found = true;
		EXPECT_EQ(m.perms, "r-xs");
		EXPECT_NE(m.path.find("memfd:pokelab-text"), std::string::npos) << m.path;
	}
	EXPECT_TRUE(found);
	EXPECT_NE(kshim::machineLine().find("poke alias"), std::string::npos);
	expectNoWritableExecutable();
}

TEST_F(TextAliasTest, ViewExistsOnlyWhileTextMutexIsHeld)
{
	u8 bytes[5];
	pokelab::TextAliasStats s0 = pokelab::textAliasStats();

	memcpy(bytes, (const void *)&aliasTestSite, sizeof(bytes));
	EXPECT_EQ(rwViews(), 0u);
	mutex_lock(&text_mutex);
	/* Two writes (of the bytes already there) in one hold: one view. */
	text_poke((void *)&aliasTestSite, bytes, sizeof(bytes));
	text_poke((void *)&aliasTestSite, bytes, sizeof(bytes));
	EXPECT_EQ(rwViews(), 1u);
	expectNoWritableExecutable();
	mutex_unlock(&text_mutex);
	EXPECT_EQ(rwViews(), 0u);

	pokelab::TextAliasStats s1 = pokelab::textAliasStats();
	EXPECT_EQ(s1.maps - s0.maps, 1u);
	EXPECT_EQ(s1.unmaps - s0.unmaps, 1u);
	EXPECT_EQ(s1.writes - s0.writes, 2u);
}

TEST_F(TextAliasTest, FlipWritesThroughTheViewAndLeavesNoneBehind)
{
	pokelab::TextAliasStats s0 = pokelab::textAliasStats();

	static_branch_enable(&alias_test_key);
	EXPECT_EQ(aliasTestSite(), 1);
	static_branch_disable(&alias_test_key);
	EXPECT_EQ(aliasTestSite(), 0);
	pokelab::TextAliasStats s1 = pokelab::textAliasStats();
	EXPECT_GE(s1.writes - s0.writes, 6u);	/* INT3, tail, first byte, twice */
	EXPECT_EQ(s1.maps - s0.maps, s1.unmaps - s0.unmaps);
	EXPECT_EQ(rwViews(), 0u);
}

TEST_F(TextAliasTest, RoxExecmemPageIsWrittenThroughItsView)
{
	/* mov eax, imm32; ret */
	u8 code[6] = {0xb8, 0x11, 0x11, 0x11, 0x11, 0xc3};
	u32 imm = 0x22222222;
	void *page = execmem_alloc_rw(EXECMEM_MODULE_TEXT, 4096);
	pokelab::TextAliasStats s0 = pokelab::textAliasStats();
	bool found = false;

	ASSERT_NE(page, nullptr);
	memcpy(page, code, sizeof(code));
	set_memory_rox((unsigned long)page, 1);
	for (const MapLine &m : maps()) {
		if ((unsigned long)page < m.lo || (unsigned long)page >= m.hi)
			continue;
		found = true;
		EXPECT_EQ(m.perms, "r-xs");
		EXPECT_NE(m.path.find("memfd:pokelab-execmem"), std::string::npos) << m.path;
	}
	EXPECT_TRUE(found);

	/* A relocation of a module not yet live (nothing runs it): text_poke() on ROX text. */
	mutex_lock(&text_mutex);
	text_poke((u8 *)page + 1, &imm, sizeof(imm));
	smp_text_poke_sync_each_cpu();
	mutex_unlock(&text_mutex);
	kshim::xmcTextPublish(page, 4096);
	EXPECT_EQ(((u32(*)(void))page)(), 0x22222222u);
	pokelab::TextAliasStats s1 = pokelab::textAliasStats();
	EXPECT_EQ(s1.maps - s0.maps, 1u);
	EXPECT_EQ(s1.unmaps - s0.unmaps, 1u);
	expectNoWritableExecutable();
	execmem_free(page);
}

} /* namespace */
