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
#include <string>
#include <vector>

#include <dlfcn.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <asm/nops.h>
#include <asm/sections.h>
#include <asm/text-patching.h>
#include <kernel_shim/boot.h>
#include <kernel_shim/sigsafe.h>
#include <linux/bug.h>
#include <linux/jump_label.h>
#include <linux/mutex.h>
#include <pokelab/bug_switches.h>

#include "jump_label_internal.h"

extern "C" const struct noinstr_allowed_entry __start_noinstr_allowed[] __attribute__((weak));
extern "C" const struct noinstr_allowed_entry __stop_noinstr_allowed[] __attribute__((weak));
extern "C" struct jump_entry __start___jump_table[];
extern "C" struct jump_entry __stop___jump_table[];

static DEFINE_MUTEX(jump_label_mutex);
static bool jump_label_initialized;

/* include/linux/jump_label.h: set by jump_label_init() */
bool static_key_initialized;

/*
 * Port of STATIC_KEY_CHECK_USE(), include/linux/jump_label.h: a key changed
 * before jump_label_init() linked its entries would patch nothing.
 * userspace: WARN_ON() prints the condition, not the key's symbol.
 */
#define STATIC_KEY_CHECK_USE(key) ((void)(key), WARN_ON(!static_key_initialized))

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
 * docs/porting.md) and kernel_text_address() is core_kernel_text(): the
 * program's own text.
 */
static bool jump_label_can_update(struct jump_entry *entry, bool init)
{
	if (!init && jump_entry_is_init(entry))
		return false;

	if (!core_kernel_text(jump_entry_code(entry))) {
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

/* Port of jump_label_update(), kernel/jump_label.c */
/* userspace: not static, the bug replays (replay_jump_label.cpp) call it too */
void jump_label_update(struct static_key *key)
{
	struct jump_entry *stop = __stop___jump_table;
	struct jump_entry *entry;

	/* userspace: no module keys, so entries always point into __jump_table */
	entry = static_key_entries(key);
	if (entry)
		__jump_label_update(key, entry, stop, false);
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
static bool static_key_dec_not_one(struct static_key *key)
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

void static_key_slow_dec(struct static_key *key)
{
	STATIC_KEY_CHECK_USE(key);
	static_key_check_ro(key);
	/* userspace: bug replay, the fast path of before 83ab38ef0a0b */
	if (unlikely(pokelab_bugs.slow_dec_try_dec_83ab38ef0a0b))
		return __static_key_slow_dec_cpuslocked_pre_83ab38ef0a0b(key);
	__static_key_slow_dec_cpuslocked(key);
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
	jump_label_init();
	return jump_label_check_noinstr(err, nullptr);
}

kshim::BootHookRegistrar jumpLabelHook({"jump_label_init", kshim::BootStage::Early,
					jumpLabelInitHook});

} /* namespace */
