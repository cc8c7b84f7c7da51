// SPDX-License-Identifier: GPL-2.0-only
/*
 * insn_decode() on Zydis.
 *
 * userspace: the kernel decodes with arch/x86/lib/insn.c and its generated
 * tables; pokelab asks Zydis and fills in the fields the text-patching code
 * reads, but for the few forms a text-poke batch takes, which it reads off
 * their bytes.
 */
#include <cerrno>
#include <cstring>

#include <Zydis/Zydis.h>

#include <asm/insn.h>
#include <asm/nops.h>
#include <kernel_shim/disasm.h>

/*
 * The instructions a text-poke batch takes (smp_text_poke_batch_add()
 * refuses every other): INT3, RET, CALL/JMP rel32, JMP/Jcc rel8, Jcc rel32,
 * and the NOP2/NOP5 it emulates as a JMP +0. A batch of N sites decodes N
 * of them, and Zydis takes ~100 ns for each, more than the text write it
 * comes with (docs/performance.md, "batch(164)"); these few encodings are
 * read off their bytes here, into the very fields Zydis fills (checked
 * against Zydis, form by form, in tests/alternative/insn_test.cpp).
 * Returns false for anything else, and for a buffer shorter than the
 * instruction: insn_decode_zydis() then decides.
 */
static bool insn_decode_text_poke_form(struct insn *insn, const u8 *b, int buf_len)
{
	int opc_len = 1, imm_len = 0;

	if (buf_len < 1)
		return false;
	switch (b[0]) {
	case 0xcc:	/* INT3 */
	case 0xc3:	/* RET */
		break;
	case 0xe8:	/* CALL rel32 */
	case 0xe9:	/* JMP rel32 */
		imm_len = 4;
		break;
	case 0xeb:	/* JMP rel8 */
	case 0x70 ... 0x7f:	/* Jcc rel8 */
		imm_len = 1;
		break;
	case 0x0f:
		if (buf_len >= 2 && (b[1] & 0xf0) == 0x80) {	/* Jcc rel32 */
			opc_len = 2;
			imm_len = 4;
			break;
		}
		if (buf_len < 5 || memcmp(b, x86_nops[5], 5))
			return false;
		/* NOP5: nopl 0x0(%rax,%rax,1), ModRM 0x44, SIB 0x00, disp8 0 */
		insn->length = 5;
		insn->opcode.bytes[0] = 0x0f;
		insn->opcode.bytes[1] = 0x1f;
		insn->opcode.nbytes = 2;
		insn->opcode.value = 0x0f;
		insn->modrm.nbytes = 1;
		insn->displacement.nbytes = 1;
		insn->disp_offset = 4;
		return true;
	case 0x66:
		if (buf_len < 2 || b[1] != 0x90)
			return false;
		/* NOP2: an operand-size prefix on NOP */
		insn->length = 2;
		insn->prefixes.nbytes = 1;
		insn->opcode.bytes[0] = 0x90;
		insn->opcode.nbytes = 1;
		insn->opcode.value = 0x90;
		return true;
	default:
		return false;
	}
	if (opc_len + imm_len > buf_len)
		return false;

	insn->length = opc_len + imm_len;
	insn->opcode.bytes[0] = b[0];
	if (opc_len == 2)
		insn->opcode.bytes[1] = b[1];
	insn->opcode.nbytes = opc_len;
	insn->opcode.value = b[0];
	if (imm_len) {
		s32 rel32;

		if (imm_len == 1) {
			insn->immediate.value = (s8)b[opc_len];
		} else {
			memcpy(&rel32, b + opc_len, 4);
			insn->immediate.value = rel32;
		}
		insn->immediate.nbytes = imm_len;
		insn->imm_offset = opc_len;
		insn->imm_size = imm_len;
	}
	return true;
}

int insn_decode(struct insn *insn, const void *kaddr, int buf_len, enum insn_mode m)
{
	memset(insn, 0, sizeof(*insn));
	if (m == INSN_MODE_32)
		return -EINVAL;	/* userspace: pokelab is x86-64 only */
	if (insn_decode_text_poke_form(insn, (const u8 *)kaddr, buf_len))
		return 0;
	return insn_decode_zydis(insn, kaddr, buf_len);
}

int insn_decode_zydis(struct insn *insn, const void *kaddr, int buf_len)
{
	ZydisDecodedInstruction zi;

	memset(insn, 0, sizeof(*insn));
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
