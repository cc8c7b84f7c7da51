/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Text generations: the bookkeeping behind the checker that proves no CPU
 * runs instrumentable kernel code against text it has not serialised with.
 *
 * Every text write phase bumps the global generation once its writes are
 * done; a CPU records the generation it serialised against (do_sync_core(),
 * the deferred flush at kernel entry, text_poke_early()); a sync round that
 * returned records the generation it covered. A CPU whose recorded
 * generation is older than the last returned round, and which has no
 * deferred sync pending, is running stale text.
 *
 * Memory ordering: textGenBump() is a release after the phase's writes;
 * textGenSyncedThisCpu() reads the generation with acquire *before* its
 * caller serialises, so it never claims more than it synced. All functions
 * are async-signal-safe and lock-free.
 */
#pragma once

namespace kshim {

/* Called by the patcher after a write phase: returns the new generation. */
unsigned long textGenBump() noexcept;
/* The current generation. */
unsigned long textGen() noexcept;

/*
 * Two halves of "this CPU serialised": read the generation first
 * (textGenBeginSync()), serialise, then record it (textGenEndSync()).
 */
unsigned long textGenBeginSync() noexcept;
void textGenEndSync(unsigned long gen) noexcept;
/* The generation CPU @cpu last serialised against. */
unsigned long textGenOfCpu(int cpu) noexcept;

/* A sync round that started at generation @gen returned. */
void textGenRoundDone(unsigned long gen) noexcept;
/* The newest generation a returned sync round covered. */
unsigned long textGenRound() noexcept;

/* Zeroed at boot. */
void textGenReset() noexcept;

} /* namespace kshim */
