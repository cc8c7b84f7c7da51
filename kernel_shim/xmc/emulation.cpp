// SPDX-License-Identifier: GPL-2.0-only
/*
 * R5, INT3 emulation: a CPU that trapped on a batch's INT3 resumes as if it
 * had executed the site's old or new instruction (or at the site, to fetch
 * it again): its instruction pointer, stack pointer and pushed return
 * address, decoded from the bytes with Zydis, not taken from the handler's
 * own tables. The trap returns are recorded per CPU in the SIGTRAP handler
 * (an SPSC ring) and checked by the writer.
 *
 * The writer may be waiting for the very CPU the wrong emulation kills (a
 * CALL emulated as a JMP returns to a garbage address), so the trapping
 * CPU also checks the stack itself, from the opcodes the armed list keeps:
 * a CALL (e8, old and new) pushes 8 bytes, an instruction that is neither
 * a CALL nor a RET moves nothing. A mismatch is printed on the way down
 * (stackNotes()); the writer's full check reports it otherwise.
 */
#include <algorithm>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include <asm/ptrace.h>
#include <kernel_shim/disasm.h>
#include <kernel_shim/elf_image.h>
#include <kernel_shim/sigsafe.h>
#include <kernel_shim/symbols.h>
#include <linux/cpumask.h>
#include <linux/preempt.h>

#define XMC_PRIVATE
#include "xmc_internal.h"

namespace kshim {

namespace xmc {

EmuRing emuRings[NR_CPUS][kEmuLevels];

namespace {

/*
 * R5 on one instruction: where a CPU that executed @insn (the bytes of
 * intent @in's site, or its old ones) in the trapped state @r would resume.
 * False if the model does not know the instruction's effect (it then
 * accepts no outcome from this candidate).
 */
struct Outcome {
	unsigned long ip, sp;
	bool push;
	unsigned long pushed;
};

bool ccTrue(unsigned int cc, unsigned long flags)
{
	bool cf = flags & X86_EFLAGS_CF, zf = flags & X86_EFLAGS_ZF, sf = flags & X86_EFLAGS_SF,
	     of = flags & X86_EFLAGS_OF, pf = flags & X86_EFLAGS_PF, t;

	switch (cc >> 1) {
	case 0: t = of; break;
	case 1: t = cf; break;
	case 2: t = zf; break;
	case 3: t = cf || zf; break;
	case 4: t = sf; break;
	case 5: t = pf; break;
	case 6: t = sf != of; break;
	default: t = (sf != of) || zf; break;
	}
	return (cc & 1) ? !t : t;
}

/* What R5 needs of an instruction, decoded once per byte string (DecodeMemo). */
struct Decoded {
	bool ok;
	u8 length;
	ZydisMnemonic mnemonic;
	ZydisInstructionCategory category;
	ZydisOpcodeMap map;
	u8 opcode;
	u8 visible;		/* operand_count_visible */
	bool rel;		/* one relative immediate operand */
	s64 imm;		/* its displacement from the next instruction */
};

Decoded decodeFull(const u8 *insn, unsigned int len)
{
	ZydisDecodedInstruction zi;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	ZyanU64 target = 0;
	Decoded d = {};

	if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(zydisDecoder(), insn, len, &zi, ops)))
		return d;
	d.ok = true;
	d.length = zi.length;
	d.mnemonic = zi.mnemonic;
	d.category = zi.meta.category;
	d.map = zi.opcode_map;
	d.opcode = zi.opcode;
	d.visible = zi.operand_count_visible;
	/* the displacement, as ZydisCalcAbsoluteAddress() gives it for a site at 0 */
	d.rel = zi.operand_count_visible == 1 && ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
		ops[0].imm.is_relative && ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&zi, &ops[0], 0,
										   &target));
	d.imm = (s64)target - zi.length;
	return d;
}

Decoded decodeMemo(const u8 *insn, unsigned int len)
{
	static DecodeMemo<Decoded, 1024> memo;

	return memo.get(insn, std::min(len, kSiteMax), decodeFull);
}

/* What of the trapped state an outcome depends on, besides the site: */
constexpr unsigned int kUsesFlags = 1;	/* a Jcc: the flags */
constexpr unsigned int kUsesTop0 = 2;	/* a RET: the word at the stack pointer */

bool outcomeOf(const u8 *insn, unsigned int len, unsigned long site, const EmuRec &r, Outcome *o,
	       unsigned int *uses = nullptr)
{
	Decoded d = decodeMemo(insn, len);
	unsigned long next, target;

	if (!d.ok)
		return false;
	if (uses)
		*uses = d.mnemonic == ZYDIS_MNEMONIC_RET ? kUsesTop0
			: d.category == ZYDIS_CATEGORY_COND_BR ? kUsesFlags : 0;
	next = site + d.length;
	target = next + d.imm;
	*o = Outcome{next, r.sp0, false, 0};
	if (d.mnemonic == ZYDIS_MNEMONIC_NOP)
		return true;
	if (d.mnemonic == ZYDIS_MNEMONIC_JMP && d.rel) {
		o->ip = target;
		return true;
	}
	if (d.mnemonic == ZYDIS_MNEMONIC_CALL && d.rel) {
		*o = Outcome{target, r.sp0 - 8, true, next};
		return true;
	}
	if (d.mnemonic == ZYDIS_MNEMONIC_RET && !d.visible) {
		*o = Outcome{r.top0, r.sp0 + 8, false, 0};
		return true;
	}
	if (d.category == ZYDIS_CATEGORY_COND_BR && d.rel &&
	    ((d.map == ZYDIS_OPCODE_MAP_DEFAULT && (d.opcode & 0xf0) == 0x70) ||
	     (d.map == ZYDIS_OPCODE_MAP_0F && (d.opcode & 0xf0) == 0x80))) {
		if (ccTrue(d.opcode & 0xf, r.flags))
			o->ip = target;
		return true;
	}
	return false;
}

/*
 * R5's memory, across operations: per site (direct-mapped), the last trap
 * return accepted, and the instruction that accepted it. A return alike in
 * everything that instruction's outcome reads (the resumed ip, the stack
 * delta, the pushed address when it pushes one, the flags for a Jcc, the
 * stack top for a RET) is accepted again while that instruction is still
 * a candidate of the site (its new bytes, an earlier request or the
 * caller's emulation; the old bytes are not kept, as finding them costs
 * what the check does). Writer only.
 */
struct Accepted {
	unsigned long site;	/* 0: empty */
	u8 insn[kSiteMax];
	unsigned int len;
	unsigned long ip1, dsp;
	bool push;
	unsigned long top1;
	unsigned int uses;
	unsigned long flags, top0;
};

constexpr unsigned int kAccepted = 1024;
Accepted accepted[kAccepted];

Accepted &acceptedSlot(unsigned long site)
{
	return accepted[(site * 0x9e3779b97f4a7c15ull >> 40) & (kAccepted - 1)];
}

bool acceptedBefore(const Intent &in, const EmuRec &r)
{
	const Accepted &m = acceptedSlot(r.site);
	bool cand;

	if (m.site != r.site || m.len != in.len || r.ip1 != m.ip1 || r.sp1 - r.sp0 != m.dsp ||
	    (m.push && r.top1 != m.top1) || ((m.uses & kUsesFlags) && r.flags != m.flags) ||
	    ((m.uses & kUsesTop0) && r.top0 != m.top0))
		return false;
	u8 e[kSiteMax];

	emulatedAs(in.bytes, in.len, in.addr, e);
	cand = !memcmp(m.insn, e, in.len);
	for (unsigned int k = 0; k < in.nalt && !cand; k++) {
		emulatedAs(in.alt[k], in.len, in.addr, e);
		cand = !memcmp(m.insn, e, in.len);
	}
	return cand;
}

void remember(const Intent &in, const u8 *insn, const EmuRec &r, bool push, unsigned int uses)
{
	Accepted &m = acceptedSlot(r.site);

	m.site = r.site;
	memcpy(m.insn, insn, in.len);
	m.len = in.len;
	m.ip1 = r.ip1;
	m.dsp = r.sp1 - r.sp0;
	m.push = push;
	m.top1 = r.top1;
	m.uses = uses;
	m.flags = r.flags;
	m.top0 = r.top0;
}

std::string outcomeText(const Outcome &o, const EmuRec &r, bool sayUnchanged = false)
{
	std::string s = fmt::format("{} [{:#x}]", traceSymbol(o.ip, true), o.ip);

	if (o.sp != r.sp0)
		s += fmt::format(", sp {:+d}", (long)(o.sp - r.sp0));
	else if (sayUnchanged)
		s += ", sp unchanged";
	if (o.push)
		s += fmt::format(", return address {:#x} pushed", o.pushed);
	return s;
}

/* For a Jcc: " (jle: taken)" under the trapped @flags; "" for any other instruction. */
std::string jccNote(const u8 *insn, unsigned int len, unsigned long flags)
{
	Decoded d = decodeMemo(insn, len);

	if (!d.ok || d.category != ZYDIS_CATEGORY_COND_BR)
		return "";
	return fmt::format(" ({}: {})", ZydisMnemonicGetString(d.mnemonic),
			   ccTrue(d.opcode & 0xf, flags) ? "taken" : "not taken");
}

/*
 * A Jcc site resumed at its new instruction's target or after it, as
 * neither instruction would: the handler took the branch under the wrong
 * condition. The sentence that says so, with the trapped flags; "" else.
 */
std::string wrongCondition(const u8 *insn, unsigned int len, unsigned long site, const EmuRec &r)
{
	Decoded d = decodeMemo(insn, len);
	unsigned long next = site + d.length;

	if (!d.ok || d.category != ZYDIS_CATEGORY_COND_BR || !d.rel || r.sp1 != r.sp0 ||
	    (r.ip1 != next && r.ip1 != next + d.imm))
		return "";
	return fmt::format("; a Jcc emulated with the wrong condition: the flags it trapped with "
			   "(CF={} PF={} ZF={} SF={} OF={}) make {} {}",
			   (int)!!(r.flags & X86_EFLAGS_CF), (int)!!(r.flags & X86_EFLAGS_PF),
			   (int)!!(r.flags & X86_EFLAGS_ZF), (int)!!(r.flags & X86_EFLAGS_SF),
			   (int)!!(r.flags & X86_EFLAGS_OF), ZydisMnemonicGetString(d.mnemonic),
			   ccTrue(d.opcode & 0xf, r.flags) ? "taken" : "not taken");
}

} /* namespace */

/*
 * The instruction the INT3 handler is to run for candidate @bytes of a
 * site at @site, as the model knows it, not as the patcher asked
 * (smp_text_poke_batch_add()'s @emulate is the code under test's word):
 * the 5-byte "cs cs cs xorl %eax,%eax" that a call of
 * __static_call_return0 is patched to (arch/x86/kernel/static_call.c,
 * xor5rax) cannot be emulated, and the handler must run the call it
 * stands for, "call __static_call_return0" (the symbol from the program's
 * ELF symbol table); any other instruction is run as itself. Writer only.
 */
void emulatedAs(const u8 *bytes, unsigned int len, unsigned long site, u8 *out)
{
	static const u8 xor5rax[5] = {0x2e, 0x2e, 0x2e, 0x31, 0xc0};
	static const unsigned long ret0 = elfProgramSymbol("__static_call_return0");
	s32 d;

	memmove(out, bytes, len);
	if (len != 5 || memcmp(out, xor5rax, 5) || !ret0)
		return;
	d = (s32)(ret0 - (site + 5));
	/* out of a rel32's reach (never so for kernel or module text): no call to stand for */
	if ((long)(ret0 - (site + 5)) != d)
		return;
	out[0] = 0xe8;
	memcpy(out + 1, &d, 4);
}

/* R5 on one trap return. */
void checkEmulation(int cpu, const EmuRec &r)
{
	const Intent *in = intentStartingAt(r.site);
	u8 cand[kCands][kSiteMax];
	Outcome outs[kCands];
	bool outKnown[kCands] = {};
	unsigned int ncand = 0;
	bool known = false;
	std::string want;

	if (!in || in->addr != r.site || !op->int3Batch)
		return;		/* not this batch's site (a late record of an earlier one) */
	stats.emulations++;
	/* Resumed at the site itself: it fetches the site again. */
	if (r.ip1 == r.site && r.sp1 == r.sp0)
		return;
	if (acceptedBefore(*in, r))
		return;
	/* the old and the new instruction, and earlier requests, each as the handler must run it */
	oldBytes(*in, cand[ncand]);
	emulatedAs(cand[ncand], in->len, r.site, cand[ncand]);
	ncand++;
	emulatedAs(in->bytes, in->len, r.site, cand[ncand++]);
	for (unsigned int k = 0; k < in->nalt; k++)
		emulatedAs(in->alt[k], in->len, r.site, cand[ncand++]);
	for (unsigned int c = 0; c < ncand; c++) {
		Outcome &o = outs[c];

		unsigned int uses;

		if (!outcomeOf(cand[c], in->len, r.site, r, &o, &uses))
			continue;
		known = outKnown[c] = true;
		if (o.ip == r.ip1 && o.sp == r.sp1 && (!o.push || o.pushed == r.top1)) {
			if (c)
				remember(*in, cand[c], r, o.push, uses);
			return;
		}
	}
	if (!known) {
		stats.emulations--;	/* nothing the model knows how to check */
		return;
	}
	/* A violation: only now name the outcomes (symbolising is slow; the writer waits). */
	for (unsigned int c = 0; c < ncand; c++)
		if (outKnown[c])
			want += fmt::format("{}{} instruction{}: {}", want.empty() ? "" : "; ",
					    c == 0 ? "the old" : c == 1 ? "the new"
									  : "an earlier requested",
					    jccNote(cand[c], in->len, r.flags),
					    outcomeText(outs[c], r));

	XmcViolation v = intentViolation(XmcRule::Int3Misemulated, cpu, *in, cand[1]);
	Outcome got = {r.ip1, r.sp1, r.sp1 < r.sp0, r.top1};

	v.tornLen = 0;
	v.detail = fmt::format("resumed at {}; expected, after {}{}", outcomeText(got, r, true),
			       want, wrongCondition(cand[1], in->len, r.site, r));
	report(v);
}

/*
 * R5 for the trap returns the CPUs recorded since the last look, at most
 * @budget of them, taken round-robin from the CPU after the one the last
 * look stopped at, up to kEmuChunk from a CPU at a visit: the writer's
 * cost per write stays the same however many CPUs trap (what a full ring
 * cannot hold is dropped and counted as not sampled). A visit reads the
 * CPU's head only when it has taken all it saw there, and the CPU reads
 * the tail only when its ring looks full: a record costs the writer one
 * miss, not three.
 */
void takeEmulations(unsigned int budget)
{
	static unsigned int next;
	unsigned int n = nr_cpu_ids * kEmuLevels, idle = 0;

	while (budget && idle < n) {
		unsigned int ring = next++ % n, cpu = ring / kEmuLevels;
		EmuRing *e = &emuRings[cpu][ring % kEmuLevels];
		u64 tail = e->tail, stop;

		if (tail >= e->headSeen)
			e->headSeen = __atomic_load_n(&e->head, __ATOMIC_ACQUIRE);
		if (tail >= e->headSeen) {
			idle++;
			continue;
		}
		idle = 0;
		stop = std::min(e->headSeen, tail + std::min(budget, kEmuChunk));
		budget -= (unsigned int)(stop - tail);
		for (; tail < stop; tail++) {
			EmuRec r = e->rec[tail % kEmuRing];

			/* the record is copied: the slot is the producer's again */
			__atomic_store_n(&e->tail, tail + 1, __ATOMIC_RELEASE);
			if (op->open)
				checkEmulation(cpu, r);
		}
	}
}

} /* namespace xmc */

using namespace xmc;

namespace xmc {

namespace {

/* R5's stack check on the trapping CPU, into its Int3Cpu record. Signal context. */
void checkStack(int cpu, const struct pt_regs *before, const struct pt_regs *after)
{
	unsigned long site = before->ip - 1;
	Int3Cpu *t = &int3Cpus[cpu];
	u8 o, w;
	unsigned long want;

	if (after->ip == site || !armedOpcodes(site, &o, &w))
		return;
	if (o == 0xe8 && w == 0xe8)
		want = before->sp - 8;
	else if (o != 0xe8 && w != 0xe8 && o != 0xc3 && w != 0xc3)
		want = before->sp;
	else
		return;
	if (after->sp == want || !claimOwn(&t->stackHave, 0, kRecFilling))
		return;
	t->stackSite = site;
	t->stackIp = after->ip;
	t->stackSp0 = before->sp;
	t->stackSp1 = after->sp;
	t->stackOp = o == 0xe8 ? o : w;
	__atomic_store_n(&t->stackHave, 1, __ATOMIC_RELEASE);
}

} /* namespace */

bool stackPending()
{
	for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++)
		if (__atomic_load_n(&int3Cpus[cpu].stackHave, __ATOMIC_ACQUIRE) == 1)
			return true;
	return false;
}

bool stackNotes()
{
	bool any = false;

	for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++) {
		Int3Cpu *t = &int3Cpus[cpu];
		SigSafeBuf b;

		if (__atomic_load_n(&t->stackHave, __ATOMIC_ACQUIRE) != 1)
			continue;
		b.str("xmc: INT3 emulated wrongly: CPU ").dec(cpu).str(" at ").hex(t->stackSite)
			.str(": the INT3 handler resumed it at ").hex(t->stackIp)
			.str(" with the stack pointer ").hex(t->stackSp1).str(" (trapped at ")
			.hex(t->stackSp0).str("), where the site's instruction (opcode ")
			.hex(t->stackOp)
			.str(t->stackOp == 0xe8 ? ", a CALL) pushes its return address: 8 bytes below\n"
						: ", neither a CALL nor a RET) leaves it as it was\n");
		b.emit();
		any = true;
	}
	return any;
}

} /* namespace xmc */

void xmcInt3Return(const struct pt_regs *before, const struct pt_regs *after) noexcept
{
	int cpu = tlsCpu;

	if (xmcEnabled && cpu >= 0)
		checkStack(cpu, before, after);
	if (xmcEnabled && cpu >= 0) {
		EmuRing *e = &emuRings[cpu][in_nmi() ? 1 : 0];
		u64 head = e->head;

		if (head - e->tailSeen >= kEmuRing)
			e->tailSeen = __atomic_load_n(&e->tail, __ATOMIC_ACQUIRE);
		if (head - e->tailSeen < kEmuRing) {
			EmuRec *r = &e->rec[head % kEmuRing];

			r->site = before->ip - 1;	/* the trap reports the byte after the INT3 */
			r->sp0 = before->sp;
			r->flags = before->flags;
			r->top0 = *(const unsigned long *)before->sp;
			r->ip1 = after->ip;
			r->sp1 = after->sp;
			r->top1 = *(const unsigned long *)after->sp;
			__atomic_store_n(&e->head, head + 1, __ATOMIC_RELEASE);
		} else {
			__atomic_store_n(&e->dropped, e->dropped + 1, __ATOMIC_RELAXED);
		}
	}
	cpuEret();
}

} /* namespace kshim */
