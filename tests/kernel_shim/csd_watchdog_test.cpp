// SPDX-License-Identifier: GPL-2.0-only
/*
 * The CSD-lock watchdog (kernel/smp.c, v7.3): a dropped IPI signal is
 * reported within csd_lock_timeout, naming the target CPU and the function,
 * and the call still completes (the watchdog re-sends the IPI); a lock that
 * stays stuck is reported again, with back-off, under the same number; a
 * target busy with an earlier csd is named with it and gets no re-sent IPI;
 * csd_lock_is_stuck() says so while it lasts; a healthy call reports
 * nothing; panic_on_ipistall aborts at the first report, =MS once the lock
 * has been stuck MS ms. All of it with csdlock_debug=1; without, the
 * production path: no debug wait, no watchdog.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include <kernel_shim/boot.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/machine.h>
#include <linux/percpu.h>
#include <linux/smp.h>

#include "booted.h"

/* Extern, so that dladdr() finds its name in the dynamic symbol table. */
int csdWatchdogRan;
__noinline void csd_watchdog_test_func(void *)
{
	__atomic_fetch_add(&csdWatchdogRan, 1, __ATOMIC_RELAXED);
}

/*
 * Runs 450 ms in the target's IPI handler: a busy target, for the watchdog,
 * between its first report (200 ms) and its second (600 ms at the soonest).
 */
std::atomic<bool> csdWatchdogSlowStarted;
__noinline void csd_watchdog_test_slow(void *)
{
	u64 end = kshim::clockNs() + 450 * 1000000ull;

	csdWatchdogSlowStarted = true;
	while (kshim::clockNs() < end)
		;
}

namespace {

class CsdWatchdogTest : public pokelab::test::Booted
{
protected:
	std::string extraParams() const override { return "csdlock_debug=1 csd_lock_timeout=200"; }
};

/*
 * issue 33 item 9: with csdlock_debug=1 every wait is the debug one
 * (__csd_lock_wait(), the watchdog's loop), and the machine line says so.
 */
TEST_F(CsdWatchdogTest, DebugOnTakesTheWatchdogsWaitAndSaysSo)
{
	unsigned long waits = kshim::csdLockDebugWaits();

	for (int i = 0; i < 10; i++)
		on_each_cpu(csd_watchdog_test_func, nullptr, 1);
	EXPECT_GE(kshim::csdLockDebugWaits() - waits, 10u * (nr_cpu_ids - 1));
	EXPECT_NE(kshim::machineLine().find(", csdlock_debug on"), std::string::npos)
		<< kshim::machineLine();
}

/* The default, as a production kernel's: off, the plain csd_lock_wait() of kernel/smp.c. */
class CsdLockDebugOff : public pokelab::test::Booted
{
};

TEST_F(CsdLockDebugOff, ProductionPathByDefault)
{
	unsigned long waits = kshim::csdLockDebugWaits();
	int stalls = kshim::csdLockStallCount();

	csdWatchdogRan = 0;
	for (int i = 0; i < 10; i++) {
		on_each_cpu(csd_watchdog_test_func, nullptr, 1);
		ASSERT_EQ(smp_call_function_single(1, csd_watchdog_test_func, nullptr, 0), 0);
	}
	ASSERT_EQ(smp_call_function_single(1, csd_watchdog_test_func, nullptr, 1), 0);
	EXPECT_EQ(csdWatchdogRan, 10 * (int)nr_cpu_ids + 11);
	EXPECT_EQ(kshim::csdLockDebugWaits(), waits);
	EXPECT_EQ(kshim::csdLockStallCount(), stalls);
	EXPECT_EQ(kshim::machineLine().find("csdlock_debug"), std::string::npos)
		<< kshim::machineLine();
}

class CsdLockDebugZero : public pokelab::test::Booted
{
protected:
	std::string extraParams() const override { return "csdlock_debug=1 csdlock_debug=0"; }
};

/* The last one counts, as the kernel's __setup() handlers run in order. */
TEST_F(CsdLockDebugZero, ZeroTurnsItOff)
{
	unsigned long waits = kshim::csdLockDebugWaits();

	on_each_cpu(csd_watchdog_test_func, nullptr, 1);
	EXPECT_EQ(kshim::csdLockDebugWaits(), waits);
}

/* get_option()'s integers, as the kernel reads csdlock_debug=; no integer is a boot error. */
TEST(CsdLockDebugParam, GetOptionValuesAndBadInput)
{
	std::string err;

	for (const char *on : {"1", "2", "0x1", "1,2", "-1"}) {
		ASSERT_EQ(kshim::boot(fmt::format("nr_cpus=2 csdlock_debug={}", on), &err, true), 0)
			<< on << ": " << err;
		EXPECT_NE(kshim::machineLine().find("csdlock_debug on"), std::string::npos) << on;
		kshim::shutdown();
	}
	ASSERT_EQ(kshim::boot("nr_cpus=2 csdlock_debug=0x0", &err, true), 0) << err;
	EXPECT_EQ(kshim::machineLine().find("csdlock_debug"), std::string::npos);
	kshim::shutdown();
	EXPECT_EQ(kshim::boot("nr_cpus=2 csdlock_debug=yes", &err, true), -EINVAL);
	EXPECT_EQ(err, "csdlock_debug=yes: expected csdlock_debug=0 (off) or "
		       "csdlock_debug=1 (CSD-lock debugging and its watchdog)");
	EXPECT_EQ(kshim::boot("nr_cpus=2 csdlock_debug", &err, true), -EINVAL);
	EXPECT_EQ(err, "csdlock_debug: expected csdlock_debug=0 (off) or "
		       "csdlock_debug=1 (CSD-lock debugging and its watchdog)");
}

TEST_F(CsdWatchdogTest, TimeoutParameterTakesEffect)
{
	EXPECT_EQ(kshim::csdLockTimeoutMs(), 200u);
}

TEST_F(CsdWatchdogTest, LostIpiIsReportedAndTheCallCompletes)
{
	int stalls = kshim::csdLockStallCount();

	csdWatchdogRan = 0;
	kshim::dropNextIpis(1, 1);
	testing::internal::CaptureStderr();
	ASSERT_EQ(smp_call_function_single(1, csd_watchdog_test_func, nullptr, 1), 0);
	std::string out = testing::internal::GetCapturedStderr();

	EXPECT_EQ(csdWatchdogRan, 1);
	EXPECT_EQ(kshim::csdLockStallCount(), stalls + 1);
	EXPECT_NE(out.find("csd: Detected non-responsive CSD lock"), std::string::npos) << out;
	EXPECT_NE(out.find("for CPU#01 csd_watchdog_test_func+0x0/"), std::string::npos) << out;
	EXPECT_NE(out.find("Re-sending CSD lock"), std::string::npos) << out;
	EXPECT_NE(out.find("got unstuck on CPU#00, CPU#01 released the lock"), std::string::npos)
		<< out;
	/* One report per stuck lock. */
	EXPECT_EQ(out.find("Detected non-responsive", out.find("Detected non-responsive") + 1),
		  std::string::npos) << out;
}

TEST_F(CsdWatchdogTest, HealthyCallsReportNothing)
{
	int stalls = kshim::csdLockStallCount();

	testing::internal::CaptureStderr();
	for (int i = 0; i < 100; i++)
		on_each_cpu(csd_watchdog_test_func, nullptr, 1);
	std::string out = testing::internal::GetCapturedStderr();

	EXPECT_EQ(kshim::csdLockStallCount(), stalls);
	EXPECT_EQ(out.find("csd:"), std::string::npos) << out;
}

TEST_F(CsdWatchdogTest, StuckLockIsReportedAgainWithBackOff)
{
	if (nr_cpu_ids < 3)
		GTEST_SKIP() << "needs 3 CPUs";
	int stalls = kshim::csdLockStallCount();
	std::atomic<bool> sawStuck{false};
	std::atomic<u64> waited{0};

	csdWatchdogRan = 0;
	/* The IPI and the first report's re-send are lost; the second report's gets through. */
	kshim::dropNextIpis(1, 2);
	testing::internal::CaptureStderr();
	kshim::cpuRun(2, [&] {
		u64 t0 = kshim::clockNs();

		smp_call_function_single(1, csd_watchdog_test_func, nullptr, 1);
		waited = kshim::clockNs() - t0;
	});
	while (!sawStuck && csdWatchdogRan == 0) {
		sawStuck = csd_lock_is_stuck();
		std::this_thread::yield();
	}
	kshim::cpuWait(2);
	std::string out = testing::internal::GetCapturedStderr();

	EXPECT_EQ(csdWatchdogRan, 1);
	EXPECT_TRUE(sawStuck.load());
	EXPECT_FALSE(csd_lock_is_stuck());
	/* One stuck lock, reported twice under one number. */
	EXPECT_EQ(kshim::csdLockStallCount(), stalls + 1);
	std::string id = fmt::format("(#{})", stalls + 1);
	size_t first = out.find("csd: Detected non-responsive CSD lock " + id + " on CPU#2");
	size_t again = out.find("csd: Continued non-responsive CSD lock " + id + " on CPU#2");
	EXPECT_NE(first, std::string::npos) << out;
	EXPECT_NE(again, std::string::npos) << out;
	EXPECT_LT(first, again) << out;
	EXPECT_EQ(out.find("non-responsive CSD lock", again + 40), std::string::npos) << out;
	EXPECT_NE(out.find("got unstuck on CPU#02, CPU#01 released the lock"), std::string::npos)
		<< out;
	/* The second report waits twice the timeout, times 1 + log2(CPUs) / 2, after the first. */
	EXPECT_GE(waited.load(), 3 * 200 * 1000000ull);
}

TEST_F(CsdWatchdogTest, BusyTargetIsNamedWithWhatItRunsAndGetsNoResentIpi)
{
	testing::internal::CaptureStderr();
	csdWatchdogRan = 0;
	csdWatchdogSlowStarted = false;
	ASSERT_EQ(smp_call_function_single(1, csd_watchdog_test_slow, nullptr, 0), 0);
	while (!csdWatchdogSlowStarted)
		std::this_thread::yield();
	/* Waits behind the slow one: reported once, at 200 ms. */
	ASSERT_EQ(smp_call_function_single(1, csd_watchdog_test_func, nullptr, 1), 0);
	std::string out = testing::internal::GetCapturedStderr();

	EXPECT_EQ(csdWatchdogRan, 1);
	EXPECT_NE(out.find("Detected non-responsive CSD lock"), std::string::npos) << out;
	EXPECT_NE(out.find("for CPU#01 csd_watchdog_test_func+0x0/"), std::string::npos) << out;
	EXPECT_NE(out.find(") handling prior csd_watchdog_test_slow+0x0/"), std::string::npos)
		<< out;
	EXPECT_EQ(out.find("Re-sending"), std::string::npos) << out;
	EXPECT_EQ(out.find("Continued"), std::string::npos) << out;
	EXPECT_NE(out.find("released the lock"), std::string::npos) << out;
}

TEST(CsdWatchdogDeathTest, PanicOnIpistallAborts)
{
	GTEST_FLAG_SET(death_test_style, "threadsafe");
	EXPECT_DEATH(
		{
			std::string err;

			if (kshim::boot(fmt::format("nr_cpus={} csdlock_debug=1 csd_lock_timeout=100 "
						    "panic_on_ipistall",
						    pokelab::test::testCpus()),
					&err, true))
				abort();
			kshim::dropNextIpis(1, 1);
			smp_call_function_single(1, csd_watchdog_test_func, nullptr, 1);
			/* not reached: the watchdog must have aborted */
			kshim::shutdown();
			exit(0);
		},
		"Detected non-responsive CSD lock .* for CPU#01 csd_watchdog_test_func");
}

TEST(CsdWatchdogDeathTest, PanicOnIpistallMsAbortsOnceStuckThatLong)
{
	GTEST_FLAG_SET(death_test_style, "threadsafe");
	/* Not at the first report (100 ms), at the next one (500 ms: stuck over 300). */
	EXPECT_DEATH(
		{
			std::string err;

			if (kshim::boot(fmt::format("nr_cpus={} csdlock_debug=1 csd_lock_timeout=100 "
						    "panic_on_ipistall=300",
						    pokelab::test::testCpus()),
					&err, true))
				abort();
			kshim::dropNextIpis(1, 1000);
			smp_call_function_single(1, csd_watchdog_test_func, nullptr, 1);
			/* not reached: the watchdog must have aborted */
			kshim::shutdown();
			exit(0);
		},
		"Continued non-responsive CSD lock .* for CPU#01 csd_watchdog_test_func");
}

} /* namespace */
