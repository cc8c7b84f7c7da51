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
	unsigned long implicitFlushes;	/* batch_add() finished a full or unordered batch first */
	unsigned int nrEntries;		/* sites queued now, not yet finished (text_mutex held) */
	bool refsGlobal;		/* refs=global now (boot, or text_poke_set_refs_mode()) */
	bool syncMembarrier;		/* pokelab.sync=membarrier in force (after any fallback) */
};

/*
 * Probe: called in smp_text_poke_batch_finish() after the phase-1 sync
 * (every INT3 armed, no tail written yet), on the patching CPU with
 * text_mutex held; NULL for none. Set and cleared in task context while no
 * batch is in flight. Tests run a site on another CPU from it; bench int3
 * times calls that trap on the armed INT3.
 */
extern void (*batchAfterPhase1Probe)(void);

/*
 * Probe: called in smp_text_poke_int3_handler() right after the trapping
 * CPU took its INT3 ref (before the search), in signal context on that CPU,
 * with @ip the byte after the INT3; NULL for none. It must be
 * async-signal-safe: no allocation, lock or log; spinning on an atomic is
 * what it is for (pokelab explain holds a CPU inside the handler with it,
 * until the patcher has shown it). Set and cleared in task context while no
 * batch is in flight.
 */
extern void (*int3AfterRefProbe)(unsigned long ip) noexcept;

/*
 * Hook: called at the start of each phase of smp_text_poke_batch_finish()
 * (@phase kshim::TRACE_BATCH_INT3, _TAILS, _FIRST_BYTES: nothing of that
 * phase written yet), on the patching CPU with text_mutex held, right
 * after the phase's tracepoint; NULL for none. pokelab explain shows the
 * live bytes and CPUs there. Set and cleared in task context while no
 * batch is in flight.
 */
extern void (*batchPhaseHook)(int phase);

/*
 * The INT3 refs of @cpu now, in the mode in force: refs=percpu, its per-CPU
 * count (1 while a batch is published, 1 more per handler of that CPU
 * holding one); refs=global, the shared count (@cpu ignored). Any thread; a
 * racy read.
 */
int int3RefsNow(int cpu) noexcept;

/* A snapshot of the global counters. Any thread. */
TextPokeStats textPokeStats() noexcept;

/* INT3 traps the batch handler emulated on @cpu since boot. Any thread. */
unsigned long int3Emulated(int cpu) noexcept;

/* do_sync_core() runs on @cpu (IPI or local) since boot. Any thread. */
unsigned long syncCoreRuns(int cpu) noexcept;

/* Text syncs deferred to @cpu's next kernel entry instead of an IPI. Any thread. */
unsigned long syncsDeferred(int cpu) noexcept;

/*
 * The false-sharing census of the INT3 refs (pokelab.refs=global|percpu):
 * writes by @cpu to a refs cache line (the global count, or one CPU's
 * per-CPU count) whose previous writer was another CPU, since boot, in
 * whichever mode each write was made (text_poke_set_refs_mode()). Counts
 * successful try_get/put in the handler and the patcher's publish/drain.
 * The hardware-independent face of false sharing: with refs=global every
 * CPU hitting an INT3 writes the one line; with refs=percpu only the
 * patcher's publish/drain cross over. Any thread.
 */
unsigned long refsCrossCpuWrites(int cpu) noexcept;

/* Refs-line writes by the patcher's publish and drain in smp_text_poke_batch_finish(). Any thread. */
unsigned long refsPatcherWrites() noexcept;

/*
 * Time @cpu spent inside the SIGTRAP handler (exc_int3(), entry to exit),
 * CLOCK_MONOTONIC ns, since boot: the INT3 path's share of a hot loop.
 * Includes any time the thread was descheduled inside the handler. Any thread.
 */
u64 int3HandlerNs(int cpu) noexcept;

/* INT3 traps (SIGTRAPs) exc_int3() took on @cpu since boot, claimed or not. Any thread. */
unsigned long int3Traps(int cpu) noexcept;

/*
 * How deep the calling CPU is in exc_int3() now: 0 outside it, 1 inside,
 * 2 in an INT3 taken by an NMI that landed inside it. The calling CPU
 * only (an NMI handler asks where it landed); async-signal-safe.
 */
int int3Nesting() noexcept;

/* Zero int3HandlerNs()/int3Traps() (resetTextPokeStats() does it). */
void resetInt3HandlerNs() noexcept;

/* Zero every counter (boot does it). */
void resetTextPokeStats() noexcept;

} /* namespace pokelab */
