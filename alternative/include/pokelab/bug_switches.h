/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Test-only switches that put known kernel bugs back, and test-only hooks
 * that stop a patching path at a chosen point, so that the bug-replay tests
 * (tests/alternative/bug_replay_test.cpp) can show the fixed port passing
 * and the old code failing in one binary.
 *
 * Every switch is false and every hook NULL unless a test sets it; the
 * patching paths read them with a plain load (no cost worth the name when
 * off). Only tests may set them, from task context on CPU 0, while no batch
 * is in flight; a test that sets one resets it (pokelabBugsReset()) before
 * it ends. The readers in signal context (__emulate_cc(), the INT3 handler)
 * only load a bool or an int, and the INT3 handler calls
 * legacy_handler_window, which a test must keep async-signal-safe.
 */
#pragma once

struct static_key;

struct pokelab_bug_switches {
	/* 2aebf5ee43bf: smp_text_poke_single() appends unchecked (c8976ade0c1b) */
	bool unchecked_single_poke_2aebf5ee43bf;
	/* 26c44b776dba: batch_add rejects RET/JMP with INT3 padding (len must equal the insn) */
	bool strict_len_26c44b776dba;
	/* 83ab38ef0a0b: static_key_slow_dec() with the old fetch_add_unless() fast path */
	bool slow_dec_try_dec_83ab38ef0a0b;
	/* 224fa3552029: static_key_disable() treats any non-zero cmpxchg result as 1 -> 0 */
	bool disable_cmpxchg_bool_224fa3552029;
	/*
	 * Legacy descriptor mode (see POKELAB_LEGACY_DESC_*): the INT3 handler
	 * and the batch publish/tear down the pre-v6.0 descriptor as well, and
	 * the handler reads only that. 0 = off (v6.16 text_poke_array).
	 */
	int legacy_desc;
	/* 285a54efe386: legacy v5.5 teardown clears vec before nr_entries, no sync */
	bool null_vec_285a54efe386;
	/* efd608fa7403: legacy v5.6 descriptor lives on the patcher's stack */
	bool stack_desc_efd608fa7403;
};

/* v5.5 bp_patching: vec + nr_entries, no refs; teardown after 285a54efe386 */
#define POKELAB_LEGACY_DESC_V5_5	1
/* v5.6..v5.19 bp_desc pointer + refs (1f676247f36a); descriptor static as after efd608fa7403 */
#define POKELAB_LEGACY_DESC_V5_6	2

struct pokelab_test_hooks {
	/* Called in __static_key_slow_dec_cpuslocked() after the fast path failed, before the lock. */
	void (*slow_dec_before_lock)(struct static_key *key);
	/* Called in static_key_disable_cpuslocked() after its early check, before the lock. */
	void (*disable_before_lock)(struct static_key *key);
	/*
	 * Legacy descriptor mode only. In poke_int3_handler(), in signal
	 * context on the trapping CPU: after the handler saw a live descriptor
	 * (v5.5: nr_entries != 0; v5.6: bp_desc != NULL, before
	 * atomic_inc_not_zero()), before it reads anything else. Must be
	 * async-signal-safe (spin on an atomic, nothing more).
	 */
	void (*legacy_handler_window)(void);
	/* In smp_text_poke_batch_finish() after the last sync, before the descriptor teardown. */
	void (*legacy_before_teardown)(void);
	/* v5.5 teardown: right after its first store (vec = NULL with the bug, else nr_entries = 0). */
	void (*legacy_teardown_first_store)(void);
};

extern struct pokelab_bug_switches pokelab_bugs;
extern struct pokelab_test_hooks pokelab_hooks;

/* Every switch off, every hook NULL. Task context, no batch in flight. */
void pokelabBugsReset(void);
