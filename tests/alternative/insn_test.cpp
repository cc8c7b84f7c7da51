// SPDX-License-Identifier: GPL-2.0-only
/*
 * insn_decode()'s shortcut for the forms a text-poke batch takes (INT3,
 * RET, CALL/JMP rel32, JMP/Jcc rel8, Jcc rel32, NOP2, NOP5) against Zydis
 * (insn_decode_zydis()): every form, with displacements at their edges,
 * decoded from every buffer length 0..15, gives the same return value and
 * the same struct insn, byte for byte; so do the near misses the shortcut
 * must leave to Zydis (other NOPs, prefixed forms, a truncated Jcc).
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include <asm/insn.h>
#include <asm/nops.h>

namespace {

using Bytes = std::vector<u8>;

std::vector<Bytes> forms()
{
	static const s32 rel32s[] = {0, 1, -1, 5, -5, 0x7f, -0x80, 0x12345678, INT32_MAX, INT32_MIN};
	static const s8 rel8s[] = {0, 1, -1, 2, -2, 0x7f, -0x80};
	std::vector<Bytes> v = {{0xcc}, {0xc3}, {0x66, 0x90}, Bytes(x86_nops[5], x86_nops[5] + 5)};

	for (s32 r : rel32s) {
		u8 d[4];

		memcpy(d, &r, 4);
		for (u8 op : {0xe8, 0xe9})
			v.push_back({op, d[0], d[1], d[2], d[3]});
		for (int cc = 0; cc < 16; cc++)
			v.push_back({0x0f, (u8)(0x80 + cc), d[0], d[1], d[2], d[3]});
	}
	for (s8 r : rel8s) {
		v.push_back({0xeb, (u8)r});
		for (int cc = 0; cc < 16; cc++)
			v.push_back({(u8)(0x70 + cc), (u8)r});
	}
	/* near misses: other NOPs, prefixed and two-byte forms the shortcut leaves alone */
	for (int n = 1; n <= ASM_NOP_MAX; n++)
		v.push_back(Bytes(x86_nops[n], x86_nops[n] + n));
	v.push_back({0x0f, 0x1f, 0x44, 0x00, 0x01});
	v.push_back({0x0f, 0x1f, 0x44, 0x08, 0x00});
	v.push_back({0x66, 0xe9, 0x00, 0x00});
	v.push_back({0x66, 0x91});
	v.push_back({0x2e, 0x74, 0x10});
	v.push_back({0x0f, 0x0b});
	v.push_back({0x0f, 0x90, 0xc0});
	v.push_back({0xc2, 0x08, 0x00});
	v.push_back({0xe3, 0x10});
	v.push_back({0xff, 0xe0});
	return v;
}

std::string hex(const Bytes &b)
{
	std::string s;
	char x[4];

	for (u8 c : b) {
		snprintf(x, sizeof(x), "%02x ", c);
		s += x;
	}
	return s;
}

} /* namespace */

TEST(InsnDecode, TextPokeFormsDecodeAsZydisDoes)
{
	unsigned int compared = 0, decoded = 0;

	for (const Bytes &form : forms()) {
		for (int len = 0; len <= MAX_INSN_SIZE; len++) {
			u8 buf[MAX_INSN_SIZE];
			struct insn fast, zydis;
			int rf, rz;

			/* what follows the instruction: INT3 padding, or another JMP */
			memset(buf, len % 2 ? 0xcc : 0xe9, sizeof(buf));
			memcpy(buf, form.data(), form.size());
			memset(&fast, 0x5a, sizeof(fast));
			memset(&zydis, 0xa5, sizeof(zydis));
			rf = insn_decode(&fast, buf, len, INSN_MODE_KERN);
			rz = insn_decode_zydis(&zydis, buf, len);
			ASSERT_EQ(rf, rz) << hex(form) << "from " << len << " bytes";
			ASSERT_EQ(memcmp(&fast, &zydis, sizeof(fast)), 0)
				<< hex(form) << "from " << len << " bytes: length " << (int)fast.length
				<< "/" << (int)zydis.length << ", opcode " << (int)fast.opcode.nbytes
				<< " bytes/" << (int)zydis.opcode.nbytes << ", imm " << fast.immediate.value
				<< "/" << zydis.immediate.value << " at " << (int)fast.imm_offset << "/"
				<< (int)zydis.imm_offset << ", disp at " << (int)fast.disp_offset << "/"
				<< (int)zydis.disp_offset;
			compared++;
			decoded += rf == 0;
		}
	}
	/* every form decodes from its own length on; none from a buffer too short */
	EXPECT_GT(decoded, compared / 2);
}

TEST(InsnDecode, TextPokeFormsFieldsAreTheEncodings)
{
	const u8 jcc32[] = {0x0f, 0x85, 0xfb, 0xff, 0xff, 0xff};
	const u8 jmp8[] = {0xeb, 0x80};
	struct insn insn;

	ASSERT_EQ(insn_decode(&insn, jcc32, sizeof(jcc32), INSN_MODE_KERN), 0);
	EXPECT_EQ(insn.length, 6);
	EXPECT_TRUE(is_jcc32(&insn));
	EXPECT_EQ(insn.opcode.bytes[1], 0x85);
	EXPECT_EQ(insn.immediate.value, -5);
	EXPECT_EQ(insn.imm_offset, 2);

	ASSERT_EQ(insn_decode(&insn, jmp8, sizeof(jmp8), INSN_MODE_KERN), 0);
	EXPECT_EQ(insn.length, 2);
	EXPECT_EQ(insn.opcode.bytes[0], 0xeb);
	EXPECT_EQ(insn.immediate.value, -128);

	/* a Jcc rel32 cut one byte short is no instruction */
	EXPECT_EQ(insn_decode(&insn, jcc32, 5, INSN_MODE_KERN), -EINVAL);
}
