/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * BUSTED variants, as rcutorture has them: plausible wrong patches to the
 * code pokelab ports, each behind one test-only boot parameter,
 * pokelab.busted=NAME, so that the cross-modifying-code model can be shown
 * to catch every one (pokelab torture --help lists them; docs/testing.md
 * says what each breaks and how it is caught).
 *
 * Each switch sits at its call site inside the ported function a developer
 * would edit, never in a copy of it: BUSTED(NO_SYNC_2) in
 * smp_text_poke_batch_finish() drops exactly the call a real patch would.
 * The test is one load and compare, inline and call-free, so it may sit in
 * noinstr code. Set at boot only, before any CPU but 0 runs.
 */
#pragma once

#include <linux/compiler.h>

enum pokelab_busted {
	POKELAB_BUSTED_NONE,
	POKELAB_BUSTED_NO_SYNC_1,		/* drop the sync after phase 1 */
	POKELAB_BUSTED_NO_SYNC_2,		/* drop the sync after phase 2 */
	POKELAB_BUSTED_NO_SYNC_3,		/* drop the sync after phase 3 */
	POKELAB_BUSTED_FIRST_BYTE_FIRST,	/* a site's new first byte before its tail */
	POKELAB_BUSTED_EMPTY_DO_SYNC_CORE,	/* the IPI arrives, nothing serialises */
	POKELAB_BUSTED_REFS_DRAIN_EARLY,	/* drain the INT3 refs before the phase-3 sync */
	POKELAB_BUSTED_SKIP_ENTRY_FLUSH,	/* deferred work is never run at kernel entry */
	POKELAB_BUSTED_DEFER_NOINSTR,		/* defer syncs even for a batch with noinstr sites */
	POKELAB_BUSTED_PHASE3_SKIP_LAST,	/* phase 3 stops one site short: its INT3 stays */
	POKELAB_BUSTED_TAIL_OVERRUN,		/* phase 2 writes one byte past each site's tail */
	POKELAB_BUSTED_CALL_AS_JMP,		/* the INT3 handler emulates a CALL as a JMP */
	POKELAB_BUSTED_CR3_LOADED_LATE,		/* v6 27/29's order: flush, then kernel_cr3_loaded = 1 */
	POKELAB_BUSTED_NO_MB_ENTRY,		/* the entry stub's smp_mb() after kernel_cr3_loaded = 1 */
	POKELAB_BUSTED_PTE_CLEAR_PLAIN,		/* vunmap clears a PTE by plain store (pte_clear()) */
	POKELAB_BUSTED_REFS_NO_WAIT,		/* the refs drain does not wait for the handlers */
	POKELAB_BUSTED_HANDLER_MISS_LAST,	/* the INT3 handler's lookup misses the last site */
	POKELAB_BUSTED_JL_SKIP_LAST,		/* __jump_label_update() stops one site short */
	POKELAB_BUSTED_SC_JMP_FOR_CALL,		/* an inline static-call CALL site rewritten as a JMP */
	POKELAB_BUSTED_GATE_NO_CR3,		/* the TLB-flush gate without its kernel_cr3_loaded test */
	POKELAB_BUSTED_DEFER_MODULE_NOINSTR,	/* defer syncs for a batch with module noinstr sites */
	POKELAB_BUSTED_NMI_PARANOID_POSTED,	/* the NMI's paranoid entry as posted in v7 29/31 */
	POKELAB_BUSTED_ALT_NOT_IGNORED,		/* apply_alternatives() ignores ALT_FLAG_NOT */
	POKELAB_BUSTED_DISPATCHER_LIVE_HALF,	/* bpf_dispatcher_update() writes the live half */
	POKELAB_BUSTED_RET0_EMULATE_NOP,	/* a RET0 static-call site emulated as a NOP */
	POKELAB_BUSTED_NO_MB_NMI,		/* the fixed paranoid entry's smp_mb() after its store */
	POKELAB_BUSTED_REFS_LEAK_PUT,		/* the handler's put loses its decrement */
	POKELAB_BUSTED_JL_TEXT_MUTEX_HELD,	/* jump-label queueing keeps text_mutex */
	POKELAB_BUSTED_WAIT_IPI_ONLY,		/* a waited cross-call waits for the IPI'd CPUs only */
	POKELAB_BUSTED_KICK_NO_WAIT,		/* kick_all_cpus_sync() returns unwaited */
	POKELAB_BUSTED_NR,
};

extern enum pokelab_busted pokelab_busted;

/* True when the running machine was booted with this BUSTED variant. */
#define BUSTED(name) unlikely(pokelab_busted == POKELAB_BUSTED_##name)

namespace kshim {

struct BustedVariant {
	enum pokelab_busted id;
	const char *name;	/* as pokelab.busted= takes it */
	const char *what;	/* one line: the wrong patch */
	const char *with;	/* torture options it needs to show (nullptr: none) */
};

/* Every variant, POKELAB_BUSTED_NONE excluded, in enum order. */
const BustedVariant *bustedVariants(unsigned int *n) noexcept;
/* boot(): take pokelab.busted= into effect, before any early hook runs. */
void bustedBoot() noexcept;
/* The variant the machine was booted with, or nullptr. */
const BustedVariant *bustedActive() noexcept;

} /* namespace kshim */
