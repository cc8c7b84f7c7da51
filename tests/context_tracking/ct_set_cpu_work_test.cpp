// SPDX-License-Identifier: GPL-2.0-only
/*
 * ct_set_cpu_work(): the truth table over the target's state, for the v7
 * revision and for v5's inverted watching bet; deferred work running at
 * the next kernel entry; the small watching counter wrapping.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <asm/tlbflush.h>
#include <kernel_shim/cpu.h>
#include <linux/context_tracking.h>
#include <linux/bug.h>
#include <linux/irqflags.h>
#include <linux/preempt.h>
#include <linux/rcupdate.h>
#include <linux/smp.h>

#include <pokelab/ct_entry.h>

#include "booted.h"

namespace {

enum class Where { Kernel, User, Idle, IrqFromUser };

/*
 * Parks CPU @cpu in a state until release(): the CPU thread makes the
 * real transitions (ct_user_enter(), ct_idle_enter(), ct_irq_enter()).
 */
class Parked
{
public:
	Parked(int cpu, Where where) : cpu_(cpu)
	{
		kshim::cpuRun(cpu, [this, where] {
			unsigned long flags;

			switch (where) {
			case Where::Kernel:
				in_ = true;
				wait();
				break;
			case Where::User:
				ct_user_enter(CT_STATE_USER);
				in_ = true;
				wait();
				ct_user_exit(CT_STATE_USER);
				break;
			case Where::Idle:
				local_irq_save(flags);
				ct_idle_enter();
				in_ = true;
				wait();
				ct_idle_exit();
				local_irq_restore(flags);
				break;
			case Where::IrqFromUser:
				ct_user_enter(CT_STATE_USER);
				local_irq_save(flags);
				ct_irq_enter();
				in_ = true;
				wait();
				ct_irq_exit();
				local_irq_restore(flags);
				ct_user_exit(CT_STATE_USER);
				break;
			}
		});
		while (!in_.load())
			std::this_thread::yield();
	}

	~Parked() { release(); }

	void release()
	{
		if (released_)
			return;
		released_ = true;
		go_ = true;
		kshim::cpuWait(cpu_);
	}

private:
	void wait()
	{
		while (!go_.load())
			;
	}

	int cpu_;
	bool released_ = false;
	std::atomic<bool> in_{false};
	std::atomic<bool> go_{false};
};

bool workPending(int cpu)
{
	return atomic_read(&per_cpu_ptr(&context_tracking, cpu)->state) & CT_WORK_MASK;
}

class CtV7 : public pokelab::test::Booted
{
protected:
	std::string extraParams() const override { return "nohz_full=2-3 pokelab.ct_defer=v7"; }
};

class CtV5 : public pokelab::test::Booted
{
protected:
	std::string extraParams() const override { return "nohz_full=2-3 pokelab.ct_defer=v5"; }
};

/* Expected ct_set_cpu_work() result per state: {v7, v5}. */
struct Row {
	Where where;
	bool v7;
	bool v5;
	const char *name;
};

const Row truthTable[] = {
	{Where::Kernel, false, true, "in the kernel"},
	{Where::User, true, true, "in user mode"},
	{Where::Idle, true, true, "idle"},
	{Where::IrqFromUser, false, true, "in an IRQ taken from user mode"},
};

void runTable(bool v5)
{
	const int isolated = 2;

	/* An inactive (housekeeping) CPU never defers. */
	EXPECT_FALSE(ct_set_cpu_work(1, CT_WORK_SYNC));

	for (const Row &row : truthTable) {
		Parked p(isolated, row.where);
		bool got = ct_set_cpu_work(isolated, CT_WORK_SYNC);

		EXPECT_EQ(got, v5 ? row.v5 : row.v7) << "target " << row.name;
		EXPECT_EQ(workPending(isolated), got) << "target " << row.name;
		p.release();
		/* Whatever was stored is gone once the CPU left the kernel and came back. */
	}
}

TEST_F(CtV7, TruthTable)
{
	runTable(false);
}

TEST_F(CtV5, TruthTable)
{
	runTable(true);
}

class CtV8 : public pokelab::test::Booted
{
protected:
	std::string extraParams() const override { return "nohz_full=2-3 pokelab.ct_defer=v8"; }
};

/*
 * v8 (pokelab's reconstruction of an RFC, not posted code): no work bits;
 * only a CPU running with the user CR3
 * (kernel_cr3_loaded == 0: in user mode, through the entry model's exit)
 * is skipped. An idle CPU keeps the kernel CR3 and gets the IPI.
 */
std::atomic<bool> v8Parked, v8Release;

void v8Park(int cpu, bool user)
{
	v8Parked = v8Release = false;
	kshim::cpuRun(cpu, [user] {
		if (user) {
			pokelab::ctReturnToUser();
			v8Parked = true;
			while (!v8Release.load())
				std::this_thread::yield();
			pokelab::ctEnterKernelForGood();
		} else {
			v8Parked = true;
			pokelab::ctIdleUntil(&v8Release);
		}
	});
	while (!v8Parked.load())
		std::this_thread::yield();
}

void v8Unpark(int cpu)
{
	v8Release = true;
	kshim::cpuWait(cpu);
}

TEST_F(CtV8, TruthTable)
{
	const int isolated = 2;

	EXPECT_FALSE(ct_set_cpu_work(1, CT_WORK_SYNC)) << "housekeeping";
	EXPECT_FALSE(ct_set_cpu_work(isolated, CT_WORK_SYNC)) << "in the kernel";

	v8Park(isolated, true);
	EXPECT_EQ(*per_cpu_ptr(&kernel_cr3_loaded, isolated), 0);
	EXPECT_TRUE(ct_set_cpu_work(isolated, CT_WORK_SYNC)) << "in user mode";
	EXPECT_FALSE(workPending(isolated)) << "v8 stores no work bits";
	v8Unpark(isolated);
	EXPECT_EQ(*per_cpu_ptr(&kernel_cr3_loaded, isolated), 1);

	v8Park(isolated, false);
	/* give it time to reach the idle loop: it must still not be skipped */
	std::this_thread::sleep_for(std::chrono::milliseconds(5));
	EXPECT_FALSE(ct_set_cpu_work(isolated, CT_WORK_SYNC)) << "idle (kernel CR3 still loaded)";
	v8Unpark(isolated);
}

/* The target moves between the read and the cmpxchg. */
std::atomic<int> raceTarget{-1};
Parked *raceFrom;
Where raceTo;
Parked *raceNew;

void moveTarget(unsigned int cpu)
{
	if ((int)cpu != raceTarget.load() || !raceFrom)
		return;
	Parked *from = raceFrom;
	raceFrom = nullptr;
	from->release();
	raceNew = new Parked(cpu, raceTo);
}

void raceCase(Where from, Where to, bool expect)
{
	const int isolated = 3;

	raceTarget = isolated;
	Parked *fromObj = new Parked(isolated, from);
	raceFrom = fromObj;
	raceTo = to;
	pokelab::ctSetCpuWorkRaceHook = moveTarget;
	bool got = ct_set_cpu_work(isolated, CT_WORK_SYNC);
	pokelab::ctSetCpuWorkRaceHook = nullptr;

	EXPECT_EQ(got, expect);
	EXPECT_EQ(workPending(isolated), expect);
	/* The hook must have moved the target; either way nothing leaks. */
	EXPECT_EQ(raceFrom, nullptr);
	raceFrom = nullptr;
	delete raceNew;
	delete fromObj;
	raceNew = nullptr;
	raceTarget = -1;
}

TEST_F(CtV7, StateChangesBetweenReadAndCmpxchg)
{
	/* user -> kernel in the window: the cmpxchg fails and sees WATCHING: IPI. */
	raceCase(Where::User, Where::Kernel, false);
	/* kernel -> user in the window: the retry stores the work. */
	raceCase(Where::Kernel, Where::User, true);
}

TEST_F(CtV5, StateChangesBetweenReadAndCmpxchg)
{
	raceCase(Where::User, Where::Kernel, false);
	raceCase(Where::Kernel, Where::User, true);
}

TEST_F(CtV7, DeferredWorkRunsAtTheNextEntryAndIsClearedOnExit)
{
	const int isolated = 2;
	unsigned long before = pokelab::ctWorkFlushed(isolated);
	{
		Parked p(isolated, Where::User);

		ASSERT_TRUE(ct_set_cpu_work(isolated, CT_WORK_SYNC));
		EXPECT_TRUE(workPending(isolated));
	} /* back into the kernel: the flush runs */
	EXPECT_EQ(pokelab::ctWorkFlushed(isolated), before + 1);

	/* Leaving again clears the bit; the next entry has nothing to run. */
	{
		Parked p(isolated, Where::User);
		EXPECT_FALSE(workPending(isolated));
	}
	EXPECT_EQ(pokelab::ctWorkFlushed(isolated), before + 1);
}

TEST_F(CtV5, BugReplayV5DropsWorkForACpuInTheKernel)
{
	const int isolated = 2;
	unsigned long before = pokelab::ctWorkFlushed(isolated);
	{
		Parked p(isolated, Where::Kernel);

		/* v5 reports success, so the caller skips the IPI ... */
		EXPECT_TRUE(ct_set_cpu_work(isolated, CT_WORK_SYNC));
	}
	/* ... but the CPU was past its flush: the next exit clears the work unrun. */
	{
		Parked p(isolated, Where::User);
		EXPECT_FALSE(workPending(isolated));
	}
	EXPECT_EQ(pokelab::ctWorkFlushed(isolated), before);
}

class CtTorture : public pokelab::test::Booted
{
protected:
	std::string extraParams() const override
	{
		return "nohz_full=2-3 pokelab.ct_defer=v7 pokelab.ct_torture=1";
	}
};

TEST_F(CtTorture, SmallWatchingCounterWrapsWithoutBreakingDeferral)
{
	const int isolated = 2;
	unsigned long before = pokelab::ctWorkFlushed(isolated);
	int seen[4] = {};

	ASSERT_EQ(ct_rcu_watching_width, 2u);
	/* 2-bit counter: every 4 transitions it wraps; defer through many wraps. */
	for (int i = 0; i < 20; i++) {
		Parked p(isolated, Where::User);

		seen[(ct_rcu_watching_cpu(isolated) >> CT_RCU_WATCHING_START) & 3]++;
		EXPECT_FALSE(ct_rcu_watching_cpu(isolated) & CT_RCU_WATCHING);
		ASSERT_TRUE(ct_set_cpu_work(isolated, CT_WORK_SYNC)) << "iteration " << i;
	}
	EXPECT_EQ(pokelab::ctWorkFlushed(isolated), before + 20);
	/* The counter really wrapped: both EQS values of the 2-bit counter were seen. */
	EXPECT_GT(seen[0] + seen[2], 0);
	EXPECT_GT(seen[0], 0);
	EXPECT_GT(seen[2], 0);
}

/*
 * issue 33 item 6: ct_user_enter()/ct_user_exit() called from an interrupt
 * (an exception taken in an IRQ, in the kernel's words) return at once, as
 * upstream's: the IRQ's own ct_irq_enter()/exit() keep RCU watching, and a
 * user transition there would put the CPU in user mode with the IRQ still
 * running.
 */
struct UserCallInIrq {
	int stateAfterEnter;
	bool watchingAfterEnter;
	int stateAfterExit;
	bool inInterrupt;
};

void ct_user_calls_in_irq(void *info)
{
	struct UserCallInIrq *r = (struct UserCallInIrq *)info;

	r->inInterrupt = in_interrupt();
	ct_user_enter(CT_STATE_USER);
	r->stateAfterEnter = __ct_state();
	r->watchingAfterEnter = rcu_is_watching();
	ct_user_exit(CT_STATE_USER);
	r->stateAfterExit = __ct_state();
}

TEST_F(CtV7, UserEnterAndExitInAnInterruptDoNothing)
{
	struct UserCallInIrq r = {-1, false, -1, false};
	unsigned long warns = kshim::warnCount();
	Parked p(2, Where::Kernel);

	ASSERT_EQ(smp_call_function_single(2, ct_user_calls_in_irq, &r, 1), 0);
	p.release();

	EXPECT_TRUE(r.inInterrupt);
	EXPECT_EQ(r.stateAfterEnter, CT_STATE_KERNEL);
	EXPECT_TRUE(r.watchingAfterEnter);
	EXPECT_EQ(r.stateAfterExit, CT_STATE_KERNEL);
	EXPECT_EQ(ct_state_cpu(2), CT_STATE_KERNEL);
	EXPECT_EQ(kshim::warnCount(), warns);
}

} /* namespace */
