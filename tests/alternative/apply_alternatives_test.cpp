// SPDX-License-Identifier: GPL-2.0-only
/*
 * apply_alternatives() and its helpers: the NOP table, optimize_nops(), the
 * relocation of copied replacements (the kernel's alt_reloc_selftest() among
 * them), nested ALTERNATIVE_2() padding, ALT_NOT(), DIRECT_CALL,
 * clearcpuid=, and two bug replays named after their upstream commits.
 *
 * Sites under test live in two private tables ("altinstr_t1",
 * "altinstr_replay") that boot never applies; each test applies what it
 * needs and puts the original text back (AltTextSnapshot) before it ends.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include <asm/alternative.h>
#include <asm/cpufeature.h>
#include <asm/nops.h>
#include <asm/text-patching.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/xmc.h>
#include <kernel_shim/xmc_verdict.h>
#include <linux/jump_label.h>
#include <linux/smp.h>
#include <pokelab/alt_sites.h>
#include <pokelab/alt_test.h>
#include <pokelab/alt_text.h>

#include "booted.h"

extern "C" u8 t_tpe_target[];

extern "C" struct alt_instr __start_altinstr_t1[], __stop_altinstr_t1[];
extern "C" struct alt_instr __start_altinstr_replay[], __stop_altinstr_replay[];

/* A feature the tests clear on purpose, so "absent" does not depend on the host. */
#define T_ABSENT	X86_FEATURE_RDPID

#define T1(old, new, ft)	__ALTERNATIVE_SEC("altinstr_t1", old, new, ft)
#define T1_2(old, n1, f1, n2, f2) __ALTERNATIVE_2_SEC("altinstr_t1", old, n1, f1, n2, f2)

#define TEST_FN extern "C" __attribute__((__noinline__, __noclone__))

extern "C" {
int (*t_op_ptr)(void) = pokelab_alt_op_a;
extern const u8 t_site_not_present[], t_site_not_absent[], t_site_nested_both[],
	t_site_nested_first[], t_site_jmp[], t_site_dcall[], t_site_replay[];
}

/* ALT_NOT of a present feature: not patched, returns 1. */
TEST_FN int t_not_present(void)
{
	int v;

	asm volatile(".globl t_site_not_present\nt_site_not_present:\n\t"
		     T1("movl $1, %%eax", "movl $2, %%eax", ALT_NOT(X86_FEATURE_ALWAYS))
		     : "=a" (v));
	return v;
}

/* ALT_NOT of an absent feature: patched, returns 2. */
TEST_FN int t_not_absent(void)
{
	int v;

	asm volatile(".globl t_site_not_absent\nt_site_not_absent:\n\t"
		     T1("movl $1, %%eax", "movl $2, %%eax", ALT_NOT(T_ABSENT))
		     : "=a" (v));
	return v;
}

/* Nested, both apply: the later (10-byte movabs) wins. */
TEST_FN long t_nested_both(void)
{
	long v;

	asm volatile(".globl t_site_nested_both\nt_site_nested_both:\n\t"
		     T1_2("xorl %%eax, %%eax",
			  "movl $1, %%eax", X86_FEATURE_ALWAYS,
			  "movabsq $0x200000002, %%rax", X86_FEATURE_ALWAYS)
		     : "=a" (v) : : "cc");
	return v;
}

/* Nested, only the inner (5-byte) applies: it must be padded to the outer's 10 bytes. */
TEST_FN long t_nested_first(void)
{
	long v;

	asm volatile(".globl t_site_nested_first\nt_site_nested_first:\n\t"
		     T1_2("xorl %%eax, %%eax",
			  "movl $1, %%eax", X86_FEATURE_ALWAYS,
			  "movabsq $0x200000002, %%rax", T_ABSENT)
		     : "=a" (v) : : "cc");
	return v;
}

/* A replacement JMP to text after the site: JMP32 in .altinstr_replacement, JMP8 once copied. */
TEST_FN int t_jmp(void)
{
	int v;

	asm volatile("movl $7, %%eax\n\t"
		     ".globl t_site_jmp\nt_site_jmp:\n\t"
		     T1("movl $1, %%eax", "jmp 1f", X86_FEATURE_ALWAYS)
		     "\n\tmovl $3, %%eax\n"
		     "1:\n"
		     : "=a" (v));
	return v;
}

/* ALT_CALL_ALWAYS: the indirect call through t_op_ptr becomes a direct call (or NOPs). */
TEST_FN int t_dcall(void)
{
	int v;

	asm volatile("movl $0x77, %%eax\n\t"
		     "lea -128(%%rsp), %%rsp\n\t"
		     ".globl t_site_dcall\nt_site_dcall:\n\t"
		     T1("call *t_op_ptr(%%rip)", ALT_CALL_INSTR, ALT_CALL_ALWAYS)
		     "\n\tlea 128(%%rsp), %%rsp"
		     : "=a" (v) : : "cc", "memory");
	return v;
}

/*
 * Bug replay 7.19: ALTERNATIVE_2(PARAVIRT_CALL-like indirect call, native
 * instruction, feature, ALT_CALL_INSTR, feature) with both features present.
 */
TEST_FN int t_replay(void)
{
	int v;

	asm volatile("lea -128(%%rsp), %%rsp\n\t"
		     ".globl t_site_replay\nt_site_replay:\n\t"
		     __ALTERNATIVE_2_SEC("altinstr_replay", "call *t_op_ptr(%%rip)",
					 "movl $0x33, %%eax", X86_FEATURE_ALWAYS,
					 ALT_CALL_INSTR, ALT_CALL_ALWAYS)
		     "\n\tlea 128(%%rsp), %%rsp"
		     : "=a" (v) : : "cc", "memory");
	return v;
}

/*
 * userspace: jump_label.cpp needs a __jump_table section in the program;
 * this binary has no static key of its own otherwise.
 */
static DEFINE_STATIC_KEY_FALSE(t_unused_key);

TEST_FN int t_unused_branch(void)
{
	return static_branch_unlikely(&t_unused_key) ? 1 : 0;
}

namespace {

std::vector<u8> bytes(const void *p, size_t n)
{
	return std::vector<u8>((const u8 *)p, (const u8 *)p + n);
}

struct alt_instr *entry_for(struct alt_instr *start, struct alt_instr *end, const void *site,
			    int nth = 0)
{
	for (struct alt_instr *a = start; a < end; a++)
		if ((u8 *)&a->instr_offset + a->instr_offset == site && nth-- == 0)
			return a;
	return nullptr;
}

/* Booted, with the private tables restored and the switches reset after each test. */
class ApplyAlternatives : public pokelab::test::Booted
{
protected:
	void SetUp() override
	{
		pokelab::test::Booted::SetUp();
		setup_clear_cpu_cap(T_ABSENT);
		t_op_ptr = pokelab_alt_op_a;
		/*
		 * apply_alternatives() runs at boot, before the other CPUs: these
		 * tables are patched with them up, but only CPU 0 runs their
		 * text, which the cross-modifying-code model is told.
		 */
		privateText(__start_altinstr_t1, __stop_altinstr_t1);
		privateText(__start_altinstr_replay, __stop_altinstr_replay);
		kshim::xmcTextPrivate(t_tpe_target, 9, 0);
	}

	void TearDown() override
	{
		t1.restore();
		replay.restore();
		pokelab::altTestReset();
		t_op_ptr = pokelab_alt_op_a;
		kshim::xmcQuiesce();
		for (auto [start, len] : private_)
			kshim::xmcTextPublish(start, len);
		kshim::xmcTextPublish(t_tpe_target, 9);
		private_.clear();
		pokelab::test::Booted::TearDown();
	}

	/* The text of @start..@stop's sites, as one range private to CPU 0. */
	void privateText(struct alt_instr *start, struct alt_instr *stop)
	{
		unsigned long lo = ~0ul, hi = 0;

		for (struct alt_instr *a = start; a < stop; a++) {
			unsigned long p = (unsigned long)&a->instr_offset + a->instr_offset;

			lo = std::min(lo, p);
			hi = std::max(hi, p + a->instrlen);
		}
		if (lo < hi) {
			kshim::xmcTextPrivate((void *)lo, hi - lo, 0);
			private_.push_back({(void *)lo, hi - lo});
		}
	}

	std::vector<std::pair<void *, size_t>> private_;

	void apply_t1() { apply_alternatives(__start_altinstr_t1, __stop_altinstr_t1); }

	static pokelab::AltTextSnapshot t1;
	static pokelab::AltTextSnapshot replay;
};

/* Taken before main(): the private tables are pristine then. */
pokelab::AltTextSnapshot ApplyAlternatives::t1(__start_altinstr_t1, __stop_altinstr_t1);
pokelab::AltTextSnapshot ApplyAlternatives::replay(__start_altinstr_replay,
						   __stop_altinstr_replay);

} /* namespace */

/* ALTERNATIVE_3(): one site, three entries, the last that applies wins (the boot's own table) */
TEST_FN int t_alt3_last(void)
{
	int v;

	asm volatile(ALTERNATIVE_3("movl $0, %0", "movl $1, %0", X86_FEATURE_ALWAYS,
				   "movl $2, %0", ALT_NOT(X86_FEATURE_ALWAYS),
				   "movl $3, %0", X86_FEATURE_ALWAYS)
		     : "=r"(v));
	return v;
}

TEST_FN int t_alt3_middle(void)
{
	int v;

	asm volatile(ALTERNATIVE_3("movl $0, %0", "movl $1, %0", X86_FEATURE_ALWAYS,
				   "movl $2, %0", X86_FEATURE_ALWAYS,
				   "movl $3, %0", ALT_NOT(X86_FEATURE_ALWAYS))
		     : "=r"(v));
	return v;
}

TEST_F(ApplyAlternatives, Alternative3TakesTheLastThatApplies)
{
	EXPECT_EQ(t_alt3_last(), 3);
	EXPECT_EQ(t_alt3_middle(), 2);
}

TEST(AltNops, TableBytes1To11Exact)
{
	static const std::vector<std::vector<u8>> want = {
		{},
		{0x90},
		{0x66, 0x90},
		{0x0f, 0x1f, 0x00},
		{0x0f, 0x1f, 0x40, 0x00},
		{0x0f, 0x1f, 0x44, 0x00, 0x00},
		{0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00},
		{0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00},
		{0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
		{0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
		{0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
		{0x66, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
	};

	ASSERT_EQ(ASM_NOP_MAX, 11);
	for (int n = 1; n <= ASM_NOP_MAX; n++)
		EXPECT_EQ(bytes(x86_nops[n], n), want[n]) << "NOP" << n;
}

TEST(AltNops, RunOfNopsBecomesOneNop)
{
	/* xor %eax,%eax then seven 0x90: one NOP7 */
	u8 buf[9] = {0x31, 0xc0, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90};

	optimize_nops(buf, buf, sizeof(buf));
	EXPECT_EQ(bytes(buf, 2), (std::vector<u8>{0x31, 0xc0}));
	EXPECT_EQ(bytes(buf + 2, 7), bytes(x86_nops[7], 7));
}

TEST(AltNops, PaddingLongerThan11IsJumpedOver)
{
	u8 buf[2 + 20];

	buf[0] = 0x31;
	buf[1] = 0xc0;
	memset(buf + 2, 0x90, 20);
	optimize_nops(buf, buf, sizeof(buf));

	/* JMP8 to the end of the site, the rest INT3 that never runs */
	EXPECT_EQ(buf[2], 0xeb);
	EXPECT_EQ(buf[3], 18);
	for (int i = 4; i < (int)sizeof(buf); i++)
		EXPECT_EQ(buf[i], 0xcc) << "byte " << i;

	/* 200 bytes: JMP32 */
	std::vector<u8> big(200, 0x90);
	optimize_nops(big.data(), big.data(), big.size());
	EXPECT_EQ(big[0], 0xe9);
	s32 disp;
	memcpy(&disp, &big[1], 4);
	EXPECT_EQ(disp, 200 - 5);
	EXPECT_EQ(big[5], 0xcc);
	EXPECT_EQ(big[199], 0xcc);
}

/*
 * optimize_nops() as v6.16 has it (after c3a3cb5c3d89; kernel-map.md 2.4):
 * each run of NOPs becomes one add_nop(), a NOP that already ends the
 * buffer ends the walk, and a JMP before a run stays. The rows marked "2023"
 * are where the earlier form (a JMP landing at the end of a run folded into
 * the NOP, a trailing NOP rewritten from the table) gave other bytes.
 */
TEST(AltNops, ByteTableAsUpstream)
{
	static const struct {
		const char *what;
		std::vector<u8> in, out;
	} rows[] = {
		{"xor, three 0x90", {0x31, 0xc0, 0x90, 0x90, 0x90}, {0x31, 0xc0, 0x0f, 0x1f, 0x00}},
		{"2023: jmp8 over the run stays", {0xeb, 0x03, 0x90, 0x90, 0x90},
		 {0xeb, 0x03, 0x0f, 0x1f, 0x00}},
		{"2023: jmp32 over the run stays", {0xe9, 0x03, 0x00, 0x00, 0x00, 0x90, 0x90, 0x90},
		 {0xe9, 0x03, 0x00, 0x00, 0x00, 0x0f, 0x1f, 0x00}},
		{"2023: a trailing NOP is already optimised", {0x66, 0x66, 0x90},
		 {0x66, 0x66, 0x90}},
		{"a trailing NOPL4 is already optimised", {0x31, 0xc0, 0x0f, 0x1f, 0x40, 0x00},
		 {0x31, 0xc0, 0x0f, 0x1f, 0x40, 0x00}},
		{"one 0x90", {0x90}, {0x90}},
		{"NOP, insn, NOPs", {0x90, 0x31, 0xc0, 0x90, 0x90}, {0x90, 0x31, 0xc0, 0x66, 0x90}},
		{"NOPL3 then 0x90s: one NOP5", {0x0f, 0x1f, 0x00, 0x90, 0x90},
		 {0x0f, 0x1f, 0x44, 0x00, 0x00}},
		{"NOPs then an insn", {0x90, 0x90, 0x90, 0xc3}, {0x0f, 0x1f, 0x00, 0xc3}},
		{"13 0x90: jmp8 over INT3s", std::vector<u8>(13, 0x90),
		 {0xeb, 0x0b, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc}},
		{"already optimised jmp8 run stays", {0xeb, 0x0b, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc,
						      0xcc, 0xcc, 0xcc, 0xcc, 0xcc},
		 {0xeb, 0x0b, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc}},
	};

	for (const auto &r : rows) {
		std::vector<u8> buf = r.in;

		optimize_nops(buf.data(), buf.data(), buf.size());
		EXPECT_EQ(buf, r.out) << r.what;
	}
}

TEST(AltNops, PauseIsNotANop)
{
	/* F3 90 is PAUSE and must survive */
	u8 buf[4] = {0xf3, 0x90, 0x90, 0x90};

	optimize_nops(buf, buf, sizeof(buf));
	EXPECT_EQ(buf[0], 0xf3);
	EXPECT_EQ(buf[1], 0x90);
	EXPECT_EQ(bytes(buf + 2, 2), bytes(x86_nops[2], 2));
}

/*
 * What v7.3's insn_is_nop() (arch/x86/lib/insn-eval.c since v6.19) takes for
 * a NOP, seen through optimize_nops(): each row is xor %eax,%eax, the
 * instruction, then 0x90. A NOP folds with the 0x90 into one NOP; anything
 * else stays, and the 0x90 that then ends the buffer stays too.
 */
TEST(AltNops, WhatCountsAsANop)
{
	static const struct {
		const char *what;
		std::vector<u8> insn;
		bool nop;
	} rows[] = {
		{"NOP", {0x90}, true},
		{"66 NOP", {0x66, 0x90}, true},
		{"NOPL /0", {0x0f, 0x1f, 0x40, 0x00}, true},
		{"NOPW /0", {0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00}, true},
		{"NOPL /1 (a hint, not the NOP)", {0x0f, 0x1f, 0x48, 0x00}, false},
		{"xchg %eax,%r8d (REX.B 90)", {0x41, 0x90}, false},
		{"mov %rax,%rax", {0x48, 0x89, 0xc0}, true},
		{"mov %r9,%r9", {0x4d, 0x89, 0xc9}, true},
		{"mov %eax,%eax (zero-extends)", {0x89, 0xc0}, false},
		{"mov %rax,%rcx", {0x48, 0x89, 0xc1}, false},
		{"lea 0x0(%rsi),%rsi", {0x48, 0x8d, 0x76, 0x00}, true},
		{"lea 0x0(%rsi,%riz,1),%rsi", {0x48, 0x8d, 0x74, 0x26, 0x00}, true},
		{"ds lea 0x0(%rsi),%rsi", {0x3e, 0x48, 0x8d, 0x76, 0x00}, true},
		{"lea 0x8(%rsi),%rsi", {0x48, 0x8d, 0x76, 0x08}, false},
		{"lea 0x0(%rsi),%rdi", {0x48, 0x8d, 0x7e, 0x00}, false},
		{"lea (%rsi),%rsi (no displacement)", {0x48, 0x8d, 0x36}, false},
		{"fs lea 0x0(%rsi),%rsi", {0x64, 0x48, 0x8d, 0x76, 0x00}, false},
		{"jmp +0 (JMP8)", {0xeb, 0x00}, true},
		{"jmp +0 (JMP32)", {0xe9, 0x00, 0x00, 0x00, 0x00}, true},
		{"jmp +1", {0xeb, 0x01}, false},
		{"kmovw %k0,%k1 (VEX, opcode 90)", {0xc5, 0xf8, 0x90, 0xc8}, false},
	};

	for (const auto &r : rows) {
		std::vector<u8> buf = {0x31, 0xc0};
		std::vector<u8> want = {0x31, 0xc0};
		size_t n = r.insn.size() + 1;

		buf.insert(buf.end(), r.insn.begin(), r.insn.end());
		buf.push_back(0x90);
		if (r.nop)
			want.insert(want.end(), x86_nops[n], x86_nops[n] + n);
		else
			want = buf;
		optimize_nops(buf.data(), buf.data(), buf.size());
		EXPECT_EQ(buf, want) << r.what;
	}
}

TEST(AltRelocation, OutsideTargetsMoveInsideTargetsStay)
{
	/*
	 * A replacement at "repl" to be written at "instr" (1 MiB below):
	 *	+0  call  repl+0x1000		outside: re-aimed
	 *	+5  jne   +2 (to +13)		inside: kept
	 *	+7  lea   0x2000(%rip),%rdi	outside: re-aimed
	 *	+14 ret (+ 2 bytes padding)
	 */
	static u8 repl[16];
	u8 buf[16];
	const long delta = 1 << 20;
	const u8 *instr = (const u8 *)((uintptr_t)repl - delta);
	const u8 code[15] = {0xe8, 0xfb, 0x0f, 0x00, 0x00,	/* call +0xffb */
			     0x75, 0x02,				/* jne +2 */
			     0x48, 0x8d, 0x3d, 0x00, 0x20, 0x00, 0x00,	/* lea 0x2000(%rip),%rdi */
			     0xc3};
	s32 v;

	memcpy(repl, code, sizeof(code));
	memcpy(buf, code, sizeof(code));
	buf[15] = 0x90;
	text_poke_apply_relocation(buf, instr, sizeof(buf), repl, sizeof(code));

	memcpy(&v, buf + 1, 4);
	EXPECT_EQ(v, 0xffb + delta) << "CALL to outside must keep its absolute target";
	EXPECT_EQ(buf[5], 0x75);
	EXPECT_EQ(buf[6], 0x02) << "Jcc inside the replacement must not move";
	memcpy(&v, buf + 10, 4);
	EXPECT_EQ(v, 0x2000 + delta) << "RIP-relative operand must keep its absolute target";
	EXPECT_EQ(buf[14], 0xc3);
}

TEST(AltRelocation, Jmp32ShrinksToJmp8WhenItFits)
{
	/* a JMP32 aimed 40 bytes past the site, copied from 256 KiB away */
	static u8 area[0x40000 + 64];
	u8 *repl = area;
	const u8 *instr = area + 0x40000 - 100;	/* only the distance matters */
	u8 buf[5];
	s32 rel = (s32)((instr + 5 + 40) - (repl + 5));	/* target: 40 bytes after the site */

	buf[0] = 0xe9;
	memcpy(buf + 1, &rel, 4);
	memcpy(repl, buf, 5);
	text_poke_apply_relocation(buf, instr, 5, repl, 5);

	EXPECT_EQ(buf[0], 0xeb);
	EXPECT_EQ((s8)buf[1], 40 + 3) << "JMP8 from the site must land 40 bytes after it";
	EXPECT_EQ(bytes(buf + 2, 3), (std::vector<u8>{0xcc, 0xcc, 0xcc}));
}

TEST(AltRelocation, Jmp32StaysWhenTooFar)
{
	static u8 repl[8];
	const u8 *instr = (const u8 *)((uintptr_t)repl - (1 << 20));
	u8 buf[5];
	s32 rel = (s32)((instr + 5 + 4000) - (repl + 5));
	s32 out;

	buf[0] = 0xe9;
	memcpy(buf + 1, &rel, 4);
	memcpy(repl, buf, 5);
	text_poke_apply_relocation(buf, instr, 5, repl, 5);
	EXPECT_EQ(buf[0], 0xe9);
	memcpy(&out, buf + 1, 4);
	EXPECT_EQ(out, 4000);
}

TEST_F(ApplyAlternatives, AltRelocSelftest)
{
	/* Boot applied the program's table; the self-test site ran its relocated replacement. */
	EXPECT_EQ(alt_reloc_selftest(), 0);
	EXPECT_GE(pokelab::altStats().patched, 1u);
}

TEST_F(ApplyAlternatives, AltInstrIs14PackedBytesAndNestedEntriesShareASite)
{
	struct alt_instr *inner = entry_for(__start_altinstr_t1, __stop_altinstr_t1,
					    t_site_nested_first, 0);
	struct alt_instr *outer = entry_for(__start_altinstr_t1, __stop_altinstr_t1,
					    t_site_nested_first, 1);

	EXPECT_EQ(sizeof(struct alt_instr), 14u);
	ASSERT_NE(inner, nullptr);
	ASSERT_NE(outer, nullptr);
	EXPECT_EQ(outer, inner + 1) << "nested entries are consecutive, inner first";
	EXPECT_EQ(inner->instrlen, 5) << "inner: xor (2) padded to movl (5)";
	EXPECT_EQ(outer->instrlen, 10) << "outer: padded to movabs (10)";
	EXPECT_EQ(inner->replacementlen, 5);
	EXPECT_EQ(outer->replacementlen, 10);
	EXPECT_EQ(inner->cpuid, X86_FEATURE_ALWAYS);
	EXPECT_EQ(outer->cpuid, T_ABSENT);
	EXPECT_EQ(outer->ft_flags, (u32)T_ABSENT);
}

TEST_F(ApplyAlternatives, NestedSiteUsesLongestInstrlen)
{
	EXPECT_EQ(t_nested_first(), 0);
	EXPECT_EQ(t_nested_both(), 0);
	apply_t1();
	EXPECT_EQ(t_nested_first(), 1);
	EXPECT_EQ(t_nested_both(), 0x200000002);

	/* movl $1,%eax then the rest of the 10-byte site as one NOP5 */
	EXPECT_EQ(bytes(t_site_nested_first, 10),
		  (std::vector<u8>{0xb8, 0x01, 0x00, 0x00, 0x00, 0x0f, 0x1f, 0x44, 0x00, 0x00}));
}

TEST_F(ApplyAlternatives, AltNot)
{
	apply_t1();
	EXPECT_EQ(t_not_present(), 1) << "ALT_NOT(present feature) must keep the original";
	EXPECT_EQ(t_not_absent(), 2) << "ALT_NOT(absent feature) must patch";
}

TEST_F(ApplyAlternatives, Jmp32InReplacementShrinksAndRuns)
{
	EXPECT_EQ(t_jmp(), 3);
	apply_t1();
	EXPECT_EQ(t_jmp(), 7) << "the relocated jump must skip the movl $3";
	EXPECT_EQ(t_site_jmp[0], 0xeb);
	EXPECT_EQ(t_site_jmp[1], 5 + 3);
	EXPECT_EQ(bytes(t_site_jmp + 2, 3), (std::vector<u8>{0xcc, 0xcc, 0xcc}));
}

TEST_F(ApplyAlternatives, DirectCallRewrite)
{
	s32 rel;

	t_op_ptr = pokelab_alt_op_b;
	EXPECT_EQ(t_dcall(), 0xb);
	EXPECT_EQ(t_site_dcall[0], 0xff);
	EXPECT_EQ(t_site_dcall[1], 0x15);
	apply_t1();

	/* A direct CALL to what the pointer held at patch time, then one NOP */
	ASSERT_EQ(t_site_dcall[0], 0xe8);
	memcpy(&rel, t_site_dcall + 1, 4);
	EXPECT_EQ((const void *)(t_site_dcall + 5 + rel), (const void *)pokelab_alt_op_b);
	EXPECT_EQ(t_site_dcall[5], 0x90);

	/* The pointer no longer matters: the call is direct. */
	t_op_ptr = pokelab_alt_op_a;
	EXPECT_EQ(t_dcall(), 0xb);
}

TEST_F(ApplyAlternatives, DirectCallToNopFuncBecomesNops)
{
	t_op_ptr = (int (*)(void))(void *)nop_func;
	apply_t1();
	EXPECT_EQ(bytes(t_site_dcall, 6), bytes(x86_nops[6], 6));
	EXPECT_EQ(t_dcall(), 0x77);
}

TEST_F(ApplyAlternatives, NotPatchedPaddingIsNormalised)
{
	/* The program's FSRM copy site: "rep movsb" + three 0x90 -> rep movsb + NOP3 when FSRM */
	if (!boot_cpu_has(X86_FEATURE_FSRM))
		GTEST_SKIP() << "host CPU has no FSRM";
	EXPECT_EQ(bytes(pokelab_site_copy, 5),
		  (std::vector<u8>{0xf3, 0xa4, 0x0f, 0x1f, 0x00}));
}

TEST_F(ApplyAlternatives, ProgramSitesTakeTheHardwareSide)
{
	unsigned long sw = pokelab_sw_hweight_calls;

	EXPECT_EQ(pokelab_hweight32(0xf0f00001u), 9u);
	EXPECT_EQ(pokelab_static_has_popcnt(), boot_cpu_has(X86_FEATURE_POPCNT));
	if (boot_cpu_has(X86_FEATURE_POPCNT)) {
		EXPECT_EQ(pokelab_sw_hweight_calls, sw) << "POPCNT present: no software call";
	}
	EXPECT_EQ(pokelab_alt_rip_load(), 222) << "SSE2 side of the RIP-relative site";
	EXPECT_EQ(pokelab_alt_direct_call(), 0xa);
	EXPECT_EQ(pokelab_alt_level(), boot_cpu_has(X86_FEATURE_AVX2) ? 2 : 1);
}

/* Boot with clearcpuid=: the program's sites take the other side. */
class ClearCpuid : public pokelab::test::Booted
{
protected:
	std::string extraParams() const override { return "clearcpuid=popcnt,fsrm,avx2,sse2"; }
};

TEST_F(ClearCpuid, FlipsProgramSites)
{
	unsigned long sw = pokelab_sw_hweight_calls;
	unsigned long alt = pokelab_copy_alternative_calls;
	char src[32] = "clearcpuid flips the copy site", dst[32] = {};

	EXPECT_FALSE(boot_cpu_has(X86_FEATURE_POPCNT));
	EXPECT_EQ(pokelab_hweight32(0xf0f00001u), 9u);
	EXPECT_EQ(pokelab_sw_hweight_calls, sw + 1) << "popcnt cleared: the CALL must run";
	EXPECT_FALSE(pokelab_static_has_popcnt());

	pokelab_copy(dst, src, sizeof(src));
	EXPECT_STREQ(dst, src);
	EXPECT_EQ(pokelab_copy_alternative_calls, alt + 1) << "fsrm cleared: ALT_NOT side";

	EXPECT_EQ(pokelab_alt_level(), 0) << "sse2 and avx2 cleared: original";
	EXPECT_EQ(pokelab_alt_rip_load(), 111) << "sse2 cleared: original RIP-relative load";
}

class ClearCpuidAvx2 : public pokelab::test::Booted
{
protected:
	std::string extraParams() const override { return "clearcpuid=avx2"; }
};

TEST_F(ClearCpuidAvx2, NestedSiteFallsBackToFirstEntry)
{
	EXPECT_EQ(pokelab_alt_level(), 1);
}

class ClearCpuidByNumber : public pokelab::test::Booted
{
protected:
	/* 4*32+23 = 151 = POPCNT; XSAVE takes AVX, AVX2, XSAVEOPT/C/S with it */
	std::string extraParams() const override { return "clearcpuid=151,xsave"; }
};

TEST_F(ClearCpuidByNumber, NumbersAndDependents)
{
	EXPECT_FALSE(boot_cpu_has(X86_FEATURE_POPCNT));
	EXPECT_FALSE(boot_cpu_has(X86_FEATURE_XSAVE));
	EXPECT_FALSE(boot_cpu_has(X86_FEATURE_AVX));
	EXPECT_FALSE(boot_cpu_has(X86_FEATURE_AVX2));
	EXPECT_FALSE(boot_cpu_has(X86_FEATURE_XSAVEOPT));
	EXPECT_FALSE(boot_cpu_has(X86_FEATURE_XSAVES));
	EXPECT_TRUE(boot_cpu_has(X86_FEATURE_ALWAYS));
	EXPECT_EQ(boot_cpu_has(X86_FEATURE_XMM2), pokelab::x86FeatureInHardware(X86_FEATURE_XMM2));
}

TEST(ClearCpuidParam, RejectsUnknownNamesAndAlways)
{
	std::string err;

	EXPECT_EQ(kshim::boot("nr_cpus=2 clearcpuid=popcnt,nosuch", &err, true), -EINVAL);
	EXPECT_NE(err.find("clearcpuid=popcnt,nosuch: unknown feature 'nosuch'"),
		  std::string::npos) << err;
	err.clear();
	EXPECT_EQ(kshim::boot("nr_cpus=2 clearcpuid=always", &err, true), -EINVAL);
	EXPECT_NE(err.find("cannot be cleared"), std::string::npos) << err;
	err.clear();
	EXPECT_EQ(kshim::boot("nr_cpus=2 clearcpuid=99999", &err, true), -EINVAL);
	EXPECT_NE(err.find("unknown feature '99999'"), std::string::npos) << err;
	err.clear();
	EXPECT_EQ(kshim::boot("nr_cpus=2 debug-alternative=zz", &err, true), -EINVAL);
	EXPECT_NE(err.find("debug-alternative=zz"), std::string::npos) << err;
	EXPECT_FALSE(kshim::booted());
}

TEST(CpuFeatures, MatchRawCpuid)
{
	unsigned int a, b, c, d;

	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1), "c"(0));
	EXPECT_EQ(pokelab::x86FeatureInHardware(X86_FEATURE_POPCNT), !!(c & (1u << 23)));
	EXPECT_EQ(pokelab::x86FeatureInHardware(X86_FEATURE_XMM2), !!(d & (1u << 26)));
	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
	EXPECT_EQ(pokelab::x86FeatureInHardware(X86_FEATURE_ERMS), !!(b & (1u << 9)));
	EXPECT_EQ(pokelab::x86FeatureInHardware(X86_FEATURE_SERIALIZE), !!(d & (1u << 14)));
	EXPECT_EQ(pokelab::x86FeatureInHardware(X86_FEATURE_RDPID), !!(c & (1u << 22)));
	EXPECT_TRUE(pokelab::x86FeatureInHardware(X86_FEATURE_ALWAYS));
	EXPECT_STREQ(pokelab::x86FeatureName(X86_FEATURE_XMM3), "pni");
	EXPECT_EQ(pokelab::x86FeatureLookup("sse4_2"), X86_FEATURE_XMM4_2);
}

/*
 * Bug replay: "x86/alternative: Patch a single alternative location only
 * once" (J. Gross; tip a4233c21e773, Jan 2026). Two matching entries for
 * one site, the DIRECT_CALL one second. Patched once, the site becomes a
 * direct call to what the indirect call's pointer held. Patched per entry
 * (the v6.16 loop), the first entry overwrote the FF 15 call, and the
 * DIRECT_CALL entry BUGs on "unrecognized indirect call".
 */
static void replay_single_location_once(bool bug)
{
	s32 rel;

	pokelab_alt_bugs.per_entry_patching_a4233c21e773 = bug;
	apply_alternatives(__start_altinstr_replay, __stop_altinstr_replay);
	pokelab_alt_bugs.per_entry_patching_a4233c21e773 = false;

	ASSERT_EQ(t_site_replay[0], 0xe8);
	memcpy(&rel, t_site_replay + 1, 4);
	EXPECT_EQ((const void *)(t_site_replay + 5 + rel), (const void *)pokelab_alt_op_a);
	EXPECT_EQ(t_replay(), 0xa);
}

using BugReplay = ApplyAlternatives;

TEST_F(BugReplay, PatchSingleAlternativeLocationOnce)
{
	replay_single_location_once(false);
}

TEST_F(BugReplay, PatchSingleAlternativeLocationOnce_BugPutBackIsCaught)
{
	EXPECT_DEATH(replay_single_location_once(true),
		     "ALT_FLAG_DIRECT_CALL set for unrecognized indirect call");
}

/*
 * Bug replay: "x86/alternatives: Sync core before enabling interrupts"
 * (T. Gleixner, Dec 2023; 0160a5454e54 in 6.6.9). CPU 1 sends CPU 0 an
 * IPI right after text_poke_early()'s write, while CPU 0 has interrupts
 * off. The IPI runs when CPU 0 re-enables them; it must find CPU 0 already
 * serialised. With the old order (IRQs restored, then sync_core()) it runs
 * in the window, on unserialised text.
 */
extern "C" u8 t_tpe_target[];
asm(".pushsection .text, \"ax\", @progbits\n"
    ".globl t_tpe_target\n"
    "t_tpe_target:\n"
    "	.byte 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90\n"
    "	ret\n"
    ".popsection\n");

namespace {

struct TpeWindow {
	bool ran;
	bool unsynced;		/* CPU 0 still owed a sync_core() when the IPI ran */
	unsigned long ipis0;
} tpe;

void tpe_ipi(void *)
{
	tpe.unsynced = pokelab::textPokeEarlyUnsynced(smp_processor_id());
	tpe.ran = true;
}

void tpe_after_write(void)
{
	/* CPU 0, IRQs off: have CPU 1 send us an IPI and wait until it is pending. */
	kshim::cpuRun(1, [] { smp_call_function_single(0, tpe_ipi, nullptr, 0); });
	kshim::cpuWait(1);
	while (kshim::cpuStats(0).ipiReceived == tpe.ipis0)
		__builtin_ia32_pause();
	EXPECT_FALSE(tpe.ran) << "the IPI must be held off while text_poke_early() has IRQs off";
}

} /* namespace */

static void replay_sync_core_before_irq_enable(bool bug)
{
	static const u8 nops[8] = {0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90};

	/* eight one-byte NOPs to start from, so that the write below changes them */
	text_poke_early(t_tpe_target, nops, 8);
	tpe = {};
	tpe.ipis0 = kshim::cpuStats(0).ipiReceived;
	pokelab_alt_bugs.irq_before_sync_0160a5454e54 = bug;
	pokelab_alt_bugs.text_poke_early_after_write = tpe_after_write;
	text_poke_early(t_tpe_target, x86_nops[8], 8);
	pokelab_alt_bugs.text_poke_early_after_write = nullptr;
	pokelab_alt_bugs.irq_before_sync_0160a5454e54 = false;

	EXPECT_TRUE(tpe.ran) << "the held-off IPI must run when text_poke_early() re-enables IRQs";
	EXPECT_FALSE(tpe.unsynced)
		<< "an interrupt ran after the text write but before sync_core()";
	EXPECT_FALSE(pokelab::textPokeEarlyUnsynced(0));
}

TEST_F(BugReplay, Fix0160a5454e54SyncCoreBeforeIrqEnable)
{
	replay_sync_core_before_irq_enable(false);
}

TEST_F(BugReplay, Fix0160a5454e54SyncCoreBeforeIrqEnable_BugPutBackIsCaught)
{
	EXPECT_NONFATAL_FAILURE(replay_sync_core_before_irq_enable(true),
				"before sync_core()");

	/*
	 * The cross-modifying-code model sees it too, from the events alone:
	 * CPU 0 enabled IRQs (and so could run any text) before serialising
	 * after its own write of NOP8 over eight NOP1s.
	 */
	kshim::xmcQuiesce();
	ASSERT_GE(kshim::xmcStats().violations, 1u);
	kshim::XmcViolation v = kshim::xmcViolations()[0];
	EXPECT_EQ(v.rule, kshim::XmcRule::Torn) << kshim::xmcFormat(v);
	EXPECT_EQ(v.cpu, 0);
	EXPECT_GE(v.site, (unsigned long)t_tpe_target);
	EXPECT_LT(v.site, (unsigned long)t_tpe_target + 8);
	expectXmcViolations();
}
