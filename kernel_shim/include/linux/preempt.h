/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Preemption count.
 *
 * CUSTOM: include/linux/preempt.h and arch/x86/include/asm/preempt.h, v6.16.
 * Each CPU has a per-CPU __preempt_count (kernel_shim/src/irqentry.cpp);
 * preempt_count() adds HARDIRQ_OFFSET while the CPU is in its IPI handler,
 * as the kernel's count carries the hardirq bits.
 *
 * userspace: a simulated CPU thread never migrates and the shim has no
 * scheduler, so preempt_disable() pins nothing; the count is kept for what
 * reads it (preemptible(), WARNs, context tracking). preempt_enable() below
 * zero WARNs, as CONFIG_DEBUG_PREEMPT does.
 *
 * All of these act on the calling CPU, must be called from a CPU thread, and
 * are async-signal-safe.
 */
#pragma once

#include <linux/compiler.h>
#include <linux/irqflags.h>

#define PREEMPT_OFFSET	(1UL << 0)
#define HARDIRQ_OFFSET	(1UL << 16)
#define PREEMPT_MASK	0x000000ffUL
#define HARDIRQ_MASK	0x000f0000UL

namespace kshim {
unsigned long preemptCount() noexcept;
void preemptCountAdd(int val) noexcept;
void preemptCountSub(int val) noexcept;
} /* namespace kshim */

#define preempt_count() kshim::preemptCount()
#define preempt_count_add(val) kshim::preemptCountAdd(val)
#define preempt_count_sub(val) kshim::preemptCountSub(val)

/* Compiler barriers around the count change, as the kernel's. */
#define preempt_disable() \
	do { preempt_count_add(1); __asm__ __volatile__("" ::: "memory"); } while (0)
#define preempt_enable() \
	do { __asm__ __volatile__("" ::: "memory"); preempt_count_sub(1); } while (0)
#define preempt_enable_no_resched() preempt_enable()
#define preempt_disable_notrace() preempt_disable()
#define preempt_enable_notrace() preempt_enable()

/* Preemption off, or in an interrupt, or IRQs off: not preemptible. */
#define preemptible() (preempt_count() == 0 && !irqs_disabled())
#define in_hardirq() (preempt_count() & HARDIRQ_MASK)
#define in_interrupt() in_hardirq()
