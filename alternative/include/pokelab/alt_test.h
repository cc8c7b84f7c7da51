/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Test-only switches and hooks of the boot-time alternatives code
 * (alternative/apply_alternatives.cpp, text_poke_early()).
 *
 * Each switch puts one fixed kernel bug back, so that its replay test can
 * show the fixed port passing and the old code failing in one binary. All
 * are off unless a test sets them, from task context on CPU 0 while nothing
 * is being patched; the test resets them (altTestReset()) before it ends.
 */
#pragma once

#include <asm/alternative.h>

struct pokelab_alt_switches {
	/*
	 * a4233c21e773 put back: apply_alternatives() patches every eligible
	 * entry of a nested site in turn (the v6.16 loop), so a DIRECT_CALL
	 * entry after another matching one no longer finds its FF 15 call.
	 */
	bool per_entry_patching_a4233c21e773;
	/*
	 * 0160a5454e54 put back: text_poke_early() restores interrupts before
	 * sync_core(), so an interrupt can run the new bytes unserialised.
	 */
	bool irq_before_sync_0160a5454e54;
	/*
	 * Called by text_poke_early() on the poking CPU right after the write,
	 * with interrupts off (as text_poke_early() runs it). A test uses it to
	 * get an IPI pending at exactly that point.
	 */
	void (*text_poke_early_after_write)(void);
	/*
	 * int3_selftest()'s notifier steps over the INT3 slot instead of
	 * emulating the CALL (an emulation that forgets the call): the
	 * self-test must BUG.
	 */
	bool int3_selftest_no_call;
};

extern struct pokelab_alt_switches pokelab_alt_bugs;

/* Called by text_poke_early() after its write and after its sync_core(). */
void pokelab_text_poke_early_written(void);
void pokelab_text_poke_early_synced(void);

namespace pokelab {

/* Every switch off, every hook NULL. */
void altTestReset() noexcept;

/* Run int3_selftest() again (boot runs it first in alternative_instructions()). CPU 0. */
void int3SelftestRun();

/*
 * True when CPU @cpu has written text through text_poke_early() and not yet
 * executed the sync_core() that must follow. Any context (one load).
 */
bool textPokeEarlyUnsynced(int cpu) noexcept;

} /* namespace pokelab */
