// SPDX-License-Identifier: GPL-2.0-only
/*
 * The CSD-lock watchdog: a dropped IPI signal is reported within
 * csd_lock_timeout, naming the target CPU and the function, and the call
 * still completes (the watchdog re-sends the IPI); a healthy call reports
 * nothing; panic_on_ipistall aborts.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <kernel_shim/boot.h>
#include <kernel_shim/cpu.h>
#include <linux/percpu.h>
#include <linux/smp.h>

#include "booted.h"

/* Extern, so that dladdr() finds its name in the dynamic symbol table. */
int csdWatchdogRan;
__noinline void csd_watchdog_test_func(void *)
{
	__atomic_fetch_add(&csdWatchdogRan, 1, __ATOMIC_RELAXED);
}

namespace {

class CsdWatchdogTest : public pokelab::test::Booted
{
protected:
	std::string extraParams() const override { return "csd_lock_timeout=200"; }
};

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

TEST(CsdWatchdogDeathTest, PanicOnIpistallAborts)
{
	GTEST_FLAG_SET(death_test_style, "threadsafe");
	EXPECT_DEATH(
		{
			std::string err;

			if (kshim::boot(fmt::format("nr_cpus={} csd_lock_timeout=100 "
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
		"CSD lock stuck on CPU#00 .* waiting for CPU#01 csd_watchdog_test_func");
}

} /* namespace */
