/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Static keys.
 *
 * PORT: written fresh after include/linux/jump_label.h and kernel/jump_label.c,
 * v7.3; kernel names and semantics kept. Implemented in
 * alternative/jump_label.cpp (generic) and jump_label_x86.cpp (arch).
 *
 * Use:
 *	DEFINE_STATIC_KEY_FALSE(my_key);
 *	if (static_branch_unlikely(&my_key)) { ... }	// a 5-byte NOP until enabled
 *	static_branch_enable(&my_key);			// live-patches every site
 *
 * The enable/disable/inc/dec calls patch text: task context on a simulated
 * CPU, never from a signal handler; they take jump_label_mutex and
 * text_mutex and may sleep. The branch tests are a NOP or a JMP: any
 * thread, async-signal-safe.
 * Memory ordering: when static_key_enable() (or the 0 -> 1 slow_inc)
 * returns, every CPU executes the new branch; static_key_enabled() reading
 * true (acquire) implies the text is already patched.
 */
#pragma once

#include <string>

#include <linux/atomic.h>
#include <linux/compiler.h>
#include <linux/kconfig.h>
#include <linux/types.h>

/* The configuration pokelab has: x86's self-relative jump entries (arch/x86/Kconfig). */
#define CONFIG_HAVE_ARCH_JUMP_LABEL_RELATIVE 1

/* Port of struct jump_entry, include/linux/jump_label.h, v7.3 */
struct jump_entry {
	s32 code;
	s32 target;
	long key;	/* key - &key field, | branch polarity (bit 0) */
};

struct static_key_mod;

/* Port of struct static_key, include/linux/jump_label.h, v7.3 */
struct static_key {
	atomic_t enabled;
	union {
		/* bit 0: initially true; bit 1: linked (a module uses it: ->next) */
		unsigned long type;
		struct jump_entry *entries;
		struct static_key_mod *next;
	};
};

/* Port of struct static_key_true, include/linux/jump_label.h, v7.3 */
struct static_key_true {
	struct static_key key;
};

/* Port of struct static_key_false, include/linux/jump_label.h, v7.3 */
struct static_key_false {
	struct static_key key;
};

/* Port of JUMP_TYPE_FALSE(), include/linux/jump_label.h, v7.3 */
#define JUMP_TYPE_FALSE		0UL
/* Port of JUMP_TYPE_TRUE(), include/linux/jump_label.h, v7.3 */
#define JUMP_TYPE_TRUE		1UL
/* Port of JUMP_TYPE_LINKED(), include/linux/jump_label.h, v7.3 */
#define JUMP_TYPE_LINKED	2UL
/* Port of JUMP_TYPE_MASK(), include/linux/jump_label.h, v7.3 */
#define JUMP_TYPE_MASK		3UL

/* Port of enum jump_label_type, include/linux/jump_label.h, v7.3 */
enum jump_label_type {
	JUMP_LABEL_NOP = 0,
	JUMP_LABEL_JMP,
};

/* Port of STATIC_KEY_INIT_TRUE(), include/linux/jump_label.h, v7.3 */
#define STATIC_KEY_INIT_TRUE { ATOMIC_INIT(1), { JUMP_TYPE_TRUE } }
/* Port of STATIC_KEY_INIT_FALSE(), include/linux/jump_label.h, v7.3 */
#define STATIC_KEY_INIT_FALSE { ATOMIC_INIT(0), { JUMP_TYPE_FALSE } }
/* Port of STATIC_KEY_TRUE_INIT(), include/linux/jump_label.h, v7.3 */
#define STATIC_KEY_TRUE_INIT (struct static_key_true) { STATIC_KEY_INIT_TRUE }
/* Port of STATIC_KEY_FALSE_INIT(), include/linux/jump_label.h, v7.3 */
#define STATIC_KEY_FALSE_INIT (struct static_key_false) { STATIC_KEY_INIT_FALSE }

/* userspace: 8-byte alignment keeps bit 0 of the key address free for the polarity */
/* Port of DEFINE_STATIC_KEY_TRUE(), include/linux/jump_label.h, v7.3 */
#define DEFINE_STATIC_KEY_TRUE(name) \
	struct static_key_true name __aligned(8) = { STATIC_KEY_INIT_TRUE }
/* Port of DEFINE_STATIC_KEY_FALSE(), include/linux/jump_label.h, v7.3 */
#define DEFINE_STATIC_KEY_FALSE(name) \
	struct static_key_false name __aligned(8) = { STATIC_KEY_INIT_FALSE }
/*
 * Keys that noinstr code may test (deferral series v7 with objtool's
 * "noinstr validation for static branches"): _RO keys are written only
 * during boot (__ro_after_init; a write after boot is a BUG here), _NOINSTR
 * keys may flip at run time and make every batch that patches them IPI all
 * CPUs. ANNOTATE_NOINSTR_ALLOWED() records the key for the boot-time check.
 * userspace: the record goes to the kept section "noinstr_allowed" with the
 * key's kind, instead of .discard.noinstr_allowed read by objtool.
 */
enum noinstr_allowed_kind {
	NOINSTR_ALLOWED_RO = 1,
	NOINSTR_ALLOWED_NOINSTR = 2,
};

struct noinstr_allowed_entry {
	struct static_key *key;
	long kind;
};

#define ANNOTATE_NOINSTR_ALLOWED(name, kind)					\
	static const struct noinstr_allowed_entry __noinstr_allowed_##name	\
		__attribute__((__used__, __section__("noinstr_allowed"), __aligned__(16))) = \
		{ &(name).key, (kind) }

/* Port of DEFINE_STATIC_KEY_TRUE_RO(), include/linux/jump_label.h, v7.3 */
#define DEFINE_STATIC_KEY_TRUE_RO(name)						\
	DEFINE_STATIC_KEY_TRUE(name);						\
	ANNOTATE_NOINSTR_ALLOWED(name, NOINSTR_ALLOWED_RO)
/* Port of DEFINE_STATIC_KEY_FALSE_RO(), include/linux/jump_label.h, v7.3 */
#define DEFINE_STATIC_KEY_FALSE_RO(name)					\
	DEFINE_STATIC_KEY_FALSE(name);						\
	ANNOTATE_NOINSTR_ALLOWED(name, NOINSTR_ALLOWED_RO)
#define DEFINE_STATIC_KEY_TRUE_NOINSTR(name)					\
	DEFINE_STATIC_KEY_TRUE(name);						\
	ANNOTATE_NOINSTR_ALLOWED(name, NOINSTR_ALLOWED_NOINSTR)
#define DEFINE_STATIC_KEY_FALSE_NOINSTR(name)					\
	DEFINE_STATIC_KEY_FALSE(name);						\
	ANNOTATE_NOINSTR_ALLOWED(name, NOINSTR_ALLOWED_NOINSTR)

/* Port of DECLARE_STATIC_KEY_TRUE(), include/linux/jump_label.h, v7.3 */
#define DECLARE_STATIC_KEY_TRUE(name) extern struct static_key_true name
/* Port of DECLARE_STATIC_KEY_FALSE(), include/linux/jump_label.h, v7.3 */
#define DECLARE_STATIC_KEY_FALSE(name) extern struct static_key_false name

#include <asm/jump_label.h>

/* Port of jump_entry_code(), include/linux/jump_label.h, v7.3 */
static inline unsigned long jump_entry_code(const struct jump_entry *entry)
{
	return (unsigned long)&entry->code + entry->code;
}

/* Port of jump_entry_target(), include/linux/jump_label.h, v7.3 */
static inline unsigned long jump_entry_target(const struct jump_entry *entry)
{
	return (unsigned long)&entry->target + entry->target;
}

/* Port of jump_entry_key(), include/linux/jump_label.h, v7.3 */
static inline struct static_key *jump_entry_key(const struct jump_entry *entry)
{
	long offset = entry->key & ~3L;

	return (struct static_key *)((unsigned long)&entry->key + offset);
}

/* Port of jump_entry_is_branch(), include/linux/jump_label.h, v7.3 */
static inline bool jump_entry_is_branch(const struct jump_entry *entry)
{
	return (unsigned long)entry->key & 1UL;
}

/* Port of jump_entry_is_init(), include/linux/jump_label.h, v7.3 */
static inline bool jump_entry_is_init(const struct jump_entry *entry)
{
	return (unsigned long)entry->key & 2UL;
}

/* The reference count; -1 ("first enable patching") reads as 1. */
int static_key_count(struct static_key *key);

/*
 * static_branch_likely(): true branch laid out inline; static_branch_unlikely():
 * false branch inline. Both are a 5-byte NOP or JMP and nothing else.
 * userspace: overloads instead of __builtin_types_compatible_p.
 */
static __always_inline bool __static_branch_likely(struct static_key_true *x)
{
	return !arch_static_branch(&x->key, true);
}

static __always_inline bool __static_branch_likely(struct static_key_false *x)
{
	return !arch_static_branch_jump(&x->key, true);
}

static __always_inline bool __static_branch_unlikely(struct static_key_true *x)
{
	return arch_static_branch_jump(&x->key, false);
}

static __always_inline bool __static_branch_unlikely(struct static_key_false *x)
{
	return arch_static_branch(&x->key, false);
}

/* Port of static_branch_likely(), include/linux/jump_label.h, v7.3 */
#define static_branch_likely(x) likely(__static_branch_likely(x))
/* Port of static_branch_unlikely(), include/linux/jump_label.h, v7.3 */
#define static_branch_unlikely(x) unlikely(__static_branch_unlikely(x))

/* The old API: static_key_false() / static_key_true() on a bare struct static_key. */
/* Port of static_key_false(), include/linux/jump_label.h, v7.3 */
static __always_inline bool static_key_false(struct static_key *key)
{
	return arch_static_branch(key, false);
}

/* Port of static_key_true(), include/linux/jump_label.h, v7.3 */
static __always_inline bool static_key_true(struct static_key *key)
{
	return !arch_static_branch(key, true);
}

void jump_label_init(void);
/*
 * Seal every _RO key (jump_label_init_ro(), kernel/jump_label.c): at the end
 * of each boot, as the kernel's mark_readonly() does. A sealed key keeps
 * only its initial polarity; its sites are not patched again, and a write
 * to it BUGs. Task context, CPU 0.
 */
void jump_label_init_ro(void);
/*
 * 1 if [@start, @end] overlaps a jump-label site of the program or of a
 * module (kprobes and the optprobe checks ask). Task context.
 */
int jump_label_text_reserved(void *start, void *end);
/* True once jump_label_init() has linked every key to its entries (STATIC_KEY_CHECK_USE()). */
extern bool static_key_initialized;
void jump_label_lock(void);
void jump_label_unlock(void);

bool static_key_slow_inc(struct static_key *key);
void static_key_slow_dec(struct static_key *key);
bool static_key_fast_inc_not_disabled(struct static_key *key);
void static_key_enable(struct static_key *key);
void static_key_disable(struct static_key *key);

/* True if enabled; reads the count (relaxed), as the kernel's static_key_enabled(). */
/* Port of static_key_enabled(), include/linux/jump_label.h, v7.3 */
#define static_key_enabled(x) (static_key_count((struct static_key *)(x)) > 0)

/* Port of static_branch_inc(), include/linux/jump_label.h, v7.3 */
#define static_branch_inc(x) static_key_slow_inc(&(x)->key)
/* Port of static_branch_dec(), include/linux/jump_label.h, v7.3 */
#define static_branch_dec(x) static_key_slow_dec(&(x)->key)
/* Port of static_branch_enable(), include/linux/jump_label.h, v7.3 */
#define static_branch_enable(x) static_key_enable(&(x)->key)
/* Port of static_branch_disable(), include/linux/jump_label.h, v7.3 */
#define static_branch_disable(x) static_key_disable(&(x)->key)

/* pokelab: the number of __jump_table sites of @key (0 before jump_label_init()). */
unsigned int jump_label_nr_sites(struct static_key *key);

/*
 * pokelab: does every site of @key hold what its state says (the JMP to its
 * target or the NOP, by the entry's branch type)? Returns the sites that do
 * not, and names the first in @err. Task context; no update in flight.
 */
unsigned int jump_label_check_sites(struct static_key *key, std::string *err);

/*
 * pokelab: objtool warning 13's rule at boot: every jump-table entry whose
 * code lies in noinstr text must use an _RO or _NOINSTR key. Returns 0, or
 * -EINVAL with "<key>: non-RO static key usage in noinstr" in @err. Sets
 * *@checked to the noinstr sites it accepted.
 */
int jump_label_check_noinstr(std::string &err, unsigned int *checked);
