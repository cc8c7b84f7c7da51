// SPDX-License-Identifier: GPL-2.0-only
/*
 * IPIs and cross-calls: on_each_cpu() reaches every CPU exactly once before
 * returning, oversubscribed; local_irq_save() holds an IPI off until
 * local_irq_restore(); the cond mask selects targets. And kernel/smp.c's
 * v6.17-v7.3 forms: the calling CPU runs its part (and is asked its cond)
 * only once the remote CPUs have been sent theirs; asynchronous single calls
 * from several CPUs share the target's csd and each runs once; a call to no
 * such CPU is -ENXIO, one to the caller runs here.
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

std::atomic<int> remoteRan{0};
std::atomic<bool> localSawRemote{false};

void localWaitsForARemoteOne(void *)
{
	u64 deadline = kshim::clockNs() + 2000ull * 1000000ull;

	if (smp_processor_id() != 0) {
		remoteRan.fetch_add(1);
		return;
	}
	/* Here with IRQs off: a remote CPU can run its part only if it was sent it already. */
	while (remoteRan.load() == 0 && kshim::clockNs() < deadline)
		std::this_thread::yield();
	localSawRemote = remoteRan.load() > 0;
}

TEST_F(IpiTest, LocalCallRunsOnceTheRemoteCpusWereSentTheirs)
{
	remoteRan = 0;
	localSawRemote = false;
	on_each_cpu(localWaitsForARemoteOne, nullptr, 1);
	EXPECT_TRUE(localSawRemote.load());
	EXPECT_EQ(remoteRan.load(), (int)nr_cpu_ids - 1);
}

int condOrder[NR_CPUS];
unsigned int condCalls;

bool recordCond(int cpu, void *)
{
	condOrder[condCalls++] = cpu;
	return true;
}

TEST_F(IpiTest, CallersCondFuncIsAskedAfterTheRemoteOnes)
{
	condCalls = 0;
	clearRan();
	on_each_cpu_cond(recordCond, markRan, nullptr, 1);
	ASSERT_EQ(condCalls, nr_cpu_ids);
	for (unsigned int i = 0; i + 1 < nr_cpu_ids; i++)
		EXPECT_EQ(condOrder[i], (int)i + 1) << "call " << i;
	EXPECT_EQ(condOrder[nr_cpu_ids - 1], 0);
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++)
		EXPECT_EQ(per_cpu(ran, cpu), 1) << "CPU " << cpu;
}

std::atomic<unsigned long> asyncRuns{0};

void countAsync(void *)
{
	asyncRuns.fetch_add(1, std::memory_order_relaxed);
}

TEST_F(IpiTest, AsyncCallsFromSeveralCpusToOneTargetEachRunOnce)
{
	if (nr_cpu_ids < 3)
		GTEST_SKIP() << "needs 3 CPUs";
	const int target = (int)nr_cpu_ids - 1;
	const unsigned long calls = 300;
	auto send = [target, calls] {
		for (unsigned long i = 0; i < calls; i++)
			ASSERT_EQ(smp_call_function_single(target, countAsync, nullptr, 0), 0);
	};
	u64 deadline = kshim::clockNs() + 10000ull * 1000000ull;

	/* Every sender to @target takes @target's one csd in turn. */
	asyncRuns = 0;
	for (int cpu = 1; cpu < target; cpu++)
		kshim::cpuRun(cpu, send);
	send();
	for (int cpu = 1; cpu < target; cpu++)
		kshim::cpuWait(cpu);
	while (asyncRuns.load() < calls * target && kshim::clockNs() < deadline)
		std::this_thread::yield();
	ASSERT_EQ(smp_call_function_single(target, noop, nullptr, 1), 0);
	EXPECT_EQ(asyncRuns.load(), calls * target);
}

TEST_F(IpiTest, SingleCallToNoSuchCpuIsENXIOAndToItselfRunsHere)
{
	clearRan();
	EXPECT_EQ(smp_call_function_single(nr_cpu_ids, markRan, nullptr, 1), -ENXIO);
	EXPECT_EQ(smp_call_function_single(nr_cpu_ids, markRan, nullptr, 0), -ENXIO);
	/* the csd the asynchronous attempt took was given back */
	EXPECT_EQ(smp_call_function_single(nr_cpu_ids, markRan, nullptr, 0), -ENXIO);
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++)
		EXPECT_EQ(per_cpu(ran, cpu), 0) << "CPU " << cpu;
	EXPECT_EQ(smp_call_function_single(0, markRan, nullptr, 1), 0);
	EXPECT_EQ(smp_call_function_single(0, markRan, nullptr, 0), 0);
	EXPECT_EQ(per_cpu(ran, 0), 2);
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
