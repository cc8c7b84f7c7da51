// SPDX-License-Identifier: GPL-2.0-only
/*
 * Static keys, generic part.
 *
 * Port of kernel/jump_label.c, v7.3: the sorted __jump_table, the key
 * reference counts, jump_label_update(), the modules' tables and the
 * sealing of the keys that are __ro_after_init (jump_label_init_ro()).
 *
 * Deviations (each marked "userspace:" below): no CPU hotplug lock
 * (cpus_read_lock() has nothing to hold off), no init text, no RCU read
 * side around the module lookups (the shim's QSBR RCU: a CPU's task work
 * is one, linux/module.h), and the pokelab hooks (the model, the test
 * windows, the bug replays, the BUG of an _RO key written after boot).
 */
#include <climits>
#include <string>

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
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/jump_label.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <pokelab/bug_switches.h>

#include "jump_label_internal.h"

extern "C" const struct noinstr_allowed_entry __start_noinstr_allowed[] __attribute__((weak));
extern "C" const struct noinstr_allowed_entry __stop_noinstr_allowed[] __attribute__((weak));
/* weak: a program with no static key has no __jump_table section */
extern "C" struct jump_entry __start___jump_table[] __attribute__((weak));
extern "C" struct jump_entry __stop___jump_table[] __attribute__((weak));

static DEFINE_MUTEX(jump_label_mutex);

/* include/linux/jump_label.h: set by jump_label_init() */
bool static_key_initialized;

void arch_jump_label_transform(struct jump_entry *entry, enum jump_label_type type);
bool arch_jump_label_transform_queue(struct jump_entry *entry, enum jump_label_type type);
void arch_jump_label_transform_apply(void);

/*
 * userspace: include/linux/cleanup.h's guard() for the one lock class this
 * file takes, guard(mutex) (DEFINE_GUARD(mutex, ...) of linux/mutex.h): the
 * shim has no cleanup.h, and a C++ destructor does what the kernel's
 * __attribute__((cleanup)) does, unlocking on every way out of the scope.
 */
struct class_mutex_t {
	struct mutex *lock;

	~class_mutex_t() { mutex_unlock(lock); }
};

static inline class_mutex_t class_mutex_constructor(struct mutex *lock,
						    const std::source_location &loc =
							    std::source_location::current())
{
	mutex_lock(lock, loc);
	return {lock};
}

#define __JL_PASTE2(a, b) a##b
#define __JL_PASTE(a, b) __JL_PASTE2(a, b)
#define guard(_name)							\
	class_##_name##_t __JL_PASTE(__guard_, __COUNTER__) __attribute__((unused)) =	\
		class_##_name##_constructor

/* Port of jump_label_lock(), include/linux/jump_label.h, v7.3 */
void jump_label_lock(void)
{
	mutex_lock(&jump_label_mutex);
}

/* Port of jump_label_unlock(), include/linux/jump_label.h, v7.3 */
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
 * userspace: __ro_after_init is no section here: the _RO keys are those
 * DEFINE_STATIC_KEY_*_RO() recorded (ANNOTATE_NOINSTR_ALLOWED()). Only keys
 * are asked about (jump_label_init_ro()).
 */
static bool is_kernel_ro_after_init(unsigned long addr)
{
	return static_key_noinstr_kind((struct static_key *)addr) == NOINSTR_ALLOWED_RO;
}

static inline bool static_key_sealed(struct static_key *key);

/*
 * userspace: an _RO key lives in __ro_after_init memory in the kernel, so a
 * write after boot faults. Here the write BUGs first, naming the key. So
 * does a write to a key jump_label_init_ro() sealed at the end of an
 * earlier boot (the kernel boots once): its entries are gone, and
 * jump_label_update() would patch none of its sites.
 */
static void static_key_check_ro(struct static_key *key)
{
	if ((!kshim::systemRunning() || static_key_noinstr_kind(key) != NOINSTR_ALLOWED_RO) &&
	    !static_key_sealed(key))
		return;

	Dl_info info = {};
	kshim::SigSafeBuf b;

	dladdr(key, &info);
	b.str("static key ").str(info.dli_sname ? info.dli_sname : "?").str(" at ")
		.hex((unsigned long)key)
		.str(static_key_sealed(key) ? " is __ro_after_init: written after boot (sealed)\n"
					    : " is __ro_after_init: written after boot\n");
	b.emit();
	BUG();
}

/* Port of static_key_count(), kernel/jump_label.c, v7.3 */
int static_key_count(struct static_key *key)
{
	/* -1 is a first enable still patching: the sites must go to "enabled". */
	int n = atomic_read(&key->enabled);

	return n >= 0 ? n : 1;
}

/* Port of static_key_entries(), kernel/jump_label.c, v7.3 */
static inline struct jump_entry *static_key_entries(struct static_key *key)
{
	WARN_ON_ONCE(key->type & JUMP_TYPE_LINKED);
	return (struct jump_entry *)(key->type & ~JUMP_TYPE_MASK);
}

/* Port of static_key_type(), kernel/jump_label.c, v7.3 */
static inline bool static_key_type(struct static_key *key)
{
	return key->type & JUMP_TYPE_TRUE;
}

/* Port of static_key_set_entries(), kernel/jump_label.c, v7.3 */
static void static_key_set_entries(struct static_key *key, struct jump_entry *entries)
{
	unsigned long type;

	WARN_ON_ONCE((unsigned long)entries & JUMP_TYPE_MASK);
	type = key->type & JUMP_TYPE_MASK;
	key->entries = entries;
	key->type |= type;
}

/* Port of jump_label_type(), kernel/jump_label.c, v7.3 */
static enum jump_label_type jump_label_type(struct jump_entry *entry)
{
	struct static_key *key = jump_entry_key(entry);
	bool enabled = static_key_enabled(key);
	bool branch = jump_entry_is_branch(entry);

	/* See the comment in linux/jump_label.h */
	return (enum jump_label_type)(enabled ^ branch);	/* userspace: C++ cast */
}

/*
 * Port of jump_label_can_update(), kernel/jump_label.c, v7.3: an entry in
 * init text is patched only while init runs, and an entry outside kernel
 * text (built-in __exit, never run) not at all. pokelab has no init text
 * of its own, so only a module's init entries carry the init bit.
 */
static bool jump_label_can_update(struct jump_entry *entry, bool init)
{
	if (!init && jump_entry_is_init(entry))
		return false;

	if (!kernel_text_address(jump_entry_code(entry))) {
		/* only an init (built-in __exit) entry may be outside the text */
		/* userspace: the shim's WARN_ONCE() prints its format, not the site's %pS */
		WARN_ONCE(!jump_entry_is_init(entry),
			  "can't patch jump_label at %pS");
		return false;
	}

	return true;
}

/* Port of __jump_label_update(), kernel/jump_label.c, v7.3 (HAVE_JUMP_LABEL_BATCH) */
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

/* Port of static_key_linked(), kernel/jump_label.c, v7.3 */
static inline bool static_key_linked(struct static_key *key)
{
	return key->type & JUMP_TYPE_LINKED;
}

/* Port of static_key_clear_linked(), kernel/jump_label.c, v7.3 */
static inline void static_key_clear_linked(struct static_key *key)
{
	key->type &= ~JUMP_TYPE_LINKED;
}

/* Port of static_key_set_linked(), kernel/jump_label.c, v7.3 */
static inline void static_key_set_linked(struct static_key *key)
{
	key->type |= JUMP_TYPE_LINKED;
}

/* A key used by modules other than its own: its entries, per module (kernel/jump_label.c) */
/* Port of struct static_key_mod, kernel/jump_label.c, v7.3 */
struct static_key_mod {
	struct static_key_mod *next;
	struct jump_entry *entries;
	struct module *mod;	/* NULL: the program's own entries */
};

/* Port of static_key_mod(), kernel/jump_label.c, v7.3 */
static inline struct static_key_mod *static_key_mod(struct static_key *key)
{
	WARN_ON_ONCE(!static_key_linked(key));
	return (struct static_key_mod *)(key->type & ~JUMP_TYPE_MASK);
}

/* key->type and key->next share the word: set ->next, keep the type bits */
/* Port of static_key_set_mod(), kernel/jump_label.c, v7.3 */
static void static_key_set_mod(struct static_key *key, struct static_key_mod *mod)
{
	unsigned long type;

	WARN_ON_ONCE((unsigned long)mod & JUMP_TYPE_MASK);
	type = key->type & JUMP_TYPE_MASK;
	key->next = mod;
	key->type |= type;
}

/*
 * Port of __jump_label_mod_update(), kernel/jump_label.c, v7.3: every
 * module's entries of @key. None for a sealed key (its list is empty).
 */
static void __jump_label_mod_update(struct static_key *key)
{
	struct static_key_mod *mod;

	for (mod = static_key_mod(key); mod; mod = mod->next) {
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

/*
 * Port of jump_label_update(), kernel/jump_label.c, v7.3. A linked key
 * (used by modules) goes through its list; a sealed key's list is empty,
 * so none of its sites is patched.
 */
/* userspace: not static, the bug replays (replay_jump_label.cpp) call it too */
void jump_label_update(struct static_key *key)
{
	struct jump_entry *stop = __stop___jump_table;
	bool init = system_state < SYSTEM_RUNNING;
	struct jump_entry *entry;
	/* userspace: CONFIG_MODULES=y, no #ifdef */

	struct module *mod;

	if (static_key_linked(key)) {
		__jump_label_mod_update(key);
		kshim::xmcKeyUpdated(key);	/* userspace: the model checks every site of @key */
		return;
	}

	/* userspace: no scoped_guard(rcu): the QSBR read side is the CPU's task work */

	mod = __module_address((unsigned long)key);
	if (mod) {
		stop = mod->jump_entries + mod->num_jump_entries;
		init = mod->state == MODULE_STATE_COMING;
	}
	/* userspace: (the guard's end; #endif) */

	entry = static_key_entries(key);
	/* no users: no entries */
	if (entry)
		__jump_label_update(key, entry, stop, init);
	kshim::xmcKeyUpdated(key);	/* userspace: the model checks every site of @key */
}

/* Port of static_key_fast_inc_not_disabled(), kernel/jump_label.c, v7.3 */
bool static_key_fast_inc_not_disabled(struct static_key *key)
{
	int v;

	STATIC_KEY_CHECK_USE(key);
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

/*
 * Port of static_key_slow_inc_cpuslocked(), kernel/jump_label.c, v7.3. The
 * mutex is held to the end of the function (guard()).
 */
static bool static_key_slow_inc_cpuslocked(struct static_key *key)
{
	/* userspace: no CPU hotplug lock to assert held */

	/*
	 * A key already enabled just counts one more user. Otherwise wait,
	 * under the mutex, for whoever enables it to finish patching.
	 */
	if (static_key_fast_inc_not_disabled(key))
		return true;

	guard(mutex)(&jump_label_mutex);
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
			return false;
	}
	return true;
}

/* Port of static_key_slow_inc(), kernel/jump_label.c, v7.3 */
bool static_key_slow_inc(struct static_key *key)
{
	bool ret;

	static_key_check_ro(key);	/* userspace: an _RO key's write after boot BUGs */
	/* userspace: cpus_read_lock() has no hotplug to hold off */

	ret = static_key_slow_inc_cpuslocked(key);
	/* userspace: cpus_read_unlock() */

	return ret;
}

/* Port of static_key_enable_cpuslocked(), kernel/jump_label.c, v7.3 */
static void static_key_enable_cpuslocked(struct static_key *key)
{
	STATIC_KEY_CHECK_USE(key);
	/* userspace: no CPU hotplug lock to assert held */

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

/* Port of static_key_enable(), kernel/jump_label.c, v7.3 */
void static_key_enable(struct static_key *key)
{
	static_key_check_ro(key);
	static_key_enable_cpuslocked(key);
}

/* Port of static_key_disable_cpuslocked(), kernel/jump_label.c, v7.3 */
static void static_key_disable_cpuslocked(struct static_key *key)
{
	STATIC_KEY_CHECK_USE(key);
	/* userspace: no CPU hotplug lock to assert held */

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

/* Port of static_key_disable(), kernel/jump_label.c, v7.3 */
void static_key_disable(struct static_key *key)
{
	static_key_check_ro(key);
	/* userspace: bug replay, the boolean test of before 224fa3552029 */
	if (unlikely(pokelab_bugs.disable_cmpxchg_bool_224fa3552029))
		return static_key_disable_cpuslocked_pre_224fa3552029(key);
	static_key_disable_cpuslocked(key);
}

/* Port of static_key_dec_not_one(), kernel/jump_label.c, v7.3 (after 224fa3552029) */
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

/*
 * Port of __static_key_slow_dec_cpuslocked(), kernel/jump_label.c, v7.3
 * (after 83ab38ef0a0b). The mutex is held to the end of the function.
 */
static void __static_key_slow_dec_cpuslocked(struct static_key *key)
{
	/* userspace: no CPU hotplug lock to assert held */

	int val;

	if (static_key_dec_not_one(key))
		return;

	/* userspace: test-only hook, a window the kernel has too (no lock held yet) */
	if (unlikely(pokelab_hooks.slow_dec_before_lock))
		pokelab_hooks.slow_dec_before_lock(key);

	guard(mutex)(&jump_label_mutex);
	val = atomic_read(&key->enabled);
	/* -1 cannot be seen under the mutex: the enabler holds it while patching. */
	if (WARN_ON_ONCE(val == -1))
		return;
	/* Already 0: an imbalance somewhere. */
	if (WARN_ON_ONCE(val == 0))
		return;

	if (atomic_dec_and_test(&key->enabled))
		jump_label_update(key);
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
 * Port of jump_label_cmp(), kernel/jump_label.c, v7.3: by key, then by code
 * address, so that each key's sites form one ascending run (one ordered
 * batch for smp_text_poke_batch_add()).
 */
static int jump_label_cmp(const void *a, const void *b)
{
	const struct jump_entry *jea = (const struct jump_entry *)a;	/* userspace: C++ cast */
	const struct jump_entry *jeb = (const struct jump_entry *)b;	/* userspace: C++ cast */

	if (jump_entry_key(jea) < jump_entry_key(jeb))
		return -1;

	if (jump_entry_key(jea) > jump_entry_key(jeb))
		return 1;

	if (jump_entry_code(jea) < jump_entry_code(jeb))
		return -1;

	if (jump_entry_code(jea) > jump_entry_code(jeb))
		return 1;

	return 0;
}

/*
 * Port of jump_label_swap(), kernel/jump_label.c, v7.3: the fields are
 * offsets from themselves, so an entry that moves by @delta bytes has each
 * of them corrected by @delta.
 */
static void jump_label_swap(void *a, void *b, int size __maybe_unused)
{
	long delta = (unsigned long)a - (unsigned long)b;
	struct jump_entry *jea = (struct jump_entry *)a;	/* userspace: C++ cast */
	struct jump_entry *jeb = (struct jump_entry *)b;	/* userspace: C++ cast */
	struct jump_entry tmp = *jea;

	jea->code	= jeb->code - delta;
	jea->target	= jeb->target - delta;
	jea->key	= jeb->key - delta;

	jeb->code	= tmp.code + delta;
	jeb->target	= tmp.target + delta;
	jeb->key	= tmp.key + delta;
}

/* Port of jump_label_sort_entries(), kernel/jump_label.c, v7.3 */
static void jump_label_sort_entries(struct jump_entry *start, struct jump_entry *stop)
{
	unsigned long size;
	swap_func_t swapfn = NULL;	/* userspace: C++ takes no function pointer as void * */

	if (IS_ENABLED(CONFIG_HAVE_ARCH_JUMP_LABEL_RELATIVE))
		swapfn = jump_label_swap;

	size = (((unsigned long)stop - (unsigned long)start)
					/ sizeof(struct jump_entry));
	sort(start, size, sizeof(struct jump_entry), jump_label_cmp, swapfn);
}

/*
 * Port of arch_jump_label_transform_static(), kernel/jump_label.c, v7.3:
 * the generic one, which x86 takes (it defines none of its own).
 */
static void arch_jump_label_transform_static(struct jump_entry *entry __maybe_unused,
					     enum jump_label_type type __maybe_unused)
{
	/* the sites already hold the NOPs the compiler put there */
}

/* Port of jump_entry_set_init(), include/linux/jump_label.h, v7.3 */
static inline void jump_entry_set_init(struct jump_entry *entry, bool set)
{
	if (set)
		entry->key |= 2;
	else
		entry->key &= ~2;
}

/*
 * userspace: no init sections in the program (the modules' are
 * within_module_init()'s): no site is in one.
 */
static bool init_section_contains(void *virt __maybe_unused, size_t size __maybe_unused)
{
	return false;
}

/*
 * Port of jump_label_init(), kernel/jump_label.c, v7.3: once per process
 * (boot runs many times; the tables and the keys stay linked).
 */
void jump_label_init(void)
{
	struct jump_entry *iter_start = __start___jump_table;
	struct jump_entry *iter_stop = __stop___jump_table;
	struct static_key *key = NULL;
	struct jump_entry *iter;

	if (static_key_initialized)
		return;

	/* userspace: cpus_read_lock() has no hotplug to hold off */

	jump_label_lock();
	jump_label_sort_entries(iter_start, iter_stop);

	for (iter = iter_start; iter < iter_stop; iter++) {
		struct static_key *iterk;
		bool in_init;

		/* rewrite NOPs */
		if (jump_label_type(iter) == JUMP_LABEL_NOP)
			arch_jump_label_transform_static(iter, JUMP_LABEL_NOP);

		in_init = init_section_contains((void *)jump_entry_code(iter), 1);
		jump_entry_set_init(iter, in_init);

		iterk = jump_entry_key(iter);
		if (iterk == key)
			continue;

		key = iterk;
		static_key_set_entries(key, iter);
	}
	static_key_initialized = true;
	jump_label_unlock();
	/* userspace: cpus_read_unlock() */

}

/*
 * Port of static_key_sealed(), kernel/jump_label.c, v7.3: linked, with no
 * list: the key's entries were let go of by jump_label_init_ro().
 */
static inline bool static_key_sealed(struct static_key *key)
{
	return (key->type & JUMP_TYPE_LINKED) && !(key->type & ~JUMP_TYPE_MASK);
}

/* Port of static_key_seal(), kernel/jump_label.c, v7.3: keep only the initial polarity */
static inline void static_key_seal(struct static_key *key)
{
	unsigned long type = key->type & JUMP_TYPE_TRUE;
	key->type = JUMP_TYPE_LINKED | type;
}

/*
 * Port of jump_label_init_ro(), kernel/jump_label.c, v7.3: at the end of
 * boot, a key that is __ro_after_init can no longer change, so its entries
 * need not be found again; seal it. A module that uses a sealed key then
 * patches its own sites once, at load, and links nothing
 * (jump_label_add_module()).
 */
void jump_label_init_ro(void)
{
	struct jump_entry *iter_start = __start___jump_table;
	struct jump_entry *iter_stop = __stop___jump_table;
	struct jump_entry *iter;

	if (WARN_ON_ONCE(!static_key_initialized))
		return;

	/*
	 * userspace: the bound hidden from the compiler, which would fold
	 * "__stop___jump_table - 1" into an R_X86_64_32 that cannot hold it
	 * where the table is absent (weak, 0: a program with no static key)
	 */
	asm("" : "+r" (iter_stop));
	/* userspace: cpus_read_lock() has no hotplug to hold off */

	jump_label_lock();

	for (iter = iter_start; iter < iter_stop; iter++) {
		struct static_key *iterk = jump_entry_key(iter);

		if (!is_kernel_ro_after_init((unsigned long)iterk))
			continue;

		if (static_key_sealed(iterk))
			continue;

		static_key_seal(iterk);
	}

	jump_label_unlock();
	/* userspace: cpus_read_unlock() */

}

/* Port of jump_label_init_type(), kernel/jump_label.c, v7.3: the state the compiler left */
static enum jump_label_type jump_label_init_type(struct jump_entry *entry)
{
	struct static_key *key = jump_entry_key(entry);
	bool type = static_key_type(key);
	bool branch = jump_entry_is_branch(entry);

	/* See the comment in linux/jump_label.h */
	return (enum jump_label_type)(type ^ branch);	/* userspace: C++ cast */
}

static bool within_module_init(unsigned long addr, const struct module *mod)
{
	return within_module_mem_type(addr, mod, MOD_INIT_TEXT) ||
	       within_module_mem_type(addr, mod, MOD_INIT_DATA) ||
	       within_module_mem_type(addr, mod, MOD_INIT_RODATA);
}

/* Port of addr_conflict(), kernel/jump_label.c, v7.3 */
static int addr_conflict(struct jump_entry *entry, void *start, void *end)
{
	if (jump_entry_code(entry) <= (unsigned long)end &&
	    jump_entry_code(entry) + jump_entry_size(entry) > (unsigned long)start)
		return 1;

	return 0;
}

/* Port of __jump_label_text_reserved(), kernel/jump_label.c, v7.3 */
static int __jump_label_text_reserved(struct jump_entry *iter_start,
		struct jump_entry *iter_stop, void *start, void *end, bool init)
{
	struct jump_entry *iter;

	iter = iter_start;
	while (iter < iter_stop) {
		if (init || !jump_entry_is_init(iter)) {
			if (addr_conflict(iter, start, end))
				return 1;
		}
		iter++;
	}

	return 0;
}

/*
 * Port of __jump_label_mod_text_reserved(), kernel/jump_label.c, v7.3: the
 * module whose text holds @start, held by a reference while its table is
 * read.
 */
static int __jump_label_mod_text_reserved(void *start, void *end)
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

	ret = __jump_label_text_reserved(mod->jump_entries,
					 mod->jump_entries + mod->num_jump_entries, start, end,
					 mod->state == MODULE_STATE_COMING);

	module_put(mod);

	return ret;
}

/* Port of jump_label_text_reserved(), kernel/jump_label.c, v7.3 */
int jump_label_text_reserved(void *start, void *end)
{
	bool init = system_state < SYSTEM_RUNNING;
	int ret = __jump_label_text_reserved(__start___jump_table,
			__stop___jump_table, start, end, init);

	if (ret)
		return ret;

	/* userspace: CONFIG_MODULES=y, no #ifdef */

	ret = __jump_label_mod_text_reserved(start, end);
	/* userspace: (CONFIG_MODULES) */

	return ret;
}

/*
 * Port of jump_label_add_module(), kernel/jump_label.c, v7.3: the module's
 * entries, sorted, linked to their keys (a key of the module points at
 * them; any other key gets a static_key_mod for this module, its own
 * entries moved to one of their own, unless it is sealed: then nothing is
 * kept), and each site whose key is not in its compiled state patched now.
 */
static int jump_label_add_module(struct module *mod)
{
	struct jump_entry *iter_start = mod->jump_entries;
	struct jump_entry *iter_stop = iter_start + mod->num_jump_entries;
	struct jump_entry *iter;
	struct static_key *key = NULL;
	struct static_key_mod *jlm, *jlm2;

	/* no jump-label entries: nothing to do */
	if (iter_start == iter_stop)
		return 0;

	jump_label_sort_entries(iter_start, iter_stop);

	for (iter = iter_start; iter < iter_stop; iter++) {
		struct static_key *iterk;
		bool in_init;

		in_init = within_module_init(jump_entry_code(iter), mod);
		jump_entry_set_init(iter, in_init);

		iterk = jump_entry_key(iter);
		if (iterk == key)
			continue;

		key = iterk;
		if (within_module((unsigned long)key, mod)) {
			static_key_set_entries(key, iter);
			continue;
		}

		/*
		 * A sealed key never changes again: patch this module's sites
		 * to its state once, here, and keep no list for it.
		 */
		if (static_key_sealed(key))
			goto do_poke;

		jlm = kzalloc_obj(struct static_key_mod);
		if (!jlm)
			return -ENOMEM;
		if (!static_key_linked(key)) {
			jlm2 = kzalloc_obj(struct static_key_mod);
			if (!jlm2) {
				kfree(jlm);
				return -ENOMEM;
			}
			/* userspace: no scoped_guard(rcu): QSBR, the CPU's task work is one */

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
do_poke:
		if (jump_label_type(iter) != jump_label_init_type(iter))
			__jump_label_update(key, iter, iter_stop, true);
	}

	return 0;
}

/* Port of jump_label_del_module(), kernel/jump_label.c, v7.3 */
static void jump_label_del_module(struct module *mod)
{
	struct jump_entry *iter_start = mod->jump_entries;
	struct jump_entry *iter_stop = iter_start + mod->num_jump_entries;
	struct jump_entry *iter;
	struct static_key *key = NULL;
	struct static_key_mod *jlm, **prev;

	for (iter = iter_start; iter < iter_stop; iter++) {
		if (jump_entry_key(iter) == key)
			continue;

		key = jump_entry_key(iter);

		if (within_module((unsigned long)key, mod))
			continue;

		/* a sealed key: jump_label_add_module() kept nothing for it */
		if (static_key_sealed(key))
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

		kfree(jlm);

		jlm = static_key_mod(key);
		/* one left: fold it back into the key */
		if (jlm->next == NULL) {
			static_key_set_entries(key, jlm->entries);
			static_key_clear_linked(key);
			kfree(jlm);
		}
	}
}

/* Port of jump_label_module_notify(), kernel/jump_label.c, v7.3 */
static int jump_label_module_notify(struct notifier_block *self __maybe_unused,
				    unsigned long val, void *data)
{
	struct module *mod = (struct module *)data;	/* userspace: C++ casts from void * */
	int ret = 0;

	/* userspace: cpus_read_lock() has no hotplug to hold off */

	jump_label_lock();

	switch (val) {
	case MODULE_STATE_COMING:
		ret = jump_label_add_module(mod);
		if (ret) {
			/* out of memory: the module's jump labels may not work */
			WARN_ON(ret);	/* userspace: the shim's WARN() takes no message */
			jump_label_del_module(mod);
		}
		break;
	case MODULE_STATE_GOING:
		jump_label_del_module(mod);
		break;
	}

	jump_label_unlock();
	/* userspace: cpus_read_unlock() */

	return notifier_from_errno(ret);
}

static struct notifier_block jump_label_module_nb = {
	jump_label_module_notify, nullptr, JUMP_LABEL_MODULE_NOTIFY_PRIORITY,
};

/* Port of jump_label_init_module(), kernel/jump_label.c, v7.3 (an early_initcall) */
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

/*
 * The first of @key's entries in the program's table (sorted by key), or
 * NULL. Searched for, not taken from the key: a linked key points at its
 * modules' list, a sealed one at nothing, a module's key into its module.
 */
static struct jump_entry *jump_label_program_entries(struct static_key *key)
{
	if (!static_key_initialized)
		return NULL;
	for (struct jump_entry *e = __start___jump_table; e && e < __stop___jump_table; e++)
		if (jump_entry_key(e) == key)
			return e;
	return NULL;
}

unsigned int jump_label_nr_sites(struct static_key *key)
{
	unsigned int n = 0;

	for (struct jump_entry *e = jump_label_program_entries(key); e && e < __stop___jump_table &&
	     jump_entry_key(e) == key; e++)
		n++;
	return n;
}

unsigned int jump_label_check_sites(struct static_key *key, std::string *err)
{
	unsigned int bad = 0;

	for (struct jump_entry *e = jump_label_program_entries(key); e && e < __stop___jump_table &&
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
	/* userspace: the boot stage's end: the model's check of every table so far (R7) */
	kshim::xmcBootStage("jump_label_init", kshim::XMC_TABLE_JUMP_LABELS);
	/* userspace: the early_initcall, once per process (boot may run many times) */
	if (!notifier) {
		BUG_ON(jump_label_init_module());
		notifier = true;
	}
	return jump_label_check_noinstr(err, nullptr);
}

kshim::BootHookRegistrar jumpLabelHook({"jump_label_init", kshim::BootStage::Early,
					jumpLabelInitHook});

/*
 * userspace: mark_readonly()'s jump_label_init_ro(), as boot ends (before
 * SYSTEM_RUNNING); each boot, the keys sealed before are skipped.
 */
int jumpLabelInitRoHook(std::string &)
{
	jump_label_init_ro();
	return 0;
}

kshim::BootHookRegistrar jumpLabelRoHook({"jump_label_init_ro", kshim::BootStage::Booted,
					  jumpLabelInitRoHook});

} /* namespace */
