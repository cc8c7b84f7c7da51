// SPDX-License-Identifier: GPL-2.0-only
/*
 * Interrupts of a simulated CPU: the IPI signal handler (interrupt entry)
 * and the soft IRQ mask behind local_irq_save()/local_irq_restore().
 *
 * How an IPI arrives:
 *
 *	sender CPU				target CPU (any code, any time)
 *	llist push CSD to target queue
 *	pthread_kill(target, SIGIPI)  ------>	ipiSignalHandler()
 *						  IRQs masked? -> mark pending, return
 *						  else handleIpi():
 *						    mask, flush call_single_queue, unmask
 *
 * and a pending one runs in local_irq_restore() as soon as it unmasks.
 */
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <string>

#include <kernel_shim/clock.h>
#include <kernel_shim/cpu_events.h>
#include <kernel_shim/sched.h>
#include <kernel_shim/torture.h>
#include <linux/preempt.h>
#include <linux/bug.h>
#include <linux/entry-common.h>
#include <linux/irqflags.h>
#include <linux/smp.h>

#define KSHIM_PRIVATE
#include "internal.h"

namespace kshim {

namespace {

void ipiSignalHandler(int, siginfo_t *, void *) noexcept
{
	int savedErrno = errno;
	int cpu = tlsCpu;

	if (cpu >= 0) {
		CpuState &c = cpuState(cpu);
		pthread_t owner = __atomic_load_n(&c.thread, __ATOMIC_ACQUIRE);

		/*
		 * Sent to the thread that ran as this CPU when the sender looked
		 * (its own thread or its kworker, workqueue.cpp): the one that
		 * runs as it now takes it. The CPU's IRQ line, not a thread's.
		 */
		if (!pthread_equal(owner, pthread_self())) {
			pthread_kill(owner, ipiSignal());
			errno = savedErrno;
			return;
		}
		c.ipiReceived.fetch_add(1, std::memory_order_relaxed);
		/* An idle CPU leaves its sleep and polls again (sched.cpp). */
		cpuIdleInterrupted();
		if (c.irqDisabled.load(std::memory_order_relaxed)) {
			c.irqPending.store(1, std::memory_order_relaxed);
		} else {
			handleIpi(c);
			/* The return from the interrupt: IRET (pokelab.eret=serialising) */
			cpuEret();
		}
	}
	errno = savedErrno;
}

} /* namespace */

/* SIGRTMIN is a libc call (glibc reserves some); async-signal-safe. */
int ipiSignal() noexcept
{
	return SIGRTMIN + 1;
}

void handleIpi(CpuState &c) noexcept
{
	irqentry_state_t state;
	/* userspace: osnoise-style accounting of the time this interrupt takes */
	unsigned long t0 = kshim::clockNs(), dt;

	/* Interrupt handlers run with interrupts off, as on x86. */
	c.irqDisabled.store(1, std::memory_order_relaxed);
	std::atomic_signal_fence(std::memory_order_seq_cst);
	state = irqentry_enter(NULL);
	/* irq_enter_rcu(): the count's hardirq bits, and the shim's flag beside them */
	__preempt_count_add(HARDIRQ_OFFSET);
	c.hardirq.fetch_add(1, std::memory_order_relaxed);
	std::atomic_signal_fence(std::memory_order_seq_cst);
	generic_smp_call_function_single_interrupt();
	std::atomic_signal_fence(std::memory_order_seq_cst);
	c.hardirq.fetch_sub(1, std::memory_order_relaxed);
	__preempt_count_sub(HARDIRQ_OFFSET);	/* irq_exit_rcu() */
	irqentry_exit(NULL, state);
	std::atomic_signal_fence(std::memory_order_seq_cst);
	/* Only this CPU (task or handler, IRQs off) writes these: plain RMWs suffice. */
	dt = kshim::clockNs() - t0;
	c.irqHandled.store(c.irqHandled.load(std::memory_order_relaxed) + 1,
			   std::memory_order_relaxed);
	c.irqNs.store(c.irqNs.load(std::memory_order_relaxed) + dt, std::memory_order_relaxed);
	if (dt > c.irqMaxNs.load(std::memory_order_relaxed))
		c.irqMaxNs.store(dt, std::memory_order_relaxed);
	c.irqDisabled.store(0, std::memory_order_relaxed);
}

int installIpiHandler(std::string &err)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = ipiSignalHandler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	/* an NMI may land inside the IPI handler, as on the hardware */
	sigemptyset(&sa.sa_mask);
	if (sigaction(ipiSignal(), &sa, nullptr)) {
		err = std::string("cannot install the IPI signal handler: ") + strerror(errno);
		return -errno;
	}
	return 0;
}

/*
 * The IRQ flag helpers are reached from noinstr code (raw_local_irq_save()
 * in ct_idle_exit(), irqs_disabled() checks): noinstr, as the kernel's are
 * __always_inline instructions.
 */
noinstr unsigned long archLocalIrqSave() noexcept
{
	CpuState &c = cpuState(smp_processor_id());
	unsigned long was = c.irqDisabled.load(std::memory_order_relaxed);

	c.irqDisabled.store(1, std::memory_order_relaxed);
	std::atomic_signal_fence(std::memory_order_seq_cst);
	torture_delay(TortureDelay::IrqsOff);	/* a window with IRQs held off */
	return was;
}

noinstr void archLocalIrqRestore(unsigned long flags) noexcept
{
	CpuState &c = cpuState(smp_processor_id());

	std::atomic_signal_fence(std::memory_order_seq_cst);
	if (flags) {
		c.irqDisabled.store(1, std::memory_order_relaxed);
		return;
	}
	c.irqDisabled.store(0, std::memory_order_relaxed);
	std::atomic_signal_fence(std::memory_order_seq_cst);
	/*
	 * userspace: what follows is the model's hook and the delivery of a
	 * pending interrupt, which the hardware does in the kernel (no call
	 * from the noinstr code that set IF): pokelab's own.
	 */
	pokelab_instr_begin();
	/* A CPU that wrote text with IRQs off may run any text from here on: the checker's look. */
	cpuIrqsOn(smp_processor_id());
	/* An IPI that came while masked is taken now, before we return. */
	while (c.irqPending.exchange(0, std::memory_order_relaxed)) {
		handleIpi(c);
		cpuEret();
	}
	pokelab_instr_end();
}

bool inTask() noexcept
{
	return cpuState(smp_processor_id()).hardirq.load(std::memory_order_relaxed) == 0;
}

noinstr bool archIrqsDisabled() noexcept
{
	return cpuState(smp_processor_id()).irqDisabled.load(std::memory_order_relaxed);
}

} /* namespace kshim */
