/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Simulated CPUs: running work on them, and their counters.
 */
#pragma once

#include <functional>
#include <pthread.h>

namespace kshim {

/*
 * Hand @task to CPU @cpu (1..nr_cpu_ids-1) to run as its current task, then
 * return at once. The CPU runs one task at a time, in order; between tasks
 * it idles (and still takes IPIs). A task that loops must end on its own
 * (watch a flag of the caller's) before shutdown(). Called from any thread
 * but the target; not async-signal-safe.
 */
void cpuRun(int cpu, std::function<void()> task);

/* Wait until CPU @cpu has run every task handed to it. Not from @cpu. */
void cpuWait(int cpu);

/* The PU (OS CPU number) CPU @cpu is pinned to. */
int cpuPu(int cpu) noexcept;

/* The host thread that is CPU @cpu (set at boot, constant while it runs). Any thread. */
pthread_t cpuThread(int cpu) noexcept;

/*
 * Whether CPU @cpu has IRQs masked (its soft mask) / is inside its IPI
 * handler, as a trace event records them. One relaxed load each;
 * async-signal-safe, any thread (exact only on @cpu itself).
 */
bool cpuIrqsDisabled(int cpu) noexcept;
bool cpuInHardirq(int cpu) noexcept;

/*
 * Per-CPU counters of the machine, for reports and tests. Written by the CPU
 * they belong to (and its signal handlers); read by anyone.
 */
struct CpuStats {
	unsigned long ipiReceived;	/* IPI signals taken (incl. held pending) */
	unsigned long ipiSent;		/* IPI signals this CPU sent */
	unsigned long csdRun;		/* cross-call functions run from the queue */
	unsigned long csdQueued;	/* CSDs this CPU queued to others */
	unsigned long ipiSendCpu;	/* single-CPU IPI sends (one ipi_send_cpu event each) */
	unsigned long ipiSendCpumask;	/* mask IPI sends (one ipi_send_cpumask event each) */
	/*
	 * Interference: IPI handler runs on this CPU (each from the handler's
	 * interrupt entry to its exit, including a deferred flush that entry
	 * ran), their total and their longest, in ns of CLOCK_MONOTONIC.
	 */
	unsigned long irqHandled;
	unsigned long irqNs;
	unsigned long irqMaxNs;
};
CpuStats cpuStats(int cpu) noexcept;
void resetCpuStats() noexcept;

/* Opaque identity of the calling thread (for mutex owners). */
const void *currentTask() noexcept;

/*
 * Test hook: drop the next @n IPI signals that would be sent to @cpu (the
 * CSD stays queued). Used to prove the CSD-lock watchdog reports a lost IPI.
 */
void dropNextIpis(int cpu, unsigned int n) noexcept;

/*
 * Test hook: the next @n IPI sends to @cpu fail with EAGAIN, as
 * pthread_kill() does when the host's queue of real-time signals is full;
 * the sender retries each (with back-off) until the signal goes out.
 */
void failNextIpiSends(int cpu, unsigned int n) noexcept;

/* IPI sends to @cpu that were refused with EAGAIN and retried, since boot. Any thread. */
unsigned long ipiSendRetries(int cpu) noexcept;

/*
 * The real-time signal that carries IPIs (SIGRTMIN + 1). Handlers that model
 * "interrupts off" (the INT3 trap) add it to their sa_mask.
 * Async-signal-safe; any thread.
 */
int ipiSignal() noexcept;

/*
 * The simulated NMI (kernel/nmi.cpp): SIGRTMIN + 2, which the soft IRQ mask
 * does not hold off. It does not nest in itself; it may land inside the IPI
 * and INT3 handlers, as on the hardware. Async-signal-safe; any thread.
 */
int nmiSignal() noexcept;

/*
 * The NMI's entry, called in the NMI handler on the CPU that takes it, with
 * interrupts off (context tracking's exc_nmi(); NULL: NMIs are ignored).
 * Must be async-signal-safe. Boot (task context).
 */
void setNmiEntry(void (*entry)(void) noexcept) noexcept;

/*
 * An NMI on the calling CPU, now: taken before this returns (a signal to
 * the calling thread is delivered on the way out of the kill). Nothing if
 * no entry is set or the caller is not a CPU. Async-signal-safe, but not
 * from the IPI or INT3 handlers (held off until they return).
 */
void nmiSelf() noexcept;

/* NMIs taken by @cpu since boot. Any thread; async-signal-safe. */
unsigned long nmiCount(int cpu) noexcept;

/*
 * The CSD-lock watchdog (kernel/smp.c CONFIG_CSD_LOCK_WAIT_DEBUG, on with the
 * boot parameter csdlock_debug=1): the csd_lock_timeout boot parameter in
 * ms, how many stuck CSD locks were reported since the process started, and
 * how many debug waits (__csd_lock_wait(), the watchdog's loop) cross-calls
 * made: none while the debugging is off. Any thread; async-signal-safe.
 */
unsigned long csdLockTimeoutMs() noexcept;
int csdLockStallCount() noexcept;
unsigned long csdLockDebugWaits() noexcept;

} /* namespace kshim */
