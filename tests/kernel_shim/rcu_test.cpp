// SPDX-License-Identifier: GPL-2.0-only
/*
 * RCU on QSBR: a grace period ignores a CPU in an extended quiescent state
 * (RCU offline) and idle CPUs, but waits for a CPU that is watching and has
 * not passed a quiescent state; call_rcu() callbacks run after one.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <kernel_shim/boot.h>
#include <kernel_shim/cpu.h>
#include <linux/rcupdate.h>
#include <linux/smp.h>

#include "booted.h"

namespace {

class RcuTest : public pokelab::test::Booted
{
};

TEST_F(RcuTest, EveryCpuIsWatchingWhileRunningATask)
{
	std::atomic<int> watching{0};

	EXPECT_TRUE(rcu_is_watching());
	for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++)
		kshim::cpuRun(cpu, [&] { watching += rcu_is_watching(); });
	for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++)
		kshim::cpuWait(cpu);
	EXPECT_EQ(watching.load(), (int)nr_cpu_ids - 1);
}

TEST_F(RcuTest, GracePeriodIgnoresIdleCpusAndCpusOfflineForRcu)
{
	std::atomic<bool> stop{false}, spinning{false};

	/* CPU 1 spins in an extended quiescent state; the other CPUs idle. */
	kshim::cpuRun(1, [&] {
		kshim::rcuEqsEnter();
		spinning = true;
		while (!stop.load())
			;
		kshim::rcuEqsExit();
	});
	while (!spinning.load())
		;
	synchronize_rcu();	/* must return while CPU 1 still spins */
	EXPECT_FALSE(stop.load());
	stop = true;
	kshim::cpuWait(1);
}

TEST_F(RcuTest, GracePeriodWaitsForAWatchingCpuUntilItPassesAQuiescentState)
{
	std::atomic<bool> release{false}, reading{false}, done{false};

	/* CPU 1 is watching and sits in a read-side critical section. */
	kshim::cpuRun(1, [&] {
		rcu_read_lock();
		reading = true;
		while (!release.load())
			;
		rcu_read_unlock();
		cond_resched();		/* the quiescent state */
	});
	while (!reading.load())
		;
	kshim::cpuRun(2 % nr_cpu_ids ? 2 : 1, [&] {
		synchronize_rcu();
		done = true;
	});
	/* However long we look, the grace period cannot end while CPU 1 reads. */
	for (int i = 0; i < 20; i++) {
		std::this_thread::sleep_for(std::chrono::milliseconds(5));
		ASSERT_FALSE(done.load()) << "grace period ended inside a read-side section";
	}
	release = true;
	kshim::cpuWait(1);
	kshim::cpuWait(2 % nr_cpu_ids ? 2 : 1);
	EXPECT_TRUE(done.load());
}

struct Obj {
	struct rcu_head rcu;
	std::atomic<int> *freed;
};

void freeObj(struct rcu_head *head)
{
	Obj *o = caa_container_of(head, Obj, rcu);

	(*o->freed)++;
	delete o;
}

TEST_F(RcuTest, CallRcuRunsTheCallbackAfterAGracePeriod)
{
	std::atomic<int> freed{0};
	std::atomic<bool> release{false}, reading{false};

	kshim::cpuRun(1, [&] {
		rcu_read_lock();
		reading = true;
		while (!release.load())
			;
		rcu_read_unlock();
		rcu_quiescent_state();
	});
	while (!reading.load())
		;
	call_rcu(&(new Obj{{}, &freed})->rcu, freeObj);
	for (int i = 0; i < 20; i++) {
		std::this_thread::sleep_for(std::chrono::milliseconds(5));
		ASSERT_EQ(freed.load(), 0) << "callback ran inside a read-side section";
	}
	release = true;
	kshim::cpuWait(1);
	rcu_barrier();
	EXPECT_EQ(freed.load(), 1);
}

} /* namespace */
