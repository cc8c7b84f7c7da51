// SPDX-License-Identifier: GPL-2.0-only
/*
 * The x86 BPF JIT's part in the dispatcher and the program pack: the
 * dispatcher's binary search, text copy and invalidation, the hole filler.
 *
 * PORT: written fresh after arch/x86/net/bpf_jit_comp.c, v7.3:
 * emit_bpf_dispatcher(), arch_prepare_bpf_dispatcher(),
 * emit_cond_near_jump(), emit_indirect_jump() (no retpoline: pokelab's
 * CPUs run with X86_FEATURE_RETPOLINE clear), jit_fill_hole(),
 * bpf_arch_text_copy(), bpf_arch_text_invalidate().
 */
#include <algorithm>
#include <cstring>

#include <asm/nops.h>
#include <asm/text-patching.h>
#include <linux/bpf.h>
#include <linux/filter.h>

namespace {

constexpr u8 X86_JE = 0x74, X86_JG = 0x7F;

bool is_simm32(s64 value)
{
	return value == (s64)(s32)value;
}

void emit1(u8 **prog, u8 b)
{
	*(*prog)++ = b;
}

void emit_off32(u8 **prog, s32 off)
{
	memcpy(*prog, &off, 4);
	*prog += 4;
}

/* Port of emit_nops(), arch/x86/net/bpf_jit_comp.c (v7.3) */
void emit_nops(u8 **pprog, int len)
{
	u8 *prog = *pprog;

	while (len > 0) {
		int noplen = std::min(len, ASM_NOP_MAX);

		memcpy(prog, x86_nops[noplen], noplen);
		prog += noplen;
		len -= noplen;
	}
	*pprog = prog;
}

/* Port of emit_cond_near_jump(), arch/x86/net/bpf_jit_comp.c (v7.3): Jcc rel32 from @ip */
int emit_cond_near_jump(u8 **pprog, void *func, void *ip, u8 jmp_cond)
{
	u8 *prog = *pprog;
	s64 offset;

	offset = (s64)func - ((s64)ip + 2 + 4);
	if (!is_simm32(offset))
		return -EINVAL;
	emit1(&prog, 0x0F);
	emit1(&prog, jmp_cond + 0x10);
	emit_off32(&prog, (s32)offset);
	*pprog = prog;
	return 0;
}

/* Port of emit_indirect_jump(), arch/x86/net/bpf_jit_comp.c (v7.3), no retpoline */
void emit_indirect_jump(u8 **pprog, int reg, u8 *ip)
{
	u8 *prog = *pprog;

	(void)ip;
	emit1(&prog, 0xFF);
	emit1(&prog, 0xE0 + reg);	/* jmp *%reg */
	emit1(&prog, INT3_INSN_OPCODE);	/* CONFIG_MITIGATION_SLS */
	*pprog = prog;
}

/* cmp %rdx, imm32 (REX.W 81 /7 ib with ModRM 0xfa), the program entry as the immediate */
int emit_cmp_rdx(u8 **prog, s64 func)
{
	if (!is_simm32(func))
		return -1;
	emit1(prog, 0x48);
	emit1(prog, 0x81);
	emit1(prog, 0xFA);
	emit_off32(prog, (s32)func);
	return 0;
}

/* Port of emit_bpf_dispatcher(), arch/x86/net/bpf_jit_comp.c (v7.3) */
int emit_bpf_dispatcher(u8 **pprog, int a, int b, s64 *progs, u8 *image, u8 *buf)
{
	u8 *jg_reloc, *jg_target, *prog = *pprog;
	int pivot, err, jg_bytes = 1;
	s64 jg_offset;

	if (a == b) {
		/* Leaf node of recursion, i.e. not a range of indices anymore. */
		if (emit_cmp_rdx(&prog, progs[a]))	/* cmp rdx,func */
			return -1;
		err = emit_cond_near_jump(&prog,	/* je func */
					  (void *)progs[a], image + (prog - buf), X86_JE);
		if (err)
			return err;

		emit_indirect_jump(&prog, 2 /* rdx */, image + (prog - buf));

		*pprog = prog;
		return 0;
	}

	/* Not a leaf node, so we pivot, and recursively descend into the lower and upper ranges. */
	pivot = (b - a) / 2;
	if (emit_cmp_rdx(&prog, progs[a + pivot]))	/* cmp rdx,func */
		return -1;

	if (pivot > 2) {				/* jg upper_part */
		/* Require near jump. */
		jg_bytes = 4;
		emit1(&prog, 0x0F);
		emit1(&prog, X86_JG + 0x10);
		emit_off32(&prog, 0);
	} else {
		emit1(&prog, X86_JG);
		emit1(&prog, 0);
	}
	jg_reloc = prog;

	err = emit_bpf_dispatcher(&prog, a, a + pivot,	/* emit lower_part */
				  progs, image, buf);
	if (err)
		return err;

	/*
	 * Intel's optimization manual, 3.4.1.4 Code Alignment, rule 11: all
	 * branch targets 16-byte aligned (the buffer and the image share their
	 * alignment: both are page-aligned plus the same half offset).
	 */
	jg_target = (u8 *)(((unsigned long)prog + 15) & ~15ul);
	if (jg_target != prog)
		emit_nops(&prog, jg_target - prog);
	jg_offset = prog - jg_reloc;
	if (jg_bytes == 1) {
		if (jg_offset > 127)
			return -1;
		jg_reloc[-1] = (u8)jg_offset;
	} else {
		s32 off = (s32)jg_offset;

		memcpy(jg_reloc - 4, &off, 4);
	}

	err = emit_bpf_dispatcher(&prog, a + pivot + 1,	/* emit upper_part */
				  b, progs, image, buf);
	if (err)
		return err;

	*pprog = prog;
	return 0;
}

} /* namespace */

/* Port of jit_fill_hole(), arch/x86/net/bpf_jit_comp.c (v7.3) */
void jit_fill_hole(void *area, unsigned int size)
{
	/* Fill whole space with INT3 instructions */
	memset(area, INT3_INSN_OPCODE, size);
}

/* Port of arch_prepare_bpf_dispatcher(), arch/x86/net/bpf_jit_comp.c (v7.3) */
int arch_prepare_bpf_dispatcher(void *image, void *buf, s64 *funcs, int num_funcs)
{
	u8 *prog = (u8 *)buf;

	std::sort(funcs, funcs + num_funcs);
	return emit_bpf_dispatcher(&prog, 0, num_funcs - 1, funcs, (u8 *)image, (u8 *)buf);
}

/* Port of bpf_arch_text_copy(), arch/x86/net/bpf_jit_comp.c (v7.3) */
void *bpf_arch_text_copy(void *dst, void *src, size_t len)
{
	if (text_poke_copy(dst, src, len) == NULL)
		return NULL;	/* userspace: the kernel's ERR_PTR(-EINVAL) */
	return dst;
}

/* Port of bpf_arch_text_invalidate(), arch/x86/net/bpf_jit_comp.c (v7.3) */
int bpf_arch_text_invalidate(void *dst, size_t len)
{
	return text_poke_set(dst, 0xcc, len) == NULL;
}
