// SPDX-License-Identifier: GPL-2.0-only
/*
 * Boot-time alternatives: apply_alternatives(), the NOP optimiser, the
 * relocation of copied replacements and the DIRECT_CALL rewrite.
 *
 * After arch/x86/kernel/alternative.c, v7.3, whose apply_alternatives()
 * has J. Gross's "patch a single alternative location only once" structure
 * (analyze_patch_site() / prep_patch_site() / patch_site(); 544b4e15ed10
 * and a4233c21e773). The v6.16 per-entry loop is kept behind a test-only
 * switch so that bug replay 7.19 can show what it broke.
 *
 * Deviations (each marked "userspace:" below):
 *  - boot() may run many times in one process (tests do), so the original
 *    bytes of the program's own sites are saved before the first patching
 *    and put back before each later boot patches again: every boot starts
 *    from the text the compiler emitted, with that boot's clearcpuid=;
 *  - instructions are decoded with Zydis, reading only the buffer's bytes;
 *    insn_is_nop() (arch/x86/lib/insn-eval.c since v6.19) reads the bytes
 *    too, for what pokelab's struct insn does not keep;
 *  - debug-alternative prints a Zydis disassembly beside the bytes, once
 *    per site after its write, instead of DPRINTK()/DUMP_BYTES();
 *  - no KASAN to switch off, no paravirt, CFI or call thunks; the
 *    retpoline and return passes are apply_returns.cpp's.
 */
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <Zydis/Zydis.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <asm/alternative.h>
#include <asm/cpufeature.h>
#include <asm/insn.h>
#include <asm/nops.h>
#include <asm/text-patching.h>
#include <kernel_shim/boot.h>
#include <linux/bug.h>
#include <linux/static_call.h>
#include <linux/kdebug.h>
#include <linux/percpu.h>
#include <linux/printk.h>
#include <linux/smp.h>
#include <kernel_shim/busted.h>
#include <kernel_shim/disasm.h>
#include <kernel_shim/machine.h>
#include <kernel_shim/xmc.h>
#include <linux/irqflags.h>
#include <pokelab/alt_batch.h>
#include <pokelab/alt_test.h>
#include <pokelab/alt_text.h>

int debug_alternative;

struct pokelab_alt_switches pokelab_alt_bugs;

static struct {
	unsigned long sites;
	unsigned long patched;
	unsigned long original;
} alt_stats;

/* userspace: per-CPU "text written by text_poke_early(), sync_core() not yet run" */
static DEFINE_PER_CPU(int, text_poke_early_unsynced);

void pokelab_text_poke_early_written(void)
{
	WRITE_ONCE(*this_cpu_ptr(&text_poke_early_unsynced), 1);
	if (pokelab_alt_bugs.text_poke_early_after_write)
		pokelab_alt_bugs.text_poke_early_after_write();
}

void pokelab_text_poke_early_synced(void)
{
	WRITE_ONCE(*this_cpu_ptr(&text_poke_early_unsynced), 0);
}

/*
 * BUG_func() is what an ALT_CALL_INSTR replacement calls before it is
 * re-aimed; reaching it means a DIRECT_CALL site ran unpatched.
 */
/* Port of BUG_func(), arch/x86/kernel/alternative.c, v7.3 */
extern "C" __noinline void BUG_func(void)
{
	BUG();
}

/* userspace: hand-written so that it really is "nothing at all"; a site calling it becomes NOPs */
asm(".pushsection .text, \"ax\", @progbits\n"
    ".globl nop_func\n"
    ".type nop_func, @function\n"
    "nop_func:\n"
    "	ret\n"
    ".size nop_func, .-nop_func\n"
    ".popsection\n");

/* Port of instr_va(), arch/x86/kernel/alternative.c, v7.3 */
static inline u8 *instr_va(struct alt_instr *i)
{
	return (u8 *)&i->instr_offset + i->instr_offset;
}

static inline u8 *repl_va(struct alt_instr *i)
{
	return (u8 *)&i->repl_offset + i->repl_offset;
}

/* Port of add_nop(), arch/x86/kernel/alternative.c, v7.3 */
static void add_nop(u8 *buf, unsigned int len)
{
	u8 *target = buf + len;

	if (!len)
		return;

	if (len <= ASM_NOP_MAX) {
		memcpy(buf, x86_nops[len], len);
		return;
	}

	/* Longer than one NOP: jump over the rest, which becomes INT3s nobody runs. */
	if (len < 128) {
		__text_gen_insn(buf, JMP8_INSN_OPCODE, buf, target, JMP8_INSN_SIZE);
		buf += JMP8_INSN_SIZE;
	} else {
		__text_gen_insn(buf, JMP32_INSN_OPCODE, buf, target, JMP32_INSN_SIZE);
		buf += JMP32_INSN_SIZE;
	}

	for (; buf < target; buf++)
		*buf = INT3_INSN_OPCODE;
}

/*
 * insn_is_nop()'s rules, arch/x86/lib/insn-eval.c, v7.3 (8a5c6cbfe4a3, v6.19,
 * made it one function for alternatives and uprobes and took it out of
 * alternative.c): NOP but neither PAUSE (REP NOP) nor XCHG with a REX.B
 * register, NOPL /0, a native-size MOV %reg,%reg, LEA 0(%reg),%reg with no
 * prefix but DS, and JMP +0; nothing VEX, EVEX or XOP encoded. It must never
 * call a real instruction a NOP (optimize_nops() folds what it accepts into
 * one NOP); missing one is harmless.
 * userspace: pokelab's struct insn (asm/insn.h) keeps no prefix, REX, ModRM
 * or SIB bytes and no operand size, so the instruction's bytes at @kaddr are
 * read with Zydis; no REX2 (Zydis does not decode APX, so such an
 * instruction never gets here).
 */
static bool insn_is_nop(struct insn *insn, const u8 *kaddr)
{
	u8 b3 = 0, x3 = 0, r3 = 0;
	u8 modrm = 0, modrm_mod = 0, modrm_reg = 0, modrm_rm = 0;
	u8 sib = 0, sib_scale = 0, sib_index = 0;
	u8 rep = 0, only_ds = 1;
	ZydisDecodedInstruction zi;

	if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(kshim::zydisDecoder(), nullptr, kaddr,
							  insn->length, &zi)))
		return false;

	if (zi.attributes & (ZYDIS_ATTRIB_HAS_VEX | ZYDIS_ATTRIB_HAS_EVEX |
			     ZYDIS_ATTRIB_HAS_XOP | ZYDIS_ATTRIB_HAS_MVEX))
		return false;	/* VEX-encoded NOPs are not looked for */

	if (zi.attributes & ZYDIS_ATTRIB_HAS_REX) {
		r3 = zi.raw.rex.R;
		x3 = zi.raw.rex.X;
		b3 = zi.raw.rex.B;
	}

	if (zi.attributes & ZYDIS_ATTRIB_HAS_MODRM) {
		modrm_mod = zi.raw.modrm.mod;
		modrm_reg = zi.raw.modrm.reg + 8 * r3;
		modrm_rm = zi.raw.modrm.rm + 8 * b3;
		modrm = 1;
	}

	if (zi.attributes & ZYDIS_ATTRIB_HAS_SIB) {
		sib_scale = zi.raw.sib.scale;
		sib_index = zi.raw.sib.index + 8 * x3;
		modrm_rm = zi.raw.sib.base + 8 * b3;
		sib = 1;
	}

	/* the legacy prefixes (Zydis lists REX among them) */
	for (int k = 0; k < zi.raw.prefix_count; k++) {
		u8 p = zi.raw.prefixes[k].value;

		if ((p & 0xf0) == 0x40)
			continue;
		if (p == 0xf3)	/* REPE */
			rep = 1;
		if (p != 0x3e)	/* DS */
			only_ds = 0;
	}

	if (zi.opcode_map == ZYDIS_OPCODE_MAP_0F)
		return zi.opcode == 0x1f && modrm && modrm_reg == 0;	/* 0f 1f /0: NOPL */

	if (zi.opcode_map != ZYDIS_OPCODE_MAP_DEFAULT)
		return false;

	switch (zi.opcode) {
	case 0x89:	/* MOV */
		if (modrm_mod != 3)	/* register-direct */
			return false;
		if (zi.operand_width != 64)	/* native size */
			return false;
		return modrm_reg == modrm_rm;	/* MOV %reg, %reg */

	case 0x8d:	/* LEA */
		if (modrm_mod == 0 || modrm_mod == 3)	/* register-indirect with a displacement */
			return false;
		if (zi.operand_width != 64)
			return false;
		if (insn->displacement.value != 0)
			return false;
		if (sib && (sib_scale != 0 || sib_index != 4))	/* (%reg,%riz,1) */
			return false;
		if (!only_ds)
			return false;
		return modrm_reg == modrm_rm;	/* LEA 0(%reg), %reg */

	case 0x90:	/* NOP */
		if (b3)		/* XCHG %r8,%rax */
			return false;
		if (rep)	/* REP NOP is PAUSE */
			return false;
		return true;

	case 0xe9:	/* JMP.d32 */
	case 0xeb:	/* JMP.d8 */
		return insn->immediate.value == 0;	/* JMP +0 */

	default:
		return false;
	}
}

/* Port of skip_nops(), arch/x86/kernel/alternative.c, v7.3 */
static int skip_nops(u8 *buf, int offset, int len)
{
	struct insn insn;

	for (; offset < len; offset += insn.length) {
		/* userspace: decode only the buffer's bytes, not 15 past @offset */
		if (insn_decode(&insn, &buf[offset], len - offset, INSN_MODE_KERN))
			break;

		if (!insn_is_nop(&insn, &buf[offset]))	/* userspace: the bytes, as above */
			break;
	}

	return offset;
}

/*
 * Port of optimize_nops(), arch/x86/kernel/alternative.c, v7.3: each run of
 * NOPs becomes one NOP (add_nop(): one instruction, or a JMP over INT3s when
 * longer than ASM_NOP_MAX), except a NOP that already ends the buffer, which
 * is taken as optimised and ends the walk. A JMP before a run is left alone.
 * It only rewrites @buf: the caller writes the site once with
 * text_poke_early() (the temporary buffer of f796c7583762; never rewrite
 * live text in place). noinline, as upstream: the call is a control-flow
 * change after the write.
 */
__noinline void optimize_nops(const u8 *const instr, u8 *buf, size_t len)
{
	(void)instr;	/* userspace: upstream's only use is its DUMP_BYTES() of the run */

	for (int next, i = 0; i < (int)len; i = next) {	/* userspace: C++ -Wsign-compare */
		struct insn insn;

		/* userspace: decode only the buffer's bytes, not 15 past @i */
		if (insn_decode(&insn, &buf[i], len - i, INSN_MODE_KERN))
			return;

		next = i + insn.length;

		if (insn_is_nop(&insn, &buf[i])) {	/* userspace: the bytes, as above */
			int nop = i;

			/* a NOP that reaches the end: this buffer was optimised before */
			if (i + insn.length == (int)len)	/* userspace: as above */
				return;

			next = skip_nops(buf, next, len);

			add_nop(buf + nop, next - nop);
			/* userspace: no DUMP_BYTES(ALT); debug-alternative shows the site */
		}
	}
}

/* Port of need_reloc(), arch/x86/kernel/alternative.c, v7.3 */
static inline bool need_reloc(unsigned long offset, u8 *src, size_t src_len)
{
	u8 *target = src + offset;

	/* Inside the replacement (or just past it): moves with the copy. */
	return (target < src || target > src + src_len);
}

/*
 * apply_reloc_n(), the macro of arch/x86/kernel/alternative.c, v7.3: add @d_
 * to the @n_-bit displacement at @p_, BUG if the sum does not fit.
 * userspace: read and written with memcpy(): pokelab is built with strict
 * aliasing (the kernel with -fno-strict-aliasing) and the displacement is
 * unaligned.
 */
/* Port of apply_reloc_n(), arch/x86/kernel/alternative.c, v7.3 */
#define apply_reloc_n(n_, p_, d_)				\
	do {							\
		s##n_ x_;					\
		s32 v;						\
								\
		memcpy(&x_, (p_), sizeof(x_));			\
		v = x_;						\
		v += (d_);					\
		BUG_ON((v >> 31) != (v >> (n_ - 1)));		\
		x_ = (s##n_)v;					\
		memcpy((p_), &x_, sizeof(x_));			\
	} while (0)

/* Port of apply_reloc(), arch/x86/kernel/alternative.c, v7.3 */
static __always_inline void apply_reloc(int n, void *ptr, uintptr_t diff)
{
	switch (n) {
	case 1: apply_reloc_n(8, ptr, diff); break;
	case 2: apply_reloc_n(16, ptr, diff); break;
	case 4: apply_reloc_n(32, ptr, diff); break;
	default: BUG();
	}
}

/*
 * asm/insn.h's accessors for the offsets the relocation writes at.
 * userspace: pokelab's asm/insn.h keeps them as fields of struct insn.
 */
static inline int insn_offset_immediate(struct insn *insn)
{
	return insn->imm_offset;
}

static inline int insn_offset_displacement(struct insn *insn)
{
	return insn->disp_offset;
}

static inline int insn_rip_relative(struct insn *insn)
{
	return insn->rip_relative;
}

/* Port of __apply_relocation(), arch/x86/kernel/alternative.c, v7.3 */
static void __apply_relocation(u8 *buf, const u8 *const instr, size_t instrlen, u8 *repl,
			       size_t repl_len)
{
	for (int next, i = 0; i < (int)instrlen; i = next) {	/* userspace: C++ -Wsign-compare */
		struct insn insn;

		/* userspace: decode only the buffer's bytes, not 15 past @i */
		if (WARN_ON_ONCE(insn_decode(&insn, &buf[i], instrlen - i, INSN_MODE_KERN)))
			return;

		next = i + insn.length;

		switch (insn.opcode.bytes[0]) {
		case 0x0f:
			if (insn.opcode.bytes[1] < 0x80 ||
			    insn.opcode.bytes[1] > 0x8f)
				break;

			[[fallthrough]];	/* Jcc.d32 */
		case 0x70 ... 0x7f:	/* Jcc.d8 */
		case JMP8_INSN_OPCODE:
		case JMP32_INSN_OPCODE:
		case CALL_INSN_OPCODE:
			if (need_reloc(next + insn.immediate.value, repl, repl_len)) {
				apply_reloc(insn.immediate.nbytes,
					    buf + i + insn_offset_immediate(&insn),
					    repl - instr);
			}

			/* A JMP32 whose new displacement fits a byte becomes JMP8 + INT3s. */
			if (insn.opcode.bytes[0] == JMP32_INSN_OPCODE) {
				s32 imm = insn.immediate.value;

				/*
				 * As upstream: the block distance is added even when
				 * the target was inside the replacement (not
				 * relocated); see docs/alternatives.md.
				 */
				imm += repl - instr;
				imm += JMP32_INSN_SIZE - JMP8_INSN_SIZE;
				if ((imm >> 31) == (imm >> 7)) {
					buf[i + 0] = JMP8_INSN_OPCODE;
					buf[i + 1] = (s8)imm;

					memset(&buf[i + 2], INT3_INSN_OPCODE, insn.length - 2);
				}
			}
			break;
		}

		if (insn_rip_relative(&insn)) {
			if (need_reloc(next + insn.displacement.value, repl, repl_len)) {
				apply_reloc(insn.displacement.nbytes,
					    buf + i + insn_offset_displacement(&insn),
					    repl - instr);
			}
		}
	}
}

/* Port of text_poke_apply_relocation(), arch/x86/kernel/alternative.c, v7.3 */
void text_poke_apply_relocation(u8 *buf, const u8 *const instr, size_t instrlen, u8 *repl,
				size_t repl_len)
{
	__apply_relocation(buf, instr, instrlen, repl, repl_len);
	optimize_nops(instr, buf, instrlen);
}

/* Port of CALL_RIP_REL_OPCODE(), arch/x86/kernel/alternative.c, v7.3 */
#define CALL_RIP_REL_OPCODE	0xff
/* Port of CALL_RIP_REL_MODRM(), arch/x86/kernel/alternative.c, v7.3 */
#define CALL_RIP_REL_MODRM	0x15

/*
 * Port of alt_replace_call(), arch/x86/kernel/alternative.c, v7.3: the
 * site is "call *disp(%rip)" (ff 15 disp32, 6 bytes), the replacement
 * "call BUG_func"; re-aim the CALL at the function the indirect call's
 * pointer holds now. Returns the bytes to keep (5), or 0 if the target is
 * nop_func (the site becomes NOPs).
 */
static unsigned int alt_replace_call(u8 *instr, u8 *insn_buff, struct alt_instr *a)
{
	void *target, *bug = (void *)&BUG_func;	/* userspace: C++ cast */
	s32 disp;

	if (a->replacementlen != 5 || insn_buff[0] != CALL_INSN_OPCODE) {
		pr_err("ALT_FLAG_DIRECT_CALL set for a non-call replacement instruction\n");
		BUG();
	}

	if (a->instrlen != 6 ||
	    instr[0] != CALL_RIP_REL_OPCODE ||
	    instr[1] != CALL_RIP_REL_MODRM) {
		pr_err("ALT_FLAG_DIRECT_CALL set for unrecognized indirect call\n");
		BUG();
	}

	/* The disp32 after ff 15; the pointer sits at the next instruction + disp. */
	memcpy(&disp, instr + 2, sizeof(disp));	/* userspace: memcpy, see apply_reloc_n() */
	/* userspace: x86-64 only (the kernel's CONFIG_X86_64 branch); memcpy as above */
	memcpy(&target, instr + a->instrlen + disp, sizeof(target));
	if (!target)
		target = bug;

	/* The CALL aims at BUG_func; move it by (target - BUG_func). */
	/* userspace: memcpy as above, and no void * arithmetic */
	{
		s32 rel;

		memcpy(&rel, insn_buff + 1, sizeof(rel));
		rel += (u8 *)target - (u8 *)bug;
		memcpy(insn_buff + 1, &rel, sizeof(rel));
	}

	if (target == (void *)&nop_func)	/* userspace: C++ cast */
		return 0;

	return 5;
}

/* Print one labelled byte dump with its disassembly (debug-alternative). */
static void dump_insns(const char *label, const u8 *bytes, size_t len, const u8 *runtime_addr)
{
	std::vector<std::string> lines =
		pokelab::disassemble(bytes, len, (unsigned long)runtime_addr);
	std::string hex;

	for (size_t k = 0; k < len; k++)
		hex += fmt::format("{}{:02x}", k ? " " : "", bytes[k]);
	pr_info("{:>12}: {}\n", label, hex);
	for (const std::string &l : lines)
		pr_info("{:>12}  {}\n", "", l);
}

static std::string site_name(const void *addr)
{
	Dl_info info;

	if (dladdr(addr, &info) && info.dli_sname)
		return fmt::format("{}+{:#x}", info.dli_sname,
				   (unsigned long)addr - (unsigned long)info.dli_saddr);
	return fmt::format("{}", addr);
}

static std::string feature_label(unsigned int cpuid)
{
	/* X86_FEATURE_ALWAYS has no /proc/cpuinfo name: say what it is */
	const char *name = cpuid == X86_FEATURE_ALWAYS ? "X86_FEATURE_ALWAYS"
						       : pokelab::x86FeatureName(cpuid);

	return fmt::format("{}*32+{}{}", cpuid >> 5, cpuid & 0x1f,
			   name ? fmt::format(" ({})", name) : std::string());
}

/* A site and the one entry (if any) that will patch it. */
/* Port of struct patch_site, arch/x86/kernel/alternative.c, v7.3 */
struct patch_site {
	u8 *instr;
	struct alt_instr *alt;	/* NULL: keep the original */
	u8 buff[MAX_PATCH_LEN];
	u8 len;
};

/*
 * Port of analyze_patch_site(), arch/x86/kernel/alternative.c, v7.3 (since
 * a4233c21e773): walk every entry of the site at @start (nested alternatives are
 * consecutive entries with one address), take the longest padding, and pick
 * the last entry whose feature test passes. Returns the first entry of the
 * next site.
 */
static struct alt_instr *analyze_patch_site(struct patch_site *ps, struct alt_instr *start,
					    struct alt_instr *end)
{
	struct alt_instr *alt = start;

	ps->instr = instr_va(start);

	for (; alt < end && instr_va(alt) == ps->instr; alt++) {
		ps->len = std::max(ps->len, alt->instrlen);	/* userspace: no kernel max() */

		BUG_ON(alt->cpuid >= (NCAPINTS + NBUGINTS) * 32);

		/* Feature present, or absent with ALT_FLAG_NOT: this entry applies. */
		if (!boot_cpu_has(alt->cpuid) !=
		    !(alt->flags & ALT_FLAG_NOT && !BUSTED(ALT_NOT_IGNORED))) /* userspace: BUSTED */
			ps->alt = alt;
	}

	BUG_ON(ps->len > sizeof(ps->buff));

	return alt;
}

/*
 * Port of prep_patch_site(), arch/x86/kernel/alternative.c, v7.3 (since
 * 544b4e15ed10): build the site's new bytes in ps->buff: the original, or the chosen
 * replacement (DIRECT_CALL re-aimed), padded with 0x90 and relocated.
 */
static void prep_patch_site(struct patch_site *ps)
{
	struct alt_instr *alt = ps->alt;
	u8 buff_sz;
	u8 *repl;

	if (!alt) {
		/* Nothing applies: the original, whose padding optimize_nops() will tidy. */
		memcpy(ps->buff, ps->instr, ps->len);
		return;
	}

	repl = (u8 *)&alt->repl_offset + alt->repl_offset;
	/* userspace: no DPRINTK(ALT); account_site() prints the site once written */

	memcpy(ps->buff, repl, alt->replacementlen);
	buff_sz = alt->replacementlen;

	if (alt->flags & ALT_FLAG_DIRECT_CALL)
		buff_sz = alt_replace_call(ps->instr, ps->buff, alt);

	for (; buff_sz < ps->len; buff_sz++)
		ps->buff[buff_sz] = 0x90;

	__apply_relocation(ps->buff, ps->instr, ps->len, repl, alt->replacementlen);

	/* userspace: no DUMP_BYTES(ALT) of old, rpl and final; account_site() prints them */
}

/* Port of patch_site(), arch/x86/kernel/alternative.c, v7.3 (since 544b4e15ed10) */
static void patch_site(struct patch_site *ps)
{
	optimize_nops(ps->instr, ps->buff, ps->len);
	text_poke_early(ps->instr, ps->buff, ps->len);
}

/* Count the site for altStats() and print it (debug-alternative) once written. */
static void account_site(struct patch_site *ps, const u8 *old)
{
	struct alt_instr *a = ps->alt;

	alt_stats.sites++;
	if (a)
		alt_stats.patched++;
	else
		alt_stats.original++;

	if (!(debug_alternative & DA_ALT))
		return;

	if (a) {
		pr_info("alt: site {} {} len {}: feat {} flags {:#x}: replacement\n",
			(void *)ps->instr, site_name(ps->instr), ps->len, feature_label(a->cpuid),
			(unsigned int)a->flags);
		dump_insns("old_insn", old, ps->len, ps->instr);
		dump_insns("rpl_insn", repl_va(a), a->replacementlen, repl_va(a));
	} else {
		pr_info("alt: site {} {} len {}: no entry applies: original\n",
			(void *)ps->instr, site_name(ps->instr), ps->len);
		dump_insns("old_insn", old, ps->len, ps->instr);
	}
	dump_insns("final_insn", ps->instr, ps->len, ps->instr);
}

/*
 * Port of the v6.16 loop body of apply_alternatives(): every entry patches
 * its site in turn. Only for the bug replay of a4233c21e773 (test switch).
 */
static void apply_alternatives_per_entry(struct alt_instr *start, struct alt_instr *end)
{
	u8 insn_buff[MAX_PATCH_LEN];
	u8 *instr, *replacement;
	struct alt_instr *a, *b;

	for (a = start; a < end; a++) {
		unsigned int insn_buff_sz = 0;

		/* Nested sites: every entry of the site gets the longest padding. */
		for (b = a + 1; b < end && instr_va(b) == instr_va(a); b++) {
			u8 len = std::max(a->instrlen, b->instrlen);

			a->instrlen = b->instrlen = len;
		}

		instr = instr_va(a);
		replacement = repl_va(a);
		BUG_ON(a->instrlen > sizeof(insn_buff));
		BUG_ON(a->cpuid >= (NCAPINTS + NBUGINTS) * 32);

		if (!boot_cpu_has(a->cpuid) == !(a->flags & ALT_FLAG_NOT)) {
			memcpy(insn_buff, instr, a->instrlen);
			optimize_nops(instr, insn_buff, a->instrlen);
			text_poke_early(instr, insn_buff, a->instrlen);
			continue;
		}

		memcpy(insn_buff, replacement, a->replacementlen);
		insn_buff_sz = a->replacementlen;

		if (a->flags & ALT_FLAG_DIRECT_CALL)
			insn_buff_sz = alt_replace_call(instr, insn_buff, a);

		for (; insn_buff_sz < a->instrlen; insn_buff_sz++)
			insn_buff[insn_buff_sz] = 0x90;

		text_poke_apply_relocation(insn_buff, instr, a->instrlen, replacement,
					   a->replacementlen);

		text_poke_early(instr, insn_buff, insn_buff_sz);
	}
}

/*
 * Port of apply_alternatives(), arch/x86/kernel/alternative.c, v7.3: each
 * site is analysed over all its entries, built once in a buffer, and
 * written once. Entries must be grouped by site (the assembler emits nested
 * ones consecutively); the table is walked in order, so of two entries that
 * both apply the later one wins.
 */
__noinline void apply_alternatives(struct alt_instr *start, struct alt_instr *end)
{
	struct alt_instr *a;

	/* userspace: DPRINTK(ALT)'s line, with the entry count and the replay switch */
	if (debug_alternative & DA_ALT)
		pr_info("alt: table {} -> {} ({} entries){}\n", (void *)start, (void *)end,
			end - start,
			pokelab_alt_bugs.per_entry_patching_a4233c21e773
				? " [per-entry patching: a4233c21e773 put back]" : "");

	/* userspace: no KASAN to switch off around the loop */

	/* userspace: test switch, the v6.16 per-entry loop for bug replay 7.19 */
	if (pokelab_alt_bugs.per_entry_patching_a4233c21e773) {
		apply_alternatives_per_entry(start, end);
		return;
	}

	a = start;
	while (a < end) {
		/* userspace: every member named, for g++'s -Wmissing-field-initializers */
		struct patch_site ps = {
			.instr = NULL,
			.alt = NULL,
			.buff = {},
			.len = 0
		};
		u8 old[MAX_PATCH_LEN];	/* userspace: the bytes before, for debug-alternative */

		a = analyze_patch_site(&ps, a, end);
		memcpy(old, ps.instr, ps.len);	/* userspace: as above */
		prep_patch_site(&ps);
		patch_site(&ps);
		account_site(&ps, old);	/* userspace: pokelab's counters, debug-alternative */
	}

	/* userspace: no KASAN to switch back on */
}

/*
 * pokelab experiment (case 004), not a port: the apply_alternatives() pass
 * with the serialisation made explicit, so that one sync_core() per site
 * (what text_poke_early() does upstream) can be set against one for the
 * whole pass under IRQs off. Batching was proposed but never merged
 * (kernel-map.md 2.5). Each site goes through the same
 * analyze_patch_site() / prep_patch_site() / optimize_nops() steps as
 * apply_alternatives(); only the write and the sync differ.
 */
void pokelab_apply_alternatives_pass(const struct pokelab_alt_table *tables, int nr,
				     struct pokelab_alt_pass *pass)
{
	unsigned long flags = 0;

	/* One operation for the cross-modifying-code model: the pass returns once, at the end. */
	kshim::xmcOpBegin("apply_alternatives pass");
	/* userspace: held so that the text's rw view lives for the pass (pokelab/text_alias.h) */
	mutex_lock(&text_mutex);
	if (pass->batched)
		local_irq_save(flags);

	for (int t = 0; t < nr; t++) {
		struct alt_instr *a = tables[t].start;

		while (a < tables[t].end) {
			struct patch_site ps = {};

			a = analyze_patch_site(&ps, a, tables[t].end);
			prep_patch_site(&ps);
			optimize_nops(ps.instr, ps.buff, ps.len);

			if (pass->batched) {
				pokelab_text_poke_early_write(ps.instr, ps.buff, ps.len);
			} else {
				/* text_poke_early()'s steps, with the pass's sync_core() flavour */
				local_irq_save(flags);
				pokelab_text_poke_early_write(ps.instr, ps.buff, ps.len);
				pass->sync();
				pass->syncs++;
				pokelab_text_poke_early_synced();
				local_irq_restore(flags);
			}
			pass->sites++;
		}
	}

	if (pass->batched) {
		/* One serialisation covers every write above; IRQs stayed off since the first. */
		pass->sync();
		pass->syncs++;
		pokelab_text_poke_early_synced();
		local_irq_restore(flags);
	}
	mutex_unlock(&text_mutex);
	kshim::xmcOpEnd();
}

/*
 * alt_reloc_selftest(), arch/x86/kernel/alternative.c, v6.16, in pokelab's
 * form: an ALWAYS alternative whose replacement loads a RIP-relative
 * address and then calls a function (a CALL that is not the first
 * instruction). Both must reach the right place after being copied.
 */
extern "C" {
int __alt_reloc_selftest_addr;
void *alt_reloc_selftest_arg;	/* what __alt_reloc_selftest() was given */
unsigned long alt_reloc_selftest_calls;
void __alt_reloc_selftest(void);
}

/*
 * __alt_reloc_selftest: record %rdi and count the call; clobbers nothing
 * but flags (hand-written so that the asm site below needs no clobbers).
 */
asm(".pushsection .text, \"ax\", @progbits\n"
    ".globl __alt_reloc_selftest\n"
    ".type __alt_reloc_selftest, @function\n"
    "__alt_reloc_selftest:\n"
    "	movq %rdi, alt_reloc_selftest_arg(%rip)\n"
    "	incq alt_reloc_selftest_calls(%rip)\n"
    "	ret\n"
    ".size __alt_reloc_selftest, .-__alt_reloc_selftest\n"
    ".popsection\n");

/* Runs the self-test site once; returns 0 if it reached the right addresses. */
/* Port of alt_reloc_selftest(), arch/x86/kernel/alternative.c, v7.3 */
extern "C" __noinline int alt_reloc_selftest(void)
{
	unsigned long calls = READ_ONCE(alt_reloc_selftest_calls);

	WRITE_ONCE(alt_reloc_selftest_arg, nullptr);
	/* userspace: step over the red zone before the CALL pushes its return address */
	asm volatile("lea -128(%%rsp), %%rsp\n\t"
		     ALTERNATIVE("", "lea %[mem], %%rdi; call __alt_reloc_selftest",
				 X86_FEATURE_ALWAYS)
		     "\n\tlea 128(%%rsp), %%rsp"
		     : : [mem] "m" (__alt_reloc_selftest_addr) : "rdi", "memory");

	if (WARN_ON(READ_ONCE(alt_reloc_selftest_calls) != calls + 1))
		return -EINVAL;
	if (WARN_ON(READ_ONCE(alt_reloc_selftest_arg) != &__alt_reloc_selftest_addr))
		return -EINVAL;
	return 0;
}

/*
 * int3_selftest(), arch/x86/kernel/alternative.c, v7.3: the trap path works
 * before anything relies on it. int3_selftest_asm() is an INT3 padded with
 * NOPs to a CALL's size, then RET; a die notifier, last in the chain,
 * claims exactly that INT3 and emulates "call int3_selftest_callee", which
 * stores 0x1234 through its argument. val == 0x1234 proves the trap
 * reported the byte after the INT3, the emulated CALL pushed the right
 * return address (past the 5-byte slot) and the push did not corrupt the
 * interrupted frame.
 * userspace: in .text, not .init.text (boot runs many times); no
 * ANNOTATE_NOENDBR (no IBT). int3_selftest_asm() is a function of its own,
 * so the push lands below a stack pointer with nothing live under it: no
 * red zone to step over.
 */
extern "C" void int3_selftest_asm(unsigned int *ptr);

asm(".pushsection .text, \"ax\", @progbits\n"
    ".type int3_selftest_asm, @function\n"
    "int3_selftest_asm:\n\t"
    "int3; nop; nop; nop; nop\n\t"
    "ret\n"
    ".size int3_selftest_asm, . - int3_selftest_asm\n"
    ".popsection\n");

extern "C" void int3_selftest_callee(unsigned int *ptr);

/* int3_selftest_callee(ptr): *ptr = 0x1234, in asm so that it clobbers nothing else */
asm(".pushsection .text, \"ax\", @progbits\n"
    ".type int3_selftest_callee, @function\n"
    "int3_selftest_callee:\n\t"
    "movl $0x1234, (%rdi)\n\t"
    "ret\n"
    ".size int3_selftest_callee, . - int3_selftest_callee\n"
    ".popsection\n");

/* include/linux/compiler.h's: the compiler may not assume what @var holds */
#ifndef OPTIMIZER_HIDE_VAR
#define OPTIMIZER_HIDE_VAR(var) __asm__ ("" : "=r" (var) : "0" (var))
#endif

/* Port of int3_exception_notify(), arch/x86/kernel/alternative.c, v7.3 */
static int int3_exception_notify(struct notifier_block *self, unsigned long val, void *data)
{
	unsigned long selftest = (unsigned long)&int3_selftest_asm;
	struct die_args *args = (struct die_args *)data;	/* userspace: C++ cast */
	struct pt_regs *regs = args->regs;
	unsigned long ip;

	(void)self;	/* userspace: -Wunused-parameter */
	OPTIMIZER_HIDE_VAR(selftest);

	if (!regs || user_mode(regs))
		return NOTIFY_DONE;

	if (val != DIE_INT3)
		return NOTIFY_DONE;

	if (regs->ip - INT3_INSN_SIZE != selftest)
		return NOTIFY_DONE;

	/* userspace: test switch, an emulation that forgets the CALL: step over the slot */
	if (pokelab_alt_bugs.int3_selftest_no_call) {
		regs->ip += CALL_INSN_SIZE - INT3_INSN_SIZE;
		return NOTIFY_STOP;
	}

	ip = regs->ip - INT3_INSN_SIZE + CALL_INSN_SIZE;
	int3_emulate_call(regs, ip, (unsigned long)&int3_selftest_callee);
	return NOTIFY_STOP;
}

/* Port of int3_selftest(), arch/x86/kernel/alternative.c, v7.3 */
static __noinline void int3_selftest(void)
{
	/* userspace: not __initdata (every boot runs it); .next for -Wmissing-field-initializers */
	static struct notifier_block int3_exception_nb = {
		.notifier_call	= int3_exception_notify,
		.next		= NULL,
		.priority	= INT_MAX-1, /* last */
	};
	unsigned int val = 0;

	BUG_ON(register_die_notifier(&int3_exception_nb));

	/* int3_selftest_callee(&val), reached through the trap */
	int3_selftest_asm(&val);

	BUG_ON(val != 0x1234);

	unregister_die_notifier(&int3_exception_nb);
}

namespace pokelab {

void altTestReset() noexcept
{
	pokelab_alt_bugs = {};
}

void int3SelftestRun()
{
	int3_selftest();
}

bool textPokeEarlyUnsynced(int cpu) noexcept
{
	return READ_ONCE(*per_cpu_ptr(&text_poke_early_unsynced, cpu));
}

AltTextSnapshot::AltTextSnapshot(struct alt_instr *start, struct alt_instr *end)
{
	for (struct alt_instr *a = start; a < end; a++) {
		u8 *p = instr_va(a);

		sites_.push_back(Site{p, std::vector<u8>(p, p + a->instrlen)});
	}
}

void AltTextSnapshot::restore() const
{
	/* Every copy was taken before any patching, so the order does not matter. */
	for (const Site &s : sites_)
		if (memcmp(s.addr, s.bytes.data(), s.bytes.size()))
			text_poke_early(s.addr, s.bytes.data(), s.bytes.size());
}

const std::vector<u8> *AltTextSnapshot::original(const u8 *addr) const
{
	const std::vector<u8> *best = nullptr;

	/* nested entries may give the one site different lengths: the longest */
	for (const Site &s : sites_)
		if (s.addr == addr && (!best || s.bytes.size() > best->size()))
			best = &s.bytes;
	return best;
}

std::vector<std::string> disassemble(const u8 *bytes, size_t len, unsigned long addr)
{
	std::vector<std::string> out;
	size_t off = 0;

	while (off < len) {
		unsigned int l;
		std::string text = kshim::disasmOne(bytes + off, len - off, addr + off, &l);
		std::string hex;

		if (!l) {
			out.push_back(fmt::format("+{:<3} {:02x}  (bad)", off, bytes[off]));
			off++;
			continue;
		}
		for (unsigned int k = 0; k < l; k++)
			hex += fmt::format("{}{:02x}", k ? " " : "", bytes[off + k]);
		out.push_back(fmt::format("+{:<3} {:<32} {}", off, hex, text));
		off += l;
	}
	return out;
}

AltStats altStats() noexcept
{
	return AltStats{alt_stats.sites, alt_stats.patched, alt_stats.original};
}

} /* namespace pokelab */

namespace {

/* userspace: the program's own sites as the compiler emitted them (see the file comment) */
pokelab::AltTextSnapshot *pristine;

int setDebugAlternative(const char *val, std::string &err)
{
	char *endp;
	long mask;

	if (!val) {
		debug_alternative = DA_ALL;
		return 0;
	}
	errno = 0;
	mask = strtol(val, &endp, 0);
	if (errno || !*val || *endp || mask < 0 || mask > INT_MAX) {
		err = fmt::format("debug-alternative={}: expected debug-alternative or "
				  "debug-alternative=MASK (a number, 0x1 = alternatives)", val);
		return -EINVAL;
	}
	debug_alternative = (int)mask;
	return 0;
}

kshim::BootParamRegistrar debugAlternativeParam({
	"debug-alternative", setDebugAlternative, [] { debug_alternative = 0; },
	"debug-alternative[=MASK]: print every alternative site's old, replacement and "
	"final bytes with their disassembly",
});

/*
 * The alternatives step of alternative_instructions(), on CPU 0 before the
 * other CPUs start (after poking_init, which opens the writable alias; the
 * hooks run in registration order, and alternative.cpp links first).
 */
int alternativeInstructions(std::string &err)
{
	/*
	 * setup_arch()'s static_call_init(), before the alternatives as on x86
	 * (upstream it comes before poking_init(), whose writable alias pokelab's
	 * early writes need, so it is made here): apply_returns() below may then
	 * call static_call_force_reinit().
	 */
	/* userspace: the features the model reads the alternatives and RET forms with (R7) */
	kshim::xmcCpuCaps(boot_cpu_data.x86_capability, NCAPINTS + NBUGINTS, X86_FEATURE_RETHUNK);
	static_call_init();

	/* first in alternative_instructions(), as upstream */
	int3_selftest();
	/* userspace: each boot stage that writes text ends with the model's check (R7) */
	kshim::xmcBootStage("int3_selftest", 0);

	/* apply_retpolines(), apply_returns(): before the alternatives, as upstream */
	pokelab::applyThunkSites();
	kshim::xmcBootStage("apply_returns", 0);	/* userspace: as above */

	if (!pristine)
		pristine = new pokelab::AltTextSnapshot(__start_altinstructions,
							__stop_altinstructions);
	else
		pristine->restore();

	alt_stats = {};
	/* userspace: the machine line says the tables will be printed */
	if (debug_alternative)
		kshim::setMachineAttr("debug-alternative",
				      debug_alternative == DA_ALL ? std::string("all")
				      : fmt::format("{:#x}", debug_alternative));
	apply_alternatives(__start_altinstructions, __stop_altinstructions);
	/* userspace: as above, before alt_reloc_selftest() runs a site it wrote */
	kshim::xmcBootStage("apply_alternatives", kshim::XMC_TABLE_ALTERNATIVES);

	if (alt_reloc_selftest()) {
		err = "alternatives: alt_reloc_selftest failed: the relocated replacement did "
		      "not reach its RIP-relative operand or its call target";
		return -EINVAL;
	}
	return 0;
}

kshim::BootHookRegistrar alternativesHook({"alternative_instructions", kshim::BootStage::Early,
					    alternativeInstructions});

} /* namespace */

std::vector<pokelab::AltSiteView> pokelab::altOwnSites()
{
	std::vector<AltSiteView> v;

	for (struct alt_instr *a = __start_altinstructions; a < __stop_altinstructions; a++) {
		u8 *instr = instr_va(a);
		const std::vector<u8> *orig = pristine ? pristine->original(instr) : nullptr;

		/* nested entries name the same site and follow each other */
		if (v.empty() || v.back().addr != (unsigned long)instr) {
			AltSiteView s{(unsigned long)instr, a->instrlen, site_name(instr), {}, {}, {}};

			if (orig)
				s.original = *orig;
			v.push_back(s);
		}
		AltSiteView &s = v.back();

		s.len = std::max<unsigned int>(s.len, a->instrlen);
		s.entries.push_back({feature_label(a->cpuid), boot_cpu_has(a->cpuid),
				     (a->flags & ALT_FLAG_NOT) != 0,
				     (a->flags & ALT_FLAG_DIRECT_CALL) != 0,
				     (unsigned long)repl_va(a),
				     std::vector<u8>(repl_va(a), repl_va(a) + a->replacementlen)});
	}
	for (AltSiteView &s : v)
		s.now.assign((const u8 *)s.addr, (const u8 *)s.addr + s.len);
	return v;
}

void pokelab::altOwnSitesRestore()
{
	if (pristine)
		pristine->restore();
}
