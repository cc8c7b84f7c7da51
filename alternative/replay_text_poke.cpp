// SPDX-License-Identifier: GPL-2.0-only
/*
 * Bug replays of the text-poking code: each function is the code of before
 * one upstream fix, called from the one call site the fix changed when its
 * test switch (pokelab/bug_switches.h) is on. Test-only.
 */
#include <asm/insn.h>
#include <asm/text-patching.h>
#include <linux/bug.h>
#include <pokelab/bug_switches.h>
#include <pokelab/replay.h>

#include "text_poke_array.h"

/*
 * text_poke_loc_init()'s length check of before 26c44b776dba
 * ("x86/alternative: Relax text_poke_bp() constraint"): every site's length
 * must be its instruction's, so a RET or JMP padded with INT3 is a BUG.
 */
void __smp_text_poke_batch_add_pre_26c44b776dba(void *addr, const void *opcode, size_t len,
						 const void *emulate)
{
	struct insn insn;

	if (insn_decode(&insn, emulate ? emulate : opcode, len, INSN_MODE_KERN) >= 0 &&
	    len != insn.length) {
		text_poke_bad_insn(addr, opcode, len, "length differs from the instruction's");
		BUG();
	}
	__smp_text_poke_batch_add(addr, opcode, len, emulate);
}

/*
 * smp_text_poke_single() as c8976ade0c1b merged it, before 2aebf5ee43bf
 * ("x86/alternatives: Fix int3 handling failure from broken text_poke
 * array"): the raw append, blind to a batch still queued (unsorted, or
 * full).
 */
void smp_text_poke_single_pre_2aebf5ee43bf(void *addr, const void *opcode, size_t len,
					    const void *emulate)
{
	__smp_text_poke_batch_add(addr, opcode, len, emulate);
	smp_text_poke_batch_finish();
}

/*
 * The JNG/JNLE test of before 8924779df820 ("x86/kprobes: Fix JNG/JNLE
 * emulation"): JLE/JG combined ZF and SF != OF with "and" where the SDM
 * says "or". Its test calls it beside the fixed __emulate_cc().
 */
bool __emulate_cc_pre_8924779df820(unsigned long flags, u8 cc)
{
	bool invert = cc & 1;
	bool match;

	if (cc < 0xe)
		return __emulate_cc(flags, cc);
	match = ((flags & X86_EFLAGS_SF) >> __builtin_ctzl(X86_EFLAGS_SF)) ^
		((flags & X86_EFLAGS_OF) >> __builtin_ctzl(X86_EFLAGS_OF));
	match = match && (flags & X86_EFLAGS_ZF);
	return (match && !invert) || (!match && invert);
}
