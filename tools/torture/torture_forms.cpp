// SPDX-License-Identifier: GPL-2.0-only
/*
 * The instruction forms torture patches besides the NOP5/JMP32/CALL/RET
 * ones of torture_text.cpp (torture_forms.h):
 *
 * The Jcc sites: every one of the 16 conditions, in the rel8 (70+cc) and
 * the rel32 (0f 80+cc) form, each site flipped between two conditions by
 * torture_emu_sites' batch. A site's two conditions are never a pair and
 * its complement (JZ <-> JNZ): with a complement every flag state takes one
 * of the two, so a handler that evaluates the wrong condition still
 * resumes as the old or the new instruction would, and R5 accepts it. The
 * rel8 sites pair cc with cc ^ 2 (O/B, Z/BE, S/P, L/LE), the rel32 sites
 * with cc ^ 4 (O/Z, B/BE, S/L, P/LE): two conditions that agree on some
 * flag states and disagree on others, so that where they agree, a wrong
 * condition is neither. Each run loads its flags with POPF from the run's
 * argument (CF, PF, ZF, SF and OF, all 32 states over a run) right before
 * the site, so both outcomes are taken under both conditions, and the
 * trap hands R5 those flags.
 *
 * The 2-byte jump-label sites: torture_big_key's, as objtool shrinks a
 * site whose target is within a rel8 in the kernel (arch_jump_entry_size()
 * reads 2): a NOP2 <-> JMP8 written by the key's batches, four with the
 * NOP2 at boot (static_branch_unlikely()) and four with the JMP8
 * (static_branch_likely() of a false key: the entry's branch bit set).
 */
#include <cstring>
#include <string>

#include <fmt/format.h>

#include <asm/nops.h>
#include <asm/ptrace.h>
#include <asm/text-patching.h>

#include "torture_forms.h"

/*
 * One Jcc site: torture_jcc{8,32}_fn_CC(flags) loads @flags with POPF and
 * returns 1 if the Jcc at torture_jcc{8,32}_site_CC is taken, 0 if not.
 */
#define JCC_FN(w, cc, insn)							\
	".globl torture_jcc" #w "_fn_" #cc "\n"				\
	".type torture_jcc" #w "_fn_" #cc ", @function\n"		\
	".balign 16\n"								\
	"torture_jcc" #w "_fn_" #cc ":\n"					\
	"	xor %eax, %eax\n"						\
	"	push %rdi\n"							\
	"	popfq\n"							\
	".globl torture_jcc" #w "_site_" #cc "\n"			\
	"torture_jcc" #w "_site_" #cc ":\n"				\
	insn									\
	"	ret\n"								\
	"1:	mov $1, %eax\n"							\
	"	ret\n"								\
	".size torture_jcc" #w "_fn_" #cc ", . - torture_jcc" #w "_fn_" #cc "\n"
#define JCC8(cc, op)	JCC_FN(8, cc, "	.byte " #op ", 1f - 2f\n2:\n")
#define JCC32(cc, op)							\
	JCC_FN(32, cc, "	.byte 0x0f, " #op "\n	.long 1f - 2f\n2:\n")

asm(".pushsection .text, \"ax\", @progbits\n"
    JCC8(0, 0x70) JCC8(1, 0x71) JCC8(2, 0x72) JCC8(3, 0x73)
    JCC8(4, 0x74) JCC8(5, 0x75) JCC8(6, 0x76) JCC8(7, 0x77)
    JCC8(8, 0x78) JCC8(9, 0x79) JCC8(10, 0x7a) JCC8(11, 0x7b)
    JCC8(12, 0x7c) JCC8(13, 0x7d) JCC8(14, 0x7e) JCC8(15, 0x7f)
    JCC32(0, 0x80) JCC32(1, 0x81) JCC32(2, 0x82) JCC32(3, 0x83)
    JCC32(4, 0x84) JCC32(5, 0x85) JCC32(6, 0x86) JCC32(7, 0x87)
    JCC32(8, 0x88) JCC32(9, 0x89) JCC32(10, 0x8a) JCC32(11, 0x8b)
    JCC32(12, 0x8c) JCC32(13, 0x8d) JCC32(14, 0x8e) JCC32(15, 0x8f)
    ".popsection\n");

#define JCC_DECL(cc)								\
	extern "C" unsigned long torture_jcc8_fn_##cc(unsigned long flags);	\
	extern "C" unsigned long torture_jcc32_fn_##cc(unsigned long flags);	\
	extern "C" const u8 torture_jcc8_site_##cc[];				\
	extern "C" const u8 torture_jcc32_site_##cc[];
JCC_DECL(0) JCC_DECL(1) JCC_DECL(2) JCC_DECL(3) JCC_DECL(4) JCC_DECL(5) JCC_DECL(6) JCC_DECL(7)
JCC_DECL(8) JCC_DECL(9) JCC_DECL(10) JCC_DECL(11) JCC_DECL(12) JCC_DECL(13) JCC_DECL(14)
JCC_DECL(15)

/*
 * One 2-byte jump-label site of torture_big_key: torture_jl2_fn_N()
 * returns 1 if its site jumps, 0 if it falls through. @bytes: its boot
 * form; @branch: the entry's branch bit (JUMP_TABLE_ENTRY()).
 */
#define JL2_FN(n, bytes, branch)						\
	".globl torture_jl2_fn_" #n "\n"					\
	".type torture_jl2_fn_" #n ", @function\n"			\
	".balign 16\n"								\
	"torture_jl2_fn_" #n ":\n"						\
	"	xor %eax, %eax\n"						\
	"1:	.byte " bytes "\n"						\
	"2:	ret\n"								\
	"3:	mov $1, %eax\n"							\
	"	ret\n"								\
	".size torture_jl2_fn_" #n ", . - torture_jl2_fn_" #n "\n"	\
	".pushsection __jump_table, \"aw\"\n"					\
	".balign 8\n"								\
	".long 1b - .\n"							\
	".long 3b - .\n"							\
	".quad torture_big_key + " #branch " - .\n"				\
	".popsection\n"
#define JL2_NOP(n)	JL2_FN(n, "0x66, 0x90", 0)
#define JL2_JMP(n)	JL2_FN(n, "0xeb, 3f - 2f", 1)

asm(".pushsection .text, \"ax\", @progbits\n"
    JL2_NOP(0) JL2_NOP(1) JL2_NOP(2) JL2_NOP(3)
    JL2_JMP(4) JL2_JMP(5) JL2_JMP(6) JL2_JMP(7)
    ".popsection\n");

extern "C" unsigned long torture_jl2_fn_0(void), torture_jl2_fn_1(void), torture_jl2_fn_2(void),
	torture_jl2_fn_3(void), torture_jl2_fn_4(void), torture_jl2_fn_5(void),
	torture_jl2_fn_6(void), torture_jl2_fn_7(void);

namespace pokelab::torture {

namespace {

#define JCC8_ROW(cc)	{torture_jcc8_fn_##cc, torture_jcc8_site_##cc, 2}
#define JCC32_ROW(cc)	{torture_jcc32_fn_##cc, torture_jcc32_site_##cc, 6}

struct JccSite {
	unsigned long (*fn)(unsigned long flags);
	const u8 *site;
	unsigned int len;	/* 2: Jcc.d8, 6: Jcc.d32 */
};

/*
 * Site cc is the rel8 one with boot condition cc, site 16 + cc the rel32 one:
 * in address order, as a batch wants them (else it is finished and begun
 * again at each site below the last).
 */
const JccSite jccSites[kNrJccSites] = {
	JCC8_ROW(0), JCC8_ROW(1), JCC8_ROW(2), JCC8_ROW(3), JCC8_ROW(4), JCC8_ROW(5),
	JCC8_ROW(6), JCC8_ROW(7), JCC8_ROW(8), JCC8_ROW(9), JCC8_ROW(10), JCC8_ROW(11),
	JCC8_ROW(12), JCC8_ROW(13), JCC8_ROW(14), JCC8_ROW(15),
	JCC32_ROW(0), JCC32_ROW(1), JCC32_ROW(2), JCC32_ROW(3), JCC32_ROW(4), JCC32_ROW(5),
	JCC32_ROW(6), JCC32_ROW(7), JCC32_ROW(8), JCC32_ROW(9), JCC32_ROW(10), JCC32_ROW(11),
	JCC32_ROW(12), JCC32_ROW(13), JCC32_ROW(14), JCC32_ROW(15),
};

unsigned long (*const jl2Fns[kNrJl2Sites])(void) = {
	torture_jl2_fn_0, torture_jl2_fn_1, torture_jl2_fn_2, torture_jl2_fn_3,
	torture_jl2_fn_4, torture_jl2_fn_5, torture_jl2_fn_6, torture_jl2_fn_7,
};

/* The flags the Jcc functions load: CF, PF, ZF, SF and OF only (no TF, DF or AC). */
constexpr unsigned long kJccFlags = X86_EFLAGS_CF | X86_EFLAGS_PF | X86_EFLAGS_ZF |
				    X86_EFLAGS_SF | X86_EFLAGS_OF;

/* Site @i's condition in @state. */
unsigned int jccCond(unsigned int i, unsigned int state)
{
	unsigned int cc = i % 16;

	return state ? cc ^ (i < 16 ? 2 : 4) : cc;
}

/* The SDM's table, written apart from the handler's __emulate_cc(). */
bool condHolds(unsigned int cc, unsigned long flags)
{
	bool cf = flags & X86_EFLAGS_CF, zf = flags & X86_EFLAGS_ZF, sf = flags & X86_EFLAGS_SF,
	     of = flags & X86_EFLAGS_OF, pf = flags & X86_EFLAGS_PF, t = false;

	switch (cc & ~1u) {
	case 0x0: t = of; break;
	case 0x2: t = cf; break;
	case 0x4: t = zf; break;
	case 0x6: t = cf || zf; break;
	case 0x8: t = sf; break;
	case 0xa: t = pf; break;
	case 0xc: t = sf != of; break;
	case 0xe: t = zf || sf != of; break;
	}
	return (cc & 1) ? !t : t;
}

/* The flags site @i runs with for @arg: every state of the five over a run's arguments. */
unsigned long jccFlagsFor(unsigned long arg, unsigned int i)
{
	unsigned long m = (arg + i) * 0x9e3779b97f4a7c15ull;

	return ((m >> 40) & kJccFlags) | 0x2;	/* bit 1 always reads 1 */
}

/* Site @i's instruction in @state. */
void jccInsn(unsigned int i, unsigned int state, u8 *insn)
{
	const JccSite &s = jccSites[i];

	memcpy(insn, s.site, s.len);
	if (s.len == 2)
		insn[0] = 0x70 + jccCond(i, state);
	else
		insn[1] = 0x80 + jccCond(i, state);
}

} /* namespace */

bool jccSitesIn(unsigned int state)
{
	u8 insn[6];

	for (unsigned int i = 0; i < kNrJccSites; i++) {
		jccInsn(i, state, insn);
		if (memcmp(jccSites[i].site, insn, jccSites[i].len))
			return false;
	}
	return true;
}

void jccBatchAdd(unsigned int state)
{
	u8 insn[6];

	for (unsigned int i = 0; i < kNrJccSites; i++) {
		jccInsn(i, state, insn);
		smp_text_poke_batch_add((void *)jccSites[i].site, insn, jccSites[i].len, NULL);
	}
}

unsigned long runJccSites(unsigned long arg)
{
	unsigned long sum = 0;

	for (unsigned int i = 0; i < kNrJccSites; i++)
		sum += jccSites[i].fn(jccFlagsFor(arg, i)) << (i % 32);
	return sum;
}

unsigned long runSomeJccSites(unsigned long arg)
{
	unsigned int i = (unsigned int)(arg >> 3) % kNrJccSites;

	return jccSites[i].fn(jccFlagsFor(arg, i));
}

std::string jccCheck(unsigned int state)
{
	for (unsigned int i = 0; i < kNrJccSites; i++) {
		unsigned int w = jccSites[i].len == 2 ? 8 : 32, cc = jccCond(i, state);
		u8 insn[6];

		jccInsn(i, state, insn);
		if (memcmp(jccSites[i].site, insn, jccSites[i].len))
			return fmt::format("Jcc site {} (rel{}) does not hold condition {:#x}",
					   i % 16, w, cc);
		for (unsigned long f = 0; f < 32; f++) {
			unsigned long flags = jccFlagsFor(f * 0x1000001, i);
			bool taken = jccSites[i].fn(flags);

			if (taken != condHolds(cc, flags))
				return fmt::format("Jcc site {} (rel{}, condition {:#x}) is {} with "
						   "flags {:#x}", i % 16, w, cc,
						   taken ? "taken" : "not taken", flags);
		}
	}
	return "";
}

unsigned long runJl2Sites(void)
{
	unsigned long sum = 0;

	for (unsigned int i = 0; i < kNrJl2Sites; i++)
		sum += jl2Fns[i]() << i;
	return sum;
}

bool jl2Computes(bool on)
{
	/* the first half jumps while the key is on, the second (branch set) while it is off */
	for (unsigned int i = 0; i < kNrJl2Sites; i++)
		if (jl2Fns[i]() != (i < kNrJl2Sites / 2 ? on : !on))
			return false;
	return true;
}

} /* namespace pokelab::torture */
