/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Boot-time alternatives: ALTERNATIVE() sites and apply_alternatives().
 *
 * PORT: written fresh after arch/x86/include/asm/alternative.h, v6.16 (the
 * nested-ALTERNATIVE form of the macros); implemented in
 * alternative/apply_alternatives.cpp.
 *
 * A site is emitted by inline asm: the original instruction(s), padded with
 * 0x90 up to the longest replacement, one struct alt_instr per alternative
 * in the "altinstructions" section, and the replacement bytes in
 * "altinstr_replacement". ALTERNATIVE_2() nests one ALTERNATIVE() inside
 * another, so its two entries name the same instruction address and are
 * consecutive in the table (inner first).
 *
 * userspace: the sections are called "altinstructions" and
 * "altinstr_replacement", without the kernel's leading dot. GNU ld defines
 * __start_SEC/__stop_SEC only for sections whose names are C identifiers,
 * and pokelab links with the default linker script (the kernel's
 * vmlinux.lds.S places its own __alt_instructions labels). Tests put tables
 * of their own in other sections (__ALTERNATIVE_SEC()), which boot does not
 * apply. The table section is writable ("aw"): the pre-2026 loop, kept for
 * the bug replay, writes the padded length back into nested entries, as
 * the kernel may in its init data.
 *
 * The macros expand to strings for asm volatile()/asm goto(); feature
 * arguments are macros or asm operands ("%c[feature]"), stringified.
 */
#pragma once

#include <asm/cpufeatures.h>
#include <linux/compiler.h>
#include <linux/types.h>

/* Port of ALT_FLAGS_SHIFT(), arch/x86/include/asm/alternative.h, v7.3 */
#define ALT_FLAGS_SHIFT		16

/* Port of ALT_FLAG_NOT(), arch/x86/include/asm/alternative.h, v7.3 */
#define ALT_FLAG_NOT		(1 << 0)
/* Port of ALT_NOT(), arch/x86/include/asm/alternative.h, v7.3 */
#define ALT_NOT(feature)	((ALT_FLAG_NOT << ALT_FLAGS_SHIFT) | (feature))
/* Port of ALT_FLAG_DIRECT_CALL(), arch/x86/include/asm/alternative.h, v7.3 */
#define ALT_FLAG_DIRECT_CALL	(1 << 1)
/* Port of ALT_DIRECT_CALL(), arch/x86/include/asm/alternative.h, v7.3 */
#define ALT_DIRECT_CALL(feature) ((ALT_FLAG_DIRECT_CALL << ALT_FLAGS_SHIFT) | (feature))
/* Port of ALT_CALL_ALWAYS(), arch/x86/include/asm/alternative.h, v7.3 */
#define ALT_CALL_ALWAYS		ALT_DIRECT_CALL(X86_FEATURE_ALWAYS)

/* Longest site apply_alternatives() can patch (u8 instrlen; the kernel's MAX_PATCH_LEN). */
/* Port of MAX_PATCH_LEN(), arch/x86/kernel/alternative.c, v7.3 */
#define MAX_PATCH_LEN		(255 - 1)

/* Port of struct alt_instr, arch/x86/include/asm/alternative.h, v7.3 */
struct alt_instr {
	s32 instr_offset;	/* original instruction, relative to this field */
	s32 repl_offset;	/* replacement, relative to this field */
	union {
		struct {
			u32 cpuid : 16;	/* X86_FEATURE_* */
			u32 flags : 16;	/* ALT_FLAG_* */
		};
		u32 ft_flags;
	};
	u8 instrlen;		/* original site, padding included */
	u8 replacementlen;	/* replacement, <= instrlen */
} __packed;

static_assert(sizeof(struct alt_instr) == 14, "struct alt_instr must stay 14 bytes, packed");

#define __alt_stringify_1(...)	#__VA_ARGS__
#define __alt_stringify(...)	__alt_stringify_1(__VA_ARGS__)

/*
 * Labels: 881 start of the original, 882 end of the original, 883 end of the
 * padding; 884/885 the replacement's start and end. GAS evaluates "a > b"
 * as -1 when true, hence the leading minus in the .skip count.
 */
#define __ALT_OLDINSTR(oldinstr)					\
	"# pokelab ALT: oldinstr\n"					\
	"881:\n\t" oldinstr "\n882:\n"					\
	"# pokelab ALT: padding\n"					\
	".skip -(((885f-884f)-(882b-881b)) > 0) * "			\
		"((885f-884f)-(882b-881b)),0x90\n"			\
	"883:\n"

#define __ALT_ENTRY(sec, ft_flags)					\
	".pushsection " sec ",\"aw\"\n"					\
	" .long 881b - .\n"						\
	" .long 884f - .\n"						\
	" .4byte " __alt_stringify(ft_flags) "\n"			\
	" .byte 883b-881b\n"						\
	" .byte 885f-884f\n"						\
	".popsection\n"

#define __ALT_REPLACEMENT(newinstr)					\
	".pushsection altinstr_replacement,\"ax\"\n"			\
	"# pokelab ALT: replacement\n"					\
	"884:\n\t" newinstr "\n885:\n"					\
	".popsection\n"

/* One alternative whose alt_instr goes to section @sec (a string literal). */
#define __ALTERNATIVE_SEC(sec, oldinstr, newinstr, ft_flags)		\
	__ALT_OLDINSTR(oldinstr)					\
	__ALT_ENTRY(sec, ft_flags)					\
	__ALT_REPLACEMENT(newinstr)

#define __ALTERNATIVE_2_SEC(sec, oldinstr, newinstr1, ft_flags1, newinstr2, ft_flags2) \
	__ALTERNATIVE_SEC(sec, __ALTERNATIVE_SEC(sec, oldinstr, newinstr1, ft_flags1), \
			  newinstr2, ft_flags2)

#define __ALTERNATIVE_3_SEC(sec, oldinstr, newinstr1, ft_flags1, newinstr2, ft_flags2,	\
			    newinstr3, ft_flags3)					\
	__ALTERNATIVE_SEC(sec, __ALTERNATIVE_2_SEC(sec, oldinstr, newinstr1, ft_flags1,	\
						   newinstr2, ft_flags2),		\
			  newinstr3, ft_flags3)

/* The program's own table, applied at boot. */
#define ALT_SEC_DEFAULT		"altinstructions"

/* @oldinstr, replaced by @newinstr when @ft_flags' feature is present (absent for ALT_NOT()). */
/* Port of ALTERNATIVE(), arch/x86/include/asm/alternative.h, v7.3 */
#define ALTERNATIVE(oldinstr, newinstr, ft_flags)			\
	__ALTERNATIVE_SEC(ALT_SEC_DEFAULT, oldinstr, newinstr, ft_flags)

/* Two alternatives for one site; when both apply, the second (@newinstr2) wins. */
/* Port of ALTERNATIVE_2(), arch/x86/include/asm/alternative.h, v7.3 */
#define ALTERNATIVE_2(oldinstr, newinstr1, ft_flags1, newinstr2, ft_flags2) \
	__ALTERNATIVE_2_SEC(ALT_SEC_DEFAULT, oldinstr, newinstr1, ft_flags1, newinstr2, ft_flags2)

/* Three alternatives for one site (include/asm/alternative.h): the last that applies wins. */
/* Port of ALTERNATIVE_3(), arch/x86/include/asm/alternative.h, v7.3 */
#define ALTERNATIVE_3(oldinstr, newinstr1, ft_flags1, newinstr2, ft_flags2, newinstr3,	\
		      ft_flags3)								\
	__ALTERNATIVE_3_SEC(ALT_SEC_DEFAULT, oldinstr, newinstr1, ft_flags1, newinstr2,	\
			    ft_flags2, newinstr3, ft_flags3)

/* @newinstr_yes if feature @ft_flags is present, else @newinstr_no (after boot). */
/* Port of ALTERNATIVE_TERNARY(), arch/x86/include/asm/alternative.h, v7.3 */
#define ALTERNATIVE_TERNARY(oldinstr, ft_flags, newinstr_yes, newinstr_no) \
	ALTERNATIVE_2(oldinstr, newinstr_no, X86_FEATURE_ALWAYS, newinstr_yes, ft_flags)

/* The replacement of an ALT_DIRECT_CALL() site: a CALL that apply_alternatives() re-aims. */
/* Port of ALT_CALL_INSTR(), arch/x86/include/asm/alternative.h, v7.3 */
#define ALT_CALL_INSTR		"call BUG_func"

/* The table the program's own sites fill (GNU ld's section bounds). */
extern "C" struct alt_instr __start_altinstructions[];
extern "C" struct alt_instr __stop_altinstructions[];

/*
 * Port of apply_alternatives(), arch/x86/kernel/alternative.c (2026 form,
 * one text_poke_early() per site). Patches every site of [@start, @end)
 * for boot_cpu_data's features. Boot CPU with no other CPU running the
 * sites (early boot, or a test's private table); not async-signal-safe.
 * BUGs on a malformed entry (see the .cpp), as the kernel does.
 */
void apply_alternatives(struct alt_instr *start, struct alt_instr *end);

/*
 * Ports of apply_retpolines() and apply_returns(), arch/x86/kernel/alternative.c:
 * rewrite each site of an objtool table (s32 offsets) as the boot's
 * X86_FEATURE_RETPOLINE(_LFENCE) / _RETHUNK ask. Boot, CPU 0 (text_poke_early()).
 */
void apply_retpolines(s32 *start, s32 *end);
void apply_returns(s32 *start, s32 *end);

/*
 * arch/x86/kernel/alternative.c, v7.3: is the return thunk wanted at all
 * (X86_FEATURE_RETHUNK), and for a return at @addr (pokelab has no ITS
 * thunk, so the same answer)? Any context (one load).
 */
bool cpu_wants_rethunk(void);
bool cpu_wants_rethunk_at(void *addr);

/* arch/x86/kernel/cpu/bugs.c: the return thunk in use (__x86_return_thunk). */
extern void (*x86_return_thunk)(void);
extern "C" void __x86_return_thunk(void);
/*
 * arch/x86/include/asm/nospec-branch.h without CONFIG_MITIGATION_ITS: a
 * function that is never the return thunk in use, so cpu_wants_rethunk_at()
 * answers for every address alike.
 */
static inline void its_return_thunk(void) {}

/*
 * Port of optimize_nops(), arch/x86/kernel/alternative.c, v7.3: rewrite
 * every run of NOPs in @buf[0..@len) (a copy of the site at @instr) as one
 * NOP, or a JMP over padding longer than ASM_NOP_MAX. Works on the buffer
 * only; the caller pokes it.
 */
void optimize_nops(const u8 *const instr, u8 *buf, size_t len);

/*
 * Port of text_poke_apply_relocation(), arch/x86/kernel/alternative.c:
 * @buf holds a copy of @repl (@repl_len bytes) padded to @instrlen, to be
 * written at @instr; re-aims branches and RIP-relative operands that point
 * outside the replacement, shrinks JMP32 to JMP8 where it fits, and
 * optimises the NOP padding.
 */
void text_poke_apply_relocation(u8 *buf, const u8 *const instr, size_t instrlen, u8 *repl,
				size_t repl_len);

/*
 * alt_reloc_selftest(), arch/x86/kernel/alternative.c: runs an ALWAYS site
 * whose replacement is "lea mem(%rip),%rdi; call fn" once; returns 0 if the
 * copied LEA and CALL reached the right addresses, else WARNs and returns
 * -EINVAL. Boot runs it after apply_alternatives(); any thread after boot.
 */
extern "C" int alt_reloc_selftest(void);

/* The default DIRECT_CALL target: reached only if a site was never patched. */
extern "C" void BUG_func(void);
/* A DIRECT_CALL to nop_func turns the site into NOPs. */
extern "C" void nop_func(void);

/* debug-alternative mask bits (only DA_ALT is used by pokelab) */
/* Port of DA_ALL(), arch/x86/kernel/alternative.c, v7.3 */
#define DA_ALL		(~0)
/* Port of DA_ALT(), arch/x86/kernel/alternative.c, v7.3 */
#define DA_ALT		0x01
extern int debug_alternative;
