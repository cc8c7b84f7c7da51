// SPDX-License-Identifier: GPL-2.0-only
/*
 * The lookup of the built-in Port-of map (kernel_shim/port_map.h); the table
 * itself is generated (port_map_table.cpp in the build directory).
 */
#include "kernel_shim/port_map.h"

namespace kshim {

namespace {

/* strcmp() against @name up to its end or a "()": signal-safe, no libc state */
int cmpName(const char *entry, const char *name) noexcept
{
	for (;; entry++, name++) {
		char n = (*name == '(' && name[1] == ')' && !name[2]) ? '\0' : *name;

		if (*entry != n)
			return (unsigned char)*entry < (unsigned char)n ? -1 : 1;
		if (!n)
			return 0;
	}
}

} /* namespace */

const char *portWhere(const char *name) noexcept
{
	unsigned int lo = 0, hi = kPortMapSize;

	if (!name)
		return nullptr;
	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;
		int c = cmpName(kPortMap[mid].name, name);

		if (!c)
			return kPortMap[mid].where;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return nullptr;
}

} /* namespace kshim */
