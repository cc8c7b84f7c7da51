/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Context tracking: user, idle, IRQ and NMI transitions of a CPU.
 *
 * PORT: written fresh after include/linux/context_tracking.h and
 * kernel/context_tracking.c (v6.12 names), with the deferral series v7.
 * Every transition is called on the CPU it concerns (a CPU thread, or its
 * signal handler for IRQ/NMI entry); all are async-signal-safe.
 */
#pragma once

#include <linux/context_tracking_state.h>
#include <linux/context_tracking_work.h>

void ct_user_enter(enum ctx_state state);	/* kernel -> user/guest (IRQs off) */
void ct_user_exit(enum ctx_state state);	/* user/guest -> kernel */
void __ct_user_enter(enum ctx_state state);
void __ct_user_exit(enum ctx_state state);
void ct_idle_enter(void);			/* kernel -> idle (IRQs off) */
void ct_idle_exit(void);			/* idle -> kernel */
void ct_irq_enter(void);			/* interrupt entry (from any state) */
void ct_irq_exit(void);
void ct_nmi_enter(void);
void ct_nmi_exit(void);

/*
 * How isolated CPUs are spared text-patching IPIs (boot parameter
 * pokelab.ct_defer=off|v7|v7-tlbi|v8|v5|pokelab-catchup; v7 by default when nohz_full= is set,
 * off otherwise). See docs/context_tracking.md.
 */
enum ct_defer_policy {
	CT_DEFER_OFF,		/* mainline: always IPI */
	CT_DEFER_V7,		/* ct_set_cpu_work() as fixed in v7 */
	CT_DEFER_V5,		/* v5's inverted watching bet (drops work for a CPU in the kernel) */
	CT_DEFER_CATCHUP,	/* pokelab's own, after the v8 idea: every entry from an EQS serialises */
	CT_DEFER_V7_TLBI,	/* v7 + RFC 28-31, pokelab's corrected order: TLB flushes gated */
	CT_DEFER_V8,		/* v8: pokelab's reconstruction of an RFC, not posted code */
};

/* How v8 is labelled wherever pokelab shows it (help, machine line, explain, docs). */
#define CT_DEFER_V8_LABEL "v8: pokelab's reconstruction of an RFC, not posted code"

extern enum ct_defer_policy ct_defer_policy;

const char *ct_defer_policy_name(enum ct_defer_policy p);

namespace pokelab {
/*
 * Test hook for ct_set_cpu_work(): called between its read of the state
 * word and its first cmpxchg, so a test can change the target's state in
 * that window. NULL when unused.
 */
extern void (*ctSetCpuWorkRaceHook)(unsigned int cpu);

/* Deferred work items flushed at kernel entry on @cpu since boot. */
unsigned long ctWorkFlushed(int cpu) noexcept;
/*
 * Time @cpu spent in deferred-work flushes at kernel entry since boot, in ns
 * of CLOCK_MONOTONIC (each flush timed around arch_context_tracking_work());
 * the longest single flush in *@maxNs if non-NULL. Any thread; relaxed reads.
 */
unsigned long ctWorkFlushNs(int cpu, unsigned long *maxNs) noexcept;
} /* namespace pokelab */
