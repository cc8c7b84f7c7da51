// SPDX-License-Identifier: GPL-2.0-only
/*
 * The static-call module notifier (alternative/static_call_inline.cpp) on
 * tests/modules/pokelab_sc_mod.o, whose inline sites call two keys pokelab
 * exports and one of its own:
 *  - unloading frees every static_call_mod the load made, the module's own
 *    key's included (the shim counts kmalloc()ed objects, linux/slab.h;
 *    an ASan build reports the leak too), once the kworker has freed the
 *    load's record of its init memory (do_free_init());
 *  - when __static_call_init() runs out of memory at any of its
 *    allocations (kshim::slabFailNth()), the load fails and
 *    static_call_del_module() unlinks what it had linked and stops at the
 *    first key it had not reached, whose union still holds a sites
 *    pointer: walking that as a list of static_call_mods dereferences
 *    garbage (a crash before the fix). The allocation after those is
 *    do_init_module()'s record of the init memory: failing it fails the
 *    load after the notifiers linked everything, which the GOING
 *    notifiers must unlink again.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include <linux/module.h>
#include <linux/slab.h>
#include <linux/static_call.h>
#include <pokelab/module_calls.h>
#include <pokelab/module_load.h>

#include "booted.h"
#include "branch_target.h"

namespace {

std::string modPath(const char *name)
{
	const char *dir = getenv("POKELAB_MODULES");

	return std::string(dir ? dir : "modules") + "/" + name + ".o";
}

class ModuleStaticCall : public pokelab::test::Booted
{
protected:
	void TearDown() override
	{
		kshim::slabFailNth(0);
		Booted::TearDown();
	}
};

TEST_F(ModuleStaticCall, UnloadFreesEveryStaticCallMod)
{
	struct module *mod = nullptr;
	std::string err;
	long before = kshim::slabOutstanding();

	for (int round = 0; round < 3; round++) {
		ASSERT_EQ(load_module_file(modPath("pokelab_sc_mod"), &mod, &err), 0) << err;
		ASSERT_EQ(mod->num_static_call_sites, 3u);
		auto own = (int (*)(int))find_kallsyms_symbol_value(mod, "pokelab_sc_mod_own");
		auto key = (struct static_call_key *)find_kallsyms_symbol_value(
			mod, "__SCK__pokelab_sc_mod_call");
		void *tramp = (void *)find_kallsyms_symbol_value(mod, "__SCT__pokelab_sc_mod_call");
		auto b = (void *)find_kallsyms_symbol_value(mod, "pokelab_sc_mod_b");

		ASSERT_TRUE(own && key && tramp && b);
		/* its own key's site is direct, and follows an update of its own key */
		EXPECT_EQ(pokelab::test::branchTarget((const u8 *)own, 0xe9),
			  find_kallsyms_symbol_value(mod, "pokelab_sc_mod_a"));
		__static_call_update(key, tramp, b);
		EXPECT_EQ(pokelab::test::branchTarget((const u8 *)own, 0xe9), (unsigned long)b);
		EXPECT_EQ(own(1), 21);
		EXPECT_GT(kshim::slabOutstanding(), before);
		ASSERT_EQ(delete_module(mod), 0);
		flush_module_init_free_work();
		EXPECT_EQ(kshim::slabOutstanding(), before)
			<< "static_call_mods left allocated after unload " << round + 1;
	}
}

TEST_F(ModuleStaticCall, OutOfMemoryAtEachAllocationUnwinds)
{
	std::string err;
	long before = kshim::slabOutstanding();
	unsigned int failed = 0, initFailed = 0;

	for (unsigned long n = 1; n < 16; n++) {
		struct module *mod = nullptr;
		int ret;

		testing::internal::CaptureStderr();
		kshim::slabFailNth(n);
		ret = load_module_file(modPath("pokelab_sc_mod"), &mod, &err);
		kshim::slabFailNth(0);
		std::string out = testing::internal::GetCapturedStderr();

		if (ret == 0) {
			/* n is past the load's allocations: it loaded whole */
			EXPECT_EQ(delete_module(mod), 0);
			break;
		}
		EXPECT_EQ(ret, -ENOMEM) << "allocation " << n << ": " << err;
		if (failed == 3) {
			/* do_init_module()'s struct mod_initfree, after the notifiers */
			initFailed++;
			EXPECT_EQ(out.find("Failed to allocate memory for static calls"),
				  std::string::npos) << out;
			EXPECT_NE(err.find("init_module() returned -12"), std::string::npos) << err;
		} else {
			failed++;
			EXPECT_NE(out.find("Failed to allocate memory for static calls"),
				  std::string::npos) << out;
		}
		EXPECT_EQ(kshim::slabOutstanding(), before) << "allocation " << n;
		/* the program's keys no longer list the module, whose memory is gone */
		static_call_update(pokelab_module_call, &pokelab_module_call_b);
		static_call_update(pokelab_module_call, &pokelab_module_call_a);
		static_call_update(pokelab_module_call2, &pokelab_module_call_a);
		static_call_update(pokelab_module_call2, &pokelab_module_call_b);
		EXPECT_EQ(static_call(pokelab_module_call)(1), 2);
		EXPECT_EQ(static_call(pokelab_module_call2)(1), 3);
	}
	/* one allocation per key: the load fails at each of the three, then at the init's */
	EXPECT_EQ(failed, 3u);
	EXPECT_EQ(initFailed, 1u);
}

} /* namespace */
