// SPDX-License-Identifier: GPL-2.0-only
/*
 * The shim's work queues (kernel_shim/kernel/workqueue.cpp,
 * linux/workqueue.h): a work item runs in task context on the pool of the
 * CPU that queued it, in that CPU's kworker (a thread of its own that runs
 * as the CPU while the CPU's own thread sleeps), once per queueing while
 * pending; delayed work waits for its timer, which a nohz_full CPU leaves
 * to a housekeeping one; cancel and flush wait for a run in progress; IPIs
 * reach the CPU whichever of its threads runs it; shutdown runs what is
 * left.
 */
#include <gtest/gtest.h>

#include <atomic>
#include <sys/syscall.h>
#include <unistd.h>

#include <asm/processor.h>
#include <kernel_shim/boot.h>
#include <kernel_shim/cpu.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/preempt.h>
#include <linux/rcupdate.h>
#include <linux/smp.h>
#include <linux/workqueue.h>

#include "booted.h"
#include "wait_for.h"

namespace {

struct Probe {
	struct delayed_work dw;
	std::atomic<int> runs{0};
	std::atomic<int> cpu{-1};
	std::atomic<int> tid{0};
	std::atomic<bool> kworker{false}, task{false}, rcu{false};
	std::atomic<int> requeue{0};
};

Probe *probeOf(struct work_struct *w)
{
	return container_of(to_delayed_work(w), Probe, dw);
}

void probeFn(struct work_struct *w)
{
	Probe *p = probeOf(w);

	p->cpu.store(smp_processor_id());
	p->tid.store((int)syscall(SYS_gettid));
	p->kworker.store(kshim::inKworker());
	p->task.store(in_task());
	p->rcu.store(rcu_is_watching());
	if (p->requeue.fetch_sub(1) > 0)
		schedule_work(w);	/* from the kworker: back onto its own pool */
	p->runs.fetch_add(1);
}

class Workqueue : public pokelab::test::Booted
{
};

TEST_F(Workqueue, RunsOnTheQueuingCpusKworker)
{
	Probe p;
	unsigned long runs0 = kshim::kworkerRuns(0);

	INIT_DELAYED_WORK(&p.dw, probeFn);
	EXPECT_TRUE(schedule_work(&p.dw.work));
	EXPECT_FALSE(schedule_work(&p.dw.work)) << "pending: not queued twice";
	EXPECT_TRUE(flush_work(&p.dw.work));
	EXPECT_EQ(p.runs.load(), 1);
	EXPECT_EQ(p.cpu.load(), 0);
	EXPECT_TRUE(p.kworker.load());
	EXPECT_TRUE(p.task.load());
	EXPECT_TRUE(p.rcu.load()) << "a kworker holding its CPU is an RCU reader";
	EXPECT_EQ(p.tid.load(), kshim::kworkerTid(0));
	EXPECT_NE(p.tid.load(), (int)syscall(SYS_gettid));
	EXPECT_EQ(kshim::kworkerRuns(0), runs0 + 1);
	EXPECT_FALSE(flush_work(&p.dw.work)) << "nothing left to wait for";
}

TEST_F(Workqueue, ScheduleWorkOnAnIdleCpu)
{
	Probe p;

	INIT_DELAYED_WORK(&p.dw, probeFn);
	ASSERT_TRUE(schedule_work_on(2, &p.dw.work));
	flush_work(&p.dw.work);
	EXPECT_EQ(p.runs.load(), 1);
	EXPECT_EQ(p.cpu.load(), 2);
	EXPECT_EQ(p.tid.load(), kshim::kworkerTid(2));
}

TEST_F(Workqueue, QueuedWhileRunningRunsAgain)
{
	Probe p;

	INIT_DELAYED_WORK(&p.dw, probeFn);
	p.requeue.store(2);
	schedule_work(&p.dw.work);
	/* each run queues the next before it ends: the flush waits for them all */
	flush_work(&p.dw.work);
	EXPECT_EQ(p.runs.load(), 3);
}

TEST_F(Workqueue, CancelQueuedWorkBeforeItRuns)
{
	Probe p;

	INIT_DELAYED_WORK(&p.dw, probeFn);
	/* CPU 1 runs a task, so its kworker cannot run until it sleeps */
	std::atomic<bool> go{false}, queued{false};

	kshim::cpuRun(1, [&] {
		queued.store(schedule_work(&p.dw.work));
		while (!go.load())
			cpu_relax();
	});
	ASSERT_TRUE(pokelab::test::waitFor([&] { return queued.load(); }, "the queueing"));
	EXPECT_TRUE(work_pending(&p.dw.work));
	EXPECT_TRUE(cancel_work_sync(&p.dw.work));
	go.store(true);
	kshim::cpuWait(1);
	EXPECT_EQ(p.runs.load(), 0);
	EXPECT_FALSE(work_pending(&p.dw.work));
}

TEST_F(Workqueue, DelayedWorkWaitsForItsTimer)
{
	Probe p;

	INIT_DELAYED_WORK(&p.dw, probeFn);
	/* an hour: only a cancel or a flush ends it */
	ASSERT_TRUE(schedule_delayed_work(&p.dw, 3600 * HZ));
	EXPECT_TRUE(delayed_work_pending(&p.dw));
	EXPECT_FALSE(schedule_delayed_work(&p.dw, 1));
	EXPECT_TRUE(cancel_delayed_work_sync(&p.dw));
	EXPECT_FALSE(delayed_work_pending(&p.dw));
	EXPECT_EQ(p.runs.load(), 0);

	ASSERT_TRUE(schedule_delayed_work(&p.dw, 3600 * HZ));
	EXPECT_TRUE(flush_delayed_work(&p.dw)) << "the timer fires at once";
	EXPECT_EQ(p.runs.load(), 1);
	EXPECT_EQ(p.cpu.load(), 0);

	/* a short one expires by itself (CPU 0 sleeps meanwhile: its kworker runs it) */
	ASSERT_TRUE(schedule_delayed_work(&p.dw, 1));
	for (int i = 0; i < 30000 && p.runs.load() < 2; i++)
		msleep(1);
	EXPECT_EQ(p.runs.load(), 2);
}

class WorkqueueNohz : public Workqueue
{
protected:
	std::string extraParams() const override { return "nohz_full=2-3"; }
};

TEST_F(WorkqueueNohz, AnIsolatedCpusTimerGoesToHousekeeping)
{
	Probe p;

	INIT_DELAYED_WORK(&p.dw, probeFn);
	kshim::cpuRun(2, [&] { schedule_delayed_work(&p.dw, 1); });
	kshim::cpuWait(2);
	flush_delayed_work(&p.dw);
	EXPECT_EQ(p.runs.load(), 1);
	EXPECT_LT(p.cpu.load(), 2) << "the work ran on an isolated CPU";
}

/*
 * An IPI to a CPU whose kworker holds it: CPU 1 cross-calls CPU 0 while
 * CPU 0's kworker runs an item that waits for the call to have run. The
 * call runs in the kworker's thread (the base thread, asleep, hands the
 * signal on).
 */
std::atomic<int> callTid;
std::atomic<bool> callDone;

void crossCall(void *)
{
	callTid.store((int)syscall(SYS_gettid));
	callDone.store(true);
}

std::atomic<bool> inWork;

void waitForCall(struct work_struct *w)
{
	(void)w;
	inWork.store(true);
	while (!callDone.load())
		cpu_relax();
}

TEST_F(Workqueue, IpisReachTheCpuItsKworkerHolds)
{
	DECLARE_WORK(w, waitForCall);

	callDone.store(false);
	inWork.store(false);
	schedule_work(&w);
	kshim::cpuRun(1, [] {
		while (!inWork.load())
			cpu_relax();
		smp_call_function_single(0, crossCall, nullptr, 1);
	});
	flush_work(&w);
	kshim::cpuWait(1);
	EXPECT_TRUE(callDone.load());
	EXPECT_EQ(callTid.load(), kshim::kworkerTid(0));
}

/* A sleep of CPU 0's own thread lets its kworker run (msleep() lends the CPU). */
TEST_F(Workqueue, ASleepingCpuRunsItsKworker)
{
	Probe p;

	INIT_DELAYED_WORK(&p.dw, probeFn);
	schedule_work(&p.dw.work);
	for (int i = 0; i < 1000 && !p.runs.load(); i++)
		msleep(1);
	EXPECT_EQ(p.runs.load(), 1);
}

TEST_F(Workqueue, ShutdownRunsWhatIsLeft)
{
	static Probe p;

	p.runs.store(0);
	INIT_DELAYED_WORK(&p.dw, probeFn);
	ASSERT_TRUE(schedule_delayed_work(&p.dw, 3600 * HZ));
	kshim::shutdown();
	EXPECT_EQ(p.runs.load(), 1);
	EXPECT_FALSE(delayed_work_pending(&p.dw));
}

} /* namespace */
