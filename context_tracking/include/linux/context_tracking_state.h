/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Per-CPU context-tracking state and the layout of its state word.
 *
 * PORT: written fresh after include/linux/context_tracking_state.h (v6.12
 * CT_STATE_* / CT_RCU_WATCHING names) with the work bits of the deferral
 * series, v7 ("context-tracking: Introduce work deferral infrastructure").
 *
 * The state word, from the least significant bit:
 *
 *	[ RCU watching counter | work bits | context state ]
 *	  bits 3..31 (29)        bit 2       bits 0..1
 *
 * CT_RCU_WATCHING (bit 3) set = RCU watches this CPU = the CPU is in the
 * kernel (task, IRQ or NMI); clear = extended quiescent state (user, idle).
 * Every transition is one fully ordered add on the word.
 *
 * userspace: the counter width is a run-time setting (boot parameter
 * pokelab.ct_torture=1 gives 2 bits, the RCU_DYNTICKS_TORTURE idea) instead
 * of a Kconfig constant; carries out of the narrow counter land in the
 * unused high bits, which every reader masks off, as in the kernel.
 *
 * userspace: one layout for every pokelab.ct_defer= policy. Mainline (and
 * so ct_defer=off) has no work bits and starts the watching counter at bit
 * 2; pokelab keeps bit 2 reserved under off too, so that the noinstr entry
 * code and its masks are one compiled sequence whatever the boot line says.
 * Under off the bit is never set, and the counter is one bit narrower than
 * mainline's (29 bits, not 30): it wraps twice as often, which nothing reads
 * but the torture width's wraparound tests, which want it anyway.
 *
 * All readers here are async-signal-safe and may be called from any thread.
 */
#pragma once

#include <climits>

#include <linux/atomic.h>
#include <linux/percpu.h>

/* Port of enum ctx_state, include/linux/context_tracking_state.h, v7.3 */
enum ctx_state {
	CT_STATE_DISABLED	= -1,	/* returned by ct_state() if unknown */
	CT_STATE_KERNEL		= 0,
	CT_STATE_IDLE		= 1,
	CT_STATE_USER		= 2,
	CT_STATE_GUEST		= 3,
	CT_STATE_MAX		= 4,
};

/* Even value for the watching-counter nesting: "in an IRQ that did not come from idle" */
/* Port of CT_NESTING_IRQ_NONIDLE(), include/linux/context_tracking_state.h, v7.3 */
#define CT_NESTING_IRQ_NONIDLE	((LONG_MAX / 2) + 1)

/* Port of CT_STATE_WIDTH(), include/linux/context_tracking_state.h, v7.3 */
#define CT_STATE_WIDTH		2
/* Port of CT_STATE_START(), include/linux/context_tracking_state.h, v7.3 */
#define CT_STATE_START		0
/* Port of CT_STATE_END(), include/linux/context_tracking_state.h, v7.3 */
#define CT_STATE_END		(CT_STATE_START + CT_STATE_WIDTH - 1)
/* Port of CT_STATE_MASK(), include/linux/context_tracking_state.h, v7.3 */
#define CT_STATE_MASK		(((1 << CT_STATE_WIDTH) - 1) << CT_STATE_START)

#define CT_WORK_WIDTH		1	/* CT_WORK_MAX_OFFSET: one work type, CT_WORK_SYNC */
#define CT_WORK_START		(CT_STATE_END + 1)
#define CT_WORK_END		(CT_WORK_START + CT_WORK_WIDTH - 1)
#define CT_WORK_MASK		(((1 << CT_WORK_WIDTH) - 1) << CT_WORK_START)

/* Port of CT_RCU_WATCHING_START(), include/linux/context_tracking_state.h, v7.3 */
#define CT_RCU_WATCHING_START	(CT_WORK_END + 1)
/* Port of CT_RCU_WATCHING(), include/linux/context_tracking_state.h, v7.3 */
#define CT_RCU_WATCHING		(1 << CT_RCU_WATCHING_START)

static_assert(CT_STATE_WIDTH + CT_WORK_WIDTH + (32 - CT_RCU_WATCHING_START) == 32,
	      "the state word is 32 bits");

/* Width of the watching counter: 29 normally, 2 with pokelab.ct_torture=1. */
extern unsigned int ct_rcu_watching_width;

static inline unsigned int ct_rcu_watching_mask(void)
{
	return ((1u << ct_rcu_watching_width) - 1) << CT_RCU_WATCHING_START;
}

/* Port of struct context_tracking, include/linux/context_tracking_state.h, v7.3 */
struct context_tracking {
	/* CONTEXT_TRACKING_USER */
	bool active;		/* tracks user/kernel for this CPU (nohz_full CPUs) */
	int recursion;
	/* CONTEXT_TRACKING */
	atomic_t state;
	/* CONTEXT_TRACKING_IDLE */
	long nesting;		/* task-level nesting of kernel entries */
	long nmi_nesting;	/* IRQ/NMI nesting */
};

DECLARE_PER_CPU(struct context_tracking, context_tracking);

/*
 * userspace: the kernel writes this_cpu_ptr(&context_tracking.state); a
 * PerCpu<> slot has no per-member per-CPU address, so these helpers go
 * through the struct.
 */
static __always_inline struct context_tracking *ct_this(void)
{
	return this_cpu_ptr(&context_tracking);
}

/* The watching counter of this CPU, masked. */
/* Port of ct_rcu_watching(), include/linux/context_tracking_state.h, v7.3 */
static __always_inline int ct_rcu_watching(void)
{
	return atomic_read(&ct_this()->state) & ct_rcu_watching_mask();
}

/* Port of ct_rcu_watching_cpu(), include/linux/context_tracking_state.h, v7.3 */
static __always_inline int ct_rcu_watching_cpu(int cpu)
{
	return atomic_read(&per_cpu_ptr(&context_tracking, cpu)->state) & ct_rcu_watching_mask();
}

/* Port of ct_nesting(), include/linux/context_tracking_state.h, v7.3 */
static __always_inline long ct_nesting(void)
{
	return READ_ONCE(ct_this()->nesting);
}

/* Port of ct_nmi_nesting(), include/linux/context_tracking_state.h, v7.3 */
static __always_inline long ct_nmi_nesting(void)
{
	return READ_ONCE(ct_this()->nmi_nesting);
}

/* The context state of @cpu (CT_STATE_*), from any thread. */
static __always_inline int ct_state_cpu(int cpu)
{
	return atomic_read(&per_cpu_ptr(&context_tracking, cpu)->state) & CT_STATE_MASK;
}

/* Port of __ct_state(), include/linux/context_tracking_state.h, v7.3 */
static __always_inline int __ct_state(void)
{
	/* userspace: a per-CPU member's address is taken through the CPU's own slot */
	return raw_atomic_read(&ct_this()->state) & CT_STATE_MASK;
}

/* True when RCU watches the calling CPU (it is in the kernel). */
/* Port of rcu_is_watching_curr_cpu(), include/linux/context_tracking.h, v7.3 */
static __always_inline bool rcu_is_watching_curr_cpu(void)
{
	return atomic_read(&ct_this()->state) & CT_RCU_WATCHING;
}

/* Port of ct_state_inc(), include/linux/context_tracking.h, v7.3: fully ordered. */
static __always_inline unsigned long ct_state_inc(int incby)
{
	/* userspace: a per-CPU member's address is taken through the CPU's own slot */
	return raw_atomic_add_return(incby, &ct_this()->state);
}
