// SPDX-License-Identifier: GPL-2.0-only
/*
 * Symbols between modules (module/main.cpp: resolve_symbol(), module.cpp:
 * find_symbol(), unload.cpp: ref_module(), __symbol_get()):
 * tests/modules/pokelab_consumer_mod.o calls a function and has a site of a
 * static key that pokelab_provider_mod.o exports (EXPORT_SYMBOL(), its
 * ksymtab section):
 *  - without the provider the consumer is refused ("Unknown symbol");
 *  - loaded after it, it runs the provider's function and follows its
 *    key, flipped while CPU 1 runs the consumer; its use of the provider
 *    holds a reference, so the provider cannot be unloaded first
 *    (-EWOULDBLOCK) and can be once the consumer is gone;
 *  - symbol_get() of a module's export holds that module the same way;
 *  - a second export of a name already exported is refused.
 * The loader used to resolve against the program's exports only.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <string>

#include <kernel_shim/cpu.h>
#include <kernel_shim/sched.h>
#include <linux/jump_label.h>
#include <linux/module.h>
#include <pokelab/module_load.h>

#include "booted.h"
#include "module_util.h"
#include "wait_for.h"

namespace {

using pokelab::test::modPath;

class ModuleSymbols : public pokelab::test::Booted
{
};

TEST_F(ModuleSymbols, ConsumerNeedsItsProvider)
{
	struct module *mod = nullptr;
	std::string err;

	EXPECT_EQ(load_module_file(modPath("pokelab_consumer_mod"), &mod, &err), -ENOENT);
	EXPECT_NE(err.find("Unknown symbol pokelab_provider_"), std::string::npos) << err;
	EXPECT_EQ(mod, nullptr);
}

TEST_F(ModuleSymbols, ProviderHeldWhileItsConsumerIsLoaded)
{
	struct module *prov = nullptr, *cons = nullptr;
	std::string err;

	ASSERT_EQ(load_module_file(modPath("pokelab_provider_mod"), &prov, &err), 0) << err;
	EXPECT_EQ(prov->num_syms, 2u);
	EXPECT_EQ(module_refcount(prov), 0);
	ASSERT_EQ(load_module_file(modPath("pokelab_consumer_mod"), &cons, &err), 0) << err;
	/* its init ran the provider's function: key off, 1 + 7 */
	EXPECT_EQ(pokelab_module_reported("pokelab_consumer_mod", 1), 8);
	/* the use: on the provider's source list, one reference */
	EXPECT_EQ(module_refcount(prov), 1);
	EXPECT_FALSE(list_empty(&prov->source_list));
	EXPECT_FALSE(list_empty(&cons->target_list));

	/* unloading the provider first is refused, and leaves it whole */
	EXPECT_EQ(delete_module(prov), -EWOULDBLOCK);
	EXPECT_EQ(prov->state, MODULE_STATE_LIVE);

	auto run = (int (*)(int))find_kallsyms_symbol_value(cons, "pokelab_consumer_run");
	auto key = (struct static_key_false *)find_kallsyms_symbol_value(prov,
									  "pokelab_provider_key");

	ASSERT_TRUE(run && key);
	/* the provider's key links the consumer's site: CPU 1 runs it through a flip */
	std::atomic<bool> stop{false};
	std::atomic<unsigned long> runs{0}, on{0}, bad{0};

	kshim::cpuRun(1, [&] {
		while (!stop.load(std::memory_order_relaxed)) {
			int v = run(1);

			/* 8 off, 1071 on; 71 or 1008 while the batch is half done */
			if (v != 8 && v != 1071 && v != 71 && v != 1008)
				bad.fetch_add(1);
			on.fetch_add(v == 1071, std::memory_order_relaxed);
			runs.fetch_add(1, std::memory_order_relaxed);
			kshim::schedTick();
		}
	});
	EXPECT_TRUE(pokelab::test::waitFor([&] { return runs.load() >= 1000; }, "CPU 1's runs"));
	static_branch_enable(key);
	EXPECT_EQ(run(1), 1071);
	EXPECT_TRUE(pokelab::test::waitFor([&] { return on.load() >= 1000; }, "runs with it on"));
	static_branch_disable(key);
	stop.store(true);
	kshim::cpuWait(1);
	EXPECT_EQ(bad.load(), 0u);
	EXPECT_EQ(run(1), 8);

	/* the consumer first, then the provider */
	ASSERT_EQ(delete_module(cons), 0);
	EXPECT_EQ(module_refcount(prov), 0);
	EXPECT_TRUE(list_empty(&prov->source_list));
	EXPECT_EQ(delete_module(prov), 0);

	/* and without the provider the consumer is refused again */
	EXPECT_EQ(load_module_file(modPath("pokelab_consumer_mod"), &cons, &err), -ENOENT);
}

TEST_F(ModuleSymbols, SymbolGetHoldsTheModule)
{
	struct module *prov = nullptr, *cons = nullptr;
	std::string err;

	EXPECT_EQ(__symbol_get("pokelab_consumer_run"), nullptr);
	ASSERT_EQ(load_module_file(modPath("pokelab_provider_mod"), &prov, &err), 0) << err;
	ASSERT_EQ(load_module_file(modPath("pokelab_consumer_mod"), &cons, &err), 0) << err;

	/* CPU 1 takes the consumer's export and runs it with the reference held */
	std::atomic<int> state{0};	/* 1: taken, 2: let go */

	kshim::cpuRun(1, [&] {
		auto run = (int (*)(int))__symbol_get("pokelab_consumer_run");

		if (!run)
			return;
		state.store(1);
		while (state.load() == 1)
			run(1);
		__symbol_put("pokelab_consumer_run");
	});
	EXPECT_TRUE(pokelab::test::waitFor([&] { return state.load() == 1; },
					   "CPU 1's symbol_get()"));
	EXPECT_EQ(module_refcount(cons), 1);
	EXPECT_EQ(delete_module(cons), -EWOULDBLOCK);
	state.store(2);
	kshim::cpuWait(1);
	EXPECT_EQ(module_refcount(cons), 0);

	/* the program's exports: no module to hold */
	auto report = __symbol_get("pokelab_module_report");

	EXPECT_EQ(report, (void *)&pokelab_module_report);
	__symbol_put("pokelab_module_report");

	EXPECT_EQ(delete_module(cons), 0);
	EXPECT_EQ(__symbol_get("pokelab_consumer_run"), nullptr);
	EXPECT_EQ(delete_module(prov), 0);
}

TEST_F(ModuleSymbols, DuplicateExportIsRefused)
{
	struct module *prov = nullptr, *dup = nullptr;
	std::string err;

	ASSERT_EQ(load_module_file(modPath("pokelab_provider_mod"), &prov, &err), 0) << err;
	testing::internal::CaptureStderr();
	EXPECT_EQ(load_module_file(modPath("pokelab_dup_mod"), &dup, &err), -ENOEXEC);
	std::string out = testing::internal::GetCapturedStderr();

	EXPECT_NE(out.find("pokelab_dup_mod: exports duplicate symbol pokelab_provider_fn "
			   "(owned by pokelab_provider_mod)"), std::string::npos) << out;
	EXPECT_EQ(dup, nullptr);
	EXPECT_EQ(delete_module(prov), 0);
	/* alone, it loads */
	ASSERT_EQ(load_module_file(modPath("pokelab_dup_mod"), &dup, &err), 0) << err;
	EXPECT_EQ(delete_module(dup), 0);
}

} /* namespace */
