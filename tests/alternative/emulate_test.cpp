// SPDX-License-Identifier: GPL-2.0-only
/*
 * The INT3 emulation: __emulate_cc()/int3_emulate_jcc() for all 16
 * condition codes over every combination of the five flags they read,
 * checked against the architectural definition and against the CPU itself
 * (the same Jcc executed with those flags loaded by POPF);
 * int3_emulate_ret()/call()/jmp() on pt_regs; and live: CALL, JMP8, JMP32,
 * RET and Jcc.d32 emulated on another CPU while the INT3 of a batch is armed.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <cstring>

#include <asm/nmi.h>
#include <asm/text-patching.h>
#include <kernel_shim/cpu.h>
#include <linux/smp.h>
#include <pokelab/bug_switches.h>
#include <pokelab/text_poke_stats.h>

#include "booted.h"
#include "scratch_text.h"

using namespace pltest;

namespace {

constexpr unsigned long kFlagBits[5] = {X86_EFLAGS_CF, X86_EFLAGS_PF, X86_EFLAGS_ZF, X86_EFLAGS_SF,
				       X86_EFLAGS_OF};

unsigned long flagsOf(unsigned int combo)
{
	unsigned long f = 0x2;	/* bit 1 always reads 1 */

	for (int b = 0; b < 5; b++)
		if (combo & (1u << b))
			f |= kFlagBits[b];
	return f;
}

/* The SDM's table of Jcc conditions, written out case by case. */
bool architectural(unsigned int cc, unsigned long f)
{
	bool cf = f & X86_EFLAGS_CF, pf = f & X86_EFLAGS_PF, zf = f & X86_EFLAGS_ZF;
	bool sf = f & X86_EFLAGS_SF, of = f & X86_EFLAGS_OF;

	switch (cc) {
	case 0x0: return of;			/* JO */
	case 0x1: return !of;			/* JNO */
	case 0x2: return cf;			/* JB */
	case 0x3: return !cf;			/* JAE */
	case 0x4: return zf;			/* JE */
	case 0x5: return !zf;			/* JNE */
	case 0x6: return cf || zf;		/* JBE */
	case 0x7: return !cf && !zf;		/* JA */
	case 0x8: return sf;			/* JS */
	case 0x9: return !sf;			/* JNS */
	case 0xa: return pf;			/* JP */
	case 0xb: return !pf;			/* JNP */
	case 0xc: return sf != of;		/* JL */
	case 0xd: return sf == of;		/* JGE */
	case 0xe: return zf || sf != of;	/* JLE (JNG) */
	case 0xf: return !zf && sf == of;	/* JG (JNLE) */
	}
	return false;
}

#define HW_JCC(cc, insn)							\
	case cc:								\
		asm volatile("lea -128(%%rsp), %%rsp\n\tpush %[f]\n\tpopfq\n\t"	\
			     "lea 128(%%rsp), %%rsp\n\t" insn " 1f\n\t"		\
			     "movl $0, %[t]\n\tjmp 2f\n"				\
			     "1:\tmovl $1, %[t]\n"				\
			     "2:\n\t"						\
			     : [t] "=r"(taken) : [f] "r"(f) : "cc", "memory");	\
		break

/* What the CPU does: load @f with POPF and execute the Jcc. */
bool hardware(unsigned int cc, unsigned long f)
{
	int taken = -1;

	switch (cc) {
	HW_JCC(0x0, "jo"); HW_JCC(0x1, "jno"); HW_JCC(0x2, "jb"); HW_JCC(0x3, "jae");
	HW_JCC(0x4, "je"); HW_JCC(0x5, "jne"); HW_JCC(0x6, "jbe"); HW_JCC(0x7, "ja");
	HW_JCC(0x8, "js"); HW_JCC(0x9, "jns"); HW_JCC(0xa, "jp"); HW_JCC(0xb, "jnp");
	HW_JCC(0xc, "jl"); HW_JCC(0xd, "jge"); HW_JCC(0xe, "jle"); HW_JCC(0xf, "jg");
	}
	return taken == 1;
}

TEST(Emulate, AllSixteenConditionCodesOverAllFlagCombinations)
{
	for (unsigned int cc = 0; cc < 16; cc++) {
		for (unsigned int combo = 0; combo < 32; combo++) {
			unsigned long f = flagsOf(combo);
			struct pt_regs regs = {};

			ASSERT_EQ(architectural(cc, f), hardware(cc, f))
				<< "the table is wrong: cc " << cc << " flags " << f;
			EXPECT_EQ(__emulate_cc(f, cc), architectural(cc, f))
				<< "cc " << std::hex << cc << " flags " << f;

			regs.flags = f;
			int3_emulate_jcc(&regs, cc, 0x1000, 0x40);
			EXPECT_EQ(regs.ip, architectural(cc, f) ? 0x1040ul : 0x1000ul)
				<< "cc " << std::hex << cc << " flags " << f;
		}
	}
}

TEST(Emulate, RetPopsTheReturnAddress)
{
	unsigned long stack[4] = {0x1111, 0xdeadbeef, 0x2222, 0x3333};
	struct pt_regs regs = {};

	regs.sp = (unsigned long)&stack[1];
	int3_emulate_ret(&regs);
	EXPECT_EQ(regs.ip, 0xdeadbeeful);
	EXPECT_EQ(regs.sp, (unsigned long)&stack[2]);
}

TEST(Emulate, CallPushesTheAddressAfterTheFiveByteSite)
{
	unsigned long stack[4] = {};
	struct pt_regs regs = {};

	/* trapped on an INT3 at 0x5000: ip is 0x5001 */
	regs.ip = 0x5001;
	regs.sp = (unsigned long)&stack[2];
	int3_emulate_call(&regs, regs.ip - INT3_INSN_SIZE + CALL_INSN_SIZE, 0x9000);
	EXPECT_EQ(regs.ip, 0x9000ul);
	EXPECT_EQ(regs.sp, (unsigned long)&stack[1]);
	EXPECT_EQ(stack[1], 0x5005ul);
	EXPECT_EQ(stack[0], 0ul);
	EXPECT_EQ(stack[2], 0ul);
	int3_emulate_jmp(&regs, 0x7000);
	EXPECT_EQ(regs.ip, 0x7000ul);
}

/*
 * Live: CPU 1 runs the site while phase 1 holds the INT3 on it, so the
 * handler emulates the new instruction on a real signal frame.
 */
class LiveEmulate : public ScratchBooted
{
};

struct LiveCall {
	char *site;
	int slot;
	int arg;
	int result;
	uintptr_t entry_sp, callee_sp;
	unsigned char byte_seen;
};
LiveCall live;

void run_slot_on_cpu1(void)
{
	kshim::cpuRun(1, [] {
		live.byte_seen = *(volatile unsigned char *)live.site;
		live.result = live.slot < 0 ? call_jcc_slot(live.arg) : call_slot(live.slot, live.arg);
		live.entry_sp = pl_entry_sp;
		live.callee_sp = pl_callee_sp;
	});
	kshim::cpuWait(1);
}

int live_poke(int slot, const unsigned char *insn, size_t len, int arg)
{
	unsigned long emulated = pokelab::int3Emulated(1);

	live = {slot < 0 ? jcc_site() : site(slot), slot, arg, 0, 0, 0, 0};
	pokelab::batchAfterPhase1Probe = run_slot_on_cpu1;
	mutex_lock(&text_mutex);
	smp_text_poke_single(slot < 0 ? jcc_site() : site(slot), insn, len, NULL);
	mutex_unlock(&text_mutex);
	pokelab::batchAfterPhase1Probe = nullptr;
	EXPECT_EQ(live.byte_seen, INT3_INSN_OPCODE);
	EXPECT_EQ(pokelab::int3Emulated(1) - emulated, 1u);
	return live.result;
}

TEST_F(LiveEmulate, CallToAndFromASiteWhileTheInt3IsArmed)
{
	unsigned char call[5];

	gen_rel32(call, CALL_INSN_OPCODE, site(3), pl_add100);
	/* to the CALL: the emulated CALL returns to the add after the site */
	EXPECT_EQ(live_poke(3, call, 5, 5), 106);
	/* the callee saw exactly one more word on the stack than the slot's entry */
	EXPECT_EQ(live.callee_sp, live.entry_sp - 8);
	EXPECT_EQ(call_slot(3, 5), 106);
	/* and back to the NOP: emulated as JMP +0 */
	EXPECT_EQ(live_poke(3, nop5, 5, 5), 6);
	EXPECT_EQ(call_slot(3, 5), 6);
}

/*
 * NMIs nest in the INT3 handler, as on the hardware: one lands between the
 * handler's ref get and put, and its handler runs the same armed site. The
 * INT3 comes back in on the same CPU, takes a second ref (the count reads
 * 3: the batch's and two handlers'), emulates, and both return where the
 * new instruction goes.
 *
 *	CPU1						CPU0
 *	call the site: INT3, exc_int3()			phase 1 done, holds the batch
 *	  try_get: refs 2, <NMI>
 *	    exc_nmi(): call the site: INT3
 *	      exc_int3(): try_get: refs 3, emulate, put
 *	  emulate, put: refs 1
 */
struct NmiNest {
	int refsInner, nestingInner, result;
	bool raised;
};
NmiNest nest;

int nest_nmi_handler(unsigned int, struct pt_regs *)
{
	nest.result = call_slot(live.slot, live.arg);
	return NMI_HANDLED;
}

void nest_probe(unsigned long) noexcept
{
	if (!nest.raised) {
		nest.raised = true;
		kshim::nmiSelf();	/* taken at once, unless the handler holds NMIs off */
		return;
	}
	nest.refsInner = pokelab::int3RefsNow(raw_smp_processor_id());
	nest.nestingInner = pokelab::int3Nesting();
}

TEST_F(LiveEmulate, AnNmiInsideTheHandlerTrapsOnTheSiteAgain)
{
	unsigned char call[5];
	unsigned long emulated = pokelab::int3Emulated(1), nmis = kshim::nmiCount(1);

	gen_rel32(call, CALL_INSN_OPCODE, site(3), pl_add100);
	nest = {};
	live = {site(3), 3, 5, 0, 0, 0, 0};
	ASSERT_EQ(register_nmi_handler(NMI_LOCAL, nest_nmi_handler, 0, "nest"), 0);
	pokelab::int3AfterRefProbe = nest_probe;
	pokelab::batchAfterPhase1Probe = run_slot_on_cpu1;
	mutex_lock(&text_mutex);
	smp_text_poke_single(site(3), call, 5, NULL);
	mutex_unlock(&text_mutex);
	pokelab::batchAfterPhase1Probe = nullptr;
	pokelab::int3AfterRefProbe = nullptr;
	unregister_nmi_handler(NMI_LOCAL, "nest");

	EXPECT_EQ(kshim::nmiCount(1) - nmis, 1u);
	EXPECT_EQ(nest.nestingInner, 2);
	EXPECT_EQ(nest.refsInner, 3);
	EXPECT_EQ(pokelab::int3Emulated(1) - emulated, 2u);
	/* both emulated CALLs returned to the add after the site */
	EXPECT_EQ(nest.result, 106);
	EXPECT_EQ(live.result, 106);
	EXPECT_EQ(pokelab::int3RefsNow(1), 0);
}

TEST_F(LiveEmulate, Jmp32Jmp8AndRet)
{
	unsigned char jmp[5];
	/*
	 * An exact 2-byte JMP8. Note: the kernel (and so the port) emulates
	 * a JMP relative to addr + len, so a JMP8 poked with INT3 padding
	 * would be emulated 3 bytes past where it executes; no kernel caller
	 * pads a JMP (only static_call's RET is padded). See docs/porting.md.
	 */
	const unsigned char jmp8[2] = {0xeb, 17 - (PL_SITE_OFF + 2)};
	const unsigned char ret[5] = {0xc3, 0xcc, 0xcc, 0xcc, 0xcc};

	gen_rel32(jmp, JMP32_INSN_OPCODE, site(4), pl_ret_neg);
	EXPECT_EQ(live_poke(4, jmp, 5, 5), -1);
	EXPECT_EQ(live_poke(5, jmp8, 2, 5), 5);
	EXPECT_EQ(live_poke(6, ret, 5, 5), 5);
}

TEST_F(LiveEmulate, JccD32TakenAndNotTaken)
{
	unsigned char jz[6] = {0x0f, 0x84};
	int32_t disp = (int32_t)(pl_ret_neg - (jcc_site() + 6));

	memcpy(jz + 2, &disp, 4);
	EXPECT_EQ(live_poke(-1, jz, 6, 0), -1);

	reset_slots();
	EXPECT_EQ(live_poke(-1, jz, 6, 3), 4);
}

} /* namespace */
