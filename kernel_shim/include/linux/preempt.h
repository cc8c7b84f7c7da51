/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Preemption count.
 *
 * CUSTOM: include/linux/preempt.h and arch/x86/include/asm/preempt.h, v6.16,
 * with CONFIG_DEBUG_PREEMPT=n, as a production kernel is built: the count is
 * one int per CPU and each operation on it one instruction, inlined.
 * x86 keeps __preempt_count in the per-CPU area and reaches it through %gs;
 * pokelab keeps it in the CPU thread's local-exec TLS and reaches it through
 * %fs ("incl %fs:__preempt_count@tpoff"), which is the same instruction with
 * the other segment (a simulated CPU is one thread for its life). As on x86
 * the top bit is PREEMPT_NEED_RESCHED, inverted (set: no reschedule needed),
 * and preempt_count() masks it. irq_enter adds HARDIRQ_OFFSET to the count
 * in the IPI handler (kernel_shim/kernel/irq.cpp), as __irq_enter_raw() does.
 *
 * userspace:
 *  - %fs and TLS for %gs and the per-CPU area; local-exec TLS needs the
 *    code linked into the executable (pokelab's libraries are static);
 *  - the shim has no scheduler, so preempt_disable() pins nothing and
 *    preempt_enable() has no __preempt_schedule() to call. Its branch
 *    instead catches an underflow: x86 tests "decl; je" (zero: count 0 and a
 *    reschedule wanted); pokelab tests "decl; jns" (the sign drops when the
 *    count goes below 0 into the NEED_RESCHED bit, or a reschedule was
 *    wanted, which never happens here) and WARNs once out of line, as
 *    CONFIG_DEBUG_PREEMPT would, then puts the count back. The fast path is
 *    still one decrement and one branch.
 *
 * All of these act on the calling thread's count (a CPU's, or for a thread
 * that is not a simulated CPU its own, unused), are async-signal-safe (one
 * instruction each: a signal cannot split it) and need no lock.
 */
#pragma once

#include <linux/compiler.h>
#include <linux/irqflags.h>

#define PREEMPT_OFFSET	(1UL << 0)
#define SOFTIRQ_OFFSET	(1UL << 8)
#define HARDIRQ_OFFSET	(1UL << 16)
#define NMI_OFFSET	(1UL << 20)
#define PREEMPT_MASK	0x000000ffUL
#define SOFTIRQ_MASK	0x0000ff00UL
#define HARDIRQ_MASK	0x000f0000UL
#define NMI_MASK	0x00f00000UL

/* arch/x86/include/asm/preempt.h: the inverted need-resched bit */
#define PREEMPT_NEED_RESCHED	0x80000000
#define PREEMPT_ENABLED		(0 + PREEMPT_NEED_RESCHED)

namespace kshim {
/* The calling CPU's count (arch/x86/include/asm/preempt.h's __preempt_count). */
extern __thread int __preempt_count __attribute__((tls_model("local-exec")));
/* preempt_enable()'s out-of-line branch: WARN once, restore the count. Any context. */
[[gnu::cold]] void preemptCountUnderflow(void) noexcept;
} /* namespace kshim */

/* Port of preempt_count(), arch/x86/include/asm/preempt.h: one %fs load, one AND */
static __always_inline int preempt_count(void)
{
	return kshim::__preempt_count & ~PREEMPT_NEED_RESCHED;
}

/* Port of __preempt_count_add() / _sub(), arch/x86: raw_cpu_add_4(), one instruction */
static __always_inline void __preempt_count_add(int val)
{
	asm volatile("addl %1, %0" : "+m"(kshim::__preempt_count) : "ri"(val));
}

static __always_inline void __preempt_count_sub(int val)
{
	asm volatile("subl %1, %0" : "+m"(kshim::__preempt_count) : "ri"(val));
}

/*
 * Port of __preempt_count_dec_and_test(), arch/x86: "decl %fs:...", then the
 * branch. userspace: jns, not je (see the file comment): true on underflow.
 */
static __always_inline bool __preempt_count_dec_underflow(void)
{
	asm goto("decl %0\n\tjns %l[underflow]" : : "m"(kshim::__preempt_count) : "memory", "cc"
		 : underflow);
	return false;
underflow:
	return true;
}

#define preempt_count_add(val)	__preempt_count_add(val)
#define preempt_count_sub(val)	__preempt_count_sub(val)
#define preempt_count_inc()	preempt_count_add(1)

/* Compiler barriers around the count change, as the kernel's. */
#define preempt_disable() \
	do { preempt_count_inc(); barrier(); } while (0)
#define preempt_enable() \
	do {								\
		barrier();						\
		if (unlikely(__preempt_count_dec_underflow()))		\
			kshim::preemptCountUnderflow();			\
	} while (0)
#define preempt_enable_no_resched() \
	do { barrier(); preempt_count_sub(1); } while (0)
#define preempt_disable_notrace() preempt_disable()
#define preempt_enable_notrace() preempt_enable()

/* Preemption off, or in an interrupt, or IRQs off: not preemptible. */
#define preemptible() (preempt_count() == 0 && !irqs_disabled())
#define in_hardirq() (preempt_count() & HARDIRQ_MASK)
#define in_nmi() (preempt_count() & NMI_MASK)
#define in_interrupt() (preempt_count() & (NMI_MASK | HARDIRQ_MASK | SOFTIRQ_MASK))
/* Any preempt count at all: preemption off or an interrupt (include/linux/preempt.h's) */
#define in_atomic() (preempt_count() != 0)
/*
 * Port of in_task(), include/linux/preempt.h, v7.3 (!CONFIG_PREEMPT_RT): task
 * context, not an NMI, a hardirq or a softirq being served.
 */
#define in_task()		(!(preempt_count() & (NMI_MASK | HARDIRQ_MASK | SOFTIRQ_OFFSET)))

/* Port of interrupt_context_level(), include/linux/preempt.h: 0 task, 1 softirq, 2 hardirq, 3 NMI */
static __always_inline unsigned char interrupt_context_level(void)
{
	unsigned long pc = preempt_count();
	unsigned char level = 0;

	level += !!(pc & (NMI_MASK));
	level += !!(pc & (NMI_MASK | HARDIRQ_MASK));
	level += !!(pc & (NMI_MASK | HARDIRQ_MASK | SOFTIRQ_OFFSET));

	return level;
}
