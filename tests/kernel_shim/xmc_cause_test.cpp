// SPDX-License-Identifier: GPL-2.0-only
/*
 * The causes the model gives after a report's own lines: why a CPU was
 * left unsynced (no round since its last serialisation; not in the round's
 * mask; skipped by its condition, with its context-tracking state, and the
 * deferred work lost at its entry or waiting on a CPU in the kernel; the
 * round's function run without serialising) with its last events, and
 * which refs operation went wrong (an increment from zero, a count never
 * published, a drain that did not wait). The writer (CPU 0, the test
 * thread) feeds the writes; the sync rounds are real cross-calls, their
 * function serialising or not.
 */
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include <asm/sync_core.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/xmc.h>
#include <kernel_shim/xmc_verdict.h>
#include <linux/cpumask.h>
#include <linux/smp.h>

#include "booted.h"

namespace {

using kshim::XmcRule;

const u8 kNop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
const u8 kJmp[5] = {0xe9, 0x10, 0x00, 0x00, 0x00};
const u8 kInt3 = 0xcc;

bool pending;
bool syncPendingFake(int cpu)
{
	return pending && cpu == 2;
}

int ctStateFake(int cpu)
{
	return 40 + cpu;
}

std::string ctDescribeFake(int state)
{
	return "fake state " + std::to_string(state);
}

int refs[NR_CPUS];
const int *refPtrs[NR_CPUS];

void syncFn(void *)
{
	sync_core();
}

void noSyncFn(void *)
{
}

bool skipTwo(int cpu, void *)
{
	return cpu != 2;
}

class XmcCause : public pokelab::test::Booted
{
protected:
	unsigned int cpus() const override { return 4; }
	bool xmcViolationsExpected() const override { return true; }

	void SetUp() override
	{
		pokelab::test::Booted::SetUp();
		memset(text_, 0xcc, sizeof(text_));
		memcpy(text_ + 16, kNop5, 5);
		pending = false;
		kshim::xmcSetSyncPending(syncPendingFake);
		kshim::xmcSetCtState(ctStateFake, ctDescribeFake);
		for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++) {
			refs[cpu] = 0;
			refPtrs[cpu] = &refs[cpu];
		}
		kshim::xmcInt3Refs(refPtrs, nullptr, nullptr);
		/* every CPU serialised against everything so far */
		on_each_cpu(syncFn, nullptr, 1);
	}

	void TearDown() override
	{
		kshim::xmcInt3Refs(nullptr, nullptr, nullptr);
		kshim::xmcSetCtState(nullptr, nullptr);
		kshim::xmcSetSyncPending(nullptr);
		pokelab::test::Booted::TearDown();
	}

	void write(unsigned int off, const u8 *bytes, size_t len)
	{
		u8 before[16];

		memcpy(before, text_ + off, len);
		memcpy(text_ + off, bytes, len);
		kshim::xmcTextWrite(text_ + off, before, bytes, len);
	}

	void publishRefs()
	{
		for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++)
			__atomic_store_n(&refs[cpu], 1, __ATOMIC_RELEASE);
	}

	/* An INT3 batch of one site at +16 (NOP5 -> JMP32), phase 1 written. */
	void phase1()
	{
		kshim::xmcIntent(text_ + 16, kJmp, 5);
		publishRefs();
		kshim::xmcOpBegin("smp_text_poke_batch_finish", true);
		kshim::xmcPhase(1);
		write(16, &kInt3, 1);
	}

	/* The round after it, then phase 2's tail: each CPU the round left is torn. */
	void tailAfter(void (*round)())
	{
		if (round) {
			round();
			kshim::xmcSyncRoundDone();
		}
		kshim::xmcPhase(2);
		write(17, kJmp + 1, 4);
	}

	/* The report of @rule on @cpu, as printed (empty: none). */
	std::string report(XmcRule rule, int cpu)
	{
		kshim::xmcQuiesce();
		for (const kshim::XmcViolation &v : kshim::xmcViolations())
			if (v.rule == rule && v.cpu == cpu)
				return kshim::xmcFormat(v);
		return "";
	}

	alignas(64) u8 text_[64];
};

#define EXPECT_HAS(text, what) EXPECT_NE((text).find(what), std::string::npos) << (text)

TEST_F(XmcCause, NoRoundSinceItsLastSerialisation)
{
	std::string t;

	phase1();
	tailAfter(nullptr);
	t = report(XmcRule::Torn, 1);
	ASSERT_FALSE(t.empty());
	/* line 1 and the bytes as before; the cause after them, before the port line */
	EXPECT_EQ(t.rfind("xmc: torn fetch: CPU 1 at ", 0), 0u) << t;
	EXPECT_HAS(t, "\n  possible bytes: ");
	EXPECT_HAS(t, " (before the operation began); no sync round began after that\n"
		      "  CPU 1's last events, oldest first:\n    at write ");
	EXPECT_HAS(t, ": serialised (to write ");
	EXPECT_GT(t.find("  why: CPU 1 last serialised at write "), t.find("  torn: ")) << t;
	EXPECT_LT(t.find("  why: CPU 1 last serialised at write "), t.find("  port: ")) << t;
}

TEST_F(XmcCause, TheRoundsFunctionRanWithoutSerialising)
{
	phase1();
	tailAfter([] { on_each_cpu(noSyncFn, nullptr, 1); });
	EXPECT_HAS(report(XmcRule::Torn, 1),
		   "1 sync round began after that:\n    the sync round after phase 1 (INT3s) of "
		   "smp_text_poke_batch_finish (noSyncFn() from CPU 0): it ran noSyncFn() (began "
		   "and ended it) without a serialising instruction\n  CPU 1's last events, oldest "
		   "first:\n");
	EXPECT_HAS(report(XmcRule::Torn, 1), ": began noSyncFn() from CPU 0\n");
}

TEST_F(XmcCause, NotInTheRoundsMask)
{
	phase1();
	tailAfter([] {
		struct cpumask m;

		cpumask_copy(&m, cpu_online_mask);
		cpumask_clear_cpu(2, &m);
		on_each_cpu_mask(&m, syncFn, nullptr, 1);
	});
	EXPECT_TRUE(report(XmcRule::Torn, 1).empty());
	EXPECT_HAS(report(XmcRule::Torn, 2),
		   "(syncFn() from CPU 0): not in the round's mask\n");
}

TEST_F(XmcCause, SkippedByTheConditionWithNoWorkLeft)
{
	phase1();
	tailAfter([] { on_each_cpu_cond(skipTwo, syncFn, nullptr, 1); });
	EXPECT_HAS(report(XmcRule::Torn, 2),
		   "(syncFn() from CPU 0): skipped by the round's condition while its "
		   "context-tracking state read fake state 42; no deferred sync was left for its "
		   "next kernel entry\n");
}

TEST_F(XmcCause, SkippedWhileInTheKernelWithWorkPending)
{
	pending = true;		/* the work set on a CPU that runs kernel code: v5's bug */
	phase1();
	tailAfter([] { on_each_cpu_cond(skipTwo, syncFn, nullptr, 1); });
	EXPECT_HAS(report(XmcRule::Torn, 2),
		   "read fake state 42; but it was running instrumentable kernel code then "
		   "(outside any EQS): the work waits for its next entry, after it next leaves "
		   "the kernel\n");
}

TEST_F(XmcCause, DeferredWorkLostAtItsKernelEntry)
{
	std::string t;

	kshim::xmcCpus[2].fetching = 0;	/* CPU 2 in user mode ... */
	pending = true;			/* ... and the round sets its work */
	text_[40] = 0x90;
	kshim::xmcOpBegin("text_poke");
	write(40, &kInt3, 1);
	on_each_cpu_cond(skipTwo, syncFn, nullptr, 1);
	kshim::xmcSyncRoundDone();
	kshim::xmcOpEnd();
	/* its entry lost the flush */
	kshim::xmcFirstFetch(2, 0x1234);
	t = report(XmcRule::StaleAtEntry, 2);
	EXPECT_EQ(t.rfind("xmc: stale at kernel entry: CPU 2 at ", 0), 0u) << t;
	EXPECT_HAS(t, "skipped by the round's condition while its context-tracking state read "
		      "fake state 42; that deferred work was lost at its kernel entry: it reached "
		      "instrumentable code at 0x1234 without serialising\n");
}

TEST_F(XmcCause, AForgivenWindowIsNotCalledASerialisation)
{
	std::string t;

	kshim::xmcCpus[2].fetching = 0;	/* CPU 2 in user mode since its last serialisation */
	text_[40] = 0x90;		/* a write it misses there, which moves the count on */
	kshim::xmcOpBegin("text_poke");
	write(40, &kInt3, 1);
	kshim::xmcOpEnd();
	kshim::xmcIntent(text_ + 16, kJmp, 5);
	publishRefs();
	kshim::xmcOpBegin("smp_text_poke_batch_finish", true);
	kshim::xmcPhase(1);
	/* it enters the kernel: stale against the text_poke, reported and forgiven to its end */
	kshim::xmcFirstFetch(2, 0x1234);
	write(16, &kInt3, 1);
	tailAfter([] { on_each_cpu_cond(skipTwo, syncFn, nullptr, 1); });
	t = report(XmcRule::Torn, 2);
	EXPECT_HAS(t, "  why: CPU 2 last serialised at write 0; the model counts it from write 1 "
		      "(before the operation began), where an earlier report on it ended");
}

TEST_F(XmcCause, AnIncrementFromZeroIsNamed)
{
	std::string t;

	/* CPU 3's handler: a plain inc on a count of 0 (no batch), its ref put after the publish */
	kshim::cpuRun(3, [] {
		__atomic_add_fetch(&refs[3], 1, __ATOMIC_SEQ_CST);
		kshim::xmcInt3RefOp(&refs[3], true);
	});
	kshim::cpuWait(3);
	kshim::xmcIntent(text_ + 16, kJmp, 5);
	publishRefs();
	kshim::cpuRun(3, [] {
		__atomic_sub_fetch(&refs[3], 1, __ATOMIC_SEQ_CST);
		kshim::xmcInt3RefOp(&refs[3], false);
	});
	kshim::cpuWait(3);
	kshim::xmcOpBegin("smp_text_poke_batch_finish", true);
	kshim::xmcPhase(1);
	write(16, &kInt3, 1);
	t = report(XmcRule::Int3Unpublished, 3);
	EXPECT_EQ(t.rfind("xmc: INT3 before its refs: CPU 3 at ", 0), 0u) << t;
	EXPECT_HAS(t, "\n  why: an increment from zero: CPU 3's INT3 handler took a ref at write ");
	EXPECT_HAS(t, "while the count read 0, and it read 1 after: an inc where inc_not_zero "
		      "belongs");
	EXPECT_HAS(t, "the handler's put (raw_atomic_dec()) took the batch's own: the count "
		      "read 0\n");
	EXPECT_HAS(t, ": INT3 handler took a ref from a count of 0 (count now 1)\n");
	EXPECT_HAS(t, ": INT3 handler put a ref, the count to 0\n");
}

TEST_F(XmcCause, ACountNeverPublishedIsSaid)
{
	kshim::xmcIntent(text_ + 16, kJmp, 5);
	publishRefs();
	refs[3] = 0;
	kshim::xmcOpBegin("smp_text_poke_batch_finish", true);
	write(16, &kInt3, 1);
	EXPECT_HAS(report(XmcRule::Int3Unpublished, 3),
		   "\n  why: the count read 0 when the INT3 was written: the batch's publish "
		   "(atomic_set_release(refs, 1) for every CPU) had not reached it");
}

TEST_F(XmcCause, ADrainThatDidNotWaitIsSaid)
{
	phase1();
	kshim::xmcPhase(3);
	write(16, kJmp, 1);
	on_each_cpu(syncFn, nullptr, 1);
	for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++)
		refs[cpu] = 0;
	refs[2] = 1;	/* CPU 2's handler still holds its ref */
	kshim::xmcInt3RefsDrained();
	EXPECT_HAS(report(XmcRule::Int3RefsHeld, 2),
		   "\n  why: the drain's atomic_dec_and_test() left the count at 1 (a handler's ref "
		   "up) and the drain returned without waiting for it to reach 0");
	refs[2] = 0;
	kshim::xmcOpEnd();
}

} /* namespace */
