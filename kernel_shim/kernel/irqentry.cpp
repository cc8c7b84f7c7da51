// SPDX-License-Identifier: GPL-2.0-only
/*
 * Interrupt entry/exit hooks and the per-CPU preemption count.
 */
#include <atomic>

#include <kernel_shim/boot.h>
#include <linux/bug.h>
#include <linux/entry-common.h>
#include <linux/percpu.h>
#include <linux/preempt.h>

#define KSHIM_PRIVATE
#include "internal.h"

namespace {

std::atomic<const kshim::IrqEntryHooks *> irqEntryHooks{nullptr};

} /* namespace */

/* Port of irqentry_enter(), kernel/entry/common.c, v6.16: the hook does the work. */
irqentry_state_t irqentry_enter(struct pt_regs *regs)
{
	const kshim::IrqEntryHooks *h = irqEntryHooks.load(std::memory_order_acquire);
	irqentry_state_t ret = {};

	if (h && h->enter)
		ret = h->enter(regs);
	return ret;
}

/* Port of irqentry_exit(), kernel/entry/common.c, v6.16: the hook does the work. */
void irqentry_exit(struct pt_regs *regs, irqentry_state_t state)
{
	const kshim::IrqEntryHooks *h = irqEntryHooks.load(std::memory_order_acquire);

	/* Interrupts are still masked here, as on the kernel's exit path. */
	lockdep_assert_irqs_disabled();
	if (h && h->exit)
		h->exit(regs, state);
}

namespace kshim {

void setIrqEntryHooks(const IrqEntryHooks *hooks) noexcept
{
	irqEntryHooks.store(hooks, std::memory_order_release);
}

/* Each CPU thread's, set to PREEMPT_ENABLED when it comes up (boot.cpp). */
__thread int __preempt_count __attribute__((tls_model("local-exec"))) = PREEMPT_ENABLED;

void preemptCountUnderflow(void) noexcept
{
	/* the decrement took the count below 0, into the NEED_RESCHED bit: undo it */
	__preempt_count_add(1);
	/* Port of the CONFIG_DEBUG_PREEMPT check of preempt_count_sub(), kernel/sched/core.c */
	WARN_ON_ONCE(1);
}

} /* namespace kshim */
