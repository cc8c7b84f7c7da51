// SPDX-License-Identifier: GPL-2.0-only
/*
 * The interrupt model: every IPI goes through the irqentry hooks with IRQs
 * masked and the hardirq count raised; IRQs-off regions nest and hold an
 * IPI until the outermost restore; the preemption count; and the
 * cross-call preconditions the kernel WARNs on warn here too.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <atomic>

#include <kernel_shim/boot.h>
#include <kernel_shim/cpu.h>
#include <linux/bug.h>
#include <linux/entry-common.h>
#include <linux/irqflags.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/smp.h>

#include "booted.h"

namespace {

DEFINE_PER_CPU(unsigned long, entries);
DEFINE_PER_CPU(unsigned long, exits);
DEFINE_PER_CPU(unsigned long, badEntry);	/* entered with IRQs on, or already in hardirq */
DEFINE_PER_CPU(int, ran);

irqentry_state_t countEnter(struct pt_regs *)
{
	irqentry_state_t st = {};

	if (!irqs_disabled() || in_hardirq())
		this_cpu_inc(badEntry);
	this_cpu_inc(entries);
	st.exit_rcu = true;
	return st;
}

void countExit(struct pt_regs *, irqentry_state_t st)
{
	if (!st.exit_rcu || !irqs_disabled() || in_hardirq())
		this_cpu_inc(badEntry);
	this_cpu_inc(exits);
}

const kshim::IrqEntryHooks countingHooks = {countEnter, countExit};

void markRan(void *)
{
	/* Inside the handler: not task context, not preemptible. */
	if (in_task() || preemptible() || !in_hardirq())
		this_cpu_inc(badEntry);
	this_cpu_inc(ran);
}

void clearCounts()
{
	for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++) {
		per_cpu(entries, cpu) = per_cpu(exits, cpu) = per_cpu(badEntry, cpu) = 0;
		per_cpu(ran, cpu) = 0;
	}
}

class IrqModelTest : public pokelab::test::Booted
{
protected:
	void TearDown() override
	{
		kshim::setIrqEntryHooks(nullptr);
		Booted::TearDown();
	}
};

TEST_F(IrqModelTest, EveryIpiGoesThroughIrqentryHooks)
{
	clearCounts();
	kshim::resetCpuStats();
	kshim::setIrqEntryHooks(&countingHooks);
	for (int i = 0; i < 20; i++)
		on_each_cpu(markRan, nullptr, 1);
	kshim::setIrqEntryHooks(nullptr);

	for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++) {
		EXPECT_EQ(per_cpu(ran, cpu), 20) << "CPU " << cpu;
		EXPECT_GE(per_cpu(entries, cpu), 1u) << "CPU " << cpu;
		EXPECT_EQ(per_cpu(entries, cpu), per_cpu(exits, cpu)) << "CPU " << cpu;
		EXPECT_EQ(per_cpu(badEntry, cpu), 0u) << "CPU " << cpu;
	}
	/* The local call runs with IRQs off but is no interrupt: no hook. */
	EXPECT_EQ(per_cpu(entries, 0), 0u);

	/* Removed hooks are no longer called (the counting above can fail). */
	unsigned long before = per_cpu(entries, 1);
	on_each_cpu(markRan, nullptr, 1);
	EXPECT_EQ(per_cpu(entries, 1), before);
}

TEST_F(IrqModelTest, IrqsOffRegionsNestAndHoldTheIpiUntilTheOutermostRestore)
{
	std::atomic<int> stage{0};
	std::atomic<int> failures{0};

	clearCounts();
	kshim::cpuRun(1, [&] {
		unsigned long outer, inner;

		local_irq_save(outer);
		local_irq_save(inner);
		stage = 1;
		while (stage.load() != 2)
			;
		/* The IPI arrived (ipiReceived went up) but must not have run. */
		if (this_cpu_read(ran) != 0)
			failures++;
		local_irq_restore(inner);
		if (!irqs_disabled() || this_cpu_read(ran) != 0)
			failures++;
		local_irq_restore(outer);
		if (irqs_disabled() || this_cpu_read(ran) != 1)
			failures++;
	});
	while (stage.load() != 1)
		;
	unsigned long received = kshim::cpuStats(1).ipiReceived;
	ASSERT_EQ(smp_call_function_single(1, markRan, nullptr, 0), 0);
	while (kshim::cpuStats(1).ipiReceived == received)
		;
	stage = 2;
	kshim::cpuWait(1);
	EXPECT_EQ(failures.load(), 0);
	EXPECT_EQ(per_cpu(ran, 1), 1);
}

TEST_F(IrqModelTest, PreemptCountNestsAndWarnsOnUnderflow)
{
	EXPECT_EQ(preempt_count(), 0u);
	EXPECT_TRUE(preemptible());
	preempt_disable();
	preempt_disable();
	EXPECT_EQ(preempt_count(), 2u);
	EXPECT_FALSE(preemptible());
	preempt_enable();
	EXPECT_FALSE(preemptible());
	preempt_enable();
	EXPECT_TRUE(preemptible());

	unsigned long flags;
	local_irq_save(flags);
	EXPECT_FALSE(preemptible());
	local_irq_restore(flags);

	unsigned long warns = kshim::warnCount();
	testing::internal::CaptureStderr();
	preempt_enable();	/* one too many */
	std::string out = testing::internal::GetCapturedStderr();
	EXPECT_EQ(kshim::warnCount(), warns + 1);
	EXPECT_EQ(preempt_count(), 0u);
	EXPECT_NE(out.find("WARNING"), std::string::npos);
}

/*
 * in_task() is the kernel's, from the preempt count: false in an NMI
 * (irqentry_nmi_enter() adds NMI_OFFSET + HARDIRQ_OFFSET, the simulated
 * NMIs' entry does the same), in a hardirq and while a softirq is served;
 * true with only preemption off. It was the IPI handler's flag alone, true
 * in an NMI, so torture's module reader slept (cond_resched()) in one.
 */
TEST_F(IrqModelTest, InTaskIsFalseInAnNmiAHardirqOrASoftirq)
{
	EXPECT_TRUE(in_task());
	preempt_disable();
	EXPECT_TRUE(in_task());
	preempt_enable();
	for (int off : {(int)(NMI_OFFSET + HARDIRQ_OFFSET), (int)HARDIRQ_OFFSET,
			(int)SOFTIRQ_OFFSET}) {
		__preempt_count_add(off);
		EXPECT_FALSE(in_task()) << std::hex << off;
		__preempt_count_sub(off);
	}
	EXPECT_TRUE(in_task());
}

TEST_F(IrqModelTest, WaitingWithIrqsDisabledWarns)
{
	unsigned long warns = kshim::warnCount();
	unsigned long flags;

	/* The correct call does not warn ... */
	on_each_cpu(markRan, nullptr, 1);
	EXPECT_EQ(kshim::warnCount(), warns);

	/* ... the same call with IRQs off does. */
	testing::internal::CaptureStderr();
	local_irq_save(flags);
	on_each_cpu(markRan, nullptr, 1);
	local_irq_restore(flags);
	std::string out = testing::internal::GetCapturedStderr();
	EXPECT_EQ(kshim::warnCount(), warns + 1);
	EXPECT_NE(out.find("irqs_disabled()"), std::string::npos) << out;
}

void crossCallFromIrq(void *)
{
	struct cpumask m;

	cpumask_clear(&m);
	__cpumask_set_cpu(2, &m);
	/* Not allowed from an interrupt handler: the kernel WARNs on !in_task(). */
	on_each_cpu_mask(&m, markRan, nullptr, false);
}

TEST_F(IrqModelTest, CrossCallFromInterruptWarns)
{
	if (nr_cpu_ids < 3)
		GTEST_SKIP() << "needs 3 CPUs";
	unsigned long warns = kshim::warnCount();

	testing::internal::CaptureStderr();
	ASSERT_EQ(smp_call_function_single(1, crossCallFromIrq, nullptr, 1), 0);
	std::string out = testing::internal::GetCapturedStderr();
	EXPECT_EQ(kshim::warnCount(), warns + 1);
	EXPECT_NE(out.find("in_task()"), std::string::npos) << out;
}

} /* namespace */
