// SPDX-License-Identifier: GPL-2.0-only
/*
 * Per-CPU variables: distinct slots, and this_cpu_ptr() naming the caller's.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <atomic>
#include <set>

#include <kernel_shim/cpu.h>
#include <linux/percpu.h>

#include "booted.h"

namespace {

struct Counter {
	long value;
};

DEFINE_PER_CPU(struct Counter, counter);

class PerCpuTest : public pokelab::test::Booted
{
};

TEST_F(PerCpuTest, SlotsAreDistinctAndCacheLineSeparated)
{
	std::set<uintptr_t> lines;

	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++)
		lines.insert((uintptr_t)per_cpu_ptr(&counter, cpu) / SMP_CACHE_BYTES);
	EXPECT_EQ(lines.size(), nr_cpu_ids);
}

TEST_F(PerCpuTest, ThisCpuPtrNamesTheCallersSlot)
{
	std::atomic<int> mismatches{0};

	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++)
		per_cpu(counter, cpu).value = 0;

	/* Each CPU writes its own id through this_cpu_ptr(). */
	for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++)
		kshim::cpuRun(cpu, [&mismatches, cpu] {
			if ((unsigned int)smp_processor_id() != cpu)
				mismatches++;
			this_cpu_ptr(&counter)->value = 1000 + smp_processor_id();
		});
	this_cpu_ptr(&counter)->value = 1000;
	for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++)
		kshim::cpuWait(cpu);

	EXPECT_EQ(mismatches.load(), 0);
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++)
		EXPECT_EQ(per_cpu(counter, cpu).value, 1000 + (long)cpu) << "CPU " << cpu;
}

TEST_F(PerCpuTest, ThisCpuIncCountsOnTheCallingCpu)
{
	static DEFINE_PER_CPU(unsigned long, hits);

	for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++)
		kshim::cpuRun(cpu, [cpu] {
			for (unsigned int i = 0; i < cpu * 10; i++)
				this_cpu_inc(hits);
		});
	for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++)
		kshim::cpuWait(cpu);
	for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++)
		EXPECT_EQ(per_cpu(hits, cpu), cpu * 10);
}

} /* namespace */
