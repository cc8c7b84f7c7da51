/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Tests' reading of a patched site: the target of the 5-byte CALL (E8) or
 * JMP (E9) at @site, or 0 when the site holds another opcode than @op.
 */
#pragma once

#include <cstring>

#include <linux/types.h>

namespace pokelab::test {

inline unsigned long branchTarget(const void *site, u8 op)
{
	const u8 *p = (const u8 *)site;
	s32 rel;

	if (p[0] != op)
		return 0;
	memcpy(&rel, p + 1, 4);
	return (unsigned long)p + 5 + rel;
}

} /* namespace pokelab::test */
