/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The text pokelab torture patches and runs: every kind of live write the
 * port makes, each behind a "knob" whose state a writer sets and the end of
 * the run checks.
 *
 *	knob			sites					written by
 *	bpf_stats_enabled_key	164 (tools/demo/bpf_prog.cpp)		one INT3 batch
 *	pokelab_small_key	2 (tools/demo/small_key.cpp)		one two-entry batch
 *	torture_big_key		300: more than a batch holds (256),	two batches
 *				and 8 2-byte ones (NOP2 <-> JMP8)
 *	torture_noinstr_key	4, in noinstr text (a _NOINSTR key)	a batch that IPIs all
 *	torture_call		its trampoline, 3 targets, and an	smp_text_poke_single(),
 *				inline CALL and tail JMP		a batch for the sites
 *	torture_cond_call	a NULL static call: CALL <-> NOP5,	the same
 *				tail JMP <-> RET
 *	torture_ret0_call	__static_call_return0 <-> a function:	the same
 *				CALL <-> "xor %eax,%eax", tail JMP
 *	torture_poke_site	one NOP5 <-> JMP32, by hand		smp_text_poke_single()
 *	torture_emu_sites	a CALL (2 targets), a Jcc.d32, and	one batch
 *				32 Jcc: every condition, rel8 and
 *				rel32 (torture_forms.cpp)
 *	torture_probe_site	NOP5 <-> an INT3 on its first byte,	smp_text_poke_single(),
 *				and a probe on the user_enter and	the keys' batches
 *				user_exit tracepoints (their keys'
 *				sites in __ct_user_enter/exit())
 *
 * torture_probe_site is armed as a kprobe or text_poke_set()'s INT3 fill
 * would be, by a batch whose new first byte is INT3: phase 3 leaves it, the
 * batch handler declines it, and torture's die notifier (its "kprobe")
 * claims the trap and steps over the NOP5. While it is armed every CPU that
 * runs it traps, and takes an INT3 ref whenever a batch is open: the one
 * case where the refs drain must wait for a handler.
 *
 * torture_noinstr_key also has one instrumentable user, so that its batch
 * mixes noinstr and instrumentable sites.
 *
 * A knob's last request is recorded under the knob's own lock, taken around
 * the write, so the order of requests is the order of writes.
 */
#pragma once

#include <string>
#include <vector>

#include <linux/types.h>

namespace pokelab::torture {

enum Knob {
	KnobBpfStats,
	KnobSmall,
	KnobBig,
	KnobNoinstr,
	KnobCall,
	KnobPoke,
	KnobEmu,
	KnobProbe,
	KnobCond,
	KnobRet0,
	KnobNr,
};

/* Set @knob to @state (keys: 0/1; the static call: target 0..2). Task context on a CPU. */
void setKnob(Knob knob, unsigned int state);
unsigned int knobStates(Knob knob);	/* how many states it has */
const char *knobName(Knob knob);
/* Writes made to @knob over the run. */
unsigned long knobWrites(Knob knob);

/* Every knob back to state 0 (its boot state), the requests forgotten. CPU 0, machine quiet. */
void resetKnobs();

/*
 * Run every site once: all keys' sites, the noinstr users, the static call
 * and the poke site. Returns a checksum (so nothing is optimised out).
 * Instrumentable kernel code: any CPU in the kernel, IRQ context included.
 */
unsigned long runSites(unsigned long arg);
/*
 * A handler's share of them, drawn from @arg: a few sites of each static
 * key, the static call, the emulation and poke sites, the module's. Any
 * CPU, any context runSites() may run in.
 */
unsigned long runSomeSites(unsigned long arg);

/*
 * At the end: each knob is in the state its last writer asked for, in the
 * key's count, in every site's bytes (NOP or JMP by the jump entry's
 * type), and in what the sites compute. Returns one line per mismatch.
 * CPU 0, machine quiet.
 */
std::vector<std::string> checkKnobs();

} /* namespace pokelab::torture */
