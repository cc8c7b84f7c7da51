/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pokelab's experiment for case 004: apply_alternatives() with one
 * sync_core() per site (text_poke_early(), as upstream) or one sync_core()
 * for the whole pass with IRQs off around it (batched; never merged
 * upstream, see kernel-map.md 2.5), with the serialising instruction chosen
 * by the caller (SERIALIZE, IRET-to-self or CPUID).
 *
 * Boot CPU (CPU 0) task context, nothing else running the sites of the
 * tables; not async-signal-safe. The machine must be booted (the writes go
 * through the poking alias opened at boot).
 */
#pragma once

#include <asm/alternative.h>

/* One alternatives table: [start, end), as apply_alternatives() takes it. */
struct pokelab_alt_table {
	struct alt_instr *start;
	struct alt_instr *end;
};

struct pokelab_alt_pass {
	bool batched;		/* in: one sync for the whole pass */
	void (*sync)(void);	/* in: the sync_core() flavour; the pass's only serialiser */
	unsigned long sites;	/* out: sites written (each written once) */
	unsigned long syncs;	/* out: calls of @sync made by the pass */
};

/*
 * Apply every table of @tables[0..@nr) as apply_alternatives() does (the
 * 2026 per-site form: analyse, build, optimise, write once), then serialise:
 *  - per site (@pass->batched false): each site's write is followed by
 *    @pass->sync() under that site's own local_irq_save(), the steps of
 *    text_poke_early();
 *  - batched: local_irq_save() once, every write, one @pass->sync(),
 *    local_irq_restore().
 * Adds to @pass->sites and @pass->syncs. BUGs on a malformed entry as
 * apply_alternatives() does.
 */
void pokelab_apply_alternatives_pass(const struct pokelab_alt_table *tables, int nr,
				     struct pokelab_alt_pass *pass);

namespace pokelab {

/*
 * Put the compiler's bytes back on the program's own sites (the copy boot
 * took before it first patched them), so a pass can patch them again.
 * Same context as above. No-op before the first boot.
 */
void altOwnSitesRestore();

} /* namespace pokelab */
