/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Delay injection for pokelab torture, as liburcu's DEBUG_YIELD and
 * rcutorture's random delays: at the points below a CPU may spin or yield
 * for a random while, so that the windows a protocol must tolerate are
 * exercised. Every decision comes from a stream keyed by (seed, CPU,
 * index) (kshim::tortureDraw()), never from the clock.
 *
 * torture_delay() is an inline test of one flag when torture is off. When
 * it is on, it calls out: the call is async-signal-safe and lock-free (it
 * spins on the TSC-backed CLOCK_MONOTONIC vDSO; it yields only in task
 * context), and it is the one call that noinstr code makes on purpose
 * (it runs no patched text). Any CPU, any context.
 */
#pragma once

#include <linux/compiler.h>
#include <linux/types.h>

namespace kshim {

enum class TortureDelay {
	TextWrite,		/* between a batch's text writes (__text_poke) */
	BeforeIpiFunc,		/* in the IPI, before a CSD's function runs */
	EntryBeforeFlush,	/* kernel entry, between the state RMW and ct_work_flush() */
	IrqsOff,		/* inside a local_irq_save() window */
	Int3BeforeRef,		/* SIGTRAP handler, before it takes a ref */
	Int3AfterRef,		/* SIGTRAP handler, after it took one */
	CtReadDecision,		/* ct_set_cpu_work(): after reading the target's state */
	EntryCr3Window,		/* kernel entry, between kernel_cr3_loaded and the TLB flush */
	ModuleGet,		/* try_module_get(): after the live check, before the count */
	ModuleRelease,		/* delete_module(): after the references are judged, before GOING */
	EntryPtiWindow,		/* entry stub: the kernel CR3 loaded, kernel_cr3_loaded still 0 */
	ExitPtiWindow,		/* exit stub: kernel_cr3_loaded = 0, the kernel CR3 still loaded */
	BeforeRefsDrain,	/* smp_text_poke_batch_finish(): the last sync done, the drain next */
	Int3BeforePut,		/* SIGTRAP handler, the emulation done, its ref not yet put */
	EntryBeforeRmw,		/* kernel entry, the state RMW next (what was read before is stale) */
	ExitBeforeRmw,		/* kernel exit, EQS noted, the state RMW that clears the work next */
	NmiCr3Window,		/* NMI paranoid entry: kernel_cr3_loaded = 1 and smp_mb(), the flush next */
	FlusherBeforeRead,	/* a flusher's cond: its store (PTE clear, v8 text) done, the flag read next */
	Nr,
};

extern bool tortureDelaysOn;

void tortureDelayAt(TortureDelay where) noexcept;

/*
 * Start (@on) or stop injecting delays, with streams seeded by @seed; every
 * CPU's delay stream restarts at index 0. Task context, any CPU.
 */
void tortureDelays(bool on, u64 seed) noexcept;

/* Injected delays so far, per point (for the status line). */
unsigned long tortureDelayCount(TortureDelay where) noexcept;

/*
 * Simulated NMIs at the delay points of the entry and exit stubs' CR3
 * windows (EntryPtiWindow, ExitPtiWindow, EntryCr3Window), inside the
 * INT3 handler with its ref held (Int3AfterRef, before the lookup;
 * Int3BeforePut, after the emulation) and inside the IPI handler
 * (BeforeIpiFunc): with @on, half of the delays taken there end in an NMI
 * on the delayed CPU (kshim::nmiSelf()), drawn from the same stream. An
 * NMI handler that runs a site the open batch armed traps again on the
 * same CPU: a second ref. Task context.
 */
void tortureNmis(bool on) noexcept;
/* NMIs raised at the delay points since tortureDelays() last reset them. Any thread. */
unsigned long tortureNmiCount() noexcept;

/*
 * The @index-th draw of stream @stream of CPU @cpu under @seed: a pure
 * function (splitmix64 of the four), so a decision never depends on timing.
 */
u64 tortureDraw(u64 seed, unsigned int cpu, unsigned int stream, u64 index) noexcept;

} /* namespace kshim */

static __always_inline void torture_delay(kshim::TortureDelay where)
{
	if (unlikely(__atomic_load_n(&kshim::tortureDelaysOn, __ATOMIC_RELAXED))) {
		pokelab_instr_begin();	/* userspace: pokelab's own, in noinstr code too */
		kshim::tortureDelayAt(where);
		pokelab_instr_end();
	}
}
