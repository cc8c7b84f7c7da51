/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Instruction decoding for the text-patching code.
 *
 * CUSTOM: the subset of arch/x86/include/asm/insn.h that alternative.c and
 * jump_label.c read, filled in by Zydis instead of the kernel's decoder
 * (pokelab copies no decoder tables). Any thread; not async-signal-safe
 * (not needed in the trap path: the batch is decoded when queued).
 */
#pragma once

#include <linux/types.h>

#define MAX_INSN_SIZE 15

enum insn_mode {
	INSN_MODE_32,
	INSN_MODE_64,
	INSN_MODE_KERN,
	INSN_NUM_MODES,
};

struct insn_field {
	s64 value;
	u8 bytes[4];
	u8 nbytes;
};

struct insn {
	struct insn_field prefixes;	/* only nbytes is filled */
	struct insn_field opcode;	/* bytes[0..nbytes): 0x0f escape first, if any */
	struct insn_field modrm;	/* nbytes 0/1 */
	struct insn_field displacement;	/* value = memory displacement */
	struct insn_field immediate;	/* value = first immediate / relative offset, signed */
	u8 length;
	bool rip_relative;		/* has a RIP-relative memory operand */
	u8 disp_offset;			/* offset of the displacement bytes in the insn */
	u8 imm_offset;			/* offset of the immediate bytes */
	u8 imm_size;			/* size of the immediate in bytes */
};

/*
 * Decode the instruction at @kaddr, reading at most @buf_len bytes.
 * Returns 0, or -EINVAL if the bytes are not one valid instruction.
 */
int insn_decode(struct insn *insn, const void *kaddr, int buf_len, enum insn_mode m);

/*
 * userspace: insn_decode() without its shortcut for the forms a text-poke
 * batch takes: every instruction through Zydis, into the same fields. For
 * the tests that hold the shortcut to Zydis's word. Same contract as
 * insn_decode() in 64-bit mode.
 */
int insn_decode_zydis(struct insn *insn, const void *kaddr, int buf_len);

#define insn_decode_kernel(_insn, _ptr) insn_decode((_insn), (_ptr), MAX_INSN_SIZE, INSN_MODE_KERN)

/* Jcc.d32: 0f 80..8f */
/* Port of is_jcc32(), arch/x86/kernel/alternative.c, v7.3 */
static inline bool is_jcc32(struct insn *insn)
{
	return insn->opcode.bytes[0] == 0x0f && (insn->opcode.bytes[1] & 0xf0) == 0x80;
}
