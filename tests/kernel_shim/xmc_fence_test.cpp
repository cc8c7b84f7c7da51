// SPDX-License-Identifier: GPL-2.0-only
/*
 * R8, the store→load rule, on real fences: a protocol's store, then its
 * load, on CPU 1, with each kind of instruction between them. x86-TSO lets
 * the load pass the store unless a full fence (MFENCE, a locked RMW, a
 * serialising instruction) comes between; the rule must say so whatever
 * the host did, and stay quiet when the fence is there.
 */
#include <gtest/gtest.h>

#include <cstring>

#include <asm/barrier.h>
#include <asm/sync_core.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/cpu_events.h>
#include <kernel_shim/xmc.h>
#include <kernel_shim/xmc_verdict.h>
#include <linux/atomic.h>
#include <linux/compiler.h>
#include <linux/mutex.h>

#include "booted.h"

namespace {

using kshim::XmcRule;

class XmcFence : public pokelab::test::Booted
{
protected:
	bool xmcViolationsExpected() const override { return true; }

	/* Run @between between the PT_CHANGE store and its load on CPU 1; the fences counted. */
	unsigned long onCpu1(void (*between)(void))
	{
		static void (*fn)(void);
		static unsigned long fences;

		fn = between;
		kshim::cpuRun(1, [] {
			unsigned long f0;

			kshim::cpuFenceStore(kshim::FENCE_PAIR_PT_CHANGE);
			f0 = cpu_fence_events;
			fn();
			fences = cpu_fence_events - f0;
			kshim::xmcFenceCheck(kshim::FENCE_PAIR_PT_CHANGE);
		});
		kshim::cpuWait(1);
		kshim::xmcQuiesce();
		return fences;
	}

	unsigned long fenceViolations()
	{
		unsigned long n = 0;

		for (const kshim::XmcViolation &v : kshim::xmcViolations())
			n += v.rule == XmcRule::MissingFence;
		return n;
	}
};

atomic_t counter;
int plain;
DEFINE_MUTEX(test_mutex);

TEST_F(XmcFence, NoFenceBetweenIsReported)
{
	EXPECT_EQ(onCpu1([] {}), 0u);
	ASSERT_EQ(fenceViolations(), 1u);

	const kshim::XmcViolation v = kshim::xmcViolations().back();
	std::string line = kshim::xmcFormat(v);

	EXPECT_EQ(v.cpu, 1);
	EXPECT_EQ(v.pair, kshim::FENCE_PAIR_PT_CHANGE);
	EXPECT_NE(line.find("no fence between a store and its load: CPU 1"), std::string::npos)
		<< line;
	EXPECT_NE(line.find("changed a kernel range's page tables"), std::string::npos) << line;
}

TEST_F(XmcFence, WhatIsNotAFenceIsReported)
{
	/* x86: smp_wmb()/smp_rmb() stop only the compiler; loads and stores are plain */
	EXPECT_EQ(onCpu1([] {
		smp_wmb();
		smp_rmb();
		WRITE_ONCE(plain, 1);
		(void)READ_ONCE(plain);
		(void)atomic_read(&counter);
		atomic_set(&counter, 2);
		smp_mb__before_atomic();
	}), 0u);
	EXPECT_EQ(fenceViolations(), 1u);
}

TEST_F(XmcFence, EveryFullFenceCounts)
{
	void (*const fences[])(void) = {
		[] { smp_mb(); },
		[] { atomic_inc(&counter); },
		[] { (void)atomic_inc_not_zero(&counter); },
		[] { (void)atomic_cmpxchg(&counter, 12345, 1); },	/* fails: still a locked op */
		[] { (void)atomic_xchg(&counter, 3); },
		[] { sync_core(); },
		[] {
			mutex_lock(&test_mutex);
			mutex_unlock(&test_mutex);
		},
	};

	for (void (*f)(void) : fences)
		EXPECT_GE(onCpu1(f), 1u);
	EXPECT_EQ(fenceViolations(), 0u);
}

/*
 * The text-write pair (v8's patcher: write text, then read a CPU's
 * kernel_cr3_loaded): __text_poke() serialises after every write (the CR3
 * write of unuse_temporary_mm() upstream), which is the fence the pair
 * needs; without it the rule fires.
 */
TEST_F(XmcFence, TheTextWritersSerialisationCoversItsPair)
{
	static u8 text[64] __attribute__((aligned(64)));

	memset(text, 0xcc, sizeof(text));
	for (int serialise = 1; serialise >= 0; serialise--) {
		static bool s;

		s = serialise;
		kshim::cpuRun(1, [] {
			u8 before = text[8], after = (u8)(before + 1);

			kshim::xmcTextPrivate(text, sizeof(text), 1);
			text[8] = after;
			kshim::xmcTextWrite(text + 8, &before, &after, 1);
			if (s)
				sync_core();
			kshim::xmcFenceCheck(kshim::FENCE_PAIR_TEXT_WRITE);
			sync_core();
		});
		kshim::cpuWait(1);
		kshim::xmcQuiesce();
		EXPECT_EQ(fenceViolations(), serialise ? 0u : 1u) << (serialise ? "with" : "without")
								  << " the writer's serialisation";
	}
	kshim::xmcTextPublish(text, sizeof(text));
}

} /* namespace */
