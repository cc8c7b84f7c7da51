/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * BUG() and WARN().
 *
 * CUSTOM: include/asm-generic/bug.h. BUG()/BUG_ON() print "kernel BUG at
 * file:line!", the function and the failed condition, then a backtrace, and
 * abort the process. WARN_ON()/WARN_ON_ONCE() print "WARNING: file:line
 * function: condition" (once per site for the _ONCE form), count the
 * warning and go on; with the panic_on_warn boot parameter they abort.
 *
 * Both are async-signal-safe (they format into a stack buffer and write(2)
 * to stderr), so they may fire inside the IPI and INT3 handlers, as the
 * kernel's do inside its exception handlers.
 */
#pragma once

#include <linux/compiler.h>

namespace kshim {
[[noreturn]] void bugAt(const char *file, int line, const char *func, const char *cond) noexcept;
void warnAt(const char *file, int line, const char *func, const char *cond) noexcept;
/*
 * Warnings printed since boot (all sites): WARN()s, and the other reports
 * that taint the kernel with TAINT_WARN (addTaintWarn()).
 */
unsigned long warnCount() noexcept;
/*
 * kernel/panic.c's add_taint(TAINT_WARN, ...) for a report that is not a
 * WARN() (a "BUG: sleeping function called from invalid context"): counted
 * as a warning. Any context.
 */
void addTaintWarn() noexcept;
/*
 * Run @fn on the way down, after BUG()'s report and before the abort (also
 * for an unclaimed INT3 and a fatal signal), in the order added: the
 * cross-modifying-code model prints what it had found, then pokelab torture
 * ends with FAILURE. @fn must be async-signal-safe and may exit. At most 4;
 * task context, at start-up.
 */
void addDeathHook(void (*fn)() noexcept);
/*
 * kernel/panic.c's panic_notifier_list, for the one panic the machine has:
 * the cross-modifying-code model's at boot (the boot's own text is wrong,
 * the machine does not boot). @fn runs after the panic line and before the
 * exit, in the order added: a command says its verdict there. @fn must be
 * async-signal-safe (the INT3 self-test panics from its SIGTRAP handler).
 * At most 2; task context, before boot().
 */
void addPanicNotifier(void (*fn)() noexcept);
/* Run them, once per process. Any context, async-signal-safe. */
void runPanicNotifiers() noexcept;
/*
 * SIGILL, SIGFPE, SIGSEGV, SIGBUS and SIGABRT run the death hooks (once:
 * BUG()'s abort() after them runs none), then the handler
 * that was there before (AddressSanitizer's), or the default action. Once,
 * from the first boot().
 */
void installFatalSignalHandlers() noexcept;
/* Give (@on) or take back the calling thread's stack for those handlers. CPU threads. */
void fatalSignalStack(bool on) noexcept;
} /* namespace kshim */

#define BUG() kshim::bugAt(__FILE__, __LINE__, __func__, NULL)

#define BUG_ON(condition) do {						\
	if (unlikely(condition))					\
		kshim::bugAt(__FILE__, __LINE__, __func__, #condition);	\
} while (0)

#define WARN_ON(condition) ({						\
	bool __ret_warn_on = !!(condition);				\
	if (unlikely(__ret_warn_on))					\
		kshim::warnAt(__FILE__, __LINE__, __func__, #condition);	\
	unlikely(__ret_warn_on);					\
})

#define WARN_ON_ONCE(condition) ({					\
	static bool __warned;						\
	bool __ret_warn_once = !!(condition);				\
	if (unlikely(__ret_warn_once) &&				\
	    !__atomic_exchange_n(&__warned, true, __ATOMIC_RELAXED))	\
		kshim::warnAt(__FILE__, __LINE__, __func__, #condition);	\
	unlikely(__ret_warn_once);					\
})

/* userspace: the message is the kernel's format string, printed as is (no arguments). */
#define WARN_ONCE(condition, msg) ({					\
	static bool __warned;						\
	bool __ret_warn_once = !!(condition);				\
	if (unlikely(__ret_warn_once) &&				\
	    !__atomic_exchange_n(&__warned, true, __ATOMIC_RELAXED))	\
		kshim::warnAt(__FILE__, __LINE__, __func__, msg);	\
	unlikely(__ret_warn_once);					\
})

/*
 * Port of BUILD_BUG_ON(), include/linux/build_bug.h, v7.3: a compile-time
 * assertion (userspace: C++'s static_assert, a statement where the kernel's
 * is an expression).
 */
#define BUILD_BUG_ON(condition) static_assert(!(condition), "BUILD_BUG_ON(" #condition ")")
