// SPDX-License-Identifier: GPL-2.0-only
/*
 * R9, waited cross-calls, on the machine's real cross-calls: a waited call
 * that returns before a CPU of its mask ran the function is reported, with
 * the sender, the function, the CPU and the port's place of the sender;
 * the right wait, an asynchronous call, a filtering condition and work the
 * policy defers stay quiet.
 */
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <kernel_shim/cpu.h>
#include <kernel_shim/xmc.h>
#include <kernel_shim/xmc_verdict.h>
#include <linux/cpumask.h>
#include <linux/irqflags.h>
#include <linux/percpu.h>
#include <linux/smp.h>

#include "booted.h"

namespace {

using kshim::XmcRule;

std::atomic<int> ranOn[NR_CPUS];

void markRan(void *)
{
	ranOn[smp_processor_id()].fetch_add(1);
}

void nothing(void *)
{
}

/* How many violations of @rule the model holds; the first one's text in *@text. */
unsigned int count(XmcRule rule, std::string *text = nullptr)
{
	unsigned int n = 0;

	kshim::xmcQuiesce();
	for (const kshim::XmcViolation &v : kshim::xmcViolations()) {
		if (v.rule != rule)
			continue;
		if (!n++ && text)
			*text = kshim::xmcFormat(v);
	}
	return n;
}

/*
 * CPU 2 holds IRQs off with an asynchronous csd queued to it (the IPI
 * pending): a second sender finds its queue busy and sends no IPI.
 */
class XmcCalls : public pokelab::test::Booted
{
protected:
	unsigned int cpus() const override { return 4; }
	bool xmcViolationsExpected() const override { return true; }

	void SetUp() override
	{
		pokelab::test::Booted::SetUp();
		for (std::atomic<int> &r : ranOn)
			r = 0;
	}

	void holdCpu2WithAQueuedCsd()
	{
		phase = 0;
		kshim::cpuRun(2, [this] {
			unsigned long flags;

			local_irq_save(flags);
			phase = 1;
			while (phase.load() != 2)
				;
			local_irq_restore(flags);
		});
		while (phase.load() != 1)
			std::this_thread::yield();
		unsigned long before = kshim::cpuStats(2).ipiReceived;

		smp_call_function_single(2, nothing, nullptr, 0);
		while (kshim::cpuStats(2).ipiReceived == before)
			std::this_thread::yield();
	}

	void releaseCpu2()
	{
		phase = 2;
		kshim::cpuWait(2);
	}

	std::atomic<int> phase{0};
};

class XmcCallsWaitIpiOnly : public XmcCalls
{
protected:
	std::string extraParams() const override { return "pokelab.busted=wait-ipi-only"; }
};

TEST_F(XmcCallsWaitIpiOnly, AWaitForTheIpidCpusOnlyIsReportedNamingTheCpuLeft)
{
	struct cpumask m;
	std::string text;

	holdCpu2WithAQueuedCsd();
	cpumask_clear(&m);
	cpumask_set_cpu(1, &m);
	cpumask_set_cpu(2, &m);
	smp_call_function_many(&m, markRan, nullptr, 1);
	/* the broken wait returned with CPU 2's csd still queued */
	EXPECT_EQ(ranOn[2].load(), 0);
	EXPECT_EQ(ranOn[1].load(), 1);
	releaseCpu2();
	ASSERT_EQ(count(XmcRule::CallReturnedEarly, &text), 1u);
	EXPECT_NE(text.find("xmc: waited call returned early: CPU 2 had not ended markRan() when "
			    "smp_call_function_many_cond() on CPU 0 returned from its wait to "),
		  std::string::npos) << text;
	EXPECT_NE(text.find("  the call: to CPUs 1-2 (its mask's online CPUs but CPU 0); skipped "
			    "by its condition: none; ended by its return: 1\n  CPU 2 had not begun "
			    "it\n"), std::string::npos) << text;
	EXPECT_NE(text.find("  port: smp_call_function_many_cond() at kernel_shim/kernel/smp.cpp:"),
		  std::string::npos) << text;
}

TEST_F(XmcCalls, TheRightWaitOnABusyQueueIsQuiet)
{
	struct cpumask m;
	std::thread releaser;

	holdCpu2WithAQueuedCsd();
	cpumask_clear(&m);
	cpumask_set_cpu(1, &m);
	cpumask_set_cpu(2, &m);
	/* let CPU 2 go while CPU 0 waits for it */
	releaser = std::thread([this] {
		std::this_thread::sleep_for(std::chrono::milliseconds(20));
		phase = 2;
	});
	smp_call_function_many(&m, markRan, nullptr, 1);
	EXPECT_EQ(ranOn[1].load(), 1);
	EXPECT_EQ(ranOn[2].load(), 1);
	releaser.join();
	kshim::cpuWait(2);
	EXPECT_EQ(count(XmcRule::CallReturnedEarly), 0u);
}

TEST_F(XmcCalls, WaitedAndAsynchronousCallsOfEveryFormAreQuiet)
{
	for (int i = 0; i < 20; i++) {
		on_each_cpu(markRan, nullptr, 1);
		on_each_cpu(markRan, nullptr, 0);
		smp_call_function_single(1 + i % 3, markRan, nullptr, 1);
		smp_call_function_single(1 + i % 3, markRan, nullptr, 0);
		smp_call_function(markRan, nullptr, 1);
	}
	kick_all_cpus_sync();
	EXPECT_EQ(count(XmcRule::CallReturnedEarly), 0u);
}

/* The deferral policy's answer, faked: every CPU but 0 has deferred work pending. */
bool pendingOnAll(int cpu)
{
	return cpu != 0;
}

bool noPending(int)
{
	return false;
}

bool skipTwo(int cpu, void *)
{
	return cpu != 2;
}

TEST_F(XmcCalls, ASkippedCpuWithDeferredWorkCountsOnlyWhenThePolicyDefersTheFunction)
{
	static const char *const defersMarkRan[] = {"markRan", nullptr};
	static const char *const defersSync[] = {"do_sync_core", nullptr};
	std::string text;

	/* a filter: the condition's "no" with nothing deferred */
	kshim::xmcSetSyncPending(noPending);
	kshim::xmcSetDeferral("test", defersSync);
	on_each_cpu_cond(skipTwo, markRan, nullptr, 1);
	EXPECT_EQ(count(XmcRule::CallReturnedEarly), 0u);

	/* deferred work, and the policy defers this function */
	kshim::xmcSetSyncPending(pendingOnAll);
	kshim::xmcSetDeferral("test", defersMarkRan);
	on_each_cpu_cond(skipTwo, markRan, nullptr, 1);
	EXPECT_EQ(count(XmcRule::CallReturnedEarly), 0u);

	/* deferred work, but the policy defers another function */
	kshim::xmcSetDeferral("test", defersSync);
	on_each_cpu_cond(skipTwo, markRan, nullptr, 1);
	kshim::xmcSetSyncPending(nullptr);
	ASSERT_EQ(count(XmcRule::CallReturnedEarly, &text), 1u);
	EXPECT_NE(text.find("xmc: waited call returned early: CPU 2 had not ended markRan() when "
			    "smp_call_function_many_cond() on CPU 0 returned"), std::string::npos)
		<< text;
	EXPECT_NE(text.find("skipped by its condition: 2; ended by its return: 1,3\n  CPU 2 was "
			    "skipped while its context-tracking state read 0x0: deferred work, but "
			    "the deferral policy (test) defers do_sync_core(), not markRan()\n"),
		  std::string::npos) << text;
	EXPECT_EQ(ranOn[2].load(), 0);
}

} /* namespace */
