// SPDX-License-Identifier: GPL-2.0-only
/*
 * insn_decode() on Zydis.
 *
 * userspace: the kernel decodes with arch/x86/lib/insn.c and its generated
 * tables; pokelab asks Zydis and fills in the fields the text-patching code
 * reads.
 */
#include <cerrno>
#include <cstring>

#include <Zydis/Zydis.h>

#include <asm/insn.h>
#include <kernel_shim/disasm.h>

int insn_decode(struct insn *insn, const void *kaddr, int buf_len, enum insn_mode m)
{
	ZydisDecodedInstruction zi;

	memset(insn, 0, sizeof(*insn));
	if (m == INSN_MODE_32)
		return -EINVAL;	/* userspace: pokelab is x86-64 only */
	/* No operand decoding: every field below comes from the raw encoding (and is cheaper). */
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(kshim::zydisDecoder(), nullptr, kaddr,
							  buf_len, &zi)))
		return -EINVAL;

	insn->length = zi.length;
	insn->prefixes.nbytes = zi.raw.prefix_count;

	switch (zi.opcode_map) {
	case ZYDIS_OPCODE_MAP_DEFAULT:
		insn->opcode.bytes[0] = zi.opcode;
		insn->opcode.nbytes = 1;
		break;
	case ZYDIS_OPCODE_MAP_0F:
		insn->opcode.bytes[0] = 0x0f;
		insn->opcode.bytes[1] = zi.opcode;
		insn->opcode.nbytes = 2;
		break;
	case ZYDIS_OPCODE_MAP_0F38:
	case ZYDIS_OPCODE_MAP_0F3A:
		insn->opcode.bytes[0] = 0x0f;
		insn->opcode.bytes[1] = zi.opcode_map == ZYDIS_OPCODE_MAP_0F38 ? 0x38 : 0x3a;
		insn->opcode.bytes[2] = zi.opcode;
		insn->opcode.nbytes = 3;
		break;
	default:
		/* VEX/EVEX/XOP: keep the primary opcode only */
		insn->opcode.bytes[0] = zi.opcode;
		insn->opcode.nbytes = 1;
		break;
	}
	insn->opcode.value = insn->opcode.bytes[0];

	if (zi.attributes & ZYDIS_ATTRIB_HAS_MODRM)
		insn->modrm.nbytes = 1;

	if (zi.raw.disp.size) {
		insn->displacement.value = zi.raw.disp.value;
		insn->displacement.nbytes = zi.raw.disp.size / 8;
		insn->disp_offset = zi.raw.disp.offset;
	}
	if (zi.raw.imm[0].size) {
		insn->immediate.value = zi.raw.imm[0].is_signed ? zi.raw.imm[0].value.s
								 : (s64)zi.raw.imm[0].value.u;
		insn->immediate.nbytes = zi.raw.imm[0].size / 8;
		insn->imm_offset = zi.raw.imm[0].offset;
		insn->imm_size = zi.raw.imm[0].size / 8;
	}
	/* In 64-bit mode ModRM mod=00 rm=101 is [RIP + disp32] (SDM Vol. 2 Table 2-7). */
	insn->rip_relative = (zi.attributes & ZYDIS_ATTRIB_HAS_MODRM) && zi.raw.modrm.mod == 0 &&
			     zi.raw.modrm.rm == 5;
	return 0;
}
