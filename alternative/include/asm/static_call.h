/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * x86 static-call trampolines.
 *
 * PORT: written fresh after arch/x86/include/asm/static_call.h, v6.16.
 * A trampoline is 8 bytes in .static_call.text: a 5-byte JMP32 to the
 * current function (or RET + padding for a NULL call), then the
 * "ud1 %esp, %ecx" signature (0f b9 cc) that __static_call_validate()
 * checks before it patches.
 *
 * userspace: top-level asm cannot take operands, so the initial target is
 * named by its assembler symbol: the function must have C linkage
 * (extern "C"). Functions of other linkage are reachable through
 * static_call_update().
 */
#pragma once

#include <linux/kconfig.h>

#define STATIC_CALL_TRAMP_PREFIX	__SCT__
#define STATIC_CALL_KEY_PREFIX		__SCK__

#define __ARCH_DEFINE_STATIC_CALL_TRAMP(name, insns)			\
	asm(".pushsection .static_call.text, \"ax\", @progbits\n"	\
	    ".balign 4\n"						\
	    ".globl __SCT__" #name "\n"					\
	    ".type __SCT__" #name ", @function\n"			\
	    "__SCT__" #name ":\n"					\
	    insns "\n"							\
	    ".byte 0x0f, 0xb9, 0xcc\n"					\
	    ".size __SCT__" #name ", . - __SCT__" #name "\n"		\
	    ".popsection\n")

#define ARCH_DEFINE_STATIC_CALL_TRAMP(name, func)			\
	__ARCH_DEFINE_STATIC_CALL_TRAMP(name, ".byte 0xe9\n.long " #func " - (. + 4)")

/*
 * A NULL call returns at once: with CONFIG_MITIGATION_RETHUNK (an object
 * built -mfunction-return=thunk-extern, which the build tells with
 * -DCONFIG_MITIGATION_RETHUNK=1) through the return thunk, a jump that
 * pokelab-objtool records as a return site, so that apply_returns() hands
 * the trampoline to __static_call_fixup().
 */
#if IS_ENABLED(CONFIG_MITIGATION_RETHUNK)
#define ARCH_DEFINE_STATIC_CALL_NULL_TRAMP(name)			\
	__ARCH_DEFINE_STATIC_CALL_TRAMP(name, "jmp __x86_return_thunk")
#else
#define ARCH_DEFINE_STATIC_CALL_NULL_TRAMP(name)			\
	__ARCH_DEFINE_STATIC_CALL_TRAMP(name, "ret; int3; nop; nop; nop")
#endif

#define ARCH_DEFINE_STATIC_CALL_RET0_TRAMP(name)			\
	ARCH_DEFINE_STATIC_CALL_TRAMP(name, __static_call_return0)
