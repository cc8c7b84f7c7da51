// SPDX-License-Identifier: GPL-2.0-only
/*
 * R7 on the alternatives: each site of the program's altinstructions holds
 * what its entries demand with the CPU's features, computed here from the
 * table and the build's own bytes (the executable's file), not from what
 * apply_alternatives() wrote:
 *
 *  - the entries of one site (consecutive, same address) are read together;
 *    the last one whose feature test holds (feature present, or absent for
 *    ALT_FLAG_NOT) wins; with none, the original instruction stays;
 *  - the winner's replacement is relocated as __apply_relocation() must:
 *    a branch or RIP-relative operand that points outside the replacement
 *    keeps its absolute address, one inside it moves with it;
 *    ALT_FLAG_DIRECT_CALL replaces "call BUG_func" by a call of the
 *    function the original "call *disp(%rip)" reads (none: nop_func, and
 *    the site becomes NOPs);
 *  - the site then holds those instructions, then padding: NOPs, or a JMP
 *    over the rest (add_nop()), or INT3s after an unconditional JMP (a
 *    JMP32 shrunk to a JMP8).
 *
 * Compared decoded, instruction by instruction, with NOPs left out of both
 * sides (optimize_nops() may join or split them); a relative branch by its
 * target, any other instruction by its bytes and absolute memory operand.
 * A module's alternatives are applied from bytes the program's file does
 * not hold, so they are not checked (docs/testing.md).
 */
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <kernel_shim/disasm.h>
#include <kernel_shim/elf_image.h>
#include <kernel_shim/symbols.h>

#define XMC_PRIVATE
#include "xmc_internal.h"

namespace kshim {

namespace xmc {

namespace {

/* struct alt_instr (arch/x86/include/asm/alternative.h): 14 bytes, packed. */
struct __attribute__((packed)) AltInstr {
	s32 instr_offset;
	s32 repl_offset;
	u16 cpuid;
	u16 flags;
	u8 instrlen;
	u8 replacementlen;
};
static_assert(sizeof(AltInstr) == 14, "struct alt_instr is 14 bytes");

constexpr u16 kAltNot = 1 << 0, kAltDirectCall = 1 << 1;
constexpr unsigned int kAltMax = 255;

/* One instruction as the comparison sees it. */
struct AltInsn {
	ZydisMnemonic mnemonic;
	unsigned int len;
	bool branch;		/* a relative branch: compared by @abs */
	bool ripMem;		/* a RIP-relative memory operand: compared by @abs and @bytes */
	unsigned long abs;
	u8 bytes[16];
	unsigned int dispOff, dispLen;	/* where the displacement sits in @bytes */
	bool uncond;		/* JMP/RET: nothing after it runs */
};

bool decodeOne(const u8 *p, unsigned int len, unsigned long addr, AltInsn *out)
{
	ZydisDecodedInstruction zi;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	ZyanU64 t;

	if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(zydisDecoder(), p, len, &zi, ops)))
		return false;
	*out = AltInsn{};
	out->mnemonic = zi.mnemonic;
	out->len = zi.length;
	memcpy(out->bytes, p, zi.length);
	out->uncond = zi.meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
		      zi.meta.category == ZYDIS_CATEGORY_RET;
	for (unsigned int i = 0; i < zi.operand_count_visible; i++) {
		if (ops[i].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && ops[i].imm.is_relative &&
		    ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&zi, &ops[i], addr, &t))) {
			out->branch = true;
			out->abs = t;
		} else if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY &&
			   ops[i].mem.base == ZYDIS_REGISTER_RIP &&
			   ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&zi, &ops[i], addr, &t))) {
			out->ripMem = true;
			out->abs = t;
			out->dispOff = zi.raw.disp.offset;
			out->dispLen = zi.raw.disp.size / 8;
		}
	}
	return true;
}

bool isNop(const AltInsn &i)
{
	return i.mnemonic == ZYDIS_MNEMONIC_NOP;
}

/*
 * The instructions the site must run, from @bytes (at @from, @len long),
 * placed at @site: absolute addresses inside [@from, @from + @len] move by
 * @site - @from. NOPs left out. False if something does not decode.
 */
bool expected(const u8 *bytes, unsigned int len, unsigned long from, unsigned long site,
	      std::vector<AltInsn> *out)
{
	for (unsigned int off = 0; off < len;) {
		AltInsn in;

		if (!decodeOne(bytes + off, len - off, from + off, &in))
			return false;
		if ((in.branch || in.ripMem) && in.abs >= from && in.abs <= from + len)
			in.abs += site - from;
		if (!isNop(in))
			out->push_back(in);
		off += in.len;
	}
	return true;
}

/*
 * The instructions the site runs now: NOPs, a JMP to the site's end over
 * padding, and INT3s after an unconditional JMP (a shrunk JMP32) left out.
 * False if something does not decode.
 */
bool actual(const u8 *bytes, unsigned int len, unsigned long site, std::vector<AltInsn> *out)
{
	for (unsigned int off = 0; off < len;) {
		AltInsn in;

		if (!decodeOne(bytes + off, len - off, site + off, &in))
			return false;
		off += in.len;
		if (isNop(in))
			continue;
		/* add_nop(): a JMP over the rest of the site's padding */
		if (in.mnemonic == ZYDIS_MNEMONIC_JMP && in.branch && in.abs == site + len)
			break;
		out->push_back(in);
		if (in.uncond) {
			/* what follows an unconditional JMP is padding: INT3s or NOPs */
			for (; off < len; off++)
				if (bytes[off] != 0xcc && bytes[off] != 0x90)
					return false;
			break;
		}
	}
	return true;
}

bool same(const AltInsn &a, const AltInsn &b)
{
	if (a.mnemonic != b.mnemonic || a.branch != b.branch || a.ripMem != b.ripMem)
		return false;
	if (a.branch)
		return a.abs == b.abs;	/* a JMP32 may have shrunk to a JMP8 */
	if (a.len != b.len)
		return false;
	if (a.ripMem) {
		/* the same bytes but the displacement, and the same address */
		for (unsigned int i = 0; i < a.len; i++)
			if ((i < a.dispOff || i >= a.dispOff + a.dispLen) && a.bytes[i] != b.bytes[i])
				return false;
		return a.abs == b.abs;
	}
	return !memcmp(a.bytes, b.bytes, a.len);
}

bool hasFeature(const u32 *caps, unsigned int words, unsigned int bit)
{
	return caps && bit / 32 < words && (caps[bit / 32] & (1u << (bit % 32)));
}

unsigned long instrVa(const AltInstr *a)
{
	return (unsigned long)&a->instr_offset + a->instr_offset;
}

unsigned long replVa(const AltInstr *a)
{
	return (unsigned long)&a->repl_offset + a->repl_offset;
}

} /* namespace */

void checkAlternatives(const char *what, const void *owner, const u8 *start, const u8 *end,
		       const u32 *caps, unsigned int words)
{
	const AltInstr *first = (const AltInstr *)start, *stop;
	unsigned long bugFunc = elfProgramSymbol("BUG_func"), nopFunc = elfProgramSymbol("nop_func");

	if (owner || !start || !caps)
		return;		/* a module's: not checked; no features known: nothing to judge */
	stop = (const AltInstr *)(start + (end - start) / sizeof(AltInstr) * sizeof(AltInstr));
	for (const AltInstr *a = first; a < stop;) {
		unsigned long site = instrVa(a);
		const AltInstr *win = nullptr, *b = a;
		unsigned int len = 0;
		u8 orig[kAltMax], now[kAltMax], repl[kAltMax];
		std::vector<AltInsn> want, have;
		std::string why;
		bool ok;

		/* the entries of this site, the widest padding, the last that applies */
		for (; b < stop && instrVa(b) == site; b++) {
			len = std::max<unsigned int>(len, b->instrlen);
			if (hasFeature(caps, words, b->cpuid) != !!(b->flags & kAltNot))
				win = b;
		}
		a = b;
		if (!len || !elfProgramBytes(site, orig, len))
			continue;
		memcpy(now, (const void *)site, len);
		stats.tableChecks++;
		if (!win) {
			ok = expected(orig, len, site, site, &want);
			why = "none of its entries applies: the original instruction";
		} else if (win->flags & kAltDirectCall) {
			/* "call *disp(%rip)" in the original names the pointer to call through */
			s32 disp;
			unsigned long target = 0;

			ok = len >= 6 && orig[0] == 0xff && orig[1] == 0x15;
			if (ok) {
				memcpy(&disp, orig + 2, 4);
				target = *(const volatile unsigned long *)(site + 6 + disp);
				if (!target)
					target = bugFunc;
				if (target != nopFunc) {
					AltInsn call = {};

					call.mnemonic = ZYDIS_MNEMONIC_CALL;
					call.branch = true;
					call.abs = target;
					call.len = 5;
					want.push_back(call);
				}
			}
			why = fmt::format("entry {} (feature {}, direct call) applies: {}",
					  win - first, win->cpuid,
					  target == nopFunc ? std::string("NOPs")
							    : "a CALL of " + traceSymbol(target, true));
		} else {
			ok = elfProgramBytes(replVa(win), repl, win->replacementlen) &&
			     expected(repl, win->replacementlen, replVa(win), site, &want);
			why = fmt::format("entry {} (feature {}{}) applies: its replacement",
					  win - first, win->cpuid,
					  win->flags & kAltNot ? ", absent" : "");
		}
		if (ok && actual(now, len, site, &have) && have.size() == want.size()) {
			bool all = true;

			for (size_t i = 0; i < want.size() && all; i++)
				all = same(want[i], have[i]);
			if (all)
				continue;
		}
		XmcViolation v = {};

		v.rule = XmcRule::WrongSite;
		v.cpu = tlsCpu >= 0 ? tlsCpu : 0;
		v.op = what;
		v.site = site;
		v.len = std::min(len, 16u);
		for (unsigned int i = 0; i < v.len; i++) {
			v.nposs[i] = 1;
			v.poss[i][0] = now[i];
		}
		memcpy(v.oldBytes, orig, v.len);
		memcpy(v.newBytes, now, v.len);
		memcpy(v.tornBytes, now, v.len);
		v.tornLen = v.len;
		v.detail = fmt::format("after {} the site holds other bytes than its "
				       "altinstructions entries demand ({})", what, why);
		report(v);
	}
}

} /* namespace xmc */

} /* namespace kshim */
