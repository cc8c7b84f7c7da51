/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Local interrupt masking on a simulated CPU.
 *
 * CUSTOM: include/linux/irqflags.h on a per-CPU soft mask.
 * userspace: IPIs are real-time signals. local_irq_save() does not block the
 * signal; it sets the CPU's mask word, and an IPI signal that arrives while
 * the mask is set only marks the IPI pending and returns. The first
 * local_irq_restore()/local_irq_enable() that unmasks runs the pending IPI
 * on the spot, before returning, as hardware delivers an interrupt held off
 * by CLI once STI executes. (The kernel's powerpc lazy interrupt masking
 * works the same way.) Either way no IPI callback runs on this CPU between
 * save and restore.
 *
 * All of these act on the calling CPU; they must be called from a CPU
 * thread (BUG otherwise) and are async-signal-safe. Regions nest: flags
 * record the previous state and restore puts it back.
 */
#pragma once

#include <linux/compiler.h>

namespace kshim {
unsigned long archLocalIrqSave() noexcept;
void archLocalIrqRestore(unsigned long flags) noexcept;
bool archIrqsDisabled() noexcept;
bool inTask() noexcept;
} /* namespace kshim */

#define local_irq_save(flags) do { (flags) = kshim::archLocalIrqSave(); } while (0)
#define local_irq_restore(flags) kshim::archLocalIrqRestore(flags)
#define local_irq_disable() ((void)kshim::archLocalIrqSave())
#define local_irq_enable() kshim::archLocalIrqRestore(0)
#define irqs_disabled() kshim::archIrqsDisabled()
#define raw_irqs_disabled() irqs_disabled()
#define raw_local_irq_save(flags) local_irq_save(flags)
#define raw_local_irq_restore(flags) local_irq_restore(flags)
#define lockdep_assert_irqs_enabled() WARN_ON_ONCE(irqs_disabled())
/* preemptible() is in linux/preempt.h, which includes this file: a macro, expanded at use */
#define lockdep_assert_preemption_disabled() WARN_ON_ONCE(preemptible())
#define lockdep_assert_irqs_disabled() WARN_ON_ONCE(!irqs_disabled())
