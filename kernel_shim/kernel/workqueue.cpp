// SPDX-License-Identifier: GPL-2.0-only
/*
 * Work queues and the kworkers (linux/workqueue.h, docs/kernel_shim.md
 * "Work queues").
 *
 * Each CPU has one pool (its worklist in CpuState) and one kworker, a host
 * thread pinned to the CPU's PU that runs as the CPU while it holds it.
 * Who holds a CPU is CpuState::rqOwner, under rqLock:
 *
 *	base thread			kworker
 *	  (runs)			  waits: work, and the CPU free
 *	  cpuSleepBegin(): RqFree ---->	  RqKworker, thread = kworker,
 *	  (sleeps; takes IPIs)		  RCU online; runs items, one by
 *	  cpuSleepEnd(): baseWants	  one, until none is left or the
 *	  waits for RqFree <-----------	  base wants the CPU: RCU offline,
 *	  RqBase, thread = base		  thread = base, RqFree
 *
 * An IPI goes to CpuState::thread; a handler that finds itself on a thread
 * that is not the CPU's owner any more passes the signal on (irq.cpp), so
 * an IPI sent just before a change of owner is taken by the new one.
 *
 * Delayed work sits on one timer thread's list (not a CPU: it only moves
 * an expired item onto its pool, as the kernel's timer softirq does with
 * delayed_work_timer_fn()).
 */
#include <cerrno>
#include <chrono>
#include <map>
#include <mutex>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include <linux/bug.h>
#include <linux/cpumask.h>
#include <linux/irqflags.h>
#include <linux/jiffies.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/rcupdate.h>
#include <linux/sched/isolation.h>
#include <linux/smp.h>
#include <linux/workqueue.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/sched.h>

#include <kernel_shim/watchdog.h>

#define KSHIM_PRIVATE
#include "internal.h"
#include "topology.h"

namespace {

struct workqueue_struct systemWq = {"events", 0};

} /* namespace */

struct workqueue_struct *system_wq = &systemWq;
struct workqueue_struct *system_percpu_wq = &systemWq;

namespace kshim {

namespace {

enum { RqBase, RqKworker, RqFree };

thread_local bool tlsKworker;
thread_local int tlsMutexes;

bool kworkersUp;

/* Delayed work: the armed timers by deadline (ns), and the thread that fires them. */
std::mutex timerLock;
std::condition_variable timerCv;
std::multimap<u64, struct delayed_work *> timers;
std::thread timerThread;
bool timerStop;

int poolOf(const struct work_struct *work)
{
	return (int)(__atomic_load_n(&work->data, __ATOMIC_ACQUIRE) >> WORK_STRUCT_POOL_SHIFT) - 1;
}

/*
 * Put @work (pending) on a pool: the one it is running on, if it is, so
 * that it never runs on two CPUs at once (the kernel's non-reentrancy),
 * else @cpu's.
 */
void insertWork(int cpu, struct work_struct *work)
{
	int last = poolOf(work);

	if (last >= 0 && last != cpu) {
		CpuState &l = cpuState(last);
		std::lock_guard<std::mutex> lk(l.rqLock);

		if (l.currentWork == work)
			cpu = last;
	}

	CpuState &c = cpuState(cpu);
	{
		std::lock_guard<std::mutex> lk(c.rqLock);

		__atomic_store_n(&work->data,
				 ((unsigned long)(cpu + 1) << WORK_STRUCT_POOL_SHIFT) | WORK_STRUCT_PENDING,
				 __ATOMIC_RELEASE);
		list_add_tail(&work->entry, &c.worklist);
		c.rqCv.notify_all();
	}
	/* an idle CPU's thread lends it to the kworker (boot.cpp's idle loop) */
	if (cpu)
		cpuKick(c);
}

/* Take @work off its pool's list if it is queued there: true if it was. */
bool unqueueWork(struct work_struct *work)
{
	int p = poolOf(work);

	if (p < 0)
		return false;

	CpuState &c = cpuState(p);
	std::lock_guard<std::mutex> lk(c.rqLock);

	if (!(__atomic_load_n(&work->data, __ATOMIC_RELAXED) & WORK_STRUCT_PENDING) ||
	    list_empty(&work->entry))
		return false;
	list_del_init(&work->entry);
	__atomic_fetch_and(&work->data, ~WORK_STRUCT_PENDING, __ATOMIC_RELEASE);
	return true;
}

/* Take @dwork's timer off if armed: true if it was (the work stays pending). */
bool disarm(struct delayed_work *dwork)
{
	std::lock_guard<std::mutex> lk(timerLock);

	if (!dwork->timer.armed)
		return false;
	for (auto it = timers.begin(); it != timers.end(); ++it) {
		if (it->second == dwork) {
			timers.erase(it);
			break;
		}
	}
	dwork->timer.armed = false;
	return true;
}

/*
 * Wait until @work is neither queued on its pool nor running there. True
 * if it had to. The caller's CPU is lent meanwhile, mutexes or not: a
 * flush is a wait on the work, as the kernel's.
 */
bool waitIdle(struct work_struct *work)
{
	int p = poolOf(work);

	if (p < 0)
		return false;

	CpuState &c = cpuState(p);
	auto busy = [&] {
		return c.currentWork == work ||
		       ((__atomic_load_n(&work->data, __ATOMIC_RELAXED) & WORK_STRUCT_PENDING) &&
			!list_empty(&work->entry) && poolOf(work) == p);
	};
	{
		std::lock_guard<std::mutex> lk(c.rqLock);

		if (!busy())
			return false;
		/* a kworker flushing other work of its own CPU would wait for itself */
		BUG_ON(tlsKworker && tlsCpu == p);
	}

	int token = cpuSleepBegin(true);
	{
		std::unique_lock<std::mutex> lk(c.rqLock);

		c.rqCv.wait(lk, [&] { return !busy(); });
	}
	cpuSleepEnd(token);
	return true;
}

void timerMain()
{
	std::unique_lock<std::mutex> lk(timerLock);

	pthread_setname_np(pthread_self(), "ktimer");
	while (!timerStop) {
		if (timers.empty()) {
			timerCv.wait(lk);
			continue;
		}
		auto it = timers.begin();
		u64 now = clockNs();

		if (it->first > now) {
			timerCv.wait_for(lk, std::chrono::nanoseconds(it->first - now));
			continue;
		}
		struct delayed_work *dwork = it->second;

		timers.erase(it);
		dwork->timer.armed = false;
		lk.unlock();
		insertWork(dwork->cpu, &dwork->work);
		lk.lock();
	}
}

void kworkerMain(int cpu)
{
	CpuState &c = cpuState(cpu);
	char name[16];

	snprintf(name, sizeof(name), "kworker/%d:0", cpu);
	pthread_setname_np(pthread_self(), name);
	topology().pinSelf(c.pu);
	tlsKworker = true;
	tlsCpu = cpu;
	this_cpu_off = (unsigned long)cpu * SMP_CACHE_BYTES;
	__preempt_count = PREEMPT_ENABLED;
	fatalSignalStack(true);
	c.kworkerTid.store((int)syscall(SYS_gettid), std::memory_order_relaxed);
	watchdogThreadStart(cpu, true);
	rcuKworkerStart();

	std::unique_lock<std::mutex> lk(c.rqLock);
	for (;;) {
		c.rqCv.wait(lk, [&] {
			return (c.kworkerStop && list_empty(&c.worklist)) ||
			       (!list_empty(&c.worklist) && c.rqOwner == RqFree && !c.rqBaseWants);
		});
		if (list_empty(&c.worklist))
			break;	/* stopping */

		/* The CPU is ours: IPIs come here, RCU watches us. */
		c.rqOwner = RqKworker;
		__atomic_store_n(&c.thread, pthread_self(), __ATOMIC_RELEASE);
		lk.unlock();
		rcuKworkerOnline();
		lk.lock();
		while (!list_empty(&c.worklist) && !c.rqBaseWants) {
			struct work_struct *work = list_first_entry(&c.worklist, struct work_struct,
								    entry);

			list_del_init(&work->entry);
			c.currentWork = work;
			/* no longer pending: queueing it now runs it again after this run */
			__atomic_fetch_and(&work->data, ~WORK_STRUCT_PENDING, __ATOMIC_RELEASE);
			lk.unlock();
			work->func(work);
			/* the kernel's "leaked lock or atomic" check of process_one_work() */
			WARN_ON_ONCE(preempt_count() || irqs_disabled() || tlsMutexes);
			lk.lock();
			c.currentWork = nullptr;
			c.workDone++;
			c.kworkerRuns.fetch_add(1, std::memory_order_relaxed);
			watchdogTouch();
			c.rqCv.notify_all();
		}
		lk.unlock();
		rcuKworkerOffline();
		lk.lock();
		__atomic_store_n(&c.thread, c.baseThread, __ATOMIC_RELEASE);
		c.rqOwner = RqFree;
		c.rqCv.notify_all();
	}
	lk.unlock();
	rcuKworkerStop();
	watchdogThreadStop();
	fatalSignalStack(false);
	tlsCpu = -1;
	this_cpu_off = kNoCpuOff;
}

} /* namespace */

void mutexHeldAdd(int n) noexcept
{
	tlsMutexes += n;
}

bool inKworker() noexcept
{
	return tlsKworker;
}

unsigned long kworkerRuns(int cpu) noexcept
{
	return cpuState(cpu).kworkerRuns.load(std::memory_order_relaxed);
}

int kworkerTid(int cpu) noexcept
{
	return cpuState(cpu).kworkerTid.load(std::memory_order_relaxed);
}

int cpuSleepBegin(bool holdingOk) noexcept
{
	int cpu = tlsCpu;
	int token = 1;

	if (cpu < 0 || tlsKworker || !kworkersUp || (tlsMutexes && !holdingOk) ||
	    preempt_count() || irqs_disabled())
		return 0;

	CpuState &c = cpuState(cpu);

	if (rcu_is_watching()) {
		rcuEqsEnter();
		token |= 2;
	}
	std::lock_guard<std::mutex> lk(c.rqLock);

	WARN_ON_ONCE(c.rqOwner != RqBase);
	c.rqOwner = RqFree;
	c.rqCv.notify_all();
	return token;
}

void cpuSleepEnd(int token) noexcept
{
	if (!token)
		return;

	CpuState &c = cpuState(tlsCpu);
	{
		std::unique_lock<std::mutex> lk(c.rqLock);

		c.rqBaseWants = true;
		c.rqCv.wait(lk, [&] { return c.rqOwner == RqFree; });
		c.rqOwner = RqBase;
		c.rqBaseWants = false;
		__atomic_store_n(&c.thread, c.baseThread, __ATOMIC_RELEASE);
		c.rqCv.notify_all();
	}
	if (token & 2)
		rcuEqsExit();
}

void cpuLendIdle(CpuState &c) noexcept
{
	std::unique_lock<std::mutex> lk(c.rqLock);

	if (!kworkersUp || list_empty(&c.worklist) || c.rqOwner != RqBase)
		return;
	c.rqOwner = RqFree;
	c.rqCv.notify_all();
	c.rqCv.wait(lk, [&] { return list_empty(&c.worklist) && c.rqOwner == RqFree; });
	c.rqOwner = RqBase;
	__atomic_store_n(&c.thread, c.baseThread, __ATOMIC_RELEASE);
}

/* cond_resched(): a CPU whose kworker has work lets it run now. */
void kworkerYield() noexcept
{
	int cpu = tlsCpu;

	if (cpu < 0 || tlsKworker || !kworkersUp)
		return;

	CpuState &c = cpuState(cpu);
	{
		std::lock_guard<std::mutex> lk(c.rqLock);

		if (list_empty(&c.worklist))
			return;
	}
	int token = cpuSleepBegin(false);

	if (!token)
		return;
	{
		std::unique_lock<std::mutex> lk(c.rqLock);

		c.rqCv.wait(lk, [&] { return list_empty(&c.worklist) && c.currentWork == nullptr; });
	}
	cpuSleepEnd(token);
}

void kworkersStart()
{
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		CpuState &c = cpuState(cpu);

		c.rqOwner = RqBase;
		c.rqBaseWants = false;
		c.kworkerStop = false;
		c.baseThread = __atomic_load_n(&c.thread, __ATOMIC_ACQUIRE);
		c.kworkerRuns.store(0, std::memory_order_relaxed);
		c.kworker = std::thread(kworkerMain, (int)cpu);
	}
	{
		std::lock_guard<std::mutex> lk(timerLock);

		timerStop = false;
	}
	timerThread = std::thread(timerMain);
	__atomic_store_n(&kworkersUp, true, __ATOMIC_RELEASE);
}

void kworkersStop()
{
	if (!kworkersUp)
		return;
	/* Every armed timer fires now: nothing waits past the machine's end. */
	{
		std::lock_guard<std::mutex> lk(timerLock);

		for (auto &[t, dwork] : timers) {
			(void)t;
			dwork->timer.armed = false;
			insertWork(dwork->cpu, &dwork->work);
		}
		timers.clear();
		timerStop = true;
		timerCv.notify_all();
	}
	timerThread.join();

	/* Every pool drains: CPU 0 lends itself while it waits, idle CPUs lend themselves. */
	int token = cpuSleepBegin(true);

	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		CpuState &c = cpuState(cpu);
		std::unique_lock<std::mutex> lk(c.rqLock);

		c.rqCv.wait(lk, [&] { return list_empty(&c.worklist) && !c.currentWork; });
	}
	cpuSleepEnd(token);
	__atomic_store_n(&kworkersUp, false, __ATOMIC_RELEASE);
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		CpuState &c = cpuState(cpu);

		{
			std::lock_guard<std::mutex> lk(c.rqLock);

			c.kworkerStop = true;
			c.rqCv.notify_all();
		}
		c.kworker.join();
		c.kworkerTid.store(0, std::memory_order_relaxed);
	}
}

} /* namespace kshim */

using namespace kshim;

bool queue_work_on(int cpu, struct workqueue_struct *wq, struct work_struct *work)
{
	(void)wq;	/* one kind of queue: per-CPU */
	if (__atomic_fetch_or(&work->data, WORK_STRUCT_PENDING, __ATOMIC_ACQ_REL) &
	    WORK_STRUCT_PENDING)
		return false;
	if (cpu == WORK_CPU_UNBOUND)
		cpu = raw_smp_processor_id();
	/* a thread that is no CPU has no pool of its own */
	BUG_ON(cpu < 0 || (unsigned int)cpu >= nr_cpu_ids);
	insertWork(cpu, work);
	return true;
}

bool queue_delayed_work_on(int cpu, struct workqueue_struct *wq, struct delayed_work *dwork,
			   unsigned long delay)
{
	if (__atomic_fetch_or(&dwork->work.data, WORK_STRUCT_PENDING, __ATOMIC_ACQ_REL) &
	    WORK_STRUCT_PENDING)
		return false;
	dwork->wq = wq;
	if (cpu == WORK_CPU_UNBOUND) {
		/* the timer on this CPU, or on a housekeeping one (__queue_delayed_work()) */
		cpu = raw_smp_processor_id();
		BUG_ON(cpu < 0);
		if (!housekeeping_cpu(cpu, HK_TYPE_TIMER))
			cpu = housekeeping_any_cpu(HK_TYPE_TIMER);
	}
	BUG_ON(cpu < 0 || (unsigned int)cpu >= nr_cpu_ids);
	dwork->cpu = cpu;
	if (!delay) {
		insertWork(cpu, &dwork->work);
		return true;
	}

	std::lock_guard<std::mutex> lk(timerLock);

	dwork->timer.expires = jiffies + delay;
	dwork->timer.armed = true;
	timers.emplace((u64)dwork->timer.expires * (1000000000ull / HZ), dwork);
	timerCv.notify_all();
	return true;
}

bool flush_work(struct work_struct *work)
{
	return waitIdle(work);
}

bool flush_delayed_work(struct delayed_work *dwork)
{
	if (disarm(dwork))
		insertWork(dwork->cpu, &dwork->work);
	return flush_work(&dwork->work);
}

bool cancel_work_sync(struct work_struct *work)
{
	bool was = unqueueWork(work);

	waitIdle(work);
	return was;
}

bool cancel_delayed_work(struct delayed_work *dwork)
{
	if (disarm(dwork)) {
		__atomic_fetch_and(&dwork->work.data, ~WORK_STRUCT_PENDING, __ATOMIC_RELEASE);
		return true;
	}
	return unqueueWork(&dwork->work);
}

bool cancel_delayed_work_sync(struct delayed_work *dwork)
{
	bool was = cancel_delayed_work(dwork);

	waitIdle(&dwork->work);
	return was;
}
