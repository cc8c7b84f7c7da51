// SPDX-License-Identifier: GPL-2.0-only
/*
 * The module loader (module/main.cpp, docs/modules.md) on a real relocatable
 * object, tests/modules/pokelab_test_mod.o: its alternative is applied before its
 * init runs, its static key's sites (one in its text, one in its noinstr
 * text) are patched through the INT3 batch while CPU 1 runs them with a
 * module reference held, unloading waits for that reference, and
 * jump_label_text_reserved() answers for the module's sites while it is
 * loaded and not after; its inline static calls are rewritten at load and
 * by static_call_update() while CPU 1 runs them. Objects the kernel would
 * refuse are refused.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <asm/nops.h>
#include <asm/text-patching.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/sched.h>
#include <kernel_shim/xmc.h>
#include <kernel_shim/xmc_verdict.h>
#include <linux/bug.h>
#include <linux/execmem.h>
#include <linux/jump_label.h>
#include <linux/kallsyms.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/static_call.h>
#include <pokelab/module_calls.h>
#include <pokelab/module_load.h>
#include <pokelab/text_poke_stats.h>

#include "booted.h"
#include "wait_for.h"
#include "branch_target.h"

namespace {

std::string modPath(const char *name)
{
	const char *dir = getenv("POKELAB_MODULES");

	return std::string(dir ? dir : "modules") + "/" + name + ".o";
}

class ModuleLoad : public pokelab::test::Booted
{
};


/*
 * Inline static calls in a module: pokelab-objtool recorded a tail call and
 * a call of pokelab's exported pokelab_module_call; the load rewrote both
 * into direct ones, static_call_update() rewrites them again while CPU 1
 * runs them, and after the unload an update touches nothing of the module.
 */
TEST_F(ModuleLoad, InlineStaticCallSitesFollowTheKey)
{
	struct module *mod = nullptr;
	std::string err;

	ASSERT_EQ(load_module_file(modPath("pokelab_test_mod"), &mod, &err), 0) << err;
	ASSERT_EQ(mod->num_static_call_sites, 2u);
	auto tail = (int (*)(int))find_kallsyms_symbol_value(mod, "pokelab_test_mod_tail_call");
	auto call = (int (*)(int))find_kallsyms_symbol_value(mod, "pokelab_test_mod_call");
	const u8 *tsite = (const u8 *)tail, *csite = (const u8 *)call + 4;

	ASSERT_TRUE(tail && call);
	/* the sites as the load left them: direct, to the key's function */
	EXPECT_EQ(pokelab::test::branchTarget(tsite, 0xe9), (unsigned long)pokelab_module_call_a);
	EXPECT_EQ(pokelab::test::branchTarget(csite, 0xe8), (unsigned long)pokelab_module_call_a);
	EXPECT_EQ(static_call_text_reserved((void *)tsite, (void *)tsite), 1);
	EXPECT_EQ(tail(1), 2);
	EXPECT_EQ(call(1), 102);

	std::atomic<bool> stop{false};
	std::atomic<unsigned long> runs{0}, bad{0}, newer{0};

	kshim::cpuRun(1, [&] {
		ASSERT_TRUE(try_module_get(mod));
		while (!stop.load(std::memory_order_relaxed)) {
			int a = tail(1), b = call(1);

			if ((a != 2 && a != 3) || (b != 102 && b != 103))
				bad.fetch_add(1);
			newer.fetch_add(a == 3 && b == 103, std::memory_order_relaxed);
			runs.fetch_add(1, std::memory_order_relaxed);
			kshim::schedTick();
		}
		module_put(mod);
	});
	EXPECT_TRUE(pokelab::test::waitFor([&] { return !(runs.load() < 1000); },
					"CPU 1's runs (runs)"));
	static_call_update(pokelab_module_call, &pokelab_module_call_b);
	EXPECT_EQ(pokelab::test::branchTarget(tsite, 0xe9), (unsigned long)pokelab_module_call_b);
	EXPECT_EQ(pokelab::test::branchTarget(csite, 0xe8), (unsigned long)pokelab_module_call_b);
	unsigned long n0 = newer.load();

	EXPECT_TRUE(pokelab::test::waitFor([&] { return !(newer.load() < n0 + 1000); },
					"CPU 1's runs (newer)"));
	stop.store(true);
	kshim::cpuWait(1);
	EXPECT_EQ(bad.load(), 0u);
	EXPECT_EQ(tail(1), 3);

	ASSERT_EQ(delete_module(mod), 0);
	EXPECT_EQ(static_call_text_reserved((void *)tsite, (void *)tsite), 0);
	/* the key no longer lists the module's sites: this update touches only the trampoline */
	static_call_update(pokelab_module_call, &pokelab_module_call_a);
	EXPECT_EQ(static_call(pokelab_module_call)(1), 2);
}

TEST_F(ModuleLoad, PatchedWhileRunningThenUnloaded)
{
	struct module *mod = nullptr;
	std::string err;

	ASSERT_EQ(load_module_file(modPath("pokelab_test_mod"), &mod, &err), 0) << err;
	EXPECT_STREQ(mod->name, "pokelab_test_mod");
	EXPECT_EQ(mod->state, MODULE_STATE_LIVE);

	/* the alternative was applied before init_module() ran it */
	EXPECT_EQ(pokelab_module_reported("pokelab_test_mod", 1), 2);

	auto site = (int (*)(void))find_kallsyms_symbol_value(mod, "pokelab_test_mod_site");
	auto nsite = (int (*)(void))find_kallsyms_symbol_value(mod,
								"pokelab_test_mod_noinstr_site");
	auto key = (struct static_key_false *)find_kallsyms_symbol_value(mod,
									  "pokelab_test_mod_key");

	ASSERT_TRUE(site && nsite && key);
	EXPECT_TRUE(is_module_text_address((unsigned long)site));
	EXPECT_TRUE(kernel_text_address((unsigned long)site));
	EXPECT_FALSE(is_module_noinstr_text_address((unsigned long)site));
	EXPECT_TRUE(is_module_noinstr_text_address((unsigned long)nsite));
	EXPECT_TRUE(within_module((unsigned long)key, mod));

	/* the two jump-label sites of the module's key, and the reserved-text check on each */
	ASSERT_EQ(mod->num_jump_entries, 3u);	/* and one of pokelab_module_key */
	std::vector<unsigned long> code;

	for (unsigned int i = 0; i < mod->num_jump_entries; i++)
		if (jump_entry_key(&mod->jump_entries[i]) == &key->key)
			code.push_back(jump_entry_code(&mod->jump_entries[i]));
	ASSERT_EQ(code.size(), 2u);

	for (unsigned long c : code) {
		EXPECT_EQ(jump_label_text_reserved((void *)c, (void *)c), 1);
		EXPECT_EQ(jump_label_text_reserved((void *)(c + 4), (void *)(c + 8)), 1);
		EXPECT_EQ(jump_label_text_reserved((void *)(c + 5), (void *)(c + 8)), 0);
	}
	EXPECT_EQ(site(), 1);
	EXPECT_EQ(nsite(), 10);

	/* CPU 1 runs both sites with a reference held */
	std::atomic<bool> stop{false};
	std::atomic<unsigned long> runs{0}, on{0}, torn{0};

	kshim::cpuRun(1, [&] {
		if (!try_module_get(mod)) {
			torn.store(1);
			return;
		}
		while (!stop.load(std::memory_order_relaxed)) {
			int a = site(), b = nsite();

			/* both off or both on, or one of each mid-batch; never anything else */
			if ((a != 1 && a != 2) || (b != 10 && b != 20))
				torn.fetch_add(1);
			on.fetch_add(a == 2 && b == 20, std::memory_order_relaxed);
			runs.fetch_add(1, std::memory_order_relaxed);
			kshim::schedTick();
		}
		module_put(mod);
	});
	EXPECT_TRUE(pokelab::test::waitFor([&] { return !(runs.load() < 1000); },
					"CPU 1's runs (runs)"));
	EXPECT_EQ(module_refcount(mod), 1);
	EXPECT_EQ(delete_module(mod), -EWOULDBLOCK);

	unsigned long batches = pokelab::textPokeStats().batches;

	static_branch_enable(key);
	EXPECT_EQ(pokelab::textPokeStats().batches, batches + 1);
	EXPECT_EQ(site(), 2);
	unsigned long on0 = on.load();

	EXPECT_TRUE(pokelab::test::waitFor([&] { return !(on.load() < on0 + 1000); },
					"CPU 1's runs (on)"));
	static_branch_disable(key);
	stop.store(true);
	kshim::cpuWait(1);
	EXPECT_EQ(torn.load(), 0u);
	EXPECT_EQ(site(), 1);
	EXPECT_EQ(module_refcount(mod), 0);

	ASSERT_EQ(delete_module(mod), 0);
	/* its exit ran, with the key off again */
	EXPECT_EQ(pokelab_module_reported("pokelab_test_mod", 2), 1);
	for (unsigned long c : code) {
		EXPECT_EQ(jump_label_text_reserved((void *)c, (void *)c), 0);
		EXPECT_FALSE(is_module_text_address(c));
	}

	/* and it loads again, from the same object */
	ASSERT_EQ(load_module_file(modPath("pokelab_test_mod"), &mod, &err), 0) << err;
	EXPECT_EQ(delete_module(mod), 0);
}

/*
 * The checker watches module text as it watches the program's: with the
 * batch's phase-2 sync dropped (pokelab.busted=no-sync-2) a flip of the
 * module's key while CPU 1 runs its site is a violation at that site.
 */
class ModuleLoadBusted : public ModuleLoad
{
protected:
	std::string extraParams() const override { return "pokelab.busted=no-sync-2"; }
	bool xmcViolationsExpected() const override { return true; }
};

TEST_F(ModuleLoadBusted, DroppedSyncOnModuleTextIsCaught)
{
	struct module *mod = nullptr;
	std::string err;

	ASSERT_EQ(load_module_file(modPath("pokelab_test_mod"), &mod, &err), 0) << err;
	auto site = (int (*)(void))find_kallsyms_symbol_value(mod, "pokelab_test_mod_site");
	auto key = (struct static_key_false *)find_kallsyms_symbol_value(mod,
									  "pokelab_test_mod_key");
	std::atomic<bool> stop{false};
	std::atomic<unsigned long> runs{0};

	kshim::cpuRun(1, [&] {
		ASSERT_TRUE(try_module_get(mod));
		while (!stop.load(std::memory_order_relaxed)) {
			site();
			runs.fetch_add(1, std::memory_order_relaxed);
			kshim::schedTick();
		}
		module_put(mod);
	});
	EXPECT_TRUE(pokelab::test::waitFor([&] { return !(runs.load() < 1000); },
					"CPU 1's runs (runs)"));
	unsigned long v0 = kshim::xmcStats().violations;

	for (int i = 0; i < 20 && kshim::xmcStats().violations == v0; i++) {
		static_branch_enable(key);
		static_branch_disable(key);
		kshim::xmcQuiesce();
	}
	stop.store(true);
	kshim::cpuWait(1);
	ASSERT_GT(kshim::xmcStats().violations, v0);
	std::vector<kshim::XmcViolation> log = kshim::xmcViolations();

	EXPECT_TRUE(within_module(log[v0].site, mod)) << kshim::xmcFormat(log[v0]);
	EXPECT_EQ(delete_module(mod), 0);
}

/*
 * R7 at a request, on a module's site: the model passes over requests for
 * addresses outside every table without a lookup, and a module's tables
 * widen that range when they come. A batch asked for the JMP at the site
 * of the module's key, which is off, is found at once; before the module
 * came, the same page held no site at all.
 */
class ModuleLoadRequest : public ModuleLoad
{
protected:
	bool xmcViolationsExpected() const override { return true; }
};

TEST_F(ModuleLoadRequest, ABatchAskedForTheWrongJumpIsFound)
{
	struct module *mod = nullptr;
	std::string err;
	unsigned long code = 0, target = 0, wrong = 0;
	u8 jmp[5];

	const u8 jmp0[5] = {JMP32_INSN_OPCODE, 0, 0, 0, 0};
	u8 *page = (u8 *)execmem_alloc_rw(EXECMEM_DEFAULT, 4096);

	/* a batch on text outside every table first: the range is built and excludes it */
	ASSERT_TRUE(page);
	memcpy(page, x86_nops[5], 5);
	set_memory_rox((unsigned long)page, 1);
	mutex_lock(&text_mutex);
	smp_text_poke_single(page, jmp0, 5, NULL);
	mutex_unlock(&text_mutex);
	execmem_free(page);

	ASSERT_EQ(load_module_file(modPath("pokelab_test_mod"), &mod, &err), 0) << err;
	auto key = (struct static_key_false *)find_kallsyms_symbol_value(mod,
									  "pokelab_test_mod_key");

	ASSERT_TRUE(key);
	for (unsigned int i = 0; i < mod->num_jump_entries && !code; i++)
		if (jump_entry_key(&mod->jump_entries[i]) == &key->key) {
			code = jump_entry_code(&mod->jump_entries[i]);
			target = jump_entry_target(&mod->jump_entries[i]);
		}
	ASSERT_NE(code, 0ul);
	__text_gen_insn(jmp, JMP32_INSN_OPCODE, (void *)code, (void *)target, JMP32_INSN_SIZE);
	mutex_lock(&text_mutex);
	smp_text_poke_single((void *)code, jmp, 5, NULL);
	for (const kshim::XmcViolation &v : kshim::xmcViolations())
		wrong += v.rule == kshim::XmcRule::WrongSite && v.request && v.site == code;
	smp_text_poke_single((void *)code, x86_nops[5], 5, NULL);
	mutex_unlock(&text_mutex);
	EXPECT_EQ(wrong, 1ul) << "the request for the JMP at the module's site";
	EXPECT_EQ(delete_module(mod), 0);
}

/*
 * A module's site of a key it does not own (pokelab_module_key): the key is
 * linked to the module's entries at load (and the site patched then if the
 * key was already on), follows flips while loaded, and is folded back at
 * unload, so that later flips touch nothing of the freed module.
 */
TEST_F(ModuleLoad, ForeignKeyLinksAndUnlinks)
{
	struct module *mod = nullptr;
	std::string err;
	unsigned long warns = kshim::warnCount();

	EXPECT_EQ(jump_label_nr_sites(&pokelab_module_key.key), 0u);
	static_branch_enable(&pokelab_module_key);	/* on before the load */
	ASSERT_EQ(load_module_file(modPath("pokelab_test_mod"), &mod, &err), 0) << err;
	auto core = (int (*)(void))find_kallsyms_symbol_value(mod, "pokelab_test_mod_core_site");

	ASSERT_TRUE(core);
	EXPECT_EQ(core(), 4) << "the load patched the site of a key already on";
	static_branch_disable(&pokelab_module_key);
	EXPECT_EQ(core(), 3);
	static_branch_enable(&pokelab_module_key);
	EXPECT_EQ(core(), 4);
	static_branch_disable(&pokelab_module_key);
	ASSERT_EQ(delete_module(mod), 0);

	/* folded back: no entries left, and flips after the unload patch nothing */
	EXPECT_EQ(jump_label_nr_sites(&pokelab_module_key.key), 0u);
	static_branch_enable(&pokelab_module_key);
	static_branch_disable(&pokelab_module_key);
	EXPECT_EQ(kshim::warnCount(), warns);

	/* and a second load links it again */
	ASSERT_EQ(load_module_file(modPath("pokelab_test_mod"), &mod, &err), 0) << err;
	core = (int (*)(void))find_kallsyms_symbol_value(mod, "pokelab_test_mod_core_site");
	static_branch_enable(&pokelab_module_key);
	EXPECT_EQ(core(), 4);
	static_branch_disable(&pokelab_module_key);
	EXPECT_EQ(delete_module(mod), 0);
}

/*
 * An init that fails: its sites were linked at MODULE_STATE_COMING, so the
 * failed load unlinks them (the GOING notifiers) before the memory goes;
 * flips and updates afterwards must touch nothing of it.
 */
TEST_F(ModuleLoad, FailedInitUnlinksItsSites)
{
	struct module *mod = nullptr;
	std::string err;

	EXPECT_EQ(load_module_file(modPath("pokelab_failinit_mod"), &mod, &err), -22);
	EXPECT_NE(err.find("init_module() returned -22"), std::string::npos) << err;
	EXPECT_EQ(mod, nullptr);
	EXPECT_EQ(jump_label_nr_sites(&pokelab_module_key.key), 0u);
	static_branch_enable(&pokelab_module_key);
	static_branch_disable(&pokelab_module_key);
	static_call_update(pokelab_module_call, &pokelab_module_call_b);
	static_call_update(pokelab_module_call, &pokelab_module_call_a);
	EXPECT_EQ(static_call(pokelab_module_call)(1), 2);
}

/*
 * Lookups against unloads: CPU 1 asks is_module_text_address() and
 * jump_label_text_reserved() about the module's text in RCU read-side
 * stretches (a quiescent state between), while CPU 0 loads and unloads it.
 * delete_module()'s synchronize_rcu() keeps each struct module alive until
 * CPU 1 has left the stretch that found it (a sanitizer build reports a
 * use after free otherwise).
 */
TEST_F(ModuleLoad, LookupsRaceUnloads)
{
	std::atomic<unsigned long> where{0}, looks{0};
	std::atomic<bool> stop{false};
	std::string err;

	kshim::cpuRun(1, [&] {
		while (!stop.load(std::memory_order_relaxed)) {
			unsigned long a = where.load(std::memory_order_relaxed);

			rcu_read_lock();
			if (a && is_module_text_address(a))
				(void)jump_label_text_reserved((void *)a, (void *)a);
			rcu_read_unlock();
			looks.fetch_add(1, std::memory_order_relaxed);
			cond_resched();
		}
	});
	for (int i = 0; i < 20; i++) {
		struct module *mod = nullptr;
		int ret;

		/* EXPECT, not ASSERT: CPU 1 must be stopped below whatever happens */
		if (load_module_file(modPath("pokelab_test_mod"), &mod, &err)) {
			ADD_FAILURE() << err;
			break;
		}
		where.store(find_kallsyms_symbol_value(mod, "pokelab_test_mod_site"));
		unsigned long l0 = looks.load();

		EXPECT_TRUE(pokelab::test::waitFor([&] { return looks.load() > l0 + 10; },
						   "CPU 1's lookups"));
		/* jump_label_text_reserved() holds a reference for a moment: try again */
		while ((ret = delete_module(mod)) == -EWOULDBLOCK)
			;
		EXPECT_EQ(ret, 0);
	}
	stop.store(true);
	kshim::cpuWait(1);
	EXPECT_FALSE(is_module_text_address(where.load()));
}

TEST_F(ModuleLoad, OneModuleOfEachName)
{
	struct module *mod = nullptr, *again = nullptr;
	std::string err;

	ASSERT_EQ(load_module_file(modPath("pokelab_test_mod"), &mod, &err), 0) << err;
	EXPECT_EQ(load_module_file(modPath("pokelab_test_mod"), &again, &err), -EEXIST);
	EXPECT_NE(err.find("already loaded"), std::string::npos) << err;
	EXPECT_EQ(delete_module(mod), 0);
}

TEST_F(ModuleLoad, UnexportedSymbolIsRefused)
{
	struct module *mod = nullptr;
	std::string err;

	EXPECT_EQ(load_module_file(modPath("pokelab_bad_sym_mod"), &mod, &err), -ENOENT);
	EXPECT_NE(err.find("Unknown symbol pokelab_not_exported"), std::string::npos) << err;
	EXPECT_EQ(mod, nullptr);
}

TEST_F(ModuleLoad, TlsRelocationIsRefused)
{
	struct module *mod = nullptr;
	std::string err;

	testing::internal::CaptureStderr();
	EXPECT_EQ(load_module_file(modPath("pokelab_tls_mod"), &mod, &err), -ENOEXEC);
	std::string out = testing::internal::GetCapturedStderr();

	EXPECT_NE(out.find("Unknown rela relocation: 23"), std::string::npos) << out;
}

TEST_F(ModuleLoad, NotAnObjectIsRefused)
{
	struct module *mod = nullptr;
	std::string err;
	std::string path = testing::TempDir() + "/not_a_module.o";

	std::ofstream(path) << "not an ELF file\n";
	EXPECT_EQ(load_module_file(path, &mod, &err), -ENOEXEC);
	EXPECT_NE(err.find("not a relocatable x86-64 ELF object"), std::string::npos) << err;
	EXPECT_EQ(load_module_file("/nonexistent/x.o", &mod, &err), -ENOENT);
}

} /* namespace */
