/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Case 004 (batching sync_core() in apply_alternatives()): the tables a
 * pass patches and one timed pass, shared by `pokelab run alternatives`
 * and its test.
 *
 * The tables are the program's own (the boot-time one) and a generated one
 * of a few thousand sites (.rept in a top-level asm block) whose code is
 * never executed. Before each pass every site gets its compiler bytes back,
 * so every pass patches the same sites from the same text.
 *
 * Boot CPU (CPU 0) of a booted machine whose other CPUs run nothing;
 * not async-signal-safe.
 */
#pragma once

#include <string>
#include <vector>

#include <linux/types.h>
#include <pokelab/alt_batch.h>

namespace pokelab::scenario {

/* A sync_core() flavour the pass can use; absent ones have present == false. */
struct AltSyncFlavour {
	const char *name;	/* "serialize", "iret_to_self", "cpuid" */
	void (*fn)(void);
	bool present;
};
const std::vector<AltSyncFlavour> &altSyncFlavours();

/* The program's own table and the generated one, in that order. */
std::vector<pokelab_alt_table> altPassTables();
/* Sites of the generated table (one entry each) that passes patch; all of them by default. */
unsigned long altGeneratedSites();
/* The most sites the generated table holds. */
unsigned long altGeneratedSitesMax();
/* Patch only the first @n (1..altGeneratedSitesMax()) generated sites from now on. */
void altSetGeneratedSites(unsigned long n);

/* Put the compiler's bytes back on every site of altPassTables(). */
void altPassRestore();

struct AltPassResult {
	u64 ns;			/* the pass alone, restore excluded */
	unsigned long sites;	/* sites written */
	unsigned long syncs;	/* sync calls */
};
/* altPassRestore(), then one pokelab_apply_alternatives_pass() over every table. */
AltPassResult altRunPass(bool batched, void (*sync)(void));

/* The bytes now at every site of altPassTables(), concatenated. */
std::vector<u8> altPassBytes();

} /* namespace pokelab::scenario */
