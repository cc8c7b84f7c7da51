// SPDX-License-Identifier: GPL-2.0-only
/*
 * The host scheduler model and the idle loop (kernel_shim/sched.h): an
 * oversubscribed CPU in a loop gives way once per slice, and never with
 * pokelab.slice_us=0; in every idle= mode an idle CPU that has gone past its
 * poll window still takes an IPI and still runs a task.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>

#include <kernel_shim/boot.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/sched.h>
#include <linux/smp.h>

#include "booted.h"

namespace {

/* Twice as many CPUs as PUs: always oversubscribed, whatever the machine. */
unsigned int oversubscribedCpus()
{
	unsigned int pus = std::thread::hardware_concurrency();

	return std::min(2 * std::max(pus, 1u), 64u);
}

class SchedTest : public pokelab::test::Booted
{
protected:
	unsigned int cpus() const override { return oversubscribedCpus(); }

	/* CPU 1 spins @ms ms calling schedTick(), as a hot loop does; its yields. */
	unsigned long spinOnCpu1(unsigned int ms)
	{
		unsigned long before = kshim::schedYields(1);

		kshim::cpuRun(1, [ms] {
			u64 until = kshim::clockNs() + ms * 1000000ull;

			while (kshim::clockNs() < until)
				kshim::schedTick();
		});
		kshim::cpuWait(1);
		return kshim::schedYields(1) - before;
	}
};

TEST_F(SchedTest, OversubscribedCpuGivesWayEverySlice)
{
	ASSERT_TRUE(kshim::bootInfo().oversubscribed);
	/* 20 ms at a 10 us slice: a thousand slices; expect well over ten yields. */
	EXPECT_GT(spinOnCpu1(20), 10u);
	EXPECT_NE(kshim::machineLine().find("slice 10us"), std::string::npos)
		<< kshim::machineLine();
}

class SchedSliceOffTest : public SchedTest
{
protected:
	std::string extraParams() const override { return "pokelab.slice_us=0"; }
};

TEST_F(SchedSliceOffTest, SliceZeroNeverGivesWay)
{
	EXPECT_EQ(spinOnCpu1(5), 0u);
	EXPECT_NE(kshim::machineLine().find("slice off"), std::string::npos)
		<< kshim::machineLine();
}

std::atomic<int> ranOn{-1};

void noteCpu(void *)
{
	ranOn.store(smp_processor_id());
}

/* One fixture per idle= mode, each on 2 CPUs (CPU 1 idle throughout). */
class IdleTest : public pokelab::test::Booted, public ::testing::WithParamInterface<const char *>
{
protected:
	unsigned int cpus() const override { return 2; }
	std::string extraParams() const override { return GetParam(); }
};

TEST_P(IdleTest, IdleCpuPastItsPollWindowTakesIpisAndTasks)
{
	const char *want = !*GetParam() ? "haltpoll" : GetParam() + 5;

	EXPECT_STREQ(kshim::idleModeName(kshim::idleMode()), want);
	for (int round = 0; round < 20; round++) {
		std::atomic<bool> ran{false};

		/* 1 ms: five poll windows; a haltpoll or halt CPU is asleep by now. */
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
		ranOn.store(-1);
		ASSERT_EQ(smp_call_function_single(1, noteCpu, nullptr, 1), 0);
		ASSERT_EQ(ranOn.load(), 1) << "round " << round;

		std::this_thread::sleep_for(std::chrono::milliseconds(1));
		kshim::cpuRun(1, [&ran] { ran.store(true); });
		kshim::cpuWait(1);
		ASSERT_TRUE(ran.load()) << "round " << round;
	}
}

INSTANTIATE_TEST_SUITE_P(Modes, IdleTest, ::testing::Values("", "idle=poll", "idle=halt"));

} /* namespace */
