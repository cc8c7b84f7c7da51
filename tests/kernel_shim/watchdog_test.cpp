// SPDX-License-Identifier: GPL-2.0-only
/*
 * The lockup detectors (kernel_shim/watchdog.h): lockdep's two rules at the
 * mutex_lock() that breaks them, and nothing for a consistent order; with
 * watchdog_thresh=1, a spin on a word its holder never releases is a soft
 * lockup naming the wait's FILE:LINE and the holder a namer gives; a mutex
 * held past the threshold while its owner runs is a hung task naming the
 * owner and where it took the lock; a grace period held up by a reader is
 * an RCU stall naming the CPU and where its reader began. Each report goes
 * to the lockup handler, which lets the wait end.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <regex>
#include <string>

#include <kernel_shim/clock.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/watchdog.h>
#include <linux/atomic.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>

#include "booted.h"

namespace {

DEFINE_MUTEX(watchdog_test_a);
DEFINE_MUTEX(watchdog_test_b);
DEFINE_MUTEX(watchdog_test_held);

std::mutex reportsLock;
std::string reports;
std::atomic<int> nReports;
std::atomic<bool> release;

void captureReport(const std::string &r)
{
	std::lock_guard<std::mutex> lk(reportsLock);

	reports += r;
	nReports++;
	release = true;
}

class LockupTest : public pokelab::test::Booted
{
protected:
	std::string extraParams() const override { return "watchdog_thresh=1"; }

	void SetUp() override
	{
		Booted::SetUp();
		reports.clear();
		nReports = 0;
		release = false;
		kshim::setLockupHandler(captureReport);
	}

	void TearDown() override
	{
		kshim::setLockupHandler(nullptr);
		Booted::TearDown();
	}

	std::string got()
	{
		std::lock_guard<std::mutex> lk(reportsLock);

		return reports;
	}
};

TEST_F(LockupTest, LockdepRecursiveLockingNamesBothSites)
{
	mutex_lock(&watchdog_test_a);
	/* the check a second mutex_lock() would make before it deadlocked */
	kshim::lockdepAcquire(&watchdog_test_a, std::source_location::current());
	mutex_unlock(&watchdog_test_a);

	std::string r = got();

	EXPECT_EQ(nReports, 1);
	EXPECT_NE(r.find("lockdep: WARNING: possible recursive locking detected\n"),
		  std::string::npos) << r;
	EXPECT_NE(r.find("lockdep: CPU#0 is trying to acquire lock:\n"), std::string::npos) << r;
	/* both acquisitions, at this file's lines */
	size_t first = r.find("(watchdog_test_a) at tests/kernel_shim/watchdog_test.cpp:");

	ASSERT_NE(first, std::string::npos) << r;
	EXPECT_NE(r.find("(watchdog_test_a) at tests/kernel_shim/watchdog_test.cpp:", first + 1),
		  std::string::npos) << r;
}

TEST_F(LockupTest, LockdepInversionReportedWithoutADeadlock)
{
	mutex_lock(&watchdog_test_a);
	mutex_lock(&watchdog_test_b);
	mutex_unlock(&watchdog_test_b);
	mutex_unlock(&watchdog_test_a);
	/* the same order again: nothing */
	mutex_lock(&watchdog_test_a);
	mutex_lock(&watchdog_test_b);
	mutex_unlock(&watchdog_test_b);
	mutex_unlock(&watchdog_test_a);
	EXPECT_EQ(nReports, 0) << got();

	/* the other order, on one thread: no deadlock, and still the report */
	mutex_lock(&watchdog_test_b);
	mutex_lock(&watchdog_test_a);
	mutex_unlock(&watchdog_test_a);
	mutex_unlock(&watchdog_test_b);

	std::string r = got();

	EXPECT_EQ(nReports, 1);
	EXPECT_NE(r.find("lockdep: WARNING: possible circular locking dependency detected\n"),
		  std::string::npos) << r;
	EXPECT_NE(r.find("lockdep:  (watchdog_test_a) at tests/kernel_shim/watchdog_test.cpp:"),
		  std::string::npos) << r;
	EXPECT_NE(r.find("lockdep:  (watchdog_test_b) at tests/kernel_shim/watchdog_test.cpp:"),
		  std::string::npos) << r;
	EXPECT_NE(r.find("lockdep: -> #1 (watchdog_test_b): taken at tests/kernel_shim/"
			 "watchdog_test.cpp:"), std::string::npos) << r;
	EXPECT_NE(r.find("lockdep:        while holding (watchdog_test_a)"), std::string::npos)
		<< r;
}

/* The word a test waits on, and its namer: CPU 1 holds it. */
int watchdogTestWord;

bool watchdogTestNamer(const char *, const volatile void *addr, kshim::WaitHolder *h)
{
	if (addr != &watchdogTestWord)
		return false;
	h->cpu = 1;
	h->what = "watchdog_test_word";
	h->detail = "CPU#1 keeps it";
	return true;
}

kshim::WaitNamerRegistrar watchdogTestNamerReg(watchdogTestNamer);

/* CPU 1 runs (it has its chance) until the report lets it go. */
void runUntilReleased()
{
	u64 end = kshim::clockNs() + 20 * 1000000000ull;

	while (!release && kshim::clockNs() < end)
		cond_resched();
}

TEST_F(LockupTest, SoftLockupNamesTheWaitAndItsHolder)
{
	kshim::cpuRun(1, [] {
		runUntilReleased();
		__atomic_store_n(&watchdogTestWord, 1, __ATOMIC_RELEASE);
	});
	watchdogTestWord = 0;
	(void)smp_cond_load_acquire(&watchdogTestWord, VAL == 1);
	kshim::cpuWait(1);

	std::string r = got();

	EXPECT_EQ(nReports, 1) << r;
	/* 2 s past the threshold at the soonest; later when the host held the watchdog back */
	std::smatch m;

	ASSERT_TRUE(std::regex_search(r, m, std::regex("watchdog: BUG: soft lockup - CPU#0 stuck "
						       "for ([0-9]+)s! \\[CPU#0\\]\n")))
		<< r;
	EXPECT_GE(std::stoi(m[1].str()), 2) << r;
	EXPECT_NE(r.find("watchdog:   spinning in TestBody() at "
			 "tests/kernel_shim/watchdog_test.cpp:"), std::string::npos) << r;
	EXPECT_NE(r.find("watchdog:   waiting on watchdog_test_word until VAL == 1: it is 0x0\n"),
		  std::string::npos) << r;
	EXPECT_NE(r.find("watchdog:   CPU#1 keeps it\n"), std::string::npos) << r;
	EXPECT_NE(r.find("watchdog:   CPU#1 ran "), std::string::npos) << r;
}

TEST_F(LockupTest, HungTaskNamesTheOwnerAndWhereItTookTheLock)
{
	std::atomic<bool> held{false};

	kshim::cpuRun(1, [&held] {
		mutex_lock(&watchdog_test_held);
		held = true;
		runUntilReleased();
		mutex_unlock(&watchdog_test_held);
	});
	while (!held)
		cond_resched();
	mutex_lock(&watchdog_test_held);
	mutex_unlock(&watchdog_test_held);
	kshim::cpuWait(1);

	std::string r = got();

	EXPECT_EQ(nReports, 1) << r;
	EXPECT_NE(r.find("INFO: task CPU#0 blocked for more than 2 seconds.\n"), std::string::npos)
		<< r;
	EXPECT_NE(r.find("on watchdog_test_held\n"), std::string::npos) << r;
	EXPECT_NE(r.find("watchdog:   watchdog_test_held is held by CPU#1, taken at "
			 "tests/kernel_shim/watchdog_test.cpp:"), std::string::npos) << r;
	EXPECT_NE(r.find("watchdog:   CPU#1, its owner, ran "), std::string::npos) << r;
}

TEST_F(LockupTest, RcuStallNamesTheReaderHoldingItUp)
{
	std::atomic<bool> reading{false};

	kshim::cpuRun(1, [&reading] {
		rcu_read_lock();
		reading = true;
		runUntilReleased();	/* cond_resched() inside a reader: no quiescent state */
		rcu_read_unlock();
	});
	while (!reading)
		cond_resched();
	synchronize_rcu();
	kshim::cpuWait(1);

	std::string r = got();

	EXPECT_EQ(nReports, 1) << r;
	EXPECT_NE(r.find("rcu: INFO: rcu_sched detected stalls on CPUs/tasks: { 1 } "
			 "(detected by 0"), std::string::npos) << r;
	EXPECT_NE(r.find("rcu: \t1-...: no quiescent state in the "), std::string::npos) << r;
	EXPECT_NE(r.find("in an RCU read-side critical section (nesting 1) entered at "
			 "tests/kernel_shim/watchdog_test.cpp:"), std::string::npos) << r;
	EXPECT_NE(r.find("watchdog:   waiting for a grace period in synchronize_rcu(), called at "
			 "tests/kernel_shim/watchdog_test.cpp:"), std::string::npos) << r;
}

TEST_F(LockupTest, AWaitThatEndsIsNoLockup)
{
	kshim::cpuRun(1, [] {
		u64 end = kshim::clockNs() + 300 * 1000000ull;

		while (kshim::clockNs() < end)
			cond_resched();
		__atomic_store_n(&watchdogTestWord, 1, __ATOMIC_RELEASE);
	});
	watchdogTestWord = 0;
	(void)smp_cond_load_acquire(&watchdogTestWord, VAL == 1);
	kshim::cpuWait(1);
	EXPECT_EQ(nReports, 0) << got();
}

} /* namespace */
