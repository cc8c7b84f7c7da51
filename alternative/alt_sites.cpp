// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab's own alternatives: a handful of real sites in the program's
 * "altinstructions" table, patched by apply_alternatives() at every boot.
 * They cover each shape the port handles: a CALL replaced by one
 * instruction (hweight, as arch/x86/include/asm/arch_hweight.h), an
 * ALT_NOT() site (as copy_user's FSRM test), a nested ALTERNATIVE_2(), a
 * RIP-relative operand that must be relocated, an ALT_CALL_ALWAYS
 * DIRECT_CALL, and static_cpu_has() (ALTERNATIVE_TERNARY + .altinstr_aux).
 *
 * userspace: every site that CALLs steps over the 128-byte red zone first
 * (kernel code is built without one), and the callees are written in
 * assembly so that the asm statements can name exactly what they clobber.
 */
#include <asm/alternative.h>
#include <asm/cpufeature.h>
#include <pokelab/alt_sites.h>

extern "C" {
unsigned long pokelab_sw_hweight_calls;
unsigned long pokelab_copy_alternative_calls;
int pokelab_alt_old_val = 111;
int pokelab_alt_new_val = 222;
int (*pokelab_alt_op)(void) = pokelab_alt_op_a;
}

/*
 * __sw_hweight32: %eax = number of set bits of %edi; preserves every other
 * register. pokelab_copy_alternative: byte copy of %rcx bytes from %rsi
 * to %rdi, leaving them as "rep movsb" would (rcx = 0, rsi/rdi advanced).
 * pokelab_alt_op_a/b: return 0xa / 0xb in %eax.
 */
asm(".pushsection .text, \"ax\", @progbits\n"
    ".globl __sw_hweight32\n"
    ".type __sw_hweight32, @function\n"
    "__sw_hweight32:\n"
    "	incq pokelab_sw_hweight_calls(%rip)\n"
    "	pushq %rdi\n"
    "	pushq %rcx\n"
    "	xorl %eax, %eax\n"
    "1:	testl %edi, %edi\n"
    "	jz 2f\n"
    "	leal -1(%rdi), %ecx\n"
    "	andl %ecx, %edi\n"
    "	incl %eax\n"
    "	jmp 1b\n"
    "2:	popq %rcx\n"
    "	popq %rdi\n"
    "	ret\n"
    ".size __sw_hweight32, .-__sw_hweight32\n"
    "\n"
    ".globl pokelab_copy_alternative\n"
    ".type pokelab_copy_alternative, @function\n"
    "pokelab_copy_alternative:\n"
    "	incq pokelab_copy_alternative_calls(%rip)\n"
    "	pushq %rax\n"
    "1:	testq %rcx, %rcx\n"
    "	jz 2f\n"
    "	movb (%rsi), %al\n"
    "	movb %al, (%rdi)\n"
    "	incq %rsi\n"
    "	incq %rdi\n"
    "	decq %rcx\n"
    "	jmp 1b\n"
    "2:	popq %rax\n"
    "	ret\n"
    ".size pokelab_copy_alternative, .-pokelab_copy_alternative\n"
    "\n"
    ".globl pokelab_alt_op_a\n"
    ".type pokelab_alt_op_a, @function\n"
    "pokelab_alt_op_a:\n"
    "	movl $0xa, %eax\n"
    "	ret\n"
    ".size pokelab_alt_op_a, .-pokelab_alt_op_a\n"
    ".globl pokelab_alt_op_b\n"
    ".type pokelab_alt_op_b, @function\n"
    "pokelab_alt_op_b:\n"
    "	movl $0xb, %eax\n"
    "	ret\n"
    ".size pokelab_alt_op_b, .-pokelab_alt_op_b\n"
    ".popsection\n");

/* Each function holds one site; noclone/noinline so its global label exists once. */
#define SITE_FN __attribute__((__noinline__, __noclone__))

extern "C" SITE_FN unsigned int pokelab_hweight32(unsigned int w)
{
	unsigned int res;

	asm volatile("lea -128(%%rsp), %%rsp\n\t"
		     ".globl pokelab_site_hweight\n"
		     "pokelab_site_hweight:\n\t"
		     ALTERNATIVE("call __sw_hweight32", "popcntl %%edi, %%eax",
				 X86_FEATURE_POPCNT)
		     "\n\tlea 128(%%rsp), %%rsp"
		     : "=a" (res) : "D" (w) : "cc", "memory");
	return res;
}

extern "C" SITE_FN void pokelab_copy(void *dst, const void *src, size_t len)
{
	asm volatile("lea -128(%%rsp), %%rsp\n\t"
		     ".globl pokelab_site_copy\n"
		     "pokelab_site_copy:\n\t"
		     ALTERNATIVE("rep movsb", "call pokelab_copy_alternative",
				 ALT_NOT(X86_FEATURE_FSRM))
		     "\n\tlea 128(%%rsp), %%rsp"
		     : "+D" (dst), "+S" (src), "+c" (len) : : "cc", "memory");
}

extern "C" SITE_FN int pokelab_alt_level(void)
{
	int level;

	asm volatile(".globl pokelab_site_level\n"
		     "pokelab_site_level:\n\t"
		     ALTERNATIVE_2("xorl %%eax, %%eax",
				   "movl $1, %%eax", X86_FEATURE_XMM2,
				   "movl $2, %%eax", X86_FEATURE_AVX2)
		     : "=a" (level) : : "cc");
	return level;
}

extern "C" SITE_FN int pokelab_alt_rip_load(void)
{
	int val;

	asm volatile(".globl pokelab_site_rip\n"
		     "pokelab_site_rip:\n\t"
		     ALTERNATIVE("movl pokelab_alt_old_val(%%rip), %%eax",
				 "movl pokelab_alt_new_val(%%rip), %%eax", X86_FEATURE_XMM2)
		     : "=a" (val) : : "memory");
	return val;
}

extern "C" SITE_FN int pokelab_alt_direct_call(void)
{
	int val;

	asm volatile("lea -128(%%rsp), %%rsp\n\t"
		     ".globl pokelab_site_direct_call\n"
		     "pokelab_site_direct_call:\n\t"
		     ALTERNATIVE("call *pokelab_alt_op(%%rip)", ALT_CALL_INSTR, ALT_CALL_ALWAYS)
		     "\n\tlea 128(%%rsp), %%rsp"
		     : "=a" (val) : : "cc", "memory");
	return val;
}

extern "C" SITE_FN bool pokelab_static_has_popcnt(void)
{
	return static_cpu_has(X86_FEATURE_POPCNT);
}
