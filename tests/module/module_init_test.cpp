// SPDX-License-Identifier: GPL-2.0-only
/*
 * A module's init memory (module/main.cpp: layout_sections()'s init pass,
 * do_init_module(), do_free_init()) on tests/modules/pokelab_init_mod.o:
 *  - its .init.text, .init.data and .init.rodata are laid out into
 *    MOD_INIT_TEXT, MOD_INIT_DATA and MOD_INIT_RODATA, relocated, the text
 *    made ROX, and its init runs there, a site of a key already on patched
 *    at MODULE_STATE_COMING;
 *  - once it is live, mod->mem[MOD_INIT_*] are cleared (no module address
 *    any more, no kallsyms name), and CPU 0's kworker frees them a grace
 *    period later (flush_module_init_free_work());
 *  - its jump-label sites there are init sites (jump_entry_is_init(), the
 *    mark jump_label_add_module() sets by within_module_init()), and no
 *    flip after the module went live writes them: not while the memory
 *    still exists (their bytes stay), not after it was freed (a write
 *    would fault); a key whose only site is there patches nothing;
 *  - its inline static call there is a STATIC_CALL_SITE_INIT site
 *    (__static_call_init()), and static_call_update() leaves it alone the
 *    same way.
 * The checker must report nothing (the fixture's end), and no WARN fires.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include <kernel_shim/xmc.h>
#include <linux/bug.h>
#include <linux/jump_label.h>
#include <linux/kallsyms.h>
#include <linux/module.h>
#include <linux/static_call.h>
#include <pokelab/module_calls.h>
#include <pokelab/module_load.h>
#include <pokelab/text_poke_stats.h>

#include "booted.h"
#include "module_util.h"

namespace {

using pokelab::test::modPath;
using pokelab::test::pagePerms;

/* A site's address and the bytes there right after the load */
struct Site {
	unsigned long addr;
	u8 bytes[5];
};

unsigned long siteAddr(const struct static_call_site *s)
{
	return (unsigned long)&s->addr + s->addr;
}

unsigned long siteKeyFlags(const struct static_call_site *s)
{
	return ((unsigned long)&s->key + s->key) & STATIC_CALL_SITE_FLAGS;
}

class ModuleInit : public pokelab::test::Booted
{
protected:
	struct module *mod = nullptr;
	unsigned long initPage = 0;
	int (*core)(int) = nullptr;
	struct static_key_false *ownKey = nullptr, *onlyKey = nullptr;

	/*
	 * Load with pokelab_module_key on, so that its init site is patched at
	 * COMING. CPU 0 does not sleep until flush_module_init_free_work():
	 * its kworker, which frees the init memory, cannot run before.
	 */
	void load()
	{
		std::string err;

		static_branch_enable(&pokelab_module_key);
		ASSERT_EQ(load_module_file(modPath("pokelab_init_mod"), &mod, &err), 0) << err;
		initPage = (unsigned long)pokelab_module_reported("pokelab_init_mod", 3) & ~4095ul;
		core = (int (*)(int))find_kallsyms_symbol_value(mod, "pokelab_init_mod_core_sites");
		ownKey = (struct static_key_false *)find_kallsyms_symbol_value(
			mod, "pokelab_init_mod_key");
		onlyKey = (struct static_key_false *)find_kallsyms_symbol_value(
			mod, "pokelab_init_mod_only_key");
		ASSERT_TRUE(initPage && core && ownKey && onlyKey);
		ASSERT_EQ(pagePerms(initPage).substr(0, 3), "r-x")
			<< "the init text is not mapped ROX before the kworker ran";
	}

	bool inInit(unsigned long a) const { return a - initPage < 4096; }

	void TearDown() override
	{
		if (mod) {
			EXPECT_EQ(delete_module(mod), 0);
		}
		static_branch_disable(&pokelab_module_key);
		static_call_update(pokelab_module_call2, &pokelab_module_call_b);
		Booted::TearDown();
	}
};

TEST_F(ModuleInit, InitMemoryLaidOutRunAndFreed)
{
	unsigned long warns = kshim::warnCount();

	load();
	/* seed 40 + table[3] 4 (init data, init rodata), call2 at _b +2, pokelab's key on +100 */
	EXPECT_EQ(pokelab_module_reported("pokelab_init_mod", 1), 146);

	/* live: the init types cleared, the init text no module's text */
	for (enum mod_mem_type t : {MOD_INIT_TEXT, MOD_INIT_DATA, MOD_INIT_RODATA}) {
		EXPECT_EQ(mod->mem[t].base, nullptr) << t;
		EXPECT_EQ(mod->mem[t].size, 0u) << t;
	}
	EXPECT_FALSE(is_module_text_address(initPage));
	EXPECT_FALSE(kernel_text_address(initPage));
	EXPECT_FALSE(within_module(initPage, mod));
	EXPECT_EQ(find_kallsyms_symbol_value(mod, "pokelab_init_mod_init_sites"), 0u);
	EXPECT_EQ(find_kallsyms_symbol_value(mod, "pokelab_init_mod_seed"), 0u);
	EXPECT_EQ(core(1), 103);

	/* the jump-label sites in init text are init sites, the others not */
	std::vector<Site> sites;
	unsigned int core_sites = 0;

	for (unsigned int i = 0; i < mod->num_jump_entries; i++) {
		struct jump_entry *e = &mod->jump_entries[i];
		unsigned long c = jump_entry_code(e);

		EXPECT_EQ(jump_entry_is_init(e), inInit(c)) << "entry " << i;
		if (inInit(c)) {
			Site s{c, {}};

			memcpy(s.bytes, (const void *)c, 5);
			sites.push_back(s);
		} else {
			core_sites++;
		}
	}
	EXPECT_EQ(sites.size(), 3u);
	EXPECT_EQ(core_sites, 2u);

	/* flips after the load: nothing of the init text is written */
	pokelab::TextPokeStats s0 = pokelab::textPokeStats();

	static_branch_enable(onlyKey);
	static_branch_disable(onlyKey);
	EXPECT_EQ(pokelab::textPokeStats().pokes, s0.pokes)
		<< "a key whose only site is in freed-to-be init text was patched";
	static_branch_enable(ownKey);
	EXPECT_EQ(core(1), 1103);
	static_branch_disable(&pokelab_module_key);
	EXPECT_EQ(core(1), 1003);
	for (const Site &s : sites)
		EXPECT_EQ(memcmp((const void *)s.addr, s.bytes, 5), 0)
			<< "an init site was written after the module went live";

	/* the kworker frees it a grace period later */
	flush_module_init_free_work();
	EXPECT_EQ(pagePerms(initPage), "") << "the init text is still mapped";

	/* and flips after that write nothing there (a write would fault) */
	static_branch_disable(ownKey);
	static_branch_enable(&pokelab_module_key);
	static_branch_enable(onlyKey);
	static_branch_disable(onlyKey);
	EXPECT_EQ(core(1), 103);
	EXPECT_EQ(kshim::warnCount(), warns);
}

TEST_F(ModuleInit, InitStaticCallSiteIsLeftAlone)
{
	unsigned long warns = kshim::warnCount();
	std::vector<Site> sites;

	load();
	for (unsigned int i = 0; i < mod->num_static_call_sites; i++) {
		struct static_call_site *cs = &mod->static_call_sites[i];
		unsigned long a = siteAddr(cs);

		/* __static_call_init() marks the site in init text (v7.3's within_module_init()) */
		ASSERT_EQ((siteKeyFlags(cs) & STATIC_CALL_SITE_INIT) != 0, inInit(a))
			<< "static call site " << i << (inInit(a) ? " in" : " outside")
			<< " init text: __static_call_init() must mark a module's sites in init "
			   "text STATIC_CALL_SITE_INIT (v7.3: within_module_init()), and only those";
		if (inInit(a)) {
			Site s{a, {}};

			memcpy(s.bytes, (const void *)a, 5);
			sites.push_back(s);
		}
	}
	ASSERT_EQ(sites.size(), 1u);

	static_call_update(pokelab_module_call2, &pokelab_module_call_a);
	EXPECT_EQ(core(1), 102);
	EXPECT_EQ(memcmp((const void *)sites[0].addr, sites[0].bytes, 5), 0)
		<< "the init static call site was written after the module went live";
	flush_module_init_free_work();
	EXPECT_EQ(pagePerms(initPage), "");
	static_call_update(pokelab_module_call2, &pokelab_module_call_b);
	EXPECT_EQ(core(1), 103);
	EXPECT_EQ(kshim::warnCount(), warns);
}

} /* namespace */
