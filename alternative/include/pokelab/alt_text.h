/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The alternative sites as text, for tools and tests alike: a copy of a
 * table's original bytes to put back, the disassembly debug-alternative
 * prints, and what apply_alternatives() did since boot.
 */
#pragma once

#include <string>
#include <vector>

#include <asm/alternative.h>

namespace pokelab {

/*
 * The original bytes of every site of a table, so a test can apply a table,
 * check, and put the text back (through text_poke_early()) before the next
 * test. Boot CPU, nothing else running the sites.
 */
class AltTextSnapshot
{
public:
	AltTextSnapshot(struct alt_instr *start, struct alt_instr *end);
	void restore() const;

private:
	struct Site {
		u8 *addr;
		std::vector<u8> bytes;
	};
	std::vector<Site> sites_;
};

/* One line per decoded instruction of @len bytes at @addr: "bytes  mnemonic operands". */
std::vector<std::string> disassemble(const u8 *bytes, size_t len, unsigned long addr);

/* Sites apply_alternatives() patched (replacement taken) / left (original kept) since boot. */
struct AltStats {
	unsigned long sites;
	unsigned long patched;
	unsigned long original;
};
AltStats altStats() noexcept;

} /* namespace pokelab */
