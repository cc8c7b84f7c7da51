// SPDX-License-Identifier: GPL-2.0-only
/*
 * Simulated CPUs as threads: their state, their task queues, and sending
 * them IPI signals.
 */
#include <cerrno>
#include <csignal>
#include <sched.h>
#include <pthread.h>

#include <asm/processor.h>
#include <kernel_shim/sched.h>
#include <linux/bug.h>
#include <linux/cpumask.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/smp.h>

#define KSHIM_PRIVATE
#include "internal.h"

namespace kshim {

__thread int tlsCpu __attribute__((tls_model("local-exec"))) = -1;
__thread unsigned long this_cpu_off __attribute__((tls_model("local-exec"))) = kNoCpuOff;

namespace {
CpuState cpuStates[NR_CPUS];
thread_local char taskIdentity;
} /* namespace */

noinstr CpuState &cpuState(int cpu) noexcept
{
	return cpuStates[cpu];
}

const void *currentTask() noexcept
{
	return &taskIdentity;
}

void sendIpiSignal(int cpu) noexcept
{
	CpuState &target = cpuStates[cpu];
	unsigned int drop = target.dropIpis.load(std::memory_order_relaxed);

	/* Fault injection: a lost IPI, for the CSD-lock watchdog tests. */
	while (drop && !target.dropIpis.compare_exchange_weak(drop, drop - 1))
		;
	if (drop)
		return;

	if (tlsCpu >= 0)
		cpuStates[tlsCpu].ipiSent.fetch_add(1, std::memory_order_relaxed);
	/*
	 * EAGAIN: the host's queue of real-time signals is full (RLIMIT_SIGPENDING);
	 * an IPI must not be lost, so back off and send it again, and count it.
	 * Anything else is a bug (a thread that is gone, a bad signal).
	 */
	for (unsigned int tries = 0;; tries++) {
		unsigned int fail = target.failIpiSends.load(std::memory_order_relaxed);
		int err;

		/* Fault injection: the next sends fail with EAGAIN (tests). */
		if (fail && target.failIpiSends.compare_exchange_strong(fail, fail - 1))
			err = EAGAIN;
		else
			err = pthread_kill(__atomic_load_n(&target.thread, __ATOMIC_ACQUIRE),
					   ipiSignal());
		if (err != EAGAIN) {
			BUG_ON(err);
			return;
		}
		target.ipiSendRetries.fetch_add(1, std::memory_order_relaxed);
		if (tries < 16)
			cpu_relax();
		else
			sched_yield();
	}
}

void failNextIpiSends(int cpu, unsigned int n) noexcept
{
	cpuStates[cpu].failIpiSends.store(n, std::memory_order_relaxed);
}

unsigned long ipiSendRetries(int cpu) noexcept
{
	return cpuStates[cpu].ipiSendRetries.load(std::memory_order_relaxed);
}

void dropNextIpis(int cpu, unsigned int n) noexcept
{
	cpuStates[cpu].dropIpis.store(n, std::memory_order_relaxed);
}

void cpuRun(int cpu, std::function<void()> task)
{
	BUG_ON(cpu <= 0 || (unsigned int)cpu >= nr_cpu_ids || !cpu_online(cpu));
	BUG_ON(tlsCpu == cpu);

	CpuState &c = cpuStates[cpu];
	{
		std::lock_guard<std::mutex> lk(c.taskLock);
		c.tasks.push_back(std::move(task));
	}
	cpuKick(c);
}

void cpuWait(int cpu)
{
	BUG_ON(cpu <= 0 || (unsigned int)cpu >= nr_cpu_ids);
	BUG_ON(tlsCpu == cpu);

	CpuState &c = cpuStates[cpu];
	/* A sleep: the caller's kworker may run meanwhile (sched.h). */
	int token = cpuSleepBegin(false);
	/* A CPU blocked here passes no quiescent states: let grace periods go on. */
	bool eqs = tlsCpu >= 0 && rcu_is_watching();

	if (eqs)
		rcuEqsEnter();
	{
		std::unique_lock<std::mutex> lk(c.taskLock);
		c.idleCv.wait(lk, [&] { return c.tasks.empty() && !c.running; });
	}
	if (eqs)
		rcuEqsExit();
	cpuSleepEnd(token);
}

int cpuPu(int cpu) noexcept
{
	return cpuStates[cpu].pu;
}

pthread_t cpuThread(int cpu) noexcept
{
	return __atomic_load_n(&cpuStates[cpu].thread, __ATOMIC_ACQUIRE);
}

bool cpuIrqsDisabled(int cpu) noexcept
{
	return cpuStates[cpu].irqDisabled.load(std::memory_order_relaxed);
}

bool cpuInHardirq(int cpu) noexcept
{
	return cpuStates[cpu].hardirq.load(std::memory_order_relaxed);
}

CpuStats cpuStats(int cpu) noexcept
{
	CpuState &c = cpuStates[cpu];

	return CpuStats{
		c.ipiReceived.load(std::memory_order_relaxed),
		c.ipiSent.load(std::memory_order_relaxed),
		c.csdRun.load(std::memory_order_relaxed),
		c.csdQueued.load(std::memory_order_relaxed),
		c.ipiSendCpu.load(std::memory_order_relaxed),
		c.ipiSendCpumask.load(std::memory_order_relaxed),
		c.irqHandled.load(std::memory_order_relaxed),
		c.irqNs.load(std::memory_order_relaxed),
		c.irqMaxNs.load(std::memory_order_relaxed),
	};
}

void resetCpuStats() noexcept
{
	for (CpuState &c : cpuStates) {
		c.ipiReceived.store(0, std::memory_order_relaxed);
		c.ipiSent.store(0, std::memory_order_relaxed);
		c.csdRun.store(0, std::memory_order_relaxed);
		c.csdQueued.store(0, std::memory_order_relaxed);
		c.ipiSendCpu.store(0, std::memory_order_relaxed);
		c.ipiSendCpumask.store(0, std::memory_order_relaxed);
		c.irqHandled.store(0, std::memory_order_relaxed);
		c.irqNs.store(0, std::memory_order_relaxed);
		c.irqMaxNs.store(0, std::memory_order_relaxed);
	}
}

} /* namespace kshim */
