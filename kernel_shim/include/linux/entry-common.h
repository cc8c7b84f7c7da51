/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Interrupt entry and exit.
 *
 * CUSTOM: include/linux/irq-entry-common.h, v6.16. Every IPI signal the
 * machine takes is bracketed, on the target CPU, as
 *
 *	IRQs masked (the "interrupt gate")
 *	state = irqentry_enter(regs)
 *	  hardirq count up (irq_enter_rcu()), call_single_queue flushed,
 *	  hardirq count down (irq_exit_rcu())
 *	irqentry_exit(regs, state)
 *	IRQs unmasked
 *
 * irqentry_enter()/irqentry_exit() do nothing themselves but call the hooks
 * installed with kshim::setIrqEntryHooks(): context tracking hangs its
 * ct_irq_enter()/ct_irq_exit() there. An IPI held pending by
 * local_irq_save() goes through the same pair when it is finally taken.
 *
 * userspace: @regs is NULL for an IPI: the signal frame is not turned into a
 * pt_regs on this path (the INT3 path has real ones).
 *
 * Async-signal-safety: irqentry_enter(), irqentry_exit() and
 * setIrqEntryHooks() are async-signal-safe (one atomic load or store), and
 * the hooks are called from signal context, so they must be too: no
 * allocation, no locks, no stdio.
 */
#pragma once

#include <linux/compiler.h>

struct pt_regs;

typedef struct irqentry_state {
	union {
		bool exit_rcu;
		bool lockdep;
	};
} irqentry_state_t;

/* Port of the irqentry_enter() interface; calls the registered enter hook. */
irqentry_state_t irqentry_enter(struct pt_regs *regs);
/* Port of the irqentry_exit() interface; calls the registered exit hook with @state. */
void irqentry_exit(struct pt_regs *regs, irqentry_state_t state);

/*
 * Port of irqentry_nmi_enter() / irqentry_nmi_exit(), kernel/entry/common.c,
 * v7.3: the NMI and hardirq counts of __nmi_enter() (in_nmi() is true
 * between the two), then ct_nmi_enter() (RCU watches, an EQS's deferred
 * work runs); exit in reverse. exc_nmi() and exc_int3()'s kernel-mode
 * do_int3() path use them. Defined by context tracking
 * (context_tracking/entry.cpp), which owns kernel/entry/common.c's
 * context-tracking half. userspace: no lockdep or ftrace state (@state
 * carries nothing). Signal context; noinstr; nestable as an NMI inside
 * an INT3 handler is.
 */
irqentry_state_t irqentry_nmi_enter(struct pt_regs *regs);
void irqentry_nmi_exit(struct pt_regs *regs, irqentry_state_t irq_state);

namespace kshim {
struct IrqEntryHooks {
	/* Called with IRQs masked, before the handler; returns what exit gets back. */
	irqentry_state_t (*enter)(struct pt_regs *regs);
	/* Called with IRQs still masked, after the handler. */
	void (*exit)(struct pt_regs *regs, irqentry_state_t state);
};

/*
 * Install @hooks (NULL removes them); the object must outlive its use. The
 * pointer is published with release and read with acquire on each entry.
 * An interrupt already inside its enter/exit pair keeps the hooks it saw at
 * entry. Any thread, any time; async-signal-safe.
 */
void setIrqEntryHooks(const IrqEntryHooks *hooks) noexcept;
} /* namespace kshim */
