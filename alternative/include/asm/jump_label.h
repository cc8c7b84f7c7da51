/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * x86-64 static branch sites.
 *
 * PORT: written fresh after arch/x86/include/asm/jump_label.h, v6.16. Each
 * site is a 5-byte NOP or JMP32 in the program's own .text, and a
 * __jump_table entry {code, target, key} of self-relative offsets; the low
 * bit of the key offset is the branch polarity.
 * userspace: sites are always 5 bytes (the kernel lets objtool shrink some
 * to 2), and the JMP is spelled as bytes so the assembler cannot shrink it.
 */
#pragma once

#include <linux/compiler.h>

#define JUMP_TABLE_ENTRY(key, label)				\
	".pushsection __jump_table,  \"aw\"\n\t"		\
	".balign 8\n\t"						\
	".long 1b - .\n\t"					\
	".long " label " - .\n\t"				\
	".quad " key " - .\n\t"					\
	".popsection\n\t"

struct static_key;

static __always_inline bool arch_static_branch(struct static_key * const key, const bool branch)
{
	asm goto("1:\n\t"
		 ".byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n\t"
		 JUMP_TABLE_ENTRY("%c0 + %c1", "%l[l_yes]")
		 : : "i"(key), "i"(branch) : : l_yes);

	return false;
l_yes:
	return true;
}

static __always_inline bool arch_static_branch_jump(struct static_key * const key,
						    const bool branch)
{
	asm goto("1:\n\t"
		 ".byte 0xe9\n\t"
		 ".long %l[l_yes] - 2f\n\t"
		 "2:\n\t"
		 JUMP_TABLE_ENTRY("%c0 + %c1", "%l[l_yes]")
		 : : "i"(key), "i"(branch) : : l_yes);

	return false;
l_yes:
	return true;
}
