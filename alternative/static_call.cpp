// SPDX-License-Identifier: GPL-2.0-only
/*
 * Static calls, x86 part: rewriting a trampoline (or a call site) as CALL,
 * NOP, JMP, RET or Jcc.d32.
 *
 * Port of arch/x86/kernel/static_call.c, v7.3.
 *
 * Deviations (each marked "userspace:" below):
 *  - the sites come from pokelab-objtool's static_call_sites, for the objects
 *    the build runs it over (static_call_inline.cpp, docs/static_calls.md);
 *  - no call thunks (X86_FEATURE_CALL_DEPTH), no __WARN_trap() calls and no
 *    paravirt spinlocks: their special CALL forms do not exist here;
 *  - the trampolines of DEFINE_STATIC_CALL_RO() calls BUG when updated after
 *    boot (their keys are __ro_after_init);
 *  - pr_err() takes fmt's format, and the signal-safe report stays.
 * The RET form follows cpu_wants_rethunk_at(), and apply_returns() hands
 * the trampolines in its table to __static_call_fixup().
 */
#include <cstring>

#include <asm/alternative.h>
#include <asm/nops.h>
#include <asm/text-patching.h>
#include <kernel_shim/boot.h>
#include <kernel_shim/busted.h>
#include <kernel_shim/noinstr_check.h>
#include <linux/bug.h>
#include <linux/kallsyms.h>
#include <linux/kernel.h>
#include <linux/mutex.h>
#include <linux/static_call.h>
#include <kernel_shim/sigsafe.h>

#define PAGE_SHIFT	12

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

/* Port of enum insn_type, arch/x86/kernel/static_call.c, v7.3 */
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

/* Port of __is_Jcc(), arch/x86/kernel/static_call.c, v7.3: a Jcc.d32's cc byte, or 0 */
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

/* Port of __static_call_transform(), arch/x86/kernel/static_call.c, v7.3 */
static void __static_call_transform(void *insn, enum insn_type type, void *func, bool modinit)
{
	const void *emulate = NULL;
	int size = CALL_INSN_SIZE;
	const void *code;
	u8 op, buf[6];

	if ((type == JMP || type == RET) && (op = __is_Jcc((u8 *)insn)))	/* userspace: u8 * */
		type = JCC;

	switch (type) {
	case CALL:
		/* userspace: no call thunks to translate the destination through */
		code = text_gen_insn(BUSTED(SC_JMP_FOR_CALL) ? JMP32_INSN_OPCODE /* userspace: BUSTED */
							       : CALL_INSN_OPCODE, insn, func);
		if (func == (void *)&__static_call_return0) {	/* userspace: C++ cast */
			emulate = BUSTED(RET0_EMULATE_NOP) ? x86_nops[5] /* userspace: BUSTED */
							   : code;
			code = &xor5rax;
		}
		/* userspace: no __WARN_trap(), no paravirt spinlocks */

		break;

	case NOP:
		code = x86_nops[5];
		break;

	case JMP:
		code = text_gen_insn(JMP32_INSN_OPCODE, insn, func);
		break;

	case RET:
		if (cpu_wants_rethunk_at(insn))
			code = text_gen_insn(JMP32_INSN_OPCODE, insn, (void *)x86_return_thunk);	/* userspace: cast */
		else
			code = &retinsn;
		break;

	case JCC:
		if (!func) {
			func = (void *)__static_call_return;	/* userspace: C++ cast */
			if (cpu_wants_rethunk())
				func = (void *)x86_return_thunk;	/* userspace: C++ cast */
		}

		buf[0] = 0x0f;
		__text_gen_insn(buf+1, op, (u8 *)insn+1, func, 5);	/* userspace: u8 * */
		code = buf;
		size = 6;

		break;
	}

	if (memcmp(insn, code, size) == 0)
		return;

	if (system_state == SYSTEM_BOOTING || modinit)
		return text_poke_early(insn, code, size);

	smp_text_poke_single(insn, code, size, emulate);
}

/* Port of __static_call_validate(), arch/x86/kernel/static_call.c, v7.3 */
static void __static_call_validate(u8 *insn, bool tail, bool tramp)
{
	u8 opcode = insn[0];

	if (tramp && memcmp(insn+5, tramp_ud, 3)) {
		/* userspace: the kernel's pr_err(), in signal-safe form, with the bytes */
		{
			kshim::SigSafeBuf b;

			b.str("trampoline signature fail at ").hex((unsigned long)insn)
				.str(" (bytes ").hexBytes(insn, 8).str(")\n");
			b.emit();
		}
		BUG();
	}

	if (tail) {
		if (opcode == JMP32_INSN_OPCODE ||
		    opcode == RET_INSN_OPCODE ||
		    __is_Jcc(insn))
			return;
	} else {
		/* userspace: no __WARN_trap() form to accept */
		if (opcode == CALL_INSN_OPCODE ||
		    !memcmp(insn, x86_nops[5], 5) ||
		    !memcmp(insn, xor5rax, 5))
			return;
		/* userspace: no paravirt spinlocks */

	}

	/* A corrupt site: the text cannot be trusted from here on. */
	/* userspace: the kernel's pr_err(), in signal-safe form: the site and its bytes */
	{
		kshim::SigSafeBuf b;

		b.str("unexpected static_call insn opcode ").hex(opcode).str(" at ")
			.hex((unsigned long)insn).str(" (bytes ").hexBytes(insn, 5).str(")\n");
		b.emit();
	}
	BUG();
}

/*
 * Port of __sc_insn(), arch/x86/kernel/static_call.c, v7.3: {tail, null} ->
 * CALL (0, 0), NOP (0, 1), JMP (1, 0), RET (1, 1), the order of enum
 * insn_type, without a branch.
 */
static inline enum insn_type __sc_insn(bool null, bool tail)
{
	return (enum insn_type)(2*tail + null);	/* userspace: C++ cast */
}

/* Is @tramp the trampoline of a DEFINE_STATIC_CALL_RO() call? (pokelab) */
bool static_call_tramp_is_ro(const void *tramp)
{
	return kshim::noinstrStaticCallRo((unsigned long)tramp);
}

/*
 * Port of arch_static_call_transform(), arch/x86/kernel/static_call.c,
 * v7.3: the trampoline when no site is given (__static_call_update()'s
 * first call), else the site alone.
 */
void arch_static_call_transform(void *site, void *tramp, void *func, bool tail)
{
	/* userspace: an _RO call's key is __ro_after_init; the kernel's write would fault */
	BUG_ON(tramp && !site && kshim::systemRunning() && static_call_tramp_is_ro(tramp));
	mutex_lock(&text_mutex);

	if (tramp && !site) {
		__static_call_validate((u8 *)tramp, true, true);	/* userspace: u8 * */
		__static_call_transform(tramp, __sc_insn(!func, true), func, false);
	}

	if (IS_ENABLED(CONFIG_HAVE_STATIC_CALL_INLINE) && site) {
		__static_call_validate((u8 *)site, tail, false);	/* userspace: u8 * */
		__static_call_transform(site, __sc_insn(!func, tail), func, false);
	}

	mutex_unlock(&text_mutex);
}

/*
 * Port of __static_call_fixup(), arch/x86/kernel/static_call.c, v7.3: a
 * return site of apply_returns() that is a trampoline (a NULL call's
 * "JMP __x86_return_thunk"; static_call() works before the alternatives,
 * so it may have been rewritten since) takes the RET form the return
 * thunk's setting asks for. True if @tramp is a trampoline.
 */
bool __static_call_fixup(void *tramp, u8 op, void *dest)
{
	unsigned long addr = (unsigned long)tramp;
	/*
	 * Most return sites are no trampoline: when the signature's bytes
	 * lie on the next page and that is not text, it is not one, and
	 * the memcmp() below must not fault on it.
	 */
	if (((addr >> PAGE_SHIFT) != ((addr + 7) >> PAGE_SHIFT)) &&
	    !kernel_text_address(addr + 7))
		return false;

	if (memcmp((u8 *)tramp+5, tramp_ud, 3)) {	/* userspace: u8 * */
		/* No trampoline: apply_returns() handles it. */
		return false;
	}

	mutex_lock(&text_mutex);
	if (op == RET_INSN_OPCODE || dest == (void *)&__x86_return_thunk)	/* userspace: cast */
		__static_call_transform(tramp, RET, NULL, true);
	mutex_unlock(&text_mutex);

	return true;
}
