// SPDX-License-Identifier: GPL-2.0-only
/*
 * IPIs and cross-calls: on_each_cpu() reaches every CPU exactly once before
 * returning, oversubscribed; local_irq_save() holds an IPI off until
 * local_irq_restore(); the cond mask selects targets.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include <kernel_shim/boot.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/cpu.h>
#include <linux/irqflags.h>
#include <linux/percpu.h>
#include <linux/smp.h>

#include "booted.h"

namespace {

DEFINE_PER_CPU(int, ran);

void markRan(void *)
{
	this_cpu_inc(ran);
}

void clearRan()
{
	for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++)
		per_cpu(ran, cpu) = 0;
}

class IpiTest : public pokelab::test::Booted
{
};

TEST_F(IpiTest, MachineIsOversubscribed)
{
	/* The point of these tests: more simulated CPUs than PUs. */
	EXPECT_EQ(kshim::bootInfo().nrCpus, nr_cpu_ids);
	EXPECT_EQ(num_online_cpus(), nr_cpu_ids);
	EXPECT_EQ(kshim::bootInfo().oversubscribed, kshim::bootInfo().nrPus < nr_cpu_ids);
}

TEST_F(IpiTest, RefusedSendIsRetriedNotLost)
{
	unsigned long before = kshim::ipiSendRetries(1);

	clearRan();
	/* pthread_kill() says EAGAIN five times: the IPI must still arrive, once. */
	kshim::failNextIpiSends(1, 5);
	ASSERT_EQ(smp_call_function_single(1, markRan, nullptr, 1), 0);
	EXPECT_EQ(per_cpu(ran, 1), 1);
	EXPECT_EQ(kshim::ipiSendRetries(1) - before, 5u);
}

void noop(void *)
{
}

TEST_F(IpiTest, SleepIsResumedAfterIpisCutItShort)
{
	std::atomic<bool> done{false};
	std::atomic<u64> slept{0};

	kshim::cpuRun(1, [&] {
		u64 t0 = kshim::clockNs();

		kshim::sleepForNs(20 * 1000000ull);
		slept.store(kshim::clockNs() - t0);
		done.store(true);
	});
	/* IPIs while it sleeps: each interrupts clock_nanosleep() with EINTR. */
	while (!done.load()) {
		smp_call_function_single(1, noop, nullptr, 0);
		kshim::sleepForNs(200000);
	}
	kshim::cpuWait(1);
	EXPECT_GE(slept.load(), 20 * 1000000ull);
}

TEST_F(IpiTest, OnEachCpuWaitRunsOnceOnEveryOnlineCpuBeforeReturning)
{
	for (int round = 0; round < 50; round++) {
		clearRan();
		on_each_cpu(markRan, nullptr, 1);
		for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++)
			ASSERT_EQ(per_cpu(ran, cpu), 1) << "round " << round << " CPU " << cpu;
	}
}

TEST_F(IpiTest, OnEachCpuWaitReachesBusyCpus)
{
	std::atomic<bool> stop{false};

	/* Every other CPU spins; the IPI must interrupt the spin. */
	for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++)
		kshim::cpuRun(cpu, [&stop] {
			while (!stop.load(std::memory_order_relaxed))
				;
		});
	clearRan();
	on_each_cpu(markRan, nullptr, 1);
	stop = true;
	for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++)
		kshim::cpuWait(cpu);
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++)
		EXPECT_EQ(per_cpu(ran, cpu), 1) << "CPU " << cpu;
}

bool onlyOdd(int cpu, void *)
{
	return cpu % 2;
}

TEST_F(IpiTest, CondFuncSelectsTheTargets)
{
	clearRan();
	on_each_cpu_cond(onlyOdd, markRan, nullptr, 1);
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++)
		EXPECT_EQ(per_cpu(ran, cpu), (int)(cpu % 2)) << "CPU " << cpu;
}

TEST_F(IpiTest, IpiToCpuWithIrqsOffRunsOnlyAfterRestore)
{
	std::atomic<int> phase{0};
	std::atomic<int> ranWhileMasked{-1};
	std::atomic<int> ranAfterRestore{-1};
	const int target = 1;

	per_cpu(ran, target) = 0;
	kshim::cpuRun(target, [&] {
		unsigned long flags;

		local_irq_save(flags);
		phase = 1;
		/* Wait until CPU 0 has queued the IPI and seen its signal arrive. */
		while (phase.load() != 2)
			;
		ranWhileMasked = per_cpu(ran, target);
		local_irq_restore(flags);
		ranAfterRestore = per_cpu(ran, target);
	});

	while (phase.load() != 1)
		std::this_thread::yield();

	unsigned long before = kshim::cpuStats(target).ipiReceived;
	smp_call_function_single(target, markRan, nullptr, 0);
	/* The signal is taken (and held pending) while the target is masked. */
	while (kshim::cpuStats(target).ipiReceived == before)
		std::this_thread::yield();
	phase = 2;
	kshim::cpuWait(target);

	EXPECT_EQ(ranWhileMasked.load(), 0);
	EXPECT_EQ(ranAfterRestore.load(), 1);
}

TEST_F(IpiTest, IrqsOffRegionsNest)
{
	unsigned long f1, f2;

	EXPECT_FALSE(irqs_disabled());
	local_irq_save(f1);
	EXPECT_TRUE(irqs_disabled());
	local_irq_save(f2);
	local_irq_restore(f2);
	EXPECT_TRUE(irqs_disabled());
	local_irq_restore(f1);
	EXPECT_FALSE(irqs_disabled());
}

TEST_F(IpiTest, SmpCallFunctionSingleRunsOnTheTarget)
{
	static std::atomic<int> where{-1};

	smp_call_function_single(
		nr_cpu_ids - 1, [](void *) { where = smp_processor_id(); }, nullptr, 1);
	EXPECT_EQ(where.load(), (int)nr_cpu_ids - 1);
}

TEST(ShutdownTest, RebootsCleanly)
{
	std::string err;

	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(kshim::boot(fmt::format("nr_cpus={}", pokelab::test::testCpus()), &err,
				      true), 0) << err;
		on_each_cpu(markRan, nullptr, 1);
		kshim::shutdown();
		EXPECT_FALSE(kshim::booted());
		EXPECT_EQ(raw_smp_processor_id(), -1);
	}
}

} /* namespace */
