/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Static calls: a call through a trampoline whose JMP is live-patched.
 *
 * PORT: written fresh after include/linux/static_call.h and
 * include/linux/static_call_types.h, v6.16, in the configuration
 * CONFIG_HAVE_STATIC_CALL_INLINE=y: every static_call() is compiled as a
 * CALL to the trampoline __SCT__<name>; where pokelab's objtool pass
 * (tools/objtool/, docs/static_calls.md) recorded the call in
 * static_call_sites, static_call_init() (at boot) and a module's load
 * rewrite it into a CALL of the function itself, and static_call_update()
 * rewrites the trampoline and then every recorded site (kernel/
 * static_call_inline.c's port, alternative/static_call_inline.cpp). A call
 * in code the pass did not see stays a call through the trampoline, which
 * is always right.
 * userspace: the sites section is "static_call_sites" (no leading dot: a C
 * identifier, for __start_/__stop_), and only the objects the build runs
 * the pass over have sites (docs/static_calls.md).
 *
 * Use:
 *	extern "C" int func_a(int x);
 *	DEFINE_STATIC_CALL(sc_name, func_a);
 *	static_call(sc_name)(2);
 *	static_call_update(sc_name, &func_b);
 *
 * static_call() may run on any thread, in any context (a direct JMP).
 * static_call_update() patches text: task context on a simulated CPU of a
 * booted machine, takes text_mutex, may sleep; when it returns every CPU
 * calls the new function. Memory ordering: key->func is written before the
 * trampoline (WRITE_ONCE, then the batch's syncs).
 */
#pragma once

#include <linux/compiler.h>
#include <linux/export.h>
#include <linux/kconfig.h>
#include <linux/types.h>

/* The configuration pokelab has: static calls with inline sites. */
#define CONFIG_HAVE_STATIC_CALL_INLINE 1

struct module;

#include <asm/static_call.h>

/* include/linux/static_call_types.h: one recorded call site, self-relative */
struct static_call_site {
	s32 addr;
	s32 key;	/* the key, | STATIC_CALL_SITE_TAIL / _INIT in the low bits */
};

#define STATIC_CALL_SITE_TAIL	1UL	/* a tail call: JMP, not CALL */
#define STATIC_CALL_SITE_INIT	2UL	/* in init text: not rewritten after init */
#define STATIC_CALL_SITE_FLAGS	3UL

struct static_call_mod;

struct static_call_key {
	void *func;
	union {
		/* bit 0: 0 = mods, 1 = sites */
		unsigned long type;
		struct static_call_mod *mods;
		struct static_call_site *sites;
	};
};

/* kernel/static_call_inline.c: a key's sites in one module (NULL mod: the program's) */
/* Port of struct static_call_mod, include/linux/static_call.h, v7.3 */
struct static_call_mod {
	struct static_call_mod *next;
	struct module *mod;
	struct static_call_site *sites;
};

#define STATIC_CALL_KEY(name)		__SCK__##name
#define STATIC_CALL_TRAMP(name)		__SCT__##name
/* Port of STATIC_CALL_TRAMP_ADDR(), include/linux/static_call.h, v7.3 */
#define STATIC_CALL_TRAMP_ADDR(name)	((void *)&STATIC_CALL_TRAMP(name))

extern "C" long __static_call_return0(void);
extern "C" void __static_call_return(void);

/* userspace: C++ decltype for the kernel's typeof; the trampoline has C linkage. */
#define DECLARE_STATIC_CALL(name, func)					\
	extern struct static_call_key STATIC_CALL_KEY(name);		\
	extern "C" decltype(func) STATIC_CALL_TRAMP(name)

/* Port of DEFINE_STATIC_CALL(), include/linux/static_call.h, v7.3 */
#define DEFINE_STATIC_CALL(name, _func)					\
	DECLARE_STATIC_CALL(name, _func);				\
	struct static_call_key STATIC_CALL_KEY(name) = { (void *)&_func, { 1UL } };	\
	ARCH_DEFINE_STATIC_CALL_TRAMP(name, _func)

/* A NULL static call: static_call_cond() does nothing until updated. */
/* Port of DEFINE_STATIC_CALL_NULL(), include/linux/static_call.h, v7.3 */
#define DEFINE_STATIC_CALL_NULL(name, _func)				\
	DECLARE_STATIC_CALL(name, _func);				\
	struct static_call_key STATIC_CALL_KEY(name) = { NULL, { 1UL } };	\
	ARCH_DEFINE_STATIC_CALL_NULL_TRAMP(name)

/* A static call that returns 0 until updated (__static_call_return0). */
/* Port of DEFINE_STATIC_CALL_RET0(), include/linux/static_call.h, v7.3 */
#define DEFINE_STATIC_CALL_RET0(name, _func)				\
	DECLARE_STATIC_CALL(name, _func);				\
	struct static_call_key STATIC_CALL_KEY(name) = { (void *)&__static_call_return0, { 1UL } };	\
	ARCH_DEFINE_STATIC_CALL_RET0_TRAMP(name)

/*
 * A static call that noinstr code may call (deferral series v7, objtool's
 * "noinstr validation for static branches/calls"): updated only during
 * boot, its key __ro_after_init; a static_call_update() once the system
 * runs is a BUG here, as the write to the read-only key would fault.
 * userspace: the trampoline's address goes to the kept section
 * "static_call_ro" (the kernel: ANNOTATE_NOINSTR_ALLOWED() of it in
 * .discard.noinstr_allowed, read by objtool), which the noinstr check
 * (kernel_shim/noinstr_check.h) and the update read.
 */
#define DEFINE_STATIC_CALL_RO(name, _func)					\
	DEFINE_STATIC_CALL(name, _func);					\
	static const void *const __static_call_ro_##name			\
		__attribute__((__used__, __section__("static_call_ro"))) =	\
		STATIC_CALL_TRAMP_ADDR(name)

/* Is @tramp the trampoline of a DEFINE_STATIC_CALL_RO() call? Any context. */
bool static_call_tramp_is_ro(const void *tramp);

#define static_call(name)	(*(decltype(&STATIC_CALL_TRAMP(name)))STATIC_CALL_TRAMP_ADDR(name))
/* Port of static_call_cond(), include/linux/static_call.h, v7.3 */
#define static_call_cond(name)	(void)static_call(name)
/* Port of static_call_query(), include/linux/static_call.h, v7.3 */
#define static_call_query(name)	(READ_ONCE(STATIC_CALL_KEY(name).func))

/*
 * arch/x86/kernel/static_call.c: with @site NULL, rewrite the trampoline
 * @tramp (JMP32 to @func, or the RET form for NULL: a JMP to the return
 * thunk while one is wanted, cpu_wants_rethunk_at()); with @site, rewrite
 * that recorded site alone (a CALL/JMP of @func, NOP or RET form, @tail as
 * recorded) and leave the trampoline. text_poke_early() while the machine
 * is SYSTEM_BOOTING, else smp_text_poke_single(). Takes text_mutex.
 */
void arch_static_call_transform(void *site, void *tramp, void *func, bool tail);

/*
 * arch/x86/kernel/static_call.c (apply_returns()'s helper): if @tramp is a
 * static-call trampoline (its ud1 signature), rewrite it in the RET form
 * when it holds a RET (@op) or jumps to the return thunk (@dest), and
 * return true; false for any other return site. Boot or a module's load
 * (text_poke_early()); takes text_mutex.
 */
bool __static_call_fixup(void *tramp, u8 op, void *dest);

/*
 * kernel/static_call_inline.c: 1 once static_call_init() linked the
 * program's sites; static_call_force_reinit() (apply_returns(), before the
 * early initcall) raises it so that the initcall's static_call_init() runs
 * again over them. Boot, CPU 0.
 */
extern int static_call_initialized;
void static_call_force_reinit(void);

/*
 * Port of __static_call_update(), kernel/static_call_inline.c: key->func,
 * the trampoline, then every recorded site of the key, the program's and
 * each module's. Task context on a CPU of a booted machine; takes
 * static_call_mutex and text_mutex; may sleep.
 */
void __static_call_update(struct static_call_key *key, void *tramp, void *func);

/*
 * static_call_init(): link the program's recorded sites to their keys and
 * rewrite each into a direct CALL (JMP) of its key's function. Boot, CPU 0;
 * idempotent. static_call_text_reserved(): 1 if [@start, @end] overlaps a
 * recorded site (the program's or a module's). Task context.
 */
int static_call_init(void);
int static_call_text_reserved(void *start, void *end);

/* Export a static call's key and trampoline to modules (linux/export.h). */
/* Port of EXPORT_STATIC_CALL(), include/linux/static_call.h, v7.3 */
#define EXPORT_STATIC_CALL(name)					\
	EXPORT_SYMBOL(STATIC_CALL_KEY(name));				\
	EXPORT_SYMBOL(STATIC_CALL_TRAMP(name))

/* Port of static_call_update(), include/linux/static_call.h, v7.3 */
#define static_call_update(name, func) ({				\
	decltype(&STATIC_CALL_TRAMP(name)) __F = (func);		\
	__static_call_update(&STATIC_CALL_KEY(name), STATIC_CALL_TRAMP_ADDR(name), (void *)__F);	\
})
