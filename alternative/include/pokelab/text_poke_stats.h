/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Counters of the text-patching port, for reports and tests.
 */
#pragma once

#include <linux/types.h>

namespace pokelab {

struct TextPokeStats {
	unsigned long batches;		/* smp_text_poke_batch_finish() runs with entries */
	unsigned long syncRounds;	/* smp_text_poke_sync_each_cpu() calls */
	unsigned long pokes;		/* text_poke() calls */
	unsigned int lastNrEntries;	/* entries of the last batch */
	u64 lastBatchNs;		/* duration of the last batch, CLOCK_MONOTONIC ns */
	unsigned int lastSyncRounds;	/* sync rounds of the last batch */
};

/* A snapshot of the global counters. Any thread. */
TextPokeStats textPokeStats() noexcept;

/* INT3 traps the batch handler emulated on @cpu since boot. Any thread. */
unsigned long int3Emulated(int cpu) noexcept;

/* Zero every counter (boot does it). */
void resetTextPokeStats() noexcept;

} /* namespace pokelab */
