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
 *
 * The companions: where the object's directory also holds
 * pokelab_provider_mod.o, pokelab_consumer_mod.o and pokelab_init_mod.o
 * (tests/modules/), the writer loads and unloads them too, in any order:
 * the consumer uses the provider's exports (it must be refused while the
 * provider is not loaded, "Unknown symbol", and the provider's unload must
 * be refused while the consumer is loaded, "in use"); the init module's
 * init text has sites of its keys, of pokelab_module_key and of
 * pokelab_module_call2, which the writer flips and updates after it went
 * live and its init memory was freed. Their readers take a reference with
 * symbol_get() on the module's export and run it (one run in 16, in a
 * task, holds it for 2 ms across quiescent states), while the writer unloads them without
 * unpublishing anything first: delete_module() must be refused while a
 * reference is held, and symbol_get() must fail once it went ahead; a
 * reader checks its module's text is still module text while it runs it.
 */
#include <atomic>
#include <cerrno>
#include <mutex>
#include <unistd.h>

#include <fmt/format.h>

#include <asm/processor.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/plural.h>
#include <linux/irqflags.h>
#include <linux/jump_label.h>
#include <linux/kallsyms.h>
#include <linux/module.h>
#include <linux/preempt.h>
#include <linux/rcupdate.h>
#include <linux/static_call.h>
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
	int (*core)(void);	/* a site of pokelab_module_key, a key it does not own */
};

std::string path;
LoadedModule *published;	/* rcu_dereference()/rcu_assign_pointer() */
LoadedModule *current;		/* the writer's: loaded, maybe unpublished */
bool keyOn;			/* the writer's last flip of this load's key */
bool moduleKeyOn;		/* its last flip of pokelab_module_key (linked: module sites only) */
bool callB;			/* pokelab_module_call is _b (else _a) */
std::mutex writerLock;		/* one writer step at a time */

std::atomic<unsigned long> loads, unloads, busy, flips, calls, runs, bad;

/* The companions (the file comment), the writer's view of them */
struct Companions {
	bool on;
	std::string prov, cons, init;	/* their paths */
	struct module *provMod, *consMod, *initMod;
	struct static_key_false *provKey, *initKey, *initOnlyKey;
	bool provKeyOn, initKeyOn, initOnlyOn, call2A;
	/* the init module's init static call site is not STATIC_CALL_SITE_INIT (said once) */
	bool initCallUnmarked, initCallSaid;
} co;

std::atomic<unsigned long> depLoads, depUnloads, inUse, unknownRefused, depBusy, initLoads,
	initUnloads, initBusy, coFlips, coCalls, depRuns, initRuns, coBad;

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
		(int (*)(void))find_kallsyms_symbol_value(mod, "pokelab_test_mod_core_site"),
	};

	if (!m->site || !m->nsite || !m->key || !m->tail || !m->call || !m->core) {
		*err = fmt::format("{}: no pokelab_test_mod_site, _noinstr_site, _key, _tail_call, "
				   "_call or _core_site", path);
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


/* Hold a reference across quiescent states for 2 ms, as code that sleeps in a module does. */
void holdAcrossQuiescentStates()
{
	/* a quiescent state every 100 us */
	for (int i = 0; i < 20; i++) {
		u64 until = kshim::clockNs() + 100000;

		cond_resched();
		while (kshim::clockNs() < until)
			cpu_relax();
	}
}

void coFail(const std::string &what)
{
	coBad++;
	fmt::print("torture: module: {}\n", what);
}

struct module *coLoad(const std::string &p, int *ret)
{
	struct module *mod = nullptr;
	std::string err;

	*ret = load_module_file(p, &mod, &err);
	if (*ret && *ret != -ENOENT)
		coFail(fmt::format("{}: {}", p, err));
	return *ret ? nullptr : mod;
}

/* The value the consumer's pokelab_consumer_run(1) gives with the provider's key as set */
int consumerWants()
{
	return co.provKeyOn ? 1071 : 8;
}

/* The init module's core sites for x = 1 (pokelab_init_mod_core_sites()) */
int initCoreWants()
{
	return (co.call2A ? 2 : 3) + (co.initKeyOn ? 1000 : 0) + (moduleKeyOn ? 100 : 0);
}

void flip(struct static_key_false *key, bool *on)
{
	*on = !*on;
	if (*on)
		static_branch_enable(key);
	else
		static_branch_disable(key);
	coFlips++;
}

/*
 * Is the static call site in @mod's init text (the page at @initAt) a
 * STATIC_CALL_SITE_INIT site, as __static_call_init() marks it by
 * within_module_init() (v7.3)? Unmarked, an update after the init memory
 * was freed would find it no kernel text (a WARN) and the model's table
 * check would read freed memory.
 */
bool initCallSiteMarked(struct module *mod, unsigned long initAt)
{
	for (unsigned int i = 0; i < mod->num_static_call_sites; i++) {
		const struct static_call_site *cs = &mod->static_call_sites[i];
		unsigned long a = (unsigned long)&cs->addr + cs->addr;
		unsigned long k = (unsigned long)&cs->key + cs->key;

		if ((a & ~4095ul) == (initAt & ~4095ul))
			return k & STATIC_CALL_SITE_INIT;
	}
	return true;
}

/* The provider: load, or try to unload (refused while its consumer is loaded) */
void providerStep()
{
	int ret;

	if (!co.provMod) {
		co.provMod = coLoad(co.prov, &ret);
		if (!co.provMod)
			return;
		co.provKey = (struct static_key_false *)find_kallsyms_symbol_value(
			co.provMod, "pokelab_provider_key");
		co.provKeyOn = false;
		depLoads++;
		return;
	}
	ret = delete_module(co.provMod);
	if (co.consMod && ret != -EWOULDBLOCK)
		coFail(fmt::format("the provider's unload with its consumer loaded gave {}", ret));
	if (ret == -EWOULDBLOCK) {
		inUse += co.consMod != nullptr;
		return;
	}
	if (ret) {
		coFail(fmt::format("the provider's unload gave {}", ret));
		return;
	}
	co.provMod = nullptr;
	co.provKey = nullptr;
	depUnloads++;
}

/* The consumer: load (refused without its provider), or try to unload */
void consumerStep()
{
	long seen;
	int ret;

	if (co.consMod) {
		ret = delete_module(co.consMod);
		if (ret == -EWOULDBLOCK) {
			depBusy++;
			return;
		}
		if (ret) {
			coFail(fmt::format("the consumer's unload gave {}", ret));
			return;
		}
		co.consMod = nullptr;
		depUnloads++;
		return;
	}
	co.consMod = coLoad(co.cons, &ret);
	if (!co.provMod && ret == -ENOENT) {
		unknownRefused++;
		return;
	}
	if (!co.provMod) {
		coFail(fmt::format("the consumer loaded without its provider ({})", ret));
		if (co.consMod && !delete_module(co.consMod))
			co.consMod = nullptr;
		return;
	}
	if (!co.consMod) {
		coFail(fmt::format("the consumer did not load beside its provider ({})", ret));
		return;
	}
	seen = pokelab_module_reported("pokelab_consumer_mod", 1);
	if (seen != consumerWants())
		coFail(fmt::format("the consumer's init saw {}, not {}", seen, consumerWants()));
	depLoads++;
}

/* The init module: load (its init sites as COMING left them), or try to unload */
void initStep()
{
	long want = 44 + (co.call2A ? 1 : 2) + (moduleKeyOn ? 100 : 0), got;
	unsigned long at;
	int ret;

	if (co.initMod) {
		ret = delete_module(co.initMod);
		if (ret == -EWOULDBLOCK) {
			initBusy++;
			return;
		}
		if (ret) {
			coFail(fmt::format("the init module's unload gave {}", ret));
			return;
		}
		co.initMod = nullptr;
		initUnloads++;
		return;
	}
	co.initMod = coLoad(co.init, &ret);
	if (!co.initMod) {
		if (ret == -ENOENT)
			coFail(fmt::format("{}: an unknown symbol", co.init));
		return;
	}
	got = pokelab_module_reported("pokelab_init_mod", 1);
	at = (unsigned long)pokelab_module_reported("pokelab_init_mod", 3);
	if (got != want)
		coFail(fmt::format("the init module's init sites gave {}, not {}", got, want));
	/* once live its init text is no module's text */
	if (is_module_text_address(at) || co.initMod->mem[MOD_INIT_TEXT].base)
		coFail("the init module's init text is still module text once live");
	co.initCallUnmarked = !initCallSiteMarked(co.initMod, at);
	if (co.initCallUnmarked && !co.initCallSaid) {
		co.initCallSaid = true;
		fmt::print("torture: module: pokelab_init_mod's static call site in init text is "
			   "not STATIC_CALL_SITE_INIT (__static_call_init() marks no init site): "
			   "pokelab_module_call2 is not updated while that module is loaded\n");
	}
	co.initKey = (struct static_key_false *)find_kallsyms_symbol_value(
		co.initMod, "pokelab_init_mod_key");
	co.initOnlyKey = (struct static_key_false *)find_kallsyms_symbol_value(
		co.initMod, "pokelab_init_mod_only_key");
	co.initKeyOn = co.initOnlyOn = false;
	initLoads++;
}

/* One companion decision: load, unload, flip, retarget. CPU 0, writerLock held. */
void companionStep(u64 c)
{
	switch (c & 7) {
	case 0:
		providerStep();
		break;
	case 1:
		consumerStep();
		break;
	case 2:
		if (co.provMod)
			flip(co.provKey, &co.provKeyOn);
		break;
	case 3:
		initStep();
		break;
	case 4:
		if (co.initMod)
			flip(co.initKey, &co.initKeyOn);
		break;
	case 5:
		/* its only site is in the freed init text: nothing to patch */
		if (co.initMod)
			flip(co.initOnlyKey, &co.initOnlyOn);
		break;
	case 6:
		flip(&pokelab_module_key, &moduleKeyOn);
		break;
	default:
		if (co.initMod && co.initCallUnmarked)
			break;
		co.call2A = !co.call2A;
		static_call_update(pokelab_module_call2,
				   co.call2A ? &pokelab_module_call_a : &pokelab_module_call_b);
		coCalls++;
		break;
	}
}

/*
 * A reader of the companions: symbol_get() an export, check that its
 * module's text is module text while the reference is held, run it.
 */
unsigned long runCompanions()
{
	unsigned long sum = 0;
	auto run = (int (*)(int))__symbol_get("pokelab_consumer_run");

	if (run) {
		int v = run(1);

		/* off, on, or half of a flip's batch */
		if (v != 8 && v != 1071 && v != 71 && v != 1008)
			coBad++;
		if (!is_module_text_address((unsigned long)run))
			coBad++;	/* the reference did not keep the code */
		sum += v;
		if (depRuns.fetch_add(1, std::memory_order_relaxed) % 16 == 0 && in_task())
			holdAcrossQuiescentStates();
		__symbol_put("pokelab_consumer_run");
	}
	auto core = (int (*)(int))__symbol_get("pokelab_init_mod_core_sites");

	if (core) {
		int v = core(1);

		/* _a or _b (2 or 3), + 1000 for its key, + 100 for pokelab's */
		if ((v % 100 != 2 && v % 100 != 3) || v / 100 % 10 > 1 || v / 1000 > 1)
			coBad++;
		if (!is_module_text_address((unsigned long)core))
			coBad++;
		sum += v;
		if (initRuns.fetch_add(1, std::memory_order_relaxed) % 16 == 0 && in_task())
			holdAcrossQuiescentStates();
		__symbol_put("pokelab_init_mod_core_sites");
	}
	return sum;
}

/* The companions' paths, beside @p, if all three are there */
void findCompanions(const std::string &p)
{
	std::string dir = p.find('/') == std::string::npos ? "." : p.substr(0, p.find_last_of('/'));

	co = Companions{};
	co.prov = dir + "/pokelab_provider_mod.o";
	co.cons = dir + "/pokelab_consumer_mod.o";
	co.init = dir + "/pokelab_init_mod.o";
	co.on = !access(co.prov.c_str(), R_OK) && !access(co.cons.c_str(), R_OK) &&
		!access(co.init.c_str(), R_OK);
}

/* The machine is quiet: the companions hold what the writer last set; unload them. */
void companionsFinish(std::vector<std::string> *out)
{
	if (!co.on)
		return;
	if (co.consMod) {
		auto run = (int (*)(int))find_kallsyms_symbol_value(co.consMod,
								    "pokelab_consumer_run");

		if (run(1) != consumerWants())
			out->push_back(fmt::format("module: the consumer gives {}, not {}", run(1),
						   consumerWants()));
		if (delete_module(co.consMod))
			out->push_back("module: the consumer still referenced at the end");
		else
			co.consMod = nullptr;
	}
	if (co.provMod && delete_module(co.provMod))
		out->push_back("module: the provider still in use at the end");
	if (co.initMod) {
		auto core = (int (*)(int))find_kallsyms_symbol_value(co.initMod,
								     "pokelab_init_mod_core_sites");

		if (core(1) != initCoreWants())
			out->push_back(fmt::format("module: the init module's core sites give {}, "
						   "not {}", core(1), initCoreWants()));
		if (delete_module(co.initMod))
			out->push_back("module: the init module still referenced at the end");
	}
	/* as found */
	static_call_update(pokelab_module_call2, &pokelab_module_call_b);
	flush_module_init_free_work();
	if (coBad)
		out->push_back(fmt::format("module: {} companion runs or steps went wrong (see "
					   "above)", coBad.load()));
	if (!depLoads || !initLoads || !depRuns || !initRuns)
		out->push_back("module: a companion never loaded, or never run by another CPU");
	co = Companions{};
}

} /* namespace */

int moduleWriterStart(const std::string &p, std::string *err)
{
	path = p;
	loads = unloads = busy = flips = calls = runs = bad = 0;
	depLoads = depUnloads = inUse = unknownRefused = depBusy = initLoads = initUnloads = 0;
	initBusy = coFlips = coCalls = depRuns = initRuns = coBad = 0;
	callB = moduleKeyOn = false;
	co = Companions{};
	if (path.empty())
		return 0;
	findCompanions(path);
	if (!co.on)
		fmt::print("torture: module: no pokelab_provider_mod.o, pokelab_consumer_mod.o and "
			   "pokelab_init_mod.o beside {}: the companions (a key of one module with "
			   "sites in another) are not run\n", path);
	return loadNow(err);
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
	/* half the decisions are the companions' */
	if (co.on && ((d >> 12) & 1)) {
		companionStep(d >> 13);
		return;
	}
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
	/*
	 * pokelab's own key, linked: its only sites are the modules' (this
	 * one's, the init module's), so each flip is __jump_label_mod_update()'s
	 */
	if (((d >> 8) & 3) == 3) {
		moduleKeyOn = !moduleKeyOn;
		if (moduleKeyOn)
			static_branch_enable(&pokelab_module_key);
		else
			static_branch_disable(&pokelab_module_key);
		flips++;
		return;
	}
	keyOn = !keyOn;
	if (keyOn)
		static_branch_enable(current->key);
	else
		static_branch_disable(current->key);
	flips++;
}

namespace {

unsigned long runTestModule()
{
	LoadedModule *m;
	unsigned long sum = 0;

	rcu_read_lock();
	m = rcu_dereference(published);
	if (!m || !try_module_get(m->mod)) {
		rcu_read_unlock();
		return 0;
	}
	rcu_read_unlock();

	int a = m->site(), b = m->nsite(), t = m->tail(1), c = m->call(1), k = m->core();

	/* the two sites test one key: each is off or on, never anything else; so does the linked one */
	if ((a != 1 && a != 2) || (b != 10 && b != 20) || (k != 3 && k != 4))
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
	if (runs.fetch_add(1, std::memory_order_relaxed) % 256 == 0 && in_task())
		holdAcrossQuiescentStates();
	module_put(m->mod);
	return sum;
}

} /* namespace */

unsigned long runModuleSites(void)
{
	/*
	 * userspace: an IRQ on a CPU in an extended quiescent state (a nohz_full
	 * CPU in user mode or idle). The kernel's ct_irq_enter() makes RCU watch
	 * it; the shim's QSBR reader cannot come online inside a signal handler,
	 * so the modules are not run there (an RCU reader that RCU does not see
	 * would not hold a module).
	 */
	if (!rcu_is_watching())
		return 0;
	return runTestModule() + (co.on ? runCompanions() : 0);
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
	if (current && current->core() != (moduleKeyOn ? 4 : 3))
		out.push_back(fmt::format("module: its site of pokelab_module_key returns {} with the "
					  "key {}", current->core(), moduleKeyOn ? "on" : "off"));
	if (current &&
	    (current->tail(1) != (callB ? 3 : 2) || current->call(1) != (callB ? 103 : 102)))
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
	companionsFinish(&out);
	if (moduleKeyOn)	/* as found */
		static_branch_disable(&pokelab_module_key);
	moduleKeyOn = false;
	return out;
}

std::string moduleWriterSummary()
{
	std::string s = fmt::format("module {}: {}, {}, {} (a reference held), {}, {}, {} by "
				    "the CPUs", path, kshim::nOf(loads, "load"),
				    kshim::nOf(unloads, "unload"), kshim::nOf(busy, "busy unload"),
				    kshim::nOf(flips, "key flip"),
				    kshim::nOf(calls, "static call update"),
				    kshim::nOf(runs, "run"));

	if (!depLoads && !initLoads)
		return s;
	s += fmt::format("\nmodule companions: provider and consumer: {}, {}, {} of the "
			 "provider refused (in use), {} of the consumer refused (Unknown symbol), "
			 "{} (symbol_get() held); ", kshim::nOf(depLoads, "load"),
			 kshim::nOf(depUnloads, "unload"), kshim::nOf(inUse, "unload"),
			 kshim::nOf(unknownRefused, "load"), kshim::nOf(depBusy, "busy unload"));
	s += fmt::format("init module: {}, {}, {}; {}, {}; {} and {} by the CPUs",
			 kshim::nOf(initLoads, "load"), kshim::nOf(initUnloads, "unload"),
			 kshim::nOf(initBusy, "busy unload"), kshim::nOf(coFlips, "key flip"),
			 kshim::nOf(coCalls, "static call update"),
			 kshim::nOf(depRuns, "consumer run"),
			 kshim::nOf(initRuns, "init module run"));
	return s;
}

} /* namespace pokelab::torture */
