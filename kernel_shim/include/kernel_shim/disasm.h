/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The machine's one x86-64 decoder (Zydis), for everything that reads
 * instructions: insn_decode(), the cross-modifying-code model, the
 * disassembly in reports.
 */
#pragma once

#include <string>

#include <Zydis/Zydis.h>

#include <linux/types.h>

namespace kshim {

/*
 * The 64-bit decoder, initialised on first use. Decoding with it is pure
 * computation (no allocation, no lock): any thread, and signal context
 * once it has been used once (boot does).
 */
const ZydisDecoder *zydisDecoder() noexcept;

/*
 * The first instruction of the @len bytes at @bytes, as it would be at
 * @addr, in AT&T syntax; "(bad)" if none decodes. Its length in *@length
 * (0 for "(bad)") if non-NULL. Task context; allocates.
 */
std::string disasmOne(const u8 *bytes, size_t len, unsigned long addr,
		      unsigned int *length = nullptr);

} /* namespace kshim */
