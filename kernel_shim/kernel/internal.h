/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kernel_shim internals shared by its source files. Not installed, not for
 * other modules.
 */
#pragma once

#ifndef KSHIM_PRIVATE
#error "kernel_shim/kernel/internal.h is private to kernel_shim"
#endif

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <pthread.h>
#include <string>
#include <thread>

#include <kernel_shim/cpu.h>
#include <linux/cpumask.h>
#include <linux/list.h>
#include <linux/workqueue.h>
#include <linux/threads.h>
#include <linux/types.h>

namespace kshim {

/* isolcpus= as given at boot ("nohz,3"), "" when not given (isolation.cpp). */
const std::string &isolcpusGiven() noexcept;

/*
 * A report's names for a place in the source (lockdep.cpp, watchdog_checks.cpp):
 * __FILE__ without the build directory's leading "../", and a function's
 * bare name from std::source_location's "void foo(int)" or __func__'s "foo".
 * Task context (they allocate): never from a signal handler.
 */
inline std::string shortFile(const char *f)
{
	std::string s = f ? f : "?";

	while (s.rfind("../", 0) == 0)
		s.erase(0, 3);
	return s;
}

inline std::string bareName(const char *f)
{
	std::string s = f ? f : "?";
	size_t p = s.find('(');

	if (p != std::string::npos)
		s.resize(p);
	p = s.find_last_of(" :");
	if (p != std::string::npos)
		s.erase(0, p + 1);
	return s;
}

/* Everything the machine keeps per simulated CPU. */
struct alignas(SMP_CACHE_BYTES) CpuState {
	/* Written by the CPU itself and its signal handlers only. */
	std::atomic<int> irqDisabled{0};
	std::atomic<int> irqPending{0};
	std::atomic<int> hardirq{0};	/* > 0 while in the IPI handler */
	std::atomic<unsigned long> ipiReceived{0};
	std::atomic<unsigned long> ipiSent{0};
	std::atomic<unsigned long> csdRun{0};
	std::atomic<unsigned long> csdQueued{0};
	std::atomic<unsigned long> ipiSendCpu{0};	/* single IPIs sent (ipi_send_cpu) */
	std::atomic<unsigned long> ipiSendCpumask{0};	/* mask IPIs sent (ipi_send_cpumask) */
	/* Interference accounting (osnoise-style): IPI handler runs and their time. */
	std::atomic<unsigned long> irqHandled{0};	/* handleIpi() runs */
	std::atomic<unsigned long> irqNs{0};		/* total ns inside handleIpi() */
	std::atomic<unsigned long> irqMaxNs{0};		/* longest single handleIpi() */

	/* The host scheduler model (sched.cpp): written by the CPU itself. */
	std::atomic<u64> sliceStartNs{0};	/* when it last gave way (or woke) */
	std::atomic<unsigned long> yields{0};	/* times schedTick() gave way */
	/*
	 * Idle: bumped by every wake-up reason (a task queued, stop, an IPI
	 * taken) so that the futex sleep in cpuIdle() cannot miss one; @kick
	 * says a task or stop is waiting (set by cpuRun()/shutdown(), cleared
	 * by the CPU under taskLock).
	 */
	std::atomic<u32> idleSeq{0};
	std::atomic<bool> kick{false};

	/* Fault injection (tests): IPI signals to drop instead of sending. */
	std::atomic<unsigned int> dropIpis{0};
	/* Fault injection (tests): sends to this CPU that fail with EAGAIN first. */
	std::atomic<unsigned int> failIpiSends{0};
	/* Sends to this CPU that pthread_kill() refused with EAGAIN and were retried. */
	std::atomic<unsigned long> ipiSendRetries{0};

	/* Set up by boot() before the CPU runs; constant while it runs. */
	pthread_t thread{};
	int pu = -1;

	/* The CPU's task queue (cpuRun()). */
	std::mutex taskLock;
	std::condition_variable idleCv;
	std::deque<std::function<void()>> tasks;
	bool running = false;
	bool stop = false;
	std::thread worker;

	/*
	 * Who runs as this CPU (workqueue.cpp): its own thread (the base: the
	 * CPU thread, or the boot thread for CPU 0), its kworker, or neither
	 * while the base sleeps; and the CPU's work pool. Under rqLock, but
	 * @thread (the IPIs' target, the owner's host thread) is also read
	 * without it by IPI senders (an acquire load).
	 */
	std::mutex rqLock;
	std::condition_variable rqCv;
	int rqOwner = 0;		/* RqBase, RqKworker, RqFree */
	bool rqBaseWants = false;	/* the base waits to run again */
	pthread_t baseThread{};
	struct list_head worklist = {&worklist, &worklist};
	struct work_struct *currentWork = nullptr;
	unsigned long workDone = 0;	/* items finished, for flushers */
	std::atomic<unsigned long> kworkerRuns{0};
	std::atomic<int> kworkerTid{0};
	bool kworkerStop = false;
	std::thread kworker;
};

CpuState &cpuState(int cpu) noexcept;

/*
 * Deliver an IPI to @cpu: send the signal (unless a test asked to drop it).
 * Async-signal-safe.
 */
void sendIpiSignal(int cpu) noexcept;

/* Interrupt entry for the IPI: runs the CSD queue with IRQs masked. */
void handleIpi(CpuState &c) noexcept;

/*
 * The idle loop of a CPU thread (sched.cpp): poll, then sleep, per idle=,
 * until @c.kick is set. Called in the CPU's own thread with taskLock not
 * held and RCU in an extended quiescent state.
 */
void cpuIdle(CpuState &c) noexcept;
/* Wake CPU @c from cpuIdle(): a task was queued or it must stop. Any thread. */
void cpuKick(CpuState &c) noexcept;

/* Install/remove the IPI signal handler (boot/shutdown). */
int installIpiHandler(std::string &err);
/* Install the NMI signal handler (boot; nmi.cpp). */
int installNmiHandler(std::string &err);

/*
 * Parse the CPU list @list of boot parameter @name (whose whole value is
 * @val) into @mask. On a bad list returns -EINVAL or -ERANGE with one line in
 * @err naming the value: empty list, reversed range, CPU beyond NR_CPUS, or
 * malformed. Task context.
 */
int parseCpulistParam(const char *name, const char *val, const char *list, struct cpumask *mask,
		      std::string &err);

/* RCU (rcu.cpp): register/unregister the calling CPU thread as a QSBR reader. */
void rcuCpuStarting() noexcept;
void rcuCpuDying() noexcept;

/*
 * Work queues (workqueue.cpp): start the kworkers once the CPUs are up;
 * at shutdown, run every pending item and timer, then stop them (CPU 0,
 * before the other CPUs go down). cpuLendIdle(): an idle CPU's own thread
 * lends the CPU to its kworker while the pool has work (the caller is in
 * an extended quiescent state, taskLock not held).
 */
void kworkersStart();
void kworkersStop();
void cpuLendIdle(CpuState &c) noexcept;
/* cond_resched()'s part: if this CPU's kworker has work, lend the CPU until it is done. */
void kworkerYield() noexcept;

/* RCU (rcu.cpp) for a kworker thread: registered offline; online while it holds its CPU. */
void rcuKworkerStart() noexcept;
void rcuKworkerOnline() noexcept;
void rcuKworkerOffline() noexcept;
void rcuKworkerStop() noexcept;

/*
 * RCU as the stall detector sees a watched thread (watchdog.cpp, rcu.cpp):
 * written by the thread itself (and its signal handlers), read by the
 * watchdog. @online: a registered QSBR reader that is online (it holds up
 * grace periods); @qs: bumped at each quiescent state and each offline or
 * online step; @nesting: rcu_read_lock() depth, and where the outermost was
 * taken; @heldOnline: an extended quiescent state entered with a reader held
 * kept the thread online (rcu.cpp).
 */
struct WatchRcu {
	std::atomic<bool> online{false};
	std::atomic<unsigned long> qs{0};
	std::atomic<int> nesting{0};
	std::atomic<const char *> lockFile{nullptr};
	std::atomic<const char *> lockFunc{nullptr};
	std::atomic<unsigned int> lockLine{0};
	bool heldOnline = false;
};
/* The calling thread's, or nullptr on a thread the watchdog does not watch. Signal-safe. */
WatchRcu *watchRcu() noexcept;

/* Allocate the cross-call state for nr_cpu_ids CPUs (boot). */
void smpInit();
/* Run what is left in this CPU's call_single_queue as it goes offline. */
void flushSmpCallFunctionQueueDying() noexcept;

} /* namespace kshim */

#include <linux/smp.h>
#include <linux/types.h>

/* The CSD lock's debugging, shared by smp.cpp and csd_lock.cpp, is in smp_internal.h. */
