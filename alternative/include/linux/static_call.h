/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Static calls: a call through a trampoline whose JMP is live-patched.
 *
 * PORT: written fresh after include/linux/static_call.h and
 * include/linux/static_call_types.h, v6.16, in the configuration
 * CONFIG_HAVE_STATIC_CALL=y, CONFIG_HAVE_STATIC_CALL_INLINE=n: every call
 * goes to the trampoline __SCT__<name>, and static_call_update() rewrites
 * the trampoline's JMP with smp_text_poke_single().
 * userspace: no objtool, so no .static_call_sites and no inline call sites
 * (see docs/porting.md); the sites of the kernel's INLINE configuration are
 * not modelled.
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
#include <linux/types.h>

#include <asm/static_call.h>

struct static_call_key {
	void *func;
};

#define STATIC_CALL_KEY(name)		__SCK__##name
#define STATIC_CALL_TRAMP(name)		__SCT__##name
#define STATIC_CALL_TRAMP_ADDR(name)	((void *)&STATIC_CALL_TRAMP(name))

extern "C" long __static_call_return0(void);
extern "C" void __static_call_return(void);

/* userspace: C++ decltype for the kernel's typeof; the trampoline has C linkage. */
#define DECLARE_STATIC_CALL(name, func)					\
	extern struct static_call_key STATIC_CALL_KEY(name);		\
	extern "C" decltype(func) STATIC_CALL_TRAMP(name)

#define DEFINE_STATIC_CALL(name, _func)					\
	DECLARE_STATIC_CALL(name, _func);				\
	struct static_call_key STATIC_CALL_KEY(name) = { (void *)&_func };	\
	ARCH_DEFINE_STATIC_CALL_TRAMP(name, _func)

/* A NULL static call: static_call_cond() does nothing until updated. */
#define DEFINE_STATIC_CALL_NULL(name, _func)				\
	DECLARE_STATIC_CALL(name, _func);				\
	struct static_call_key STATIC_CALL_KEY(name) = { NULL };	\
	ARCH_DEFINE_STATIC_CALL_NULL_TRAMP(name)

/* A static call that returns 0 until updated (__static_call_return0). */
#define DEFINE_STATIC_CALL_RET0(name, _func)				\
	DECLARE_STATIC_CALL(name, _func);				\
	struct static_call_key STATIC_CALL_KEY(name) = { (void *)&__static_call_return0 };	\
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
#define static_call_cond(name)	(void)static_call(name)
#define static_call_query(name)	(READ_ONCE(STATIC_CALL_KEY(name).func))

/*
 * Rewrite the trampoline: JMP32 to @tramp's new target, or RET for NULL
 * (arch/x86/kernel/static_call.c). @site must be NULL (no inline sites);
 * @tail is ignored for trampolines. Takes text_mutex.
 */
void arch_static_call_transform(void *site, void *tramp, void *func, bool tail);

/* Port of __static_call_update() for HAVE_STATIC_CALL && !HAVE_STATIC_CALL_INLINE */
static inline void __static_call_update(struct static_call_key *key, void *tramp, void *func)
{
	/* userspace: cpus_read_lock() has no hotplug to hold off */
	WRITE_ONCE(key->func, func);
	arch_static_call_transform(NULL, tramp, func, false);
}

#define static_call_update(name, func) ({				\
	decltype(&STATIC_CALL_TRAMP(name)) __F = (func);		\
	__static_call_update(&STATIC_CALL_KEY(name), STATIC_CALL_TRAMP_ADDR(name), (void *)__F);	\
})
