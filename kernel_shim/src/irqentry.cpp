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

/* Per-CPU, as x86's __preempt_count. */
DEFINE_PER_CPU(int, __preempt_count);

int resetPreemptCounts(std::string &)
{
	for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++)
		per_cpu(__preempt_count, cpu) = 0;
	return 0;
}

kshim::BootHookRegistrar preemptInitHook({"preempt_count_init", kshim::BootStage::Early,
					  resetPreemptCounts});

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

unsigned long preemptCount() noexcept
{
	int cpu = smp_processor_id();
	unsigned long cnt = __atomic_load_n(per_cpu_ptr(&__preempt_count, cpu), __ATOMIC_RELAXED);

	if (cpuState(cpu).hardirq.load(std::memory_order_relaxed))
		cnt += HARDIRQ_OFFSET;
	return cnt;
}

void preemptCountAdd(int val) noexcept
{
	/* Port of the CONFIG_DEBUG_PREEMPT check of preempt_count_add(), kernel/sched/core.c */
	int old = this_cpu_read(__preempt_count);

	if (WARN_ON_ONCE(old + val > (int)PREEMPT_MASK))
		return;
	this_cpu_add(__preempt_count, val);
}

void preemptCountSub(int val) noexcept
{
	/* Port of the CONFIG_DEBUG_PREEMPT check of preempt_count_sub(), kernel/sched/core.c */
	if (WARN_ON_ONCE(val > this_cpu_read(__preempt_count)))
		return;
	this_cpu_add(__preempt_count, -val);
}

} /* namespace kshim */
