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
	/* The saved bytes of the site at @addr (its longest entry's), or nullptr if none. */
	const std::vector<u8> *original(const u8 *addr) const;

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

/*
 * The program's own sites as a teaching tool shows them (pokelab explain
 * apply-alternatives): each site with the compiler's bytes (saved before
 * the first boot patched them), its entries in table order with what
 * decided each, and the bytes in memory now. Any thread of a booted
 * machine; allocates.
 */
struct AltSiteView {
	unsigned long addr;
	unsigned int len;
	std::string name;		/* symbol+offset */
	std::vector<u8> original;	/* as the compiler emitted them */
	struct Entry {
		std::string feature;	/* "4*32+23 (popcnt)" */
		bool has;		/* boot_cpu_has(), after clearcpuid= */
		bool notFlag;		/* ALT_FLAG_NOT: taken when the CPU lacks it */
		bool directCall;	/* ALT_FLAG_DIRECT_CALL */
		unsigned long replAddr;
		std::vector<u8> repl;
	};
	std::vector<Entry> entries;
	std::vector<u8> now;		/* in memory now */
};
std::vector<AltSiteView> altOwnSites();

/*
 * alternative_instructions()'s retpoline and return passes over the
 * program's retpoline_sites and return_sites (apply_returns.cpp), each
 * boot from the compiler's bytes. Boot, CPU 0.
 */
void applyThunkSites();

} /* namespace pokelab */
