// SPDX-License-Identifier: GPL-2.0-only
/*
 * Static calls, x86 part: rewriting a trampoline (or a call site) as CALL,
 * NOP, JMP, RET or Jcc.d32.
 *
 * Port of arch/x86/kernel/static_call.c, v6.16.
 *
 * Deviations (each marked "userspace:" below):
 *  - the sites come from pokelab-objtool's static_call_sites, for the objects
 *    the build runs it over (static_call_inline.cpp, docs/static_calls.md);
 *  - no SYSTEM_BOOTING window and no modules: every rewrite is live, with
 *    smp_text_poke_single();
 *  - no call thunks and no return thunk (X86_FEATURE_CALL_DEPTH/RETHUNK are
 *    not modelled): the RET form is always "ret; int3 x4".
 */
#include <cstring>

#include <asm/nops.h>
#include <asm/text-patching.h>
#include <kernel_shim/boot.h>
#include <kernel_shim/busted.h>
#include <kernel_shim/noinstr_check.h>
#include <linux/bug.h>
#include <linux/static_call.h>
#include <kernel_shim/sigsafe.h>

/* Port of __static_call_return0(), kernel/static_call.c */
extern "C" long __static_call_return0(void)
{
	return 0;
}

/* The target of a NULL conditional tail call: a bare RET (arch/x86/kernel/static_call.c). */
asm(".pushsection .text, \"ax\", @progbits\n"
    ".globl __static_call_return\n"
    ".type __static_call_return, @function\n"
    "__static_call_return:\n"
    "	ret\n"
    "	int3\n"
    ".size __static_call_return, . - __static_call_return\n"
    ".popsection\n");

enum insn_type {
	CALL = 0,	/* site call */
	NOP = 1,	/* site cond-call */
	JMP = 2,	/* tramp / site tail-call */
	RET = 3,	/* tramp / site cond-tail-call */
	JCC = 4,
};

/* "ud1 %esp, %ecx": the signature after every trampoline's 5 bytes */
static const u8 tramp_ud[] = { 0x0f, 0xb9, 0xcc };

/* "cs cs cs xorl %eax, %eax": a 5-byte "return 0" for CALL __static_call_return0 sites */
static const u8 xor5rax[] = { 0x2e, 0x2e, 0x2e, 0x31, 0xc0 };

static const u8 retinsn[] = { RET_INSN_OPCODE, 0xcc, 0xcc, 0xcc, 0xcc };

/* Port of __is_Jcc(), arch/x86/kernel/static_call.c: the cc byte of a Jcc.d32, or 0 */
static u8 __is_Jcc(u8 *insn)
{
	u8 ret = 0;

	if (insn[0] == 0x0f) {
		u8 tmp = insn[1];

		if ((tmp & 0xf0) == 0x80)
			ret = tmp;
	}

	return ret;
}

/* Port of __static_call_transform(), arch/x86/kernel/static_call.c, v6.16 */
static void __static_call_transform(void *insn, enum insn_type type, void *func, bool modinit)
{
	const void *emulate = NULL;
	int size = CALL_INSN_SIZE;
	const void *code;
	u8 op, buf[6];

	(void)modinit;	/* userspace: no modules */

	if ((type == JMP || type == RET) && (op = __is_Jcc((u8 *)insn)))
		type = JCC;

	switch (type) {
	case CALL:
		/* userspace: no call thunks to translate the destination through */
		code = text_gen_insn(BUSTED(SC_JMP_FOR_CALL) ? JMP32_INSN_OPCODE /* userspace: BUSTED */
							       : CALL_INSN_OPCODE, insn, func);
		if (func == (void *)&__static_call_return0) {
			/* write "return 0", emulate the CALL while the INT3 is armed */
			emulate = code;
			code = &xor5rax;
		}
		break;

	case NOP:
		code = x86_nops[5];
		break;

	case JMP:
		code = text_gen_insn(JMP32_INSN_OPCODE, insn, func);
		break;

	case RET:
		/* userspace: no X86_FEATURE_RETHUNK, so never a JMP to the return thunk */
		code = &retinsn;
		break;

	case JCC:
		if (!func)
			func = (void *)&__static_call_return;
		buf[0] = 0x0f;
		__text_gen_insn(buf + 1, op, (u8 *)insn + 1, func, 5);
		code = buf;
		size = 6;
		break;

	default:
		BUG();
	}

	if (memcmp(insn, code, size) == 0)
		return;

	/* userspace: no SYSTEM_BOOTING/modinit text_poke_early() path */
	smp_text_poke_single(insn, code, size, emulate);
}

/* Port of __static_call_validate(), arch/x86/kernel/static_call.c, v6.16 */
static void __static_call_validate(u8 *insn, bool tail, bool tramp)
{
	u8 opcode = insn[0];

	if (tramp && memcmp(insn + 5, tramp_ud, 3)) {
		kshim::SigSafeBuf b;

		b.str("trampoline signature fail at ").hex((unsigned long)insn).str(" (bytes ")
			.hexBytes(insn, 8).str(")\n");
		b.emit();
		BUG();
	}

	if (tail) {
		if (opcode == JMP32_INSN_OPCODE || opcode == RET_INSN_OPCODE || __is_Jcc(insn))
			return;
	} else {
		if (opcode == CALL_INSN_OPCODE || !memcmp(insn, x86_nops[5], 5) ||
		    !memcmp(insn, xor5rax, 5))
			return;
	}

	/* The kernel's pr_err(), in signal-safe form: the site and its bytes. */
	kshim::SigSafeBuf b;

	b.str("unexpected static_call insn opcode ").hex(opcode).str(" at ")
		.hex((unsigned long)insn).str(" (bytes ").hexBytes(insn, 5).str(")\n");
	b.emit();
	BUG();
}

/* Port of __sc_insn(), arch/x86/kernel/static_call.c: {tail, null} -> CALL/NOP/JMP/RET */
static inline enum insn_type __sc_insn(bool null, bool tail)
{
	return (enum insn_type)(2 * tail + null);
}

/* Port of arch_static_call_transform(), arch/x86/kernel/static_call.c, v6.16 */
bool static_call_tramp_is_ro(const void *tramp)
{
	return kshim::noinstrStaticCallRo((unsigned long)tramp);
}

void arch_static_call_transform(void *site, void *tramp, void *func, bool tail)
{
	/* userspace: an _RO call's key is __ro_after_init; the kernel's write would fault */
	BUG_ON(tramp && kshim::systemRunning() && static_call_tramp_is_ro(tramp));
	mutex_lock(&text_mutex);

	if (tramp) {
		__static_call_validate((u8 *)tramp, true, true);
		__static_call_transform(tramp, __sc_insn(!func, true), func, false);
	}

	/* HAVE_STATIC_CALL_INLINE: a recorded call site */
	if (site) {
		__static_call_validate((u8 *)site, tail, false);
		__static_call_transform(site, __sc_insn(!func, tail), func, false);
	}

	mutex_unlock(&text_mutex);
}
