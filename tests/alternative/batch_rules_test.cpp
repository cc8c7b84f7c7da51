// SPDX-License-Identifier: GPL-2.0-only
/*
 * Every rule of smp_text_poke_batch_add()/finish() (kernel-map 1.6, 1.11),
 * on real sites in the test binary's .text (scratch_text.h), executed after
 * patching to prove the bytes are live.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <cstring>

#include <fmt/format.h>

#include <asm/text-patching.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/xmc.h>
#include <kernel_shim/xmc_verdict.h>
#include <linux/irqflags.h>
#include <linux/kdebug.h>
#include <linux/preempt.h>
#include <pokelab/bug_switches.h>
#include <pokelab/text_poke_stats.h>

#include "booted.h"
#include "scratch_text.h"

using namespace pltest;

namespace {

class BatchRules : public ScratchBooted
{
protected:
	/* A JMP32 at site(i) to pl_ret_neg. */
	static void jmp_neg(int i, unsigned char *buf)
	{
		gen_rel32(buf, JMP32_INSN_OPCODE, site(i), pl_ret_neg);
	}
};

std::string expectedBadInsn(const void *addr, const unsigned char *b, size_t n)
{
	std::string s = fmt::format("text_poke: bad instruction at {:#x} \\(bytes", (unsigned long)addr);

	for (size_t i = 0; i < n; i++)
		s += fmt::format(" {:02x}", b[i]);
	return s + "\\)";
}

TEST_F(BatchRules, FullArrayOf256FlushesBeforeThe257th)
{
	unsigned char jmp[PL_NR_SLOTS][5];
	pokelab::TextPokeStats before = pokelab::textPokeStats();

	mutex_lock(&text_mutex);
	for (int i = 0; i < 257; i++) {
		jmp_neg(i, jmp[i]);
		smp_text_poke_batch_add(site(i), jmp[i], 5, NULL);
		if (i < 256) {
			EXPECT_EQ(pokelab::textPokeStats().nrEntries, (unsigned int)i + 1);
		}
	}
	pokelab::TextPokeStats mid = pokelab::textPokeStats();
	EXPECT_EQ(mid.implicitFlushes - before.implicitFlushes, 1u);
	EXPECT_EQ(mid.batches - before.batches, 1u);
	EXPECT_EQ(mid.lastNrEntries, 256u);
	EXPECT_EQ(mid.nrEntries, 1u);
	/* the first 256 are live, the 257th still queued */
	EXPECT_EQ(call_slot(255, 1), -1);
	EXPECT_EQ(call_slot(256, 1), 2);
	smp_text_poke_batch_finish();
	mutex_unlock(&text_mutex);

	EXPECT_EQ(pokelab::textPokeStats().batches - before.batches, 2u);
	for (int i = 0; i < 257; i++)
		EXPECT_EQ(call_slot(i, 1), -1) << "slot " << i;
	EXPECT_EQ(call_slot(257, 1), 2);
}

TEST_F(BatchRules, LowerAddressFlushesEqualAddressDoesNot)
{
	unsigned char a[5], b[5];
	pokelab::TextPokeStats before = pokelab::textPokeStats();

	jmp_neg(5, a);
	gen_rel32(b, CALL_INSN_OPCODE, site(5), pl_add100);

	mutex_lock(&text_mutex);
	smp_text_poke_batch_add(site(5), a, 5, NULL);
	smp_text_poke_batch_add(site(5), b, 5, NULL);	/* equal: no flush */
	EXPECT_EQ(pokelab::textPokeStats().implicitFlushes, before.implicitFlushes);
	EXPECT_EQ(pokelab::textPokeStats().nrEntries, 2u);
	smp_text_poke_batch_add(site(3), a, 5, NULL);	/* lower: flush */
	EXPECT_EQ(pokelab::textPokeStats().implicitFlushes - before.implicitFlushes, 1u);
	EXPECT_EQ(pokelab::textPokeStats().lastNrEntries, 2u);
	EXPECT_EQ(pokelab::textPokeStats().nrEntries, 1u);
	smp_text_poke_batch_finish();
	mutex_unlock(&text_mutex);

	/* the later duplicate wins; site 3 got the JMP meant for site 5 (a real JMP anyway) */
	EXPECT_EQ(memcmp(site(5), b, 5), 0);
	EXPECT_EQ(call_slot(5, 1), 102);
	EXPECT_EQ(pokelab::textPokeStats().batches - before.batches, 2u);

	/*
	 * The cross-modifying-code model rejects the duplicate, rightly: phase 3
	 * writes the JMP's first byte, then the CALL's, with no sync between,
	 * and phase 2 left the CALL's displacement behind the INT3. A CPU can
	 * fetch e9 + the CALL's displacement: a JMP to pl_add100, which no
	 * caller asked for. The kernel does not guard against a site queued
	 * twice with different bytes either (docs/testing.md).
	 */
	kshim::xmcQuiesce();
	ASSERT_GE(kshim::xmcStats().violations, 1u);
	kshim::XmcViolation v = kshim::xmcViolations()[0];
	EXPECT_EQ(v.rule, kshim::XmcRule::Torn) << kshim::xmcFormat(v);
	EXPECT_EQ(v.site, (unsigned long)site(5));
	EXPECT_EQ(v.tornBytes[0], JMP32_INSN_OPCODE);
	EXPECT_EQ(memcmp(v.tornBytes + 1, b + 1, 4), 0);
	expectXmcViolations();
}

TEST_F(BatchRules, SinglePokeGoesThroughTheCheckedAdd)
{
	unsigned char a[5], b[5];
	pokelab::TextPokeStats before = pokelab::textPokeStats();

	jmp_neg(7, a);
	jmp_neg(2, b);
	mutex_lock(&text_mutex);
	smp_text_poke_batch_add(site(7), a, 5, NULL);
	smp_text_poke_single(site(2), b, 5, NULL);
	mutex_unlock(&text_mutex);

	pokelab::TextPokeStats after = pokelab::textPokeStats();
	EXPECT_EQ(after.implicitFlushes - before.implicitFlushes, 1u);
	EXPECT_EQ(after.batches - before.batches, 2u);
	EXPECT_EQ(after.lastNrEntries, 1u);
	EXPECT_EQ(after.nrEntries, 0u);
	EXPECT_EQ(call_slot(7, 1), -1);
	EXPECT_EQ(call_slot(2, 1), -1);
}

TEST_F(BatchRules, LengthOnePokesSkipTheTailSync)
{
	const unsigned char ret = RET_INSN_OPCODE;

	mutex_lock(&text_mutex);
	smp_text_poke_batch_add(site(1), &ret, 1, NULL);
	smp_text_poke_batch_add(site(2), &ret, 1, NULL);
	smp_text_poke_batch_finish();
	EXPECT_EQ(pokelab::textPokeStats().lastSyncRounds, 2u);
	EXPECT_EQ(pokelab::textPokeStats().lastNrEntries, 2u);
	/* and back: a 5-byte poke has a tail, three rounds */
	smp_text_poke_batch_add(site(1), nop5, 5, NULL);
	smp_text_poke_batch_finish();
	EXPECT_EQ(pokelab::textPokeStats().lastSyncRounds, 3u);
	mutex_unlock(&text_mutex);

	EXPECT_EQ(call_slot(1, 7), 8);
	EXPECT_EQ(call_slot(2, 7), 7);	/* mov %edi,%eax; ret */
}

int claimed_int3;

int claim_site4(struct notifier_block *, unsigned long val, void *data)
{
	struct pt_regs *regs = ((struct die_args *)data)->regs;

	if (val != DIE_INT3 || regs->ip - INT3_INSN_SIZE != (unsigned long)site(4))
		return NOTIFY_DONE;
	claimed_int3++;
	/* step over the whole NOP5-sized site: the tail bytes are stale NOP5 */
	regs->ip = (unsigned long)site(4) + 5;
	return NOTIFY_STOP;
}

TEST_F(BatchRules, NewFirstByteInt3StaysAndTheHandlerDeclines)
{
	const unsigned char int3 = INT3_INSN_OPCODE;
	static struct notifier_block nb = {claim_site4, nullptr, 0};

	mutex_lock(&text_mutex);
	smp_text_poke_batch_add(site(4), &int3, 1, NULL);
	smp_text_poke_batch_finish();
	mutex_unlock(&text_mutex);

	/* phase 1 armed it, no tail, phase 3 left it: one sync round */
	EXPECT_EQ(pokelab::textPokeStats().lastSyncRounds, 1u);
	EXPECT_EQ(*(unsigned char *)site(4), INT3_INSN_OPCODE);

	/* The batch handler declines it: the die chain gets it. */
	claimed_int3 = 0;
	ASSERT_EQ(register_die_notifier(&nb), 0);
	EXPECT_EQ(call_slot(4, 1), 2);
	EXPECT_EQ(claimed_int3, 1);
	EXPECT_EQ(unregister_die_notifier(&nb), 0);
	/* nobody else claims it: the kernel's oops */
	EXPECT_DEATH(call_slot(4, 1), "Oops: int3");
}

TEST_F(BatchRules, JccD32ReinsertsTheEscapeInPhasesTwoAndThree)
{
	unsigned char jz[6] = {0x0f, 0x84};
	int32_t disp = (int32_t)(pl_ret_neg - (jcc_site() + 6));

	memcpy(jz + 2, &disp, 4);
	mutex_lock(&text_mutex);
	smp_text_poke_batch_add(jcc_site(), jz, 6, NULL);
	smp_text_poke_batch_finish();
	mutex_unlock(&text_mutex);

	EXPECT_EQ(memcmp(jcc_site(), jz, 6), 0);
	EXPECT_EQ(pokelab::textPokeStats().lastSyncRounds, 3u);
	EXPECT_EQ(call_jcc_slot(0), -1);
	EXPECT_EQ(call_jcc_slot(3), 4);
}

TEST_F(BatchRules, RetOrJmpWithInt3PaddingIsAccepted)
{
	const unsigned char ret[5] = {0xc3, 0xcc, 0xcc, 0xcc, 0xcc};
	/* JMP8 to the slot's ret (+17), INT3 padding */
	const unsigned char jmp8[5] = {0xeb, 17 - (PL_SITE_OFF + 2), 0xcc, 0xcc, 0xcc};

	mutex_lock(&text_mutex);
	smp_text_poke_batch_add(site(1), ret, 5, NULL);
	smp_text_poke_batch_add(site(2), jmp8, 5, NULL);
	smp_text_poke_batch_finish();
	mutex_unlock(&text_mutex);

	EXPECT_EQ(memcmp(site(1), ret, 5), 0);
	EXPECT_EQ(memcmp(site(2), jmp8, 5), 0);
	EXPECT_EQ(call_slot(1, 9), 9);
	EXPECT_EQ(call_slot(2, 9), 9);
}

TEST_F(BatchRules, RetOrJmpWithOtherPaddingIsABug)
{
	const unsigned char ret[5] = {0xc3, 0x90, 0x90, 0x90, 0x90};
	const unsigned char jmp[5] = {0xeb, 0x06, 0x90, 0xcc, 0xcc};

	mutex_lock(&text_mutex);
	EXPECT_DEATH(smp_text_poke_batch_add(site(1), ret, 5, NULL),
		     expectedBadInsn(site(1), ret, 5) + ": RET/JMP padded");
	EXPECT_DEATH(smp_text_poke_batch_add(site(1), jmp, 5, NULL),
		     expectedBadInsn(site(1), jmp, 5) + ": RET/JMP padded");
	mutex_unlock(&text_mutex);
}

TEST_F(BatchRules, NopsOtherThanNop2AndNop5AreABug)
{
	const unsigned char nop3[3] = {0x0f, 0x1f, 0x00};
	const unsigned char nop4[4] = {0x0f, 0x1f, 0x40, 0x00};
	const unsigned char nop2[2] = {0x66, 0x90};

	mutex_lock(&text_mutex);
	EXPECT_DEATH(smp_text_poke_batch_add(site(1), nop3, 3, NULL),
		     expectedBadInsn(site(1), nop3, 3) + ": no emulation");
	EXPECT_DEATH(smp_text_poke_batch_add(site(1), nop4, 4, NULL),
		     expectedBadInsn(site(1), nop4, 4) + ": no emulation");
	EXPECT_DEATH(smp_text_poke_batch_add(site(1), nop6, 6, NULL),
		     expectedBadInsn(site(1), nop6, 6) + ": no emulation");
	/* NOP2 and NOP5 are fine (emulated as JMP +0) */
	smp_text_poke_batch_add(site(1), nop2, 2, NULL);
	smp_text_poke_batch_add(site(2), nop5, 5, NULL);
	smp_text_poke_batch_finish();
	mutex_unlock(&text_mutex);
	EXPECT_EQ(call_slot(2, 1), 2);
}

/*
 * issue 33 item 1: finish's cond_resched() is upstream's, with the might-sleep
 * check of a debug kernel. A caller that holds preemption (or interrupts) off
 * across the batch, as a wrong patch would:
 *
 *	mutex_lock(&text_mutex);
 *	preempt_disable();
 *	smp_text_poke_batch_add(...);
 *	smp_text_poke_batch_finish();
 *	preempt_enable();
 *	mutex_unlock(&text_mutex);
 *
 * is named as the kernel names it, at finish's cond_resched(), and counts as
 * a warning; the same batch from a preemptible caller reports nothing.
 */
TEST_F(BatchRules, CondReschedNamesFinishCalledWithPreemptionOff)
{
	unsigned char jmp[2][5];
	unsigned long warns = kshim::warnCount();

	jmp_neg(1, jmp[0]);
	jmp_neg(2, jmp[1]);
	testing::internal::CaptureStderr();
	mutex_lock(&text_mutex);
	smp_text_poke_batch_add(site(1), jmp[0], 5, NULL);
	smp_text_poke_batch_finish();
	mutex_unlock(&text_mutex);
	EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
	EXPECT_EQ(kshim::warnCount(), warns);

	testing::internal::CaptureStderr();
	mutex_lock(&text_mutex);
	preempt_disable();
	smp_text_poke_batch_add(site(2), jmp[1], 5, NULL);
	smp_text_poke_batch_finish();
	preempt_enable();
	mutex_unlock(&text_mutex);
	std::string out = testing::internal::GetCapturedStderr();

	EXPECT_NE(out.find("BUG: sleeping function called from invalid context at "),
		  std::string::npos) << out;
	EXPECT_NE(out.find("alternative/alternative.cpp:"), std::string::npos) << out;
	EXPECT_NE(out.find("in_atomic(): 1, irqs_disabled(): 0, non_block: 0, pid: "),
		  std::string::npos) << out;
	EXPECT_NE(out.find("preempt_count: 1, expected: 0"), std::string::npos) << out;
	EXPECT_NE(out.find("CPU: 0 PID: "), std::string::npos) << out;
	EXPECT_NE(out.find("Call Trace:"), std::string::npos) << out;
	EXPECT_EQ(kshim::warnCount(), warns + 1);
	/* the batch itself went out */
	EXPECT_EQ(call_slot(1, 1), -1);
	EXPECT_EQ(call_slot(2, 1), -1);
}

/* Interrupts off are as wrong: the irqs_disabled() half of the check. */
TEST_F(BatchRules, CondReschedNamesFinishCalledWithIrqsOff)
{
	unsigned char jmp[5];
	unsigned long warns = kshim::warnCount();
	unsigned long flags;

	jmp_neg(3, jmp);
	testing::internal::CaptureStderr();
	mutex_lock(&text_mutex);
	local_irq_save(flags);
	smp_text_poke_batch_add(site(3), jmp, 5, NULL);
	smp_text_poke_batch_finish();
	local_irq_restore(flags);
	mutex_unlock(&text_mutex);
	std::string out = testing::internal::GetCapturedStderr();

	EXPECT_NE(out.find("BUG: sleeping function called from invalid context at "),
		  std::string::npos) << out;
	EXPECT_NE(out.find("in_atomic(): 0, irqs_disabled(): 1, "), std::string::npos) << out;
	/* and the sync's cross-call WARNs (once a run) that it was made with IRQs off */
	EXPECT_GE(kshim::warnCount(), warns + 1);
	EXPECT_EQ(call_slot(3, 1), -1);
}

} /* namespace */
