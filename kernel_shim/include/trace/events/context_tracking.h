/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The context_tracking tracepoints (include/trace/events/context_tracking.h).
 *
 * Each tracepoint is one relaxed load of its enable bit when off, a call of
 * the registered probe when on (linux/tracepoint.h); async-signal-safe,
 * callable in any context the probe allows (the trace room's: any).
 *
 * Each also has its static key, a jump-label site in its caller (noinstr
 * text in __ct_user_enter() and __ct_user_exit(): _NOINSTR keys), on while
 * a CPU has registered a probe (tracepoint_probe_register()): then the
 * site jumps to the tracepoint's iterator, instrumentable text, which runs
 * only where the caller's instrumentation_begin() allows it.
 * userspace: the trace room's probe is behind the enable bit, not the key:
 * it starts recording from threads that are no CPU, where no key can flip.
 */
#pragma once

#include <linux/tracepoint.h>

namespace kshim {

/*
 * The probes a CPU registers on a tracepoint (tracepoint_probe_register(),
 * alternative/tracepoint.cpp), behind the tracepoint's static key: the
 * tracepoint's iterator (__traceiter_*(), instrumentable text), which
 * alternative installs with the first probe. NULL until then; the key is
 * off until then.
 */
using TraceIter = void (*)(TraceType type, int arg) noexcept;
extern TraceIter traceIter;

} /* namespace kshim */

/*
 * A tracepoint's static-key site, as arch_static_branch() spells one (a
 * NOP5 and its __jump_table entry), for a key defined with
 * DEFINE_STATIC_KEY_FALSE_NOINSTR() in alternative/tracepoint.cpp.
 * userspace: the core owns the tracepoints but sits below the jump labels,
 * so the site is spelled here and the key is named by its symbol.
 */
struct static_key_false;

static __always_inline bool kshim_tracepoint_key(struct static_key_false *const key)
{
	asm goto("1:\n\t"
		 ".byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n\t"
		 ".pushsection __jump_table,  \"aw\"\n\t"
		 ".balign 8\n\t"
		 ".long 1b - .\n\t"
		 ".long %l[l_yes] - .\n\t"
		 ".quad %c0 - .\n\t"
		 ".popsection\n\t"
		 : : "i"(key) : : l_yes);
	return false;
l_yes:
	return true;
}

extern struct static_key_false __tracepoint_user_enter;
extern struct static_key_false __tracepoint_user_exit;

/* Port of the user_enter tracepoint, include/trace/events/context_tracking.h */
static __always_inline void trace_user_enter(int dummy)
{
	if (KSHIM_TRACE_ON(kshim::TraceType::UserEnter))
		kshim::traceProbe(kshim::TraceType::UserEnter, dummy, 0, 0, 0, nullptr);
	if (kshim_tracepoint_key(&__tracepoint_user_enter))
		kshim::traceIter(kshim::TraceType::UserEnter, dummy);
}

/* Port of the user_exit tracepoint, include/trace/events/context_tracking.h */
static __always_inline void trace_user_exit(int dummy)
{
	if (KSHIM_TRACE_ON(kshim::TraceType::UserExit))
		kshim::traceProbe(kshim::TraceType::UserExit, dummy, 0, 0, 0, nullptr);
	if (kshim_tracepoint_key(&__tracepoint_user_exit))
		kshim::traceIter(kshim::TraceType::UserExit, dummy);
}
