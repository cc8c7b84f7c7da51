/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * x86 CPU feature bits: word*32 + bit, in the kernel's numbering.
 *
 * PORT: written fresh after arch/x86/include/asm/cpufeatures.h, v6.16. Only
 * the words and bits pokelab reads are defined; the numbers are the
 * kernel's, so "feat: 4*32+23" in a debug-alternative line means what it
 * means in a kernel boot log. Each word's source:
 *
 *	word  0	CPUID 0x00000001 EDX
 *	word  1	CPUID 0x80000001 EDX
 *	word  3	Linux-defined (synthetic: ALWAYS)
 *	word  7	Linux-defined (synthetic: the Spectre v2 mitigations)
 *	word 11	Linux-defined (synthetic: the return thunk)
 *	word  4	CPUID 0x00000001 ECX
 *	word  6	CPUID 0x80000001 ECX
 *	word  9	CPUID 0x00000007:0 EBX
 *	word 10	CPUID 0x0000000d:1 EAX
 *	word 16	CPUID 0x00000007:0 ECX
 *	word 18	CPUID 0x00000007:0 EDX
 *
 * These are plain integer macros so that they can be stringified into the
 * ALTERNATIVE() asm text, as the kernel does.
 */
#pragma once

#define NCAPINTS			22	/* 32-bit words of feature bits */
#define NBUGINTS			2	/* 32-bit words of bug bits */

/* word 0 */
#define X86_FEATURE_FPU			( 0*32+ 0)
#define X86_FEATURE_TSC			( 0*32+ 4)
#define X86_FEATURE_CX8			( 0*32+ 8)
#define X86_FEATURE_CMOV		( 0*32+15)
#define X86_FEATURE_CLFLUSH		( 0*32+19)
#define X86_FEATURE_FXSR		( 0*32+24)
#define X86_FEATURE_XMM			( 0*32+25)	/* "sse" */
#define X86_FEATURE_XMM2		( 0*32+26)	/* "sse2" */

/* word 1 */
#define X86_FEATURE_SYSCALL		( 1*32+11)
#define X86_FEATURE_NX			( 1*32+20)
#define X86_FEATURE_RDTSCP		( 1*32+27)
#define X86_FEATURE_LM			( 1*32+29)

/* word 3: synthetic */
#define X86_FEATURE_ALWAYS		( 3*32+21)	/* always present */

/*
 * word 7 and 11: synthetic, set by the mitigation selection (bugs.c's
 * role; pokelab: spectre_v2= and retbleed=, see apply_returns.cpp), read
 * by apply_retpolines() and apply_returns().
 */
#define X86_FEATURE_RETPOLINE		( 7*32+12)	/* generic retpoline (Spectre v2) */
#define X86_FEATURE_RETPOLINE_LFENCE	( 7*32+13)	/* LFENCE; indirect branch */
#define X86_FEATURE_RETHUNK		(11*32+14)	/* returns through the return thunk */

/* word 4 */
#define X86_FEATURE_XMM3		( 4*32+ 0)	/* "pni" (SSE3) */
#define X86_FEATURE_PCLMULQDQ		( 4*32+ 1)
#define X86_FEATURE_SSSE3		( 4*32+ 9)
#define X86_FEATURE_FMA			( 4*32+12)
#define X86_FEATURE_CX16		( 4*32+13)
#define X86_FEATURE_XMM4_1		( 4*32+19)	/* "sse4_1" */
#define X86_FEATURE_XMM4_2		( 4*32+20)	/* "sse4_2" */
#define X86_FEATURE_MOVBE		( 4*32+22)
#define X86_FEATURE_POPCNT		( 4*32+23)
#define X86_FEATURE_AES			( 4*32+25)
#define X86_FEATURE_XSAVE		( 4*32+26)
#define X86_FEATURE_OSXSAVE		( 4*32+27)
#define X86_FEATURE_AVX			( 4*32+28)
#define X86_FEATURE_F16C		( 4*32+29)
#define X86_FEATURE_RDRAND		( 4*32+30)
#define X86_FEATURE_HYPERVISOR		( 4*32+31)

/* word 6 */
#define X86_FEATURE_LAHF_LM		( 6*32+ 0)
#define X86_FEATURE_ABM			( 6*32+ 5)	/* LZCNT */

/* word 9 */
#define X86_FEATURE_FSGSBASE		( 9*32+ 0)
#define X86_FEATURE_BMI1		( 9*32+ 3)
#define X86_FEATURE_AVX2		( 9*32+ 5)
#define X86_FEATURE_BMI2		( 9*32+ 8)
#define X86_FEATURE_ERMS		( 9*32+ 9)	/* enhanced REP MOVSB/STOSB */
#define X86_FEATURE_AVX512F		( 9*32+16)
#define X86_FEATURE_AVX512DQ		( 9*32+17)
#define X86_FEATURE_RDSEED		( 9*32+18)
#define X86_FEATURE_ADX			( 9*32+19)
#define X86_FEATURE_CLFLUSHOPT		( 9*32+23)
#define X86_FEATURE_CLWB		( 9*32+24)
#define X86_FEATURE_AVX512CD		( 9*32+28)
#define X86_FEATURE_SHA_NI		( 9*32+29)
#define X86_FEATURE_AVX512BW		( 9*32+30)
#define X86_FEATURE_AVX512VL		( 9*32+31)

/* word 10 */
#define X86_FEATURE_XSAVEOPT		(10*32+ 0)
#define X86_FEATURE_XSAVEC		(10*32+ 1)
#define X86_FEATURE_XGETBV1		(10*32+ 2)
#define X86_FEATURE_XSAVES		(10*32+ 3)

/* word 16 */
#define X86_FEATURE_AVX512VBMI		(16*32+ 1)
#define X86_FEATURE_UMIP		(16*32+ 2)
#define X86_FEATURE_GFNI		(16*32+ 8)
#define X86_FEATURE_VAES		(16*32+ 9)
#define X86_FEATURE_VPCLMULQDQ		(16*32+10)
#define X86_FEATURE_AVX512_VPOPCNTDQ	(16*32+14)
#define X86_FEATURE_RDPID		(16*32+22)

/* word 18 */
#define X86_FEATURE_FSRM		(18*32+ 4)	/* fast short REP MOVSB */
#define X86_FEATURE_SERIALIZE		(18*32+14)
