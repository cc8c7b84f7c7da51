// SPDX-License-Identifier: GPL-2.0-only
/*
 * Module references against unloads (module/module.cpp, module/unload.cpp):
 * CPUs 1 and 2 find the module under RCU and take references with
 * try_module_get() while CPU 0 loads and unloads it, with torture delays
 * in the two windows (kernel_shim/torture.h: after try_module_get()'s live
 * check, and in delete_module() after the references were judged). A
 * reference taken must never be on a module delete_module() has decided to
 * free: the count that starts at MODULE_REF_BASE is taken to 0 by
 * try_release_module_ref(), and atomic_inc_not_zero() cannot raise it
 * again. The order before (check the count, then mark the module GOING;
 * check the state, then atomic_inc()) let a getter count a module that was
 * already going: this test saw it within a few hundred unloads. The RCU
 * read side keeps the struct alive until the getter lets go, so the
 * failure is a count, not a use after free.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <string>

#include <kernel_shim/cpu.h>
#include <kernel_shim/torture.h>
#include <linux/module.h>
#include <linux/rcupdate.h>
#include <pokelab/module_load.h>

#include "booted.h"
#include "wait_for.h"

namespace {

std::string modPath(const char *name)
{
	const char *dir = getenv("POKELAB_MODULES");

	return std::string(dir ? dir : "modules") + "/" + name + ".o";
}

class ModuleRefcount : public pokelab::test::Booted
{
protected:
	unsigned int cpus() const override { return 3; }

	void TearDown() override
	{
		kshim::tortureDelays(false, 0);
		Booted::TearDown();
	}
};

struct Getter {
	std::atomic<unsigned long> where{0};	/* an address in the module's text, or 0 */
	std::atomic<bool> stop{false};
	std::atomic<unsigned long> gets{0}, going{0};
};

void getterLoop(Getter *g)
{
	while (!g->stop.load(std::memory_order_relaxed)) {
		unsigned long a = g->where.load(std::memory_order_acquire);
		struct module *m;

		rcu_read_lock();
		m = a ? __module_address(a) : nullptr;
		if (m && try_module_get(m)) {
			enum module_state s = READ_ONCE(m->state);

			/* a reference on a module that delete_module() is tearing down */
			if (s == MODULE_STATE_GOING || s == MODULE_STATE_UNFORMED)
				g->going.fetch_add(1, std::memory_order_relaxed);
			g->gets.fetch_add(1, std::memory_order_relaxed);
			module_put(m);
		}
		rcu_read_unlock();
		cond_resched();
	}
}

TEST_F(ModuleRefcount, NoReferenceOnAModuleThatIsGoing)
{
	Getter g;
	std::string err;
	unsigned int unloads = 0, busy = 0;

	kshim::tortureDelays(true, 24);
	kshim::cpuRun(1, [&] { getterLoop(&g); });
	kshim::cpuRun(2, [&] { getterLoop(&g); });
	for (int i = 0; i < 400 && !g.going.load(); i++) {
		struct module *mod = nullptr;
		int ret;

		if (load_module_file(modPath("pokelab_test_mod"), &mod, &err)) {
			ADD_FAILURE() << err;
			break;
		}
		unsigned long g0 = g.gets.load();

		g.where.store(find_kallsyms_symbol_value(mod, "pokelab_test_mod_site"),
			      std::memory_order_release);
		EXPECT_TRUE(pokelab::test::waitFor([&] { return g.gets.load() > g0 + 20; },
						   "the getters' references"));
		/* a reference held makes it -EWOULDBLOCK: unload when the getters let go */
		while ((ret = delete_module(mod)) == -EWOULDBLOCK)
			busy++;
		EXPECT_EQ(ret, 0);
		g.where.store(0, std::memory_order_release);
		unloads++;
	}
	g.stop.store(true);
	kshim::cpuWait(1);
	kshim::cpuWait(2);
	EXPECT_EQ(g.going.load(), 0u) << "references on a going module, in " << unloads
				       << " unloads (" << busy << " found busy)";
	EXPECT_GT(kshim::tortureDelayCount(kshim::TortureDelay::ModuleGet), 0u);
}

/*
 * The count's own rules, on one CPU: the base while loaded, -1 once going
 * (module_refcount()), no reference to be had then, and a held reference
 * keeps delete_module() off (-EWOULDBLOCK) with the base given back.
 */
TEST_F(ModuleRefcount, BaseReferenceRules)
{
	struct module *mod = nullptr;
	std::string err;

	ASSERT_EQ(load_module_file(modPath("pokelab_test_mod"), &mod, &err), 0) << err;
	EXPECT_EQ(atomic_read(&mod->refcnt), MODULE_REF_BASE);
	EXPECT_EQ(module_refcount(mod), 0);
	ASSERT_TRUE(try_module_get(mod));
	__module_get(mod);
	EXPECT_EQ(module_refcount(mod), 2);
	EXPECT_EQ(delete_module(mod), -EWOULDBLOCK);
	EXPECT_EQ(atomic_read(&mod->refcnt), MODULE_REF_BASE + 2) << "the base given back";
	module_put(mod);
	module_put(mod);
	EXPECT_EQ(delete_module("pokelab_no_such_mod", O_NONBLOCK), -ENOENT);
	EXPECT_EQ(delete_module("", O_NONBLOCK), -ENOENT);
	EXPECT_EQ(delete_module(mod), 0);
}

} /* namespace */
