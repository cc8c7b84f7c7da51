// SPDX-License-Identifier: GPL-2.0-only
/*
 * Module memory of more than a page per type (module/main.cpp:
 * module_memory_alloc(), move_module()): tests/modules/pokelab_big_mod.o
 * has over 8 KiB of text, 12 KiB of rodata and 28 KiB of data and bss.
 * Each type gets its whole PAGE_ALIGN()ed size of contiguous execmem
 * (execmem_alloc_rw() of N pages), its sections copied and relocated
 * there; the text, every page of it, is ROX before the module goes live;
 * a jump-label site and an inline static call in the third page of text
 * are patched while CPU 1 runs them; after the unload every page is gone.
 * The loader used to refuse any type over 4096 bytes (-ENOMEM).
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include <kernel_shim/cpu.h>
#include <kernel_shim/sched.h>
#include <linux/jump_label.h>
#include <linux/kallsyms.h>
#include <linux/module.h>
#include <linux/static_call.h>
#include <pokelab/module_calls.h>
#include <pokelab/module_load.h>

#include "booted.h"
#include "module_util.h"
#include "wait_for.h"

namespace {

using pokelab::test::modPath;
using pokelab::test::pagePerms;

class ModuleMemory : public pokelab::test::Booted
{
};

TEST_F(ModuleMemory, EveryTypeOverAPage)
{
	struct module *mod = nullptr;
	std::string err;

	ASSERT_EQ(load_module_file(modPath("pokelab_big_mod"), &mod, &err), 0) << err;
	/* rodata[2] 3 + data[3071] 5 + bss[4095] 6 + pokelab_module_call2(0) at _b 2 */
	EXPECT_EQ(pokelab_module_reported("pokelab_big_mod", 1), 16);

	struct {
		enum mod_mem_type type;
		unsigned int atLeast;
	} want[] = {{MOD_TEXT, 3 * 4096}, {MOD_RODATA, 3 * 4096}, {MOD_DATA, 7 * 4096}};
	std::vector<std::pair<unsigned long, unsigned int>> ranges;

	for (const auto &w : want) {
		const struct module_memory *m = &mod->mem[w.type];
		unsigned long base = (unsigned long)m->base;

		ASSERT_NE(m->base, nullptr) << w.type;
		EXPECT_GE(m->size, w.atLeast) << w.type;
		EXPECT_EQ(base % 4096, 0u) << w.type;
		EXPECT_EQ(m->size % 4096, 0u) << w.type;
		EXPECT_TRUE(within_module(base + m->size - 1, mod)) << w.type;
		ranges.push_back({base, m->size});
	}
	/* every page of the text is r-x, every page of data rw- */
	const struct module_memory *text = &mod->mem[MOD_TEXT];

	for (unsigned int off = 0; off < text->size; off += 4096)
		EXPECT_EQ(pagePerms((unsigned long)text->base + off).substr(0, 3), "r-x") << off;
	for (unsigned int off = 0; off < mod->mem[MOD_DATA].size; off += 4096)
		EXPECT_EQ(pagePerms((unsigned long)mod->mem[MOD_DATA].base + off).substr(0, 3),
			  "rw-") << off;
	EXPECT_TRUE(is_module_text_address((unsigned long)text->base + text->size - 1));

	auto site = (int (*)(void))find_kallsyms_symbol_value(mod, "pokelab_big_mod_site");
	auto key = (struct static_key_false *)find_kallsyms_symbol_value(mod,
									  "pokelab_big_mod_key");
	auto ro = (const unsigned int *)find_kallsyms_symbol_value(mod, "pokelab_big_mod_ro");

	ASSERT_TRUE(site && key && ro);
	EXPECT_GE((unsigned long)site - (unsigned long)text->base, 8192u)
		<< "the site is not past the second page of text";
	EXPECT_TRUE(within_module_mem_type((unsigned long)&ro[3071], mod, MOD_RODATA));
	EXPECT_EQ(ro[2], 3u);
	EXPECT_EQ(site(), 13);

	/* CPU 1 runs the site while its key flips and its static call is retargeted */
	std::atomic<bool> stop{false};
	std::atomic<unsigned long> runs{0}, bad{0};

	kshim::cpuRun(1, [&] {
		if (!try_module_get(mod)) {
			bad.store(1);
			return;
		}
		while (!stop.load(std::memory_order_relaxed)) {
			int v = site();

			if (v != 12 && v != 13 && v != 112 && v != 113)
				bad.fetch_add(1);
			runs.fetch_add(1, std::memory_order_relaxed);
			kshim::schedTick();
		}
		module_put(mod);
	});
	EXPECT_TRUE(pokelab::test::waitFor([&] { return runs.load() >= 1000; }, "CPU 1's runs"));
	static_branch_enable(key);
	EXPECT_EQ(site(), 113);
	static_call_update(pokelab_module_call2, &pokelab_module_call_a);
	EXPECT_EQ(site(), 112);
	unsigned long r0 = runs.load();

	EXPECT_TRUE(pokelab::test::waitFor([&] { return runs.load() >= r0 + 1000; },
					   "CPU 1's runs after the flip"));
	static_branch_disable(key);
	static_call_update(pokelab_module_call2, &pokelab_module_call_b);
	stop.store(true);
	kshim::cpuWait(1);
	EXPECT_EQ(bad.load(), 0u);
	EXPECT_EQ(site(), 13);

	ASSERT_EQ(delete_module(mod), 0);
	for (const auto &[base, size] : ranges) {
		for (unsigned int off = 0; off < size; off += 4096)
			EXPECT_EQ(pagePerms(base + off), "") << "a page of the module left mapped";
		EXPECT_FALSE(is_module_address(base + size - 1));
	}
}

/*
 * __module_address() answers outside the bounds of all module memory at
 * once (mod_tree.addr_min/addr_max, kernel/module/main.c) and looks inside
 * them: every byte at the edges of each type is its module's, the bytes
 * just outside the lowest and highest are no module's, and once the module
 * is gone nothing of it is found, though the bounds stay wide.
 */
TEST_F(ModuleMemory, LookupAtTheEdgesOfEveryType)
{
	struct module *mod = nullptr;
	std::string err;
	unsigned long lo = -1UL, hi = 0;

	ASSERT_EQ(load_module_file(modPath("pokelab_big_mod"), &mod, &err), 0) << err;
	for_each_mod_mem_type(type) {
		const struct module_memory *m = &mod->mem[type];
		unsigned long base = (unsigned long)m->base;

		if (!m->size)
			continue;
		EXPECT_EQ(__module_address(base), mod) << type;
		EXPECT_EQ(__module_address(base + m->size - 1), mod) << type;
		lo = std::min(lo, base);
		hi = std::max(hi, base + m->size);
	}
	ASSERT_LT(lo, hi);
	EXPECT_EQ(__module_address(lo - 1), nullptr);
	EXPECT_EQ(__module_address(hi), nullptr);
	EXPECT_EQ(__module_address(0), nullptr);
	EXPECT_EQ(__module_address(-1UL), nullptr);
	EXPECT_EQ(__module_address((unsigned long)&__module_address), nullptr)
		<< "the program's own text";
	ASSERT_EQ(delete_module(mod), 0);
	EXPECT_EQ(__module_address(lo), nullptr);
	EXPECT_EQ(__module_address(hi - 1), nullptr);
}

} /* namespace */
