// SPDX-License-Identifier: GPL-2.0-only
/*
 * The machine's x86-64 decoder and one-instruction disassembly (Zydis).
 */
#include <kernel_shim/disasm.h>

namespace kshim {

const ZydisDecoder *zydisDecoder() noexcept
{
	static ZydisDecoder d;
	static bool init = [] {
		ZydisDecoderInit(&d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
		return true;
	}();

	(void)init;
	return &d;
}

std::string disasmOne(const u8 *bytes, size_t len, unsigned long addr, unsigned int *length)
{
	static ZydisFormatter formatter;
	static bool init = [] {
		ZydisFormatterInit(&formatter, ZYDIS_FORMATTER_STYLE_ATT);
		return true;
	}();
	ZydisDecodedInstruction zi;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	char text[128];

	(void)init;
	if (length)
		*length = 0;
	if (!len || !ZYAN_SUCCESS(ZydisDecoderDecodeFull(zydisDecoder(), bytes, len, &zi, ops)))
		return "(bad)";
	ZydisFormatterFormatInstruction(&formatter, &zi, ops, zi.operand_count_visible, text,
					sizeof(text), addr, nullptr);
	if (length)
		*length = zi.length;
	return text;
}

} /* namespace kshim */
