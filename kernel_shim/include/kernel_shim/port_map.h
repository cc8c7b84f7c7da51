/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Where the port keeps a kernel definition: the tree's Port-of map, built
 * into the binary (tools/portlib/gen_map.py writes it at build time, so it
 * follows every edit). What `pokelab where` reads from the sources, for the
 * reports that name a kernel function: an xmc: violation's operation, the
 * torture FAILURE summary, explain's "Read next".
 */
#pragma once

namespace kshim {

struct PortMapEntry {
	const char *name;	/* the kernel's name: "smp_text_poke_batch_finish" */
	const char *where;	/* the port's FILE:LINE, from the tree's root */
	const char *upstream;	/* the kernel file it ports */
};

extern const PortMapEntry kPortMap[];
extern const unsigned int kPortMapSize;

/*
 * The port's FILE:LINE of the kernel definition @name ("foo" or "foo()"),
 * or nullptr when the port has none. A binary search of constant data:
 * any context, signal handlers included; no allocation, no lock.
 */
const char *portWhere(const char *name) noexcept;

} /* namespace kshim */
