// SPDX-License-Identifier: GPL-2.0-only
/*
 * Static keys, generic part.
 *
 * Port of kernel/jump_label.c, v6.16: the sorted __jump_table, the key
 * reference counts and jump_label_update().
 *
 * Deviations (each marked "userspace:" below): no modules, no CPU hotplug
 * lock (cpus_read_lock() has nothing to hold off), and sorting rebuilds the
 * table through a temporary copy.
 */
#include <algorithm>
#include <climits>
#include <new>
#include <string>
#include <vector>

#include <dlfcn.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <asm/nops.h>
#include <asm/sections.h>
#include <asm/text-patching.h>
#include <kernel_shim/boot.h>
#include <kernel_shim/busted.h>
#include <kernel_shim/sigsafe.h>
#include <kernel_shim/xmc.h>
#include <linux/bug.h>
#include <linux/kallsyms.h>
#include <linux/module.h>
#include <linux/jump_label.h>
#include <linux/mutex.h>
#include <pokelab/bug_switches.h>

#include "jump_label_internal.h"

extern "C" const struct noinstr_allowed_entry __start_noinstr_allowed[] __attribute__((weak));
extern "C" const struct noinstr_allowed_entry __stop_noinstr_allowed[] __attribute__((weak));
/* weak: a program with no static key has no __jump_table section */
extern "C" struct jump_entry __start___jump_table[] __attribute__((weak));
extern "C" struct jump_entry __stop___jump_table[] __attribute__((weak));

static DEFINE_MUTEX(jump_label_mutex);
static bool jump_label_initialized;

/* include/linux/jump_label.h: set by jump_label_init() */
bool static_key_initialized;


void arch_jump_label_transform(struct jump_entry *entry, enum jump_label_type type);
bool arch_jump_label_transform_queue(struct jump_entry *entry, enum jump_label_type type);
void arch_jump_label_transform_apply(void);

void jump_label_lock(void)
{
	mutex_lock(&jump_label_mutex);
}

void jump_label_unlock(void)
{
	mutex_unlock(&jump_label_mutex);
}

static long static_key_noinstr_kind(struct static_key *key)
{
	for (const struct noinstr_allowed_entry *e = __start_noinstr_allowed;
	     e && e < __stop_noinstr_allowed; e++)
		if (e->key == key)
			return e->kind;
	return 0;
}

/*
 * userspace: an _RO key lives in __ro_after_init memory in the kernel, so a
 * write after boot faults. Here the write BUGs first, naming the key.
 */
static void static_key_check_ro(struct static_key *key)
{
	if (!kshim::systemRunning() || static_key_noinstr_kind(key) != NOINSTR_ALLOWED_RO)
		return;

	Dl_info info = {};
	kshim::SigSafeBuf b;

	dladdr(key, &info);
	b.str("static key ").str(info.dli_sname ? info.dli_sname : "?").str(" at ")
		.hex((unsigned long)key).str(" is __ro_after_init: written after boot\n");
	b.emit();
	BUG();
}

/* Port of static_key_count(), kernel/jump_label.c */
int static_key_count(struct static_key *key)
{
	/* -1 is a first enable still patching: the sites must go to "enabled". */
	int n = atomic_read(&key->enabled);

	return n >= 0 ? n : 1;
}

static inline struct jump_entry *static_key_entries(struct static_key *key)
{
	WARN_ON_ONCE(key->type & JUMP_TYPE_LINKED);
	return (struct jump_entry *)(key->type & ~JUMP_TYPE_MASK);
}

static inline bool static_key_type(struct static_key *key)
{
	return key->type & JUMP_TYPE_TRUE;
}

static void static_key_set_entries(struct static_key *key, struct jump_entry *entries)
{
	unsigned long type;

	WARN_ON_ONCE((unsigned long)entries & JUMP_TYPE_MASK);
	type = key->type & JUMP_TYPE_MASK;
	key->entries = entries;
	key->type |= type;
}

/* Port of jump_label_type(), kernel/jump_label.c */
static enum jump_label_type jump_label_type(struct jump_entry *entry)
{
	struct static_key *key = jump_entry_key(entry);
	bool enabled = static_key_enabled(key);
	bool branch = jump_entry_is_branch(entry);

	/* See the comment in linux/jump_label.h */
	return (enum jump_label_type)(enabled ^ branch);
}

/*
 * Port of jump_label_can_update(), kernel/jump_label.c: an entry in init
 * text is patched only while init runs, and an entry outside kernel text
 * (built-in __exit, never run) not at all.
 * userspace: pokelab has no init text, so no entry carries the init bit
 * (jump_label_init() would set it for init_section_contains(); see
 * docs/porting.md).
 */
static bool jump_label_can_update(struct jump_entry *entry, bool init)
{
	if (!init && jump_entry_is_init(entry))
		return false;

	if (!kernel_text_address(jump_entry_code(entry))) {
		/* only an init (built-in __exit) entry may be outside the text */
		WARN_ON_ONCE(!jump_entry_is_init(entry));
		return false;
	}

	return true;
}

/* Port of __jump_label_update(), kernel/jump_label.c (HAVE_JUMP_LABEL_BATCH) */
static void __jump_label_update(struct static_key *key, struct jump_entry *entry,
				struct jump_entry *stop, bool init)
{
	for (; (entry < stop) && (jump_entry_key(entry) == key); entry++) {
		/* userspace: BUSTED, an off-by-one that stops before the key's last site */
		if (BUSTED(JL_SKIP_LAST) && (entry + 1 == stop || jump_entry_key(entry + 1) != key))
			break;
		if (!jump_label_can_update(entry, init))
			continue;
		if (!arch_jump_label_transform_queue(entry, jump_label_type(entry))) {
			/* The queue is full: apply it, then this entry must fit. */
			arch_jump_label_transform_apply();
			BUG_ON(!arch_jump_label_transform_queue(entry, jump_label_type(entry)));
		}
	}
	arch_jump_label_transform_apply();
}

static inline bool static_key_linked(struct static_key *key)
{
	return key->type & JUMP_TYPE_LINKED;
}

static inline void static_key_clear_linked(struct static_key *key)
{
	key->type &= ~JUMP_TYPE_LINKED;
}

static inline void static_key_set_linked(struct static_key *key)
{
	key->type |= JUMP_TYPE_LINKED;
}

/* A key used by modules other than its own: its entries, per module (kernel/jump_label.c) */
struct static_key_mod {
	struct static_key_mod *next;
	struct jump_entry *entries;
	struct module *mod;	/* NULL: the program's own entries */
};

static inline struct static_key_mod *static_key_mod(struct static_key *key)
{
	WARN_ON_ONCE(!static_key_linked(key));
	return (struct static_key_mod *)(key->type & ~JUMP_TYPE_MASK);
}

/* key->type and key->next share the word: set ->next, keep the type bits */
static void static_key_set_mod(struct static_key *key, struct static_key_mod *mod)
{
	unsigned long type;

	WARN_ON_ONCE((unsigned long)mod & JUMP_TYPE_MASK);
	type = key->type & JUMP_TYPE_MASK;
	key->next = mod;
	key->type |= type;
}

/* Port of __jump_label_mod_update(), kernel/jump_label.c: every module's entries of @key */
static void __jump_label_mod_update(struct static_key *key)
{
	for (struct static_key_mod *mod = static_key_mod(key); mod; mod = mod->next) {
		struct jump_entry *stop;
		struct module *m;

		/* NULL when the key's own module does not use it */
		if (!mod->entries)
			continue;

		m = mod->mod;
		if (!m)
			stop = __stop___jump_table;
		else
			stop = m->jump_entries + m->num_jump_entries;
		__jump_label_update(key, mod->entries, stop, m && m->state == MODULE_STATE_COMING);
	}
}

/* Port of jump_label_update(), kernel/jump_label.c */
/* userspace: not static, the bug replays (replay_jump_label.cpp) call it too */
void jump_label_update(struct static_key *key)
{
	struct jump_entry *stop = __stop___jump_table;
	bool init = !kshim::systemRunning();
	struct jump_entry *entry;
	struct module *mod;

	if (static_key_linked(key)) {
		__jump_label_mod_update(key);
		kshim::xmcKeyUpdated(key);	/* userspace: the model checks every site of @key */
		return;
	}

	/* userspace: __module_address() needs no RCU read side (linux/module.h) */
	mod = __module_address((unsigned long)key);
	if (mod) {
		stop = mod->jump_entries + mod->num_jump_entries;
		init = mod->state == MODULE_STATE_COMING;
	}

	entry = static_key_entries(key);
	/* no users: no entries */
	if (entry)
		__jump_label_update(key, entry, stop, init);
	kshim::xmcKeyUpdated(key);	/* userspace: the model checks every site of @key */
}

/* Port of static_key_fast_inc_not_disabled(), kernel/jump_label.c */
bool static_key_fast_inc_not_disabled(struct static_key *key)
{
	int v;

	/*
	 * Zero and negative counts must take the slow path: -1 marks a first
	 * enable still patching, and INT_MAX would overflow.
	 */
	v = atomic_read(&key->enabled);
	do {
		if (v <= 0 || v == INT_MAX)
			return false;
	} while (!likely(atomic_try_cmpxchg(&key->enabled, &v, v + 1)));

	return true;
}

/* Port of static_key_slow_inc_cpuslocked(), kernel/jump_label.c */
static bool static_key_slow_inc_cpuslocked(struct static_key *key)
{
	bool ret = true;

	STATIC_KEY_CHECK_USE(key);

	if (static_key_fast_inc_not_disabled(key))
		return true;

	jump_label_lock();
	/* The first enabler marks the key -1 ("patching") and patches. */
	if (!atomic_cmpxchg(&key->enabled, 0, -1)) {
		jump_label_update(key);
		/*
		 * Only now may the fast paths see a positive count: whoever
		 * reads 1 also sees the patched text. Pairs with the
		 * atomic_read()/try_cmpxchg() of the fast paths.
		 */
		atomic_set_release(&key->enabled, 1);
	} else {
		/* Under the mutex the count can only be >= 1 here. */
		if (WARN_ON_ONCE(!static_key_fast_inc_not_disabled(key)))
			ret = false;
	}
	jump_label_unlock();
	return ret;
}

/* Port of static_key_slow_inc(), kernel/jump_label.c */
bool static_key_slow_inc(struct static_key *key)
{
	static_key_check_ro(key);
	/* userspace: cpus_read_lock() has no hotplug to hold off */
	return static_key_slow_inc_cpuslocked(key);
}

/* Port of static_key_enable_cpuslocked(), kernel/jump_label.c */
static void static_key_enable_cpuslocked(struct static_key *key)
{
	STATIC_KEY_CHECK_USE(key);
	if (atomic_read(&key->enabled) > 0) {
		WARN_ON_ONCE(atomic_read(&key->enabled) != 1);
		return;
	}

	jump_label_lock();
	if (atomic_read(&key->enabled) == 0) {
		atomic_set(&key->enabled, -1);
		jump_label_update(key);
		/* See static_key_slow_inc(). */
		atomic_set_release(&key->enabled, 1);
	}
	jump_label_unlock();
}

void static_key_enable(struct static_key *key)
{
	static_key_check_ro(key);
	static_key_enable_cpuslocked(key);
}

/* Port of static_key_disable_cpuslocked(), kernel/jump_label.c */
static void static_key_disable_cpuslocked(struct static_key *key)
{
	STATIC_KEY_CHECK_USE(key);
	if (atomic_read(&key->enabled) != 1) {
		WARN_ON_ONCE(atomic_read(&key->enabled) != 0);
		return;
	}

	/* userspace: test-only hook, a window the kernel has too (no lock held yet) */
	if (unlikely(pokelab_hooks.disable_before_lock))
		pokelab_hooks.disable_before_lock(key);

	jump_label_lock();
	if (atomic_cmpxchg(&key->enabled, 1, 0) == 1)
		jump_label_update(key);
	jump_label_unlock();
}

void static_key_disable(struct static_key *key)
{
	static_key_check_ro(key);
	/* userspace: bug replay, the boolean test of before 224fa3552029 */
	if (unlikely(pokelab_bugs.disable_cmpxchg_bool_224fa3552029))
		return static_key_disable_cpuslocked_pre_224fa3552029(key);
	static_key_disable_cpuslocked(key);
}

/* Port of static_key_dec_not_one(), kernel/jump_label.c (after 224fa3552029) */
bool static_key_dec_not_one(struct static_key *key)
{
	int v;

	v = atomic_read(&key->enabled);
	do {
		/* -1: a decrement racing the first enable, a caller ordering bug. */
		WARN_ON_ONCE(v < 0);

		/* Underflow: warn and claim success rather than make it worse. */
		if (WARN_ON_ONCE(v == 0))
			return true;

		/* 1 -> 0 is the slow path's job. */
		if (v <= 1)
			return false;
	} while (!likely(atomic_try_cmpxchg(&key->enabled, &v, v - 1)));

	return true;
}

/* Port of __static_key_slow_dec_cpuslocked(), kernel/jump_label.c (after 83ab38ef0a0b) */
static void __static_key_slow_dec_cpuslocked(struct static_key *key)
{
	int val;

	if (static_key_dec_not_one(key))
		return;

	/* userspace: test-only hook, a window the kernel has too (no lock held yet) */
	if (unlikely(pokelab_hooks.slow_dec_before_lock))
		pokelab_hooks.slow_dec_before_lock(key);

	jump_label_lock();
	val = atomic_read(&key->enabled);
	/* -1 cannot be seen under the mutex: the enabler holds it while patching. */
	if (WARN_ON_ONCE(val == -1)) {
		jump_label_unlock();
		return;
	}
	/* Already 0: an imbalance somewhere. */
	if (WARN_ON_ONCE(val == 0)) {
		jump_label_unlock();
		return;
	}

	if (atomic_dec_and_test(&key->enabled))
		jump_label_update(key);
	jump_label_unlock();
}

/* Port of __static_key_slow_dec(), kernel/jump_label.c, v7.3 */
void __static_key_slow_dec(struct static_key *key)
{
	/* userspace: cpus_read_lock() has no hotplug to hold off */

	__static_key_slow_dec_cpuslocked(key);
	/* userspace: cpus_read_unlock() */

}

/* Port of static_key_slow_dec(), kernel/jump_label.c, v7.3 */
void static_key_slow_dec(struct static_key *key)
{
	STATIC_KEY_CHECK_USE(key);
	static_key_check_ro(key);	/* userspace: an _RO key's write after boot BUGs */
	/* userspace: bug replay, the fast path of before 83ab38ef0a0b */
	if (unlikely(pokelab_bugs.slow_dec_try_dec_83ab38ef0a0b))
		return __static_key_slow_dec_cpuslocked_pre_83ab38ef0a0b(key);
	__static_key_slow_dec(key);
}

/*
 * Port of jump_label_sort_entries(), kernel/jump_label.c: by key, then by
 * code address, so that each key's sites form one ascending run (one
 * ordered batch, see "jump_label: Sort entries of the same key by the code").
 * userspace: sorted through a copy of absolute addresses, then written back
 * as self-relative offsets, instead of the kernel's swap callback.
 */
static void jump_label_sort_entries(struct jump_entry *start, struct jump_entry *stop)
{
	struct Abs {
		unsigned long code, target, key;	/* key with its flag bits */
	};
	std::vector<Abs> v;

	for (struct jump_entry *e = start; e < stop; e++)
		v.push_back({jump_entry_code(e), jump_entry_target(e),
			     (unsigned long)&e->key + e->key});
	std::stable_sort(v.begin(), v.end(), [](const Abs &a, const Abs &b) {
		unsigned long ka = a.key & ~3UL, kb = b.key & ~3UL;

		return ka != kb ? ka < kb : a.code < b.code;
	});
	for (size_t i = 0; i < v.size(); i++) {
		struct jump_entry *e = start + i;

		e->code = (long)v[i].code - (long)&e->code;
		e->target = (long)v[i].target - (long)&e->target;
		e->key = (long)v[i].key - (long)&e->key;
	}
}

/* Port of jump_label_init(), kernel/jump_label.c */
void jump_label_init(void)
{
	struct jump_entry *iter_start = __start___jump_table;
	struct jump_entry *iter_stop = __stop___jump_table;
	struct static_key *key = NULL;
	struct jump_entry *iter;

	if (jump_label_initialized)
		return;

	jump_label_lock();
	jump_label_sort_entries(iter_start, iter_stop);

	for (iter = iter_start; iter < iter_stop; iter++) {
		struct static_key *iterk;

		iterk = jump_entry_key(iter);
		if (iterk == key)
			continue;

		key = iterk;
		static_key_set_entries(key, iter);
	}
	jump_label_initialized = true;
	static_key_initialized = true;
	jump_label_unlock();
}

/* Port of jump_label_init_type(), kernel/jump_label.c: the state the compiler left */
static enum jump_label_type jump_label_init_type(struct jump_entry *entry)
{
	struct static_key *key = jump_entry_key(entry);
	bool type = static_key_type(key);
	bool branch = jump_entry_is_branch(entry);

	/* See the comment in linux/jump_label.h */
	return (enum jump_label_type)(type ^ branch);
}

static inline void jump_entry_set_init(struct jump_entry *entry, bool set)
{
	if (set)
		entry->key |= 2;
	else
		entry->key &= ~2L;
}

static bool within_module_init(unsigned long addr, const struct module *mod)
{
	return within_module_mem_type(addr, mod, MOD_INIT_TEXT) ||
	       within_module_mem_type(addr, mod, MOD_INIT_DATA) ||
	       within_module_mem_type(addr, mod, MOD_INIT_RODATA);
}

/* Port of addr_conflict(), kernel/jump_label.c */
static int addr_conflict(struct jump_entry *entry, void *start, void *end)
{
	if (jump_entry_code(entry) <= (unsigned long)end &&
	    jump_entry_code(entry) + arch_jump_entry_size(entry) > (unsigned long)start)
		return 1;

	return 0;
}

/* Port of __jump_label_text_reserved(), kernel/jump_label.c */
static int __jump_label_text_reserved(struct jump_entry *iter_start, struct jump_entry *iter_stop,
				      void *start, void *end, bool init)
{
	for (struct jump_entry *iter = iter_start; iter < iter_stop; iter++) {
		if (init || !jump_entry_is_init(iter)) {
			if (addr_conflict(iter, start, end))
				return 1;
		}
	}

	return 0;
}

/*
 * Port of __jump_label_mod_text_reserved(), kernel/jump_label.c: the module
 * whose text holds @start, held by a reference while its table is read.
 */
static int __jump_label_mod_text_reserved(void *start, void *end)
{
	struct module *mod;
	int ret;

	mod = __module_text_address((unsigned long)start);
	WARN_ON_ONCE(__module_text_address((unsigned long)end) != mod);
	if (!try_module_get(mod))
		mod = NULL;
	if (!mod)
		return 0;

	ret = __jump_label_text_reserved(mod->jump_entries,
					 mod->jump_entries + mod->num_jump_entries, start, end,
					 mod->state == MODULE_STATE_COMING);

	module_put(mod);

	return ret;
}

/* Port of jump_label_text_reserved(), kernel/jump_label.c */
int jump_label_text_reserved(void *start, void *end)
{
	bool init = !kshim::systemRunning();
	int ret = __jump_label_text_reserved(__start___jump_table, __stop___jump_table, start,
					     end, init);

	if (ret)
		return ret;

	return __jump_label_mod_text_reserved(start, end);
}

/*
 * Port of jump_label_add_module(), kernel/jump_label.c: the module's entries,
 * sorted, linked to their keys (a key of the module points at them; any
 * other key gets a static_key_mod for this module, its own entries moved
 * to one of their own), and each site whose key is not in its compiled
 * state patched now. userspace: no sealed keys (jump_label_init_ro() is
 * not ported), so every foreign key is linked.
 */
static int jump_label_add_module(struct module *mod)
{
	struct jump_entry *iter_start = mod->jump_entries;
	struct jump_entry *iter_stop = iter_start + mod->num_jump_entries;
	struct static_key *key = NULL;
	struct static_key_mod *jlm, *jlm2;

	/* no jump-label entries: nothing to do */
	if (iter_start == iter_stop)
		return 0;

	jump_label_sort_entries(iter_start, iter_stop);

	for (struct jump_entry *iter = iter_start; iter < iter_stop; iter++) {
		struct static_key *iterk;

		jump_entry_set_init(iter, within_module_init(jump_entry_code(iter), mod));

		iterk = jump_entry_key(iter);
		if (iterk == key)
			continue;

		key = iterk;
		if (within_module((unsigned long)key, mod)) {
			static_key_set_entries(key, iter);
			continue;
		}

		jlm = new (std::nothrow) struct static_key_mod();
		if (!jlm)
			return -ENOMEM;
		if (!static_key_linked(key)) {
			jlm2 = new (std::nothrow) struct static_key_mod();
			if (!jlm2) {
				delete jlm;
				return -ENOMEM;
			}
			jlm2->mod = __module_address((unsigned long)key);
			jlm2->entries = static_key_entries(key);
			jlm2->next = NULL;
			static_key_set_mod(key, jlm2);
			static_key_set_linked(key);
		}
		jlm->mod = mod;
		jlm->entries = iter;
		jlm->next = static_key_mod(key);
		static_key_set_mod(key, jlm);
		static_key_set_linked(key);

		/* only if the key changed from the state the compiler left */
		if (jump_label_type(iter) != jump_label_init_type(iter))
			__jump_label_update(key, iter, iter_stop, true);
	}

	return 0;
}

/* Port of jump_label_del_module(), kernel/jump_label.c */
static void jump_label_del_module(struct module *mod)
{
	struct jump_entry *iter_start = mod->jump_entries;
	struct jump_entry *iter_stop = iter_start + mod->num_jump_entries;
	struct static_key *key = NULL;
	struct static_key_mod *jlm, **prev;

	for (struct jump_entry *iter = iter_start; iter < iter_stop; iter++) {
		if (jump_entry_key(iter) == key)
			continue;

		key = jump_entry_key(iter);

		if (within_module((unsigned long)key, mod))
			continue;

		/* no static_key_mod: the load ran out of memory */
		if (WARN_ON(!static_key_linked(key)))
			continue;

		prev = &key->next;
		jlm = static_key_mod(key);

		while (jlm && jlm->mod != mod) {
			prev = &jlm->next;
			jlm = jlm->next;
		}

		if (WARN_ON(!jlm))
			continue;

		if (prev == &key->next)
			static_key_set_mod(key, jlm->next);
		else
			*prev = jlm->next;

		delete jlm;

		jlm = static_key_mod(key);
		/* one left: fold it back into the key */
		if (jlm->next == NULL) {
			static_key_set_entries(key, jlm->entries);
			static_key_clear_linked(key);
			delete jlm;
		}
	}
}

/* Port of jump_label_module_notify(), kernel/jump_label.c */
static int jump_label_module_notify(struct notifier_block *self, unsigned long val, void *data)
{
	struct module *mod = (struct module *)data;
	int ret = 0;

	(void)self;
	/* userspace: cpus_read_lock() has no hotplug to hold off */
	jump_label_lock();

	switch (val) {
	case MODULE_STATE_COMING:
		ret = jump_label_add_module(mod);
		if (ret) {
			WARN_ON(ret);	/* out of memory: jump labels of the module may not work */
			jump_label_del_module(mod);
		}
		break;
	case MODULE_STATE_GOING:
		jump_label_del_module(mod);
		break;
	}

	jump_label_unlock();

	/* notifier_from_errno() */
	return ret ? NOTIFY_STOP_MASK | (NOTIFY_OK - ret) : NOTIFY_OK;
}

static struct notifier_block jump_label_module_nb = {
	jump_label_module_notify, nullptr, JUMP_LABEL_MODULE_NOTIFY_PRIORITY,
};

/* Port of jump_label_init_module(), kernel/jump_label.c (an early_initcall) */
static int jump_label_init_module(void)
{
	return register_module_notifier(&jump_label_module_nb);
}

/* objtool warning 13 ("non-RO static key usage in noinstr"), checked at boot */
int jump_label_check_noinstr(std::string &err, unsigned int *checked)
{
	unsigned int n = 0;

	for (struct jump_entry *e = __start___jump_table; e < __stop___jump_table; e++) {
		struct static_key *key = jump_entry_key(e);

		if (!is_kernel_noinstr_text(jump_entry_code(e)))
			continue;
		if (!static_key_noinstr_kind(key)) {
			Dl_info info = {};

			dladdr(key, &info);
			err = fmt::format("{}: non-RO static key usage in noinstr (site {:#x}); "
					  "define it with DEFINE_STATIC_KEY_*_RO or _NOINSTR",
					  info.dli_sname ? info.dli_sname : fmt::format("{}", (void *)key),
					  jump_entry_code(e));
			return -EINVAL;
		}
		n++;
	}
	if (checked)
		*checked = n;
	return 0;
}

unsigned int jump_label_nr_sites(struct static_key *key)
{
	unsigned int n = 0;

	for (struct jump_entry *e = static_key_entries(key); e && e < __stop___jump_table &&
	     jump_entry_key(e) == key; e++)
		n++;
	return n;
}

unsigned int jump_label_check_sites(struct static_key *key, std::string *err)
{
	unsigned int bad = 0;

	for (struct jump_entry *e = static_key_entries(key); e && e < __stop___jump_table &&
	     jump_entry_key(e) == key; e++) {
		const u8 *code = (const u8 *)jump_entry_code(e);
		u8 want[JMP32_INSN_SIZE];
		int size = code[0] == JMP8_INSN_OPCODE || !memcmp(code, x86_nops[2], 2) ? 2 : 5;

		if (jump_label_type(e) == JUMP_LABEL_JMP)
			__text_gen_insn(want, size == 2 ? JMP8_INSN_OPCODE : JMP32_INSN_OPCODE, code,
					(void *)jump_entry_target(e), size);
		else
			memcpy(want, x86_nops[size], size);
		if (!memcmp(code, want, size))
			continue;
		if (!bad++ && err)
			*err = fmt::format("site {:#x} holds {:02x} where {} wants {:02x}",
					   (unsigned long)code, fmt::join(code, code + size, " "),
					   jump_label_type(e) == JUMP_LABEL_JMP ? "JMP" : "NOP",
					   fmt::join(want, want + size, " "));
	}
	return bad;
}

namespace {

int jumpLabelInitHook(std::string &err)
{
	static bool notifier;

	jump_label_init();
	/* userspace: the early_initcall, once per process (boot may run many times) */
	if (!notifier) {
		BUG_ON(jump_label_init_module());
		notifier = true;
	}
	return jump_label_check_noinstr(err, nullptr);
}

kshim::BootHookRegistrar jumpLabelHook({"jump_label_init", kshim::BootStage::Early,
					jumpLabelInitHook});

} /* namespace */
