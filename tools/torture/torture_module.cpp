// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab torture --module FILE.o: a writer that loads and unloads a module
 * (module/main.cpp), flips its static key and retargets the program's
 * static call its inline sites call, while every CPU that runs the sites
 * runs the module's too (torture_module.h).
 *
 * The readers find the module the kernel's way: an RCU-protected pointer,
 * then try_module_get() before calling into it and module_put() after. The
 * writer unpublishes it, waits a grace period (synchronize_rcu()), and
 * unloads only once delete_module() finds no reference held; a reference
 * held makes it -EWOULDBLOCK and the writer tries again later. A fetch of
 * the module's text after it was freed would be a crash (the pages are
 * unmapped) or a model report (the text is hidden from the model first).
 */
#include <atomic>
#include <cerrno>
#include <mutex>

#include <fmt/format.h>

#include <asm/processor.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/plural.h>
#include <linux/irqflags.h>
#include <linux/jump_label.h>
#include <linux/rcupdate.h>
#include <pokelab/module_calls.h>
#include <pokelab/module_load.h>
#include <urcu/pointer.h>

#include "torture/torture_module.h"

namespace pokelab::torture {

namespace {

/* One load of the module: what the readers call, published under RCU. */
struct LoadedModule {
	struct module *mod;
	int (*site)(void);
	int (*nsite)(void);
	struct static_key_false *key;
	int (*tail)(int);	/* inline static calls of pokelab_module_call */
	int (*call)(int);
};

std::string path;
LoadedModule *published;	/* rcu_dereference()/rcu_assign_pointer() */
LoadedModule *current;		/* the writer's: loaded, maybe unpublished */
bool keyOn;			/* the writer's last flip of this load's key */
bool callB;			/* pokelab_module_call is _b (else _a) */
std::mutex writerLock;		/* one writer step at a time */

std::atomic<unsigned long> loads, unloads, busy, flips, calls, runs, bad;

int loadNow(std::string *err)
{
	struct module *mod;
	int ret = load_module_file(path, &mod, err);

	if (ret)
		return ret;
	LoadedModule *m = new LoadedModule{
		mod,
		(int (*)(void))find_kallsyms_symbol_value(mod, "pokelab_test_mod_site"),
		(int (*)(void))find_kallsyms_symbol_value(mod, "pokelab_test_mod_noinstr_site"),
		(struct static_key_false *)find_kallsyms_symbol_value(mod, "pokelab_test_mod_key"),
		(int (*)(int))find_kallsyms_symbol_value(mod, "pokelab_test_mod_tail_call"),
		(int (*)(int))find_kallsyms_symbol_value(mod, "pokelab_test_mod_call"),
	};

	if (!m->site || !m->nsite || !m->key || !m->tail || !m->call) {
		*err = fmt::format("{}: no pokelab_test_mod_site, _noinstr_site, _key, _tail_call "
				   "or _call", path);
		delete m;
		delete_module(mod);
		return -ENOENT;
	}
	current = m;
	keyOn = false;
	rcu_assign_pointer(published, m);
	loads++;
	return 0;
}

/* Unpublish, wait out the readers that may have found it, unload if nobody holds it. */
bool unloadNow()
{
	if (!current)
		return true;
	rcu_assign_pointer(published, (LoadedModule *)nullptr);
	synchronize_rcu();
	if (delete_module(current->mod) == -EWOULDBLOCK) {
		busy++;
		return false;
	}
	delete current;
	current = nullptr;
	unloads++;
	return true;
}

} /* namespace */

int moduleWriterStart(const std::string &p, std::string *err)
{
	path = p;
	loads = unloads = busy = flips = calls = runs = bad = 0;
	callB = false;
	return path.empty() ? 0 : loadNow(err);
}

bool moduleWriterActive()
{
	return !path.empty();
}

void moduleWriterStep(u64 d)
{
	std::lock_guard<std::mutex> l(writerLock);
	std::string err;

	if (path.empty())
		return;
	if (!current) {
		if (loadNow(&err)) {
			bad++;
			fmt::print("torture: module: {}\n", err);
		}
		return;
	}
	/* a module that was unpublished but busy: try the unload again */
	if (!rcu_dereference(published) || ((d >> 8) & 3) == 0) {
		unloadNow();
		return;
	}
	/* the program's static call, with the module's inline sites on its key */
	if (((d >> 8) & 3) == 1) {
		callB = !callB;
		static_call_update(pokelab_module_call,
				   callB ? &pokelab_module_call_b : &pokelab_module_call_a);
		calls++;
		return;
	}
	keyOn = !keyOn;
	if (keyOn)
		static_branch_enable(current->key);
	else
		static_branch_disable(current->key);
	flips++;
}

unsigned long runModuleSites(void)
{
	LoadedModule *m;
	unsigned long sum = 0;

	/*
	 * userspace: an IRQ on a CPU in an extended quiescent state (a nohz_full
	 * CPU in user mode or idle). The kernel's ct_irq_enter() makes RCU watch
	 * it; the shim's QSBR reader cannot come online inside a signal handler,
	 * so the module's sites are not run there (an RCU reader that RCU does
	 * not see would not hold the module).
	 */
	if (!rcu_is_watching())
		return 0;

	rcu_read_lock();
	m = rcu_dereference(published);
	if (!m || !try_module_get(m->mod)) {
		rcu_read_unlock();
		return 0;
	}
	rcu_read_unlock();

	int a = m->site(), b = m->nsite(), t = m->tail(1), c = m->call(1);

	/* the two sites test one key: each is off or on, never anything else */
	if ((a != 1 && a != 2) || (b != 10 && b != 20))
		bad++;
	/* the inline static calls reach _a or _b, nothing else */
	if ((t != 2 && t != 3) || (c != 102 && c != 103))
		bad++;
	sum = a + b + t + c;
	/*
	 * Now and then, in a task, hold the reference across a quiescent state,
	 * as code that sleeps in a module does: the writer's grace period then
	 * ends with the reference still held, and only the refcount keeps the
	 * module (the busy unloads of the summary).
	 */
	if (runs.fetch_add(1, std::memory_order_relaxed) % 256 == 0 && in_task()) {
		/* 2 ms, a quiescent state every 100 us */
		for (int i = 0; i < 20; i++) {
			u64 until = kshim::clockNs() + 100000;

			cond_resched();
			while (kshim::clockNs() < until)
				cpu_relax();
		}
	}
	module_put(m->mod);
	return sum;
}

std::vector<std::string> moduleWriterFinish()
{
	std::vector<std::string> out;

	if (path.empty())
		return out;
	/* the machine is quiet: the sites must hold what the writer last asked for */
	if (current && current->site() != (keyOn ? 2 : 1))
		out.push_back(fmt::format("module: its site returns {} with the key {}",
					  current->site(), keyOn ? "on" : "off"));
	if (current && (current->tail(1) != (callB ? 3 : 2) || current->call(1) != (callB ? 103 : 102)))
		out.push_back(fmt::format("module: its static calls return {} and {} with "
					  "pokelab_module_call at _{}", current->tail(1),
					  current->call(1), callB ? 'b' : 'a'));
	if (!unloadNow())
		out.push_back("module: still referenced at the end");
	static_call_update(pokelab_module_call, &pokelab_module_call_a);	/* as found */
	callB = false;
	if (bad)
		out.push_back(fmt::format("module: {} runs saw a value neither state gives, or a "
					  "load failed", bad.load()));
	if (!loads || !runs)
		out.push_back("module: never loaded, or never run by another CPU");
	return out;
}

std::string moduleWriterSummary()
{
	return fmt::format("module {}: {}, {}, {} (a reference held), {}, {}, {} by the CPUs",
			   path, kshim::nOf(loads, "load"), kshim::nOf(unloads, "unload"),
			   kshim::nOf(busy, "busy unload"), kshim::nOf(flips, "key flip"),
			   kshim::nOf(calls, "static call update"), kshim::nOf(runs, "run"));
}

} /* namespace pokelab::torture */
