// SPDX-License-Identifier: GPL-2.0-only
/*
 * Inline static calls: the recorded call sites of each key, rewritten with
 * the key (linux/static_call.h, docs/static_calls.md).
 *
 * Port of kernel/static_call_inline.c, v7.3. The sites come from
 * pokelab's objtool pass (tools/objtool/) in the program's
 * static_call_sites section and in each module's.
 *
 * userspace: the program has no init text (a module's sites in theirs get
 * STATIC_CALL_SITE_INIT); cpus_read_lock() has no hotplug to hold off; the
 * module's sites are rewritten live (smp_text_poke_single()) even while it
 * is coming, since its text is ROX by then (docs/modules.md).
 */
#include <algorithm>
#include <cerrno>
#include <new>
#include <vector>

#include <asm/text-patching.h>
#include <kernel_shim/boot.h>
#include <linux/bug.h>
#include <kernel_shim/xmc.h>
#include <linux/kallsyms.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/printk.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/static_call.h>

extern "C" struct static_call_site __start_static_call_sites[] __attribute__((weak));
extern "C" struct static_call_site __stop_static_call_sites[] __attribute__((weak));
/*
 * include/linux/static_call_types.h: a trampoline a module may call through
 * __raw_static_call() without its key being exported, and that key. pokelab
 * exports keys (EXPORT_STATIC_CALL()), so the table is empty.
 */
/* Port of struct static_call_tramp_key, include/linux/static_call.h, v7.3 */
struct static_call_tramp_key {
	s32 tramp;
	s32 key;
};
extern "C" struct static_call_tramp_key __start_static_call_tramp_key[] __attribute__((weak));
extern "C" struct static_call_tramp_key __stop_static_call_tramp_key[] __attribute__((weak));

int static_call_initialized;

/*
 * Port of static_call_force_reinit(), kernel/static_call_inline.c, v7.3:
 * before the early initcall, make its static_call_init() run again.
 */
void static_call_force_reinit(void)
{
	if (WARN_ON_ONCE(!static_call_initialized))
		return;

	static_call_initialized++;
}

static DEFINE_MUTEX(static_call_mutex);

/* Port of static_call_lock(), kernel/static_call_inline.c, v7.3 */
static void static_call_lock(void)
{
	mutex_lock(&static_call_mutex);
}

/* Port of static_call_unlock(), kernel/static_call_inline.c, v7.3 */
static void static_call_unlock(void)
{
	mutex_unlock(&static_call_mutex);
}

/* Port of static_call_addr(), kernel/static_call_inline.c, v7.3 */
static inline void *static_call_addr(struct static_call_site *site)
{
	return (void *)((long)site->addr + (long)&site->addr);
}

/* Port of __static_call_key(), kernel/static_call_inline.c, v7.3 */
static inline unsigned long __static_call_key(const struct static_call_site *site)
{
	return (long)site->key + (long)&site->key;
}

/* Port of static_call_key(), kernel/static_call_inline.c, v7.3 */
static inline struct static_call_key *static_call_key(const struct static_call_site *site)
{
	return (struct static_call_key *)(__static_call_key(site) & ~STATIC_CALL_SITE_FLAGS);
}

/* These assume the key is word-aligned. */
/* Port of static_call_is_init(), kernel/static_call_inline.c, v7.3 */
static inline bool static_call_is_init(struct static_call_site *site)
{
	return __static_call_key(site) & STATIC_CALL_SITE_INIT;
}

/* Port of static_call_is_tail(), kernel/static_call_inline.c, v7.3 */
static inline bool static_call_is_tail(struct static_call_site *site)
{
	return __static_call_key(site) & STATIC_CALL_SITE_TAIL;
}

/* Port of static_call_set_init(), kernel/static_call_inline.c, v7.3 */
static inline void static_call_set_init(struct static_call_site *site)
{
	site->key = (__static_call_key(site) | STATIC_CALL_SITE_INIT) - (long)&site->key;
}

/* Port of static_call_site_cmp(), kernel/static_call_inline.c, v7.3 */
static int static_call_site_cmp(const void *_a, const void *_b)
{
	const struct static_call_site *a = (const struct static_call_site *)_a;	/* userspace: C++ */
	const struct static_call_site *b = (const struct static_call_site *)_b;	/* userspace: C++ */
	const struct static_call_key *key_a = static_call_key(a);
	const struct static_call_key *key_b = static_call_key(b);

	if (key_a < key_b)
		return -1;

	if (key_a > key_b)
		return 1;

	return 0;
}

/* Port of static_call_site_swap(), kernel/static_call_inline.c, v7.3 */
static void static_call_site_swap(void *_a, void *_b, int size)
{
	long delta = (unsigned long)_a - (unsigned long)_b;
	struct static_call_site *a = (struct static_call_site *)_a;	/* userspace: C++ cast */
	struct static_call_site *b = (struct static_call_site *)_b;	/* userspace: C++ cast */
	struct static_call_site tmp = *a;

	(void)size;	/* userspace: unused, as upstream (no -Wunused-parameter there) */
	a->addr = b->addr  - delta;
	a->key  = b->key   - delta;

	b->addr = tmp.addr + delta;
	b->key  = tmp.key  + delta;
}

/*
 * Port of static_call_sort_entries(), kernel/static_call_inline.c, v7.3:
 * the kernel's heapsort, which moves the sites of one key among
 * themselves; the cross-modifying-code model re-indexes a table it finds
 * sorted under it (kernel_shim/xmc/tables.cpp).
 */
static inline void static_call_sort_entries(struct static_call_site *start,
					    struct static_call_site *stop)
{
	sort(start, stop - start, sizeof(struct static_call_site),
	     static_call_site_cmp, static_call_site_swap);
}

/* Port of static_call_key_has_mods(), kernel/static_call_inline.c, v7.3 */
static inline bool static_call_key_has_mods(struct static_call_key *key)
{
	return !(key->type & 1);
}

/* Port of static_call_key_next(), kernel/static_call_inline.c, v7.3 */
static inline struct static_call_mod *static_call_key_next(struct static_call_key *key)
{
	if (!static_call_key_has_mods(key))
		return NULL;

	return key->mods;
}

/* Port of static_call_key_sites(), kernel/static_call_inline.c, v7.3 */
static inline struct static_call_site *static_call_key_sites(struct static_call_key *key)
{
	if (static_call_key_has_mods(key))
		return NULL;

	return (struct static_call_site *)(key->type & ~1);
}

/* Port of __static_call_update(), kernel/static_call_inline.c, v7.3 */
void __static_call_update(struct static_call_key *key, void *tramp, void *func)
{
	struct static_call_site *site, *stop;
	struct static_call_mod *site_mod, first;

	/* userspace: cpus_read_lock() has no hotplug to hold off */

	static_call_lock();

	if (key->func == func)
		goto done;

	key->func = func;

	arch_static_call_transform(NULL, tramp, func, false);

	/*
	 * Before static_call_init() the sites still call the trampoline,
	 * which is done.
	 */
	if (WARN_ON_ONCE(!static_call_initialized))
		goto done;

	first = (struct static_call_mod){
		.next = static_call_key_next(key),
		.mod = NULL,
		.sites = static_call_key_sites(key),
	};

	for (site_mod = &first; site_mod; site_mod = site_mod->next) {
		bool init = system_state < SYSTEM_RUNNING;
		struct module *mod = site_mod->mod;

		if (!site_mod->sites) {
			/*
			 * A key of a module that has no site of it, or the
			 * empty @first of a key in the mods form.
			 */
			continue;
		}

		stop = __stop_static_call_sites;

		if (mod) {
			/* userspace: CONFIG_MODULES=y, no #ifdef */

			stop = mod->static_call_sites +
			       mod->num_static_call_sites;
			init = mod->state == MODULE_STATE_COMING;
			/* userspace: (CONFIG_MODULES) */
		}

		for (site = site_mod->sites;
		     site < stop && static_call_key(site) == key; site++) {
			void *site_addr = static_call_addr(site);

			if (!init && static_call_is_init(site))
				continue;

			if (!kernel_text_address((unsigned long)site_addr)) {
				/*
				 * Text that is not text any more (freed init
				 * text, built-in __exit): nothing runs it.
				 */
				/* userspace: WARN_ON_ONCE(), the report names the condition */
				WARN_ON_ONCE(!static_call_is_init(site));
				continue;
			}

			arch_static_call_transform(site_addr, tramp, func,
						   static_call_is_tail(site));
		}
	}

done:
	kshim::xmcStaticCallUpdated(key);	/* userspace: the model checks its sites and trampoline */
	static_call_unlock();
	/* userspace: cpus_read_unlock() */

}

/* include/linux/module.h's within_module_init(): the module's init memory */
static bool within_module_init(unsigned long addr, const struct module *mod)
{
	return within_module_mem_type(addr, mod, MOD_INIT_TEXT) ||
	       within_module_mem_type(addr, mod, MOD_INIT_DATA) ||
	       within_module_mem_type(addr, mod, MOD_INIT_RODATA);
}

/* userspace: no init sections in the program: no site is in one */
static bool init_section_contains(void *virt, size_t size)
{
	(void)virt;
	(void)size;
	return false;
}

/* Port of __static_call_init(), kernel/static_call_inline.c, v7.3 */
static int __static_call_init(struct module *mod, struct static_call_site *start,
			      struct static_call_site *stop)
{
	struct static_call_site *site;
	struct static_call_key *key, *prev_key = NULL;
	struct static_call_mod *site_mod;

	if (start == stop)
		return 0;

	static_call_sort_entries(start, stop);

	for (site = start; site < stop; site++) {
		void *site_addr = static_call_addr(site);

		if ((mod && within_module_init((unsigned long)site_addr, mod)) ||
		    (!mod && init_section_contains(site_addr, 1)))
			static_call_set_init(site);

		key = static_call_key(site);
		if (key != prev_key) {
			prev_key = key;

			/*
			 * For vmlinux (!mod) avoid the allocation by storing
			 * the sites pointer in the key itself. Also see
			 * __static_call_update()'s @first.
			 */
			if (!mod) {
				key->sites = site;
				key->type |= 1;
				goto do_transform;
			}

			site_mod = kzalloc_obj(*site_mod);
			if (!site_mod)
				return -ENOMEM;

			/*
			 * The key's own sites, if any, move to a mod of their
			 * own (mod NULL) before the first module's.
			 */
			if (static_call_key_sites(key)) {
				site_mod->mod = NULL;
				site_mod->next = NULL;
				site_mod->sites = static_call_key_sites(key);

				key->mods = site_mod;

				site_mod = kzalloc_obj(*site_mod);
				if (!site_mod)
					return -ENOMEM;
			}

			site_mod->mod = mod;
			site_mod->sites = site;
			site_mod->next = static_call_key_next(key);
			key->mods = site_mod;
		}

do_transform:
		arch_static_call_transform(site_addr, NULL, key->func, static_call_is_tail(site));
	}

	return 0;
}

/* Port of addr_conflict(), kernel/static_call_inline.c, v7.3 */
static int addr_conflict(struct static_call_site *site, void *start, void *end)
{
	unsigned long addr = (unsigned long)static_call_addr(site);

	if (addr <= (unsigned long)end && addr + CALL_INSN_SIZE > (unsigned long)start)
		return 1;

	return 0;
}

/* Port of __static_call_text_reserved(), kernel/static_call_inline.c, v7.3 */
static int __static_call_text_reserved(struct static_call_site *iter_start,
				       struct static_call_site *iter_stop,
				       void *start, void *end, bool init)
{
	struct static_call_site *iter = iter_start;

	while (iter < iter_stop) {
		if (init || !static_call_is_init(iter)) {
			if (addr_conflict(iter, start, end))
				return 1;
		}
		iter++;
	}

	return 0;
}

/* Port of __static_call_mod_text_reserved(), kernel/static_call_inline.c, v7.3 */
static int __static_call_mod_text_reserved(void *start, void *end)
{
	struct module *mod;
	int ret;

	/* userspace: no scoped_guard(rcu): the QSBR read side is the CPU's task work */

	mod = __module_text_address((unsigned long)start);
	WARN_ON_ONCE(__module_text_address((unsigned long)end) != mod);
	if (!try_module_get(mod))
		mod = NULL;
	/* userspace: the guard's end */

	if (!mod)
		return 0;

	ret = __static_call_text_reserved(mod->static_call_sites,
					  mod->static_call_sites + mod->num_static_call_sites,
					  start, end, mod->state == MODULE_STATE_COMING);

	module_put(mod);

	return ret;
}

/*
 * Port of tramp_key_lookup(), kernel/static_call_inline.c, v7.3: the key of
 * trampoline @addr, from the table of trampolines modules may call.
 */
static unsigned long tramp_key_lookup(unsigned long addr)
{
	struct static_call_tramp_key *start = __start_static_call_tramp_key;
	struct static_call_tramp_key *stop = __stop_static_call_tramp_key;
	struct static_call_tramp_key *tramp_key;

	for (tramp_key = start; tramp_key != stop; tramp_key++) {
		unsigned long tramp;

		tramp = (long)tramp_key->tramp + (long)&tramp_key->tramp;
		if (tramp == addr)
			return (long)tramp_key->key + (long)&tramp_key->key;
	}

	return 0;
}

/*
 * Port of static_call_add_module(), kernel/static_call_inline.c, v7.3: a
 * site whose "key" is a trampoline in the text (a __raw_static_call() of a
 * key that is not exported) is pointed at the key, then the sites are
 * linked. pokelab's modules name exported keys, so every site keeps its own.
 */
static int static_call_add_module(struct module *mod)
{
	struct static_call_site *start = mod->static_call_sites;
	struct static_call_site *stop = start + mod->num_static_call_sites;
	struct static_call_site *site;

	for (site = start; site != stop; site++) {
		unsigned long s_key = __static_call_key(site);
		unsigned long addr = s_key & ~STATIC_CALL_SITE_FLAGS;
		unsigned long key;

		/*
		 * A key address: the key was exported, and the module may
		 * update the call. A text address: only its trampoline was,
		 * and the key comes from the table.
		 */
		if (!kernel_text_address(addr))
			continue;

		key = tramp_key_lookup(addr);
		if (!key) {
			/* userspace: pr_warn() takes fmt's format */
			pr_warn("Failed to fixup __raw_static_call() usage at: {}\n",
				static_call_addr(site));
			return -EINVAL;
		}

		key |= s_key & STATIC_CALL_SITE_FLAGS;
		site->key = key - (long)&site->key;
	}

	return __static_call_init(mod, start, stop);
}

/* Port of static_call_del_module(), kernel/static_call_inline.c, v7.3 */
static void static_call_del_module(struct module *mod)
{
	struct static_call_site *start = mod->static_call_sites;
	struct static_call_site *stop = mod->static_call_sites +
					mod->num_static_call_sites;
	struct static_call_key *key, *prev_key = NULL;
	struct static_call_mod *site_mod, **prev;
	struct static_call_site *site;

	for (site = start; site < stop; site++) {
		key = static_call_key(site);

		/*
		 * A key __static_call_init() did not reach (it ran out of
		 * memory) still holds a sites pointer, not a list: neither it
		 * nor any key after it (the sites are sorted by key) has a
		 * static_call_mod of this module. Stop here.
		 */
		if (!static_call_key_has_mods(key))
			break;

		if (key == prev_key)
			continue;

		prev_key = key;

		for (prev = &key->mods, site_mod = key->mods;
		     site_mod && site_mod->mod != mod;
		     prev = &site_mod->next, site_mod = site_mod->next)
			;

		if (!site_mod)
			continue;

		*prev = site_mod->next;
		kfree(site_mod);
	}
}

/* Port of static_call_module_notify(), kernel/static_call_inline.c, v7.3 */
static int static_call_module_notify(struct notifier_block *nb __maybe_unused, unsigned long val,
				     void *data)
{
	struct module *mod = (struct module *)data;	/* userspace: C++ casts from void * */
	int ret = 0;

	/* userspace: cpus_read_lock() has no hotplug to hold off */

	static_call_lock();

	switch (val) {
	case MODULE_STATE_COMING:
		ret = static_call_add_module(mod);
		if (ret) {
			pr_warn("Failed to allocate memory for static calls\n");
			static_call_del_module(mod);
		}
		break;
	case MODULE_STATE_GOING:
		static_call_del_module(mod);
		break;
	}

	static_call_unlock();
	/* userspace: cpus_read_unlock() */

	return notifier_from_errno(ret);
}

static bool static_call_module_nb_registered;	/* userspace: see static_call_init() */
static struct notifier_block static_call_module_nb = {
	static_call_module_notify, nullptr, STATIC_CALL_MODULE_NOTIFY_PRIORITY,
};

/* Port of static_call_text_reserved(), kernel/static_call_inline.c, v7.3 */
int static_call_text_reserved(void *start, void *end)
{
	bool init = system_state < SYSTEM_RUNNING;
	int ret = __static_call_text_reserved(__start_static_call_sites,
			__stop_static_call_sites, start, end, init);

	if (ret)
		return ret;

	return __static_call_mod_text_reserved(start, end);
}

/*
 * Port of static_call_init(), kernel/static_call_inline.c, v7.3: called
 * twice per boot, as on x86: from setup_arch() (pokelab: at the start of
 * the alternatives' boot hook, apply_alternatives.cpp) and as an early
 * initcall (the late boot hook below), which does the work again only
 * after static_call_force_reinit().
 */
int static_call_init(void)
{
	int ret;

	/* static_call_force_reinit() asks for a second pass. */
	if (static_call_initialized == 1)
		return 0;

	/* userspace: cpus_read_lock() has no hotplug to hold off */

	static_call_lock();
	ret = __static_call_init(NULL, __start_static_call_sites,
				 __stop_static_call_sites);
	static_call_unlock();
	/* userspace: cpus_read_unlock() */


	if (ret) {
		pr_err("Failed to allocate memory for static_call!\n");
		BUG();
	}
	kshim::xmcStaticCallsInitialised();	/* userspace: the checker's R7 (tables.cpp) */

	/* userspace: registered once per process, where boot runs many times */
	if (!static_call_initialized && !static_call_module_nb_registered)
		static_call_module_nb_registered = !register_module_notifier(&static_call_module_nb);

	static_call_initialized = 1;
	return 0;
}

namespace {

/* The early initcall. */
int staticCallInitcall(std::string &)
{
	return static_call_init();
}

/*
 * userspace: boot runs many times in one process; each boot links and
 * rewrites the program's sites again from setup_arch()'s call, under that
 * boot's features (a key's target, the return thunk's setting).
 */
int staticCallShutdown(std::string &)
{
	static_call_initialized = 0;
	return 0;
}

kshim::BootHookRegistrar staticCallHook({"static_call_init", kshim::BootStage::Late,
					  staticCallInitcall});
kshim::BootHookRegistrar staticCallDownHook({"static_call_init", kshim::BootStage::Shutdown,
					      staticCallShutdown});

} /* namespace */
