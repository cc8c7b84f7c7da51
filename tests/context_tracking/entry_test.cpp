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

#include <kernel_shim/boot.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/cpu_events.h>
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

/*
 * pti=: CONFIG_COALESCE_TLBI depends on page-table isolation, so under
 * v7-tlbi and v8 every entry from user mode and every exit to it writes CR3,
 * which serialises. Instrumentable code in the entry stub's window (the
 * entry_cr3_window() hook, before ct_work_flush()) is then on fresh text:
 * the model must not call it stale.
 */
class EntryTlbi : public Entry
{
protected:
	std::string policy() const override { return "v7-tlbi"; }

	void TearDown() override
	{
		pokelab::entryCr3Hook = nullptr;
		Entry::TearDown();
	}
};

std::atomic<unsigned long> windowRuns, windowStale;

/* In the entry stub's window, before ct_work_flush(): serialised against every text write yet? */
void runSiteInWindow(unsigned int cpu)
{
	if ((int)cpu != kIsolated)
		return;
	if (kshim::xmcSerialOf(cpu) < __atomic_load_n(&kshim::xmcLastOpEnd, __ATOMIC_ACQUIRE))
		windowStale++;
	entry_test_site();	/* instrumentable text, before the deferred sync */
	windowRuns++;
}

TEST_F(EntryTlbi, PtiWritesCr3AtEveryUserEntryAndExit)
{
	EXPECT_TRUE(pokelab::ctEntryPti());
	startUserLoop(20000);
	waitSyscalls(1);
	u64 before = __atomic_load_n(&kshim::cpuEvents[kIsolated].serialCount, __ATOMIC_RELAXED);
	unsigned long calls = syscallsDone.load();

	waitSyscalls(10);
	u64 after = __atomic_load_n(&kshim::cpuEvents[kIsolated].serialCount, __ATOMIC_RELAXED);
	calls = syscallsDone.load() - calls;
	stopUserLoop();
	/* an entry and an exit per system call, nothing patched meanwhile */
	EXPECT_GE(after - before, 2 * (calls - 1));
}

TEST_F(EntryTlbi, TheEntrysCr3WriteCoversCodeBeforeTheDeferredSync)
{
	pokelab::entryCr3Hook = runSiteInWindow;
	startUserLoop(200000);
	for (int i = 0; i < 6; i++) {
		unsigned long runs = windowRuns.load();

		patchRound();	/* deferred: the isolated CPU is in user mode */
		waitSyscalls(2);
		EXPECT_GT(windowRuns.load(), runs);
	}
	stopUserLoop();
	EXPECT_EQ(windowStale.load(), 0u);
	EXPECT_EQ(violations(), 0u);
}

TEST_F(Entry, NoPtiWithoutCoalesceTlbiByDefault)
{
	EXPECT_FALSE(pokelab::ctEntryPti());
}

TEST(EntryPti, OffIsRejectedWhereCoalesceTlbiDependsOnIt)
{
	const char *bad[][2] = {
		{"nr_cpus=4 nohz_full=2-3 pokelab.ct_defer=v7-tlbi pti=off", "expected pti=on or pti=auto"},
		{"nr_cpus=4 nohz_full=2-3 pokelab.ct_defer=v8 nopti", "pokelab.ct_defer=v8 needs"},
		{"nr_cpus=4 pti=maybe", "pti=maybe: expected pti=on, pti=off or pti=auto"},
		{"nr_cpus=4 nopti=1", "nopti=1"},
	};

	for (const auto &b : bad) {
		std::string err;

		if (kshim::boot(b[0], &err, true) == 0) {
			kshim::shutdown();
			ADD_FAILURE() << b[0] << " booted";
			continue;
		}
		EXPECT_NE(err.find(b[1]), std::string::npos) << b[0] << " gave: " << err;
		EXPECT_EQ(err.find('\n'), std::string::npos) << err;
	}
}

} /* namespace */
