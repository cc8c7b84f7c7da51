// SPDX-License-Identifier: GPL-2.0-only
/*
 * The entry model and the cross-modifying-code model: deferred syncs run
 * before any instrumentable code at the next entry, for syscall, IRQ and
 * idle-exit entries; the model reports a CPU that reaches instrumentable
 * code on stale text, both with the flush lost (BUSTED skip-entry-flush)
 * and with v5's bug; RCU grace periods complete while isolated CPUs stay
 * in user mode. Every round here is a real batch: a static key of this
 * binary flipped live.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include <kernel_shim/cpu.h>
#include <kernel_shim/xmc.h>
#include <kernel_shim/xmc_verdict.h>
#include <linux/context_tracking.h>
#include <linux/jump_label.h>
#include <linux/rcupdate.h>
#include <linux/smp.h>
#include <pokelab/ct_entry.h>

#include "booted.h"

DEFINE_STATIC_KEY_FALSE(entry_test_key);

__noinline int entry_test_site(void)
{
	return static_branch_unlikely(&entry_test_key) ? 1 : 0;
}

namespace {

const int kIsolated = 2;

/*
 * One flip of entry_test_key: a one-site batch, three deferrable rounds
 * (the isolated CPU in user mode gets them as deferred work).
 */
void patchRound()
{
	if (static_key_enabled(&entry_test_key))
		static_branch_disable(&entry_test_key);
	else
		static_branch_enable(&entry_test_key);
}

std::atomic<unsigned long> syscallsDone;

void countSyscall(void *)
{
	syscallsDone++;
}

void waitSyscalls(unsigned long n)
{
	unsigned long target = syscallsDone.load() + n;

	while (syscallsDone.load() < target)
		std::this_thread::yield();
}

class Entry : public pokelab::test::Booted
{
protected:
	std::string extraParams() const override
	{
		return "nohz_full=2-3 pokelab.ct_defer=" + policy() + busted();
	}
	virtual std::string policy() const { return "v7"; }
	virtual std::string busted() const { return ""; }

	void TearDown() override
	{
		if (static_key_enabled(&entry_test_key))
			static_branch_disable(&entry_test_key);
		pokelab::test::Booted::TearDown();
	}

	/* Run a user loop on the isolated CPU; returns when it is in user mode. */
	void startUserLoop(u64 periodNs)
	{
		stop_ = false;
		cfg_.stop = &stop_;
		cfg_.syscallPeriodNs = periodNs;
		cfg_.syscallBody = countSyscall;
		kshim::cpuRun(kIsolated, [this] { stats_ = pokelab::ctUserLoop(cfg_); });
		while (ct_state_cpu(kIsolated) != CT_STATE_USER)
			std::this_thread::yield();
	}

	void stopUserLoop()
	{
		stop_ = true;
		kshim::cpuWait(kIsolated);
	}

	unsigned long violations()
	{
		kshim::xmcQuiesce();
		return kshim::xmcStats().violations;
	}

	std::atomic<bool> stop_{false};
	pokelab::UserLoopConfig cfg_;
	pokelab::UserLoopStats stats_;
};

TEST_F(Entry, SyscallEntryRunsTheDeferredSyncFirst)
{
	startUserLoop(200000);
	unsigned long ipis = kshim::cpuStats(kIsolated).ipiReceived;
	unsigned long flushed = pokelab::ctWorkFlushed(kIsolated);

	for (int i = 0; i < 5; i++) {
		patchRound();
		waitSyscalls(2);
	}
	stopUserLoop();

	EXPECT_GT(pokelab::ctWorkFlushed(kIsolated), flushed);
	EXPECT_EQ(violations(), 0u);
	/*
	 * Deferred, not interrupted: a round IPIs the isolated CPU only when it
	 * happens to be inside a syscall, which is rare at one per 200 us.
	 */
	EXPECT_LT(kshim::cpuStats(kIsolated).ipiReceived - ipis, 5u);
	EXPECT_GT(stats_.syscalls, 0u);
}

/* BUSTED skip-entry-flush: ct_kernel_enter_state() never runs ct_work_flush(). */
class EntryBusted : public Entry
{
protected:
	std::string busted() const override { return " pokelab.busted=skip-entry-flush"; }
	bool xmcViolationsExpected() const override { return true; }
};

TEST_F(EntryBusted, ModelReportsTheLostFlushAtTheSyscall)
{
	startUserLoop(20000);
	patchRound();
	waitSyscalls(2);
	stopUserLoop();

	ASSERT_GT(violations(), 0u);
	kshim::XmcViolation v = kshim::xmcViolations()[0];
	/*
	 * Usually at the system call after the flip (stale at entry); when a
	 * system call falls inside the flip, the unflushed CPU fetches while
	 * the batch writes (torn) or is still stale when it returns.
	 */
	EXPECT_TRUE(v.rule == kshim::XmcRule::StaleAtEntry || v.rule == kshim::XmcRule::Torn ||
		    v.rule == kshim::XmcRule::Stale) << kshim::xmcFormat(v);
	EXPECT_EQ(v.cpu, kIsolated);
	if (v.rule == kshim::XmcRule::StaleAtEntry) {
		EXPECT_NE(v.ip, 0u);
	}
	/* the site it could still fetch stale: entry_test_site's, with its bytes */
	EXPECT_GE(v.site, (unsigned long)entry_test_site);
	EXPECT_LT(v.site, (unsigned long)entry_test_site + 64);
	EXPECT_EQ(v.len, 5u);
	EXPECT_NE(kshim::xmcFormat(v).find("entry_test_site"), std::string::npos)
		<< kshim::xmcFormat(v);
}

void nop(void *)
{
}

TEST_F(Entry, IrqEntryFromUserRunsTheDeferredSyncFirst)
{
	startUserLoop(0); /* no syscalls: only the IPI enters the kernel */
	unsigned long flushed = pokelab::ctWorkFlushed(kIsolated);

	patchRound();
	EXPECT_EQ(pokelab::ctWorkFlushed(kIsolated), flushed);
	smp_call_function_single(kIsolated, nop, nullptr, 1);
	EXPECT_EQ(pokelab::ctWorkFlushed(kIsolated), flushed + 1);
	/* Back in user mode after the interrupt. */
	while (ct_state_cpu(kIsolated) != CT_STATE_USER)
		std::this_thread::yield();
	stopUserLoop();
	EXPECT_EQ(violations(), 0u);
}

TEST_F(EntryBusted, ModelReportsTheLostFlushAtTheIrqFromUser)
{
	startUserLoop(0);
	patchRound();
	smp_call_function_single(kIsolated, nop, nullptr, 1);
	stopUserLoop();
	ASSERT_GT(violations(), 0u);
	/* no system calls: the IRQ is the CPU's only entry, after the flip */
	EXPECT_EQ(kshim::xmcViolations()[0].cpu, kIsolated);
	EXPECT_EQ(kshim::xmcViolations()[0].rule, kshim::XmcRule::StaleAtEntry)
		<< kshim::xmcFormat(kshim::xmcViolations()[0]);
}

TEST_F(Entry, IdleExitRunsTheDeferredSyncFirst)
{
	std::atomic<bool> wake{false};
	unsigned long flushed = pokelab::ctWorkFlushed(kIsolated);

	kshim::cpuRun(kIsolated, [&wake] { pokelab::ctIdleUntil(&wake); });
	while (ct_state_cpu(kIsolated) != CT_STATE_IDLE)
		std::this_thread::yield();
	patchRound();
	EXPECT_TRUE(atomic_read(&per_cpu_ptr(&context_tracking, kIsolated)->state) & CT_WORK_MASK);
	wake = true;
	kshim::cpuWait(kIsolated);
	EXPECT_EQ(pokelab::ctWorkFlushed(kIsolated), flushed + 1);
	EXPECT_EQ(violations(), 0u);
}

TEST_F(Entry, SynchronizeRcuCompletesWhileIsolatedCpusStayInUserMode)
{
	std::atomic<bool> stop{false};
	pokelab::UserLoopConfig cfg;

	cfg.stop = &stop;
	cfg.syscallPeriodNs = 0;
	for (int cpu = 2; cpu <= 3; cpu++)
		kshim::cpuRun(cpu, [&cfg] { pokelab::ctUserLoop(cfg); });
	for (int cpu = 2; cpu <= 3; cpu++)
		while (ct_state_cpu(cpu) != CT_STATE_USER)
			std::this_thread::yield();

	/* A CPU spinning in user mode is an EQS: the grace period does not wait for it. */
	synchronize_rcu();
	synchronize_rcu();
	EXPECT_EQ(ct_state_cpu(2), CT_STATE_USER);
	EXPECT_EQ(ct_state_cpu(3), CT_STATE_USER);

	stop = true;
	kshim::cpuWait(2);
	kshim::cpuWait(3);
}

/*
 * v5's bug end to end: the isolated CPU is inside a long syscall (in the
 * kernel) when the round runs. v5 stores the work and skips the IPI; the
 * syscall returns to user mode, clearing the work unrun, and the next
 * syscall runs instrumentable code on stale text. v7 IPIs it instead.
 */
std::atomic<int> longSyscallPhase;

void longSyscall(void *)
{
	if (longSyscallPhase.load() != 1)
		return;
	longSyscallPhase = 2; /* in the kernel now */
	while (longSyscallPhase.load() != 3)
		;
}

class EntryV5 : public Entry
{
protected:
	std::string policy() const override { return "v5"; }
	bool xmcViolationsExpected() const override { return true; }
};

void replayV5(Entry *t, std::atomic<bool> &stop, pokelab::UserLoopConfig &cfg)
{
	(void)t;
	longSyscallPhase = 1;
	cfg.stop = &stop;
	cfg.syscallPeriodNs = 20000;
	cfg.syscallBody = longSyscall;
	kshim::cpuRun(kIsolated, [&cfg] { pokelab::ctUserLoop(cfg); });
	while (longSyscallPhase.load() != 2)
		std::this_thread::yield();
	patchRound();
	longSyscallPhase = 3;
	/* Let it make more syscalls (longSyscall returns at once now). */
	std::this_thread::sleep_for(std::chrono::milliseconds(20));
	stop = true;
	kshim::cpuWait(kIsolated);
}

TEST_F(EntryV5, BugReplayV5ModelReportsStaleText)
{
	std::atomic<bool> stop{false};
	pokelab::UserLoopConfig cfg;

	replayV5(this, stop, cfg);
	ASSERT_GT(violations(), 0u);
	/* The CPU inside the syscall fetched while the batch wrote, never IPI'd. */
	EXPECT_EQ(kshim::xmcViolations()[0].cpu, kIsolated) << kshim::xmcFormat(kshim::xmcViolations()[0]);
}

TEST_F(Entry, BugReplayV5ScenarioIsCleanUnderV7)
{
	std::atomic<bool> stop{false};
	pokelab::UserLoopConfig cfg;

	replayV5(this, stop, cfg);
	EXPECT_EQ(violations(), 0u);
}

} /* namespace */
