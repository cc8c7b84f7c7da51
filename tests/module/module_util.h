/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the loader's tests share: the path of a test module (POKELAB_MODULES,
 * tests/meson.build) and the host's view of an address's page.
 */
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace pokelab::test {

inline std::string modPath(const char *name)
{
	const char *dir = getenv("POKELAB_MODULES");

	return std::string(dir ? dir : "modules") + "/" + name + ".o";
}

/* The permissions /proc/self/maps shows for @addr's page ("r-xs", ...); "" if unmapped. */
inline std::string pagePerms(unsigned long addr)
{
	std::ifstream maps("/proc/self/maps");
	std::string line;

	while (std::getline(maps, line)) {
		unsigned long lo, hi;
		char pr[8];

		if (sscanf(line.c_str(), "%lx-%lx %7s", &lo, &hi, pr) == 3 && addr >= lo &&
		    addr < hi)
			return pr;
	}
	return "";
}

} /* namespace pokelab::test */
