/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The trace room: per-CPU lock-free rings that record the machine's
 * tracepoints (linux/tracepoint.h; the kernel's ipi, csd and
 * context_tracking events and pokelab's own, trace/events/) while a
 * recorder thread drains them as the run goes on.
 *
 * CUSTOM: the kernel's ftrace ring buffer in its no-overwrite mode
 * (tracing/options/overwrite = 0): when a CPU's ring is full, new events are
 * dropped and counted, never blocking and never overwriting. Which events
 * record is the trace_event= boot parameter's choice (kernel syntax:
 * SYSTEM:EVENT, SYSTEM:* or EVENT, comma-separated; default
 * ipi:*,csd:*,pokelab:text_poke_batch).
 *
 * Writing (the tracepoints' probe, traceRecord()) is lock-free and
 * async-signal-safe: a tracepoint that is off costs a relaxed load of the
 * enabled-events mask; when on, the probe makes a compare-and-swap that
 * reserves a slot (it retries only when a signal handler on the same CPU
 * reserved one in between), a clock_gettime() (vDSO) and a release store of
 * the slot's commit tag. It never allocates, locks or waits for the reader.
 * Only simulated CPUs write.
 *
 * Reading: traceSnapshot() after traceStop(), or a recorder
 * (trace_record.h) that drains the rings during the run.
 */
#pragma once

#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include <kernel_shim/symbols.h>
#include <linux/compiler.h>
#include <linux/cpumask.h>
#include <linux/tracepoint.h>
#include <linux/types.h>
#include <trace/events/context_tracking.h>
#include <trace/events/csd.h>
#include <trace/events/ipi.h>
#include <trace/events/pokelab.h>

namespace kshim {

/* One event type: its tracefs system and name, and whether trace_event= enables it by default. */
struct TraceEventInfo {
	TraceType type;
	const char *system;
	const char *name;
	bool byDefault;
};
/* Every recordable type, in TraceType order (Lost excluded). */
const std::vector<TraceEventInfo> &traceEventTypes();

/* trace-cmd's latency flags, as recorded at the event; the high nibble is the preempt depth */
enum : u8 {
	TRACE_FLAG_IRQS_OFF = 0x01,
	TRACE_FLAG_HARDIRQ = 0x02,
	TRACE_PREEMPT_SHIFT = 4,
};

/*
 * One recorded event. @cpu is the CPU that wrote it, @target the CPU it is
 * aimed at (ipi_send_cpu/csd_queue_cpu: cpu=; csd_function_*: the writer;
 * ipi_send_cpumask: -1, see @mask) or, for pokelab's events, the integer
 * field named in TraceType. Addresses are raw; they are resolved to
 * symbols at output time.
 */
struct TraceEvent {
	u64 ts;			/* CLOCK_MONOTONIC, ns */
	u64 seq;		/* commit tag: the slot's ring position + 1 once written */
	u32 pid;		/* writer thread id */
	u16 cpu;
	TraceType type;
	u8 flags;		/* TRACE_FLAG_* */
	int target;
	unsigned long callsite;	/* ipi_*, csd_queue_cpu; pokelab: see TraceType */
	unsigned long fn;	/* callback (ipi_*) or func (csd_*); pokelab: see TraceType */
	unsigned long csd;	/* csd_* */
	struct cpumask mask;	/* ipi_send_cpumask */
};

/*
 * Start recording on every CPU of the booted machine, with rings of
 * @eventsPerCpu events (0: the trace_buf_size= boot parameter's, in bytes
 * per CPU as the kernel's, default 1441792), the events @events names
 * (traceBit()s; 0: those trace_event= names).
 * Rings are allocated here, before the events go on, and reused by later
 * sessions; each session starts empty with zeroed counters. Task context,
 * from the booting thread (CPU 0), tracing off. Not async-signal-safe.
 * Returns 0, or -ENOMEM (tracing stays off) with a line in *@err when the
 * rings would take more than half the RAM or cannot be allocated.
 */
int traceStart(size_t eventsPerCpu = 0, std::string *err = nullptr, u32 events = 0);

/* The events trace_event= names (traceBit()s; its default set if not given). Any thread. */
u32 traceEventsWanted() noexcept;

/* Stop recording: clear the mask. Events being written finish or are skipped. */
void traceStop() noexcept;

/* Events per CPU in the current rings (0 before the first traceStart()). */
size_t traceRingSize() noexcept;

/*
 * Record one event on the calling CPU: the tracepoints' probe
 * (linux/tracepoint.h), installed by traceStart().
 * Async-signal-safe, lock-free, never waits for a reader; a no-op on a
 * thread that is not a CPU.
 */
void traceRecord(TraceType type, int target, unsigned long callsite, unsigned long fn,
		 unsigned long csd, const struct cpumask *mask) noexcept;

/* What one CPU recorded in the last session. */
struct TraceCpu {
	int cpu = 0;
	std::string comm;		/* thread name of the CPU at traceStart() */
	unsigned long written = 0;	/* events committed and read out */
	unsigned long dropped = 0;	/* events lost because the ring was full */
};

struct TraceSnapshot {
	std::vector<TraceCpu> cpus;	/* one per CPU of the machine, in CPU order */
	std::vector<TraceEvent> events;	/* every event read, Lost marks included, by ts */
	unsigned int nrCpuIds = 0;
};

/*
 * Read out what the rings still hold (call after traceStop(), once the CPUs
 * are quiet; not while a recorder runs). Task context; allocates.
 */
TraceSnapshot traceSnapshot();

/*
 * Drain CPU @cpu's ring: append every committed event in ring order to
 * @out (then a Lost mark if events were dropped since the last drain) and
 * free their slots for the writers. Returns true when a reserved slot is
 * still being written (the drain stopped before it). @final (tracing off,
 * the CPUs quiet): a slot never committed is counted as dropped and
 * skipped instead. One reader at a time (the recorder thread, or
 * traceSnapshot()). Not async-signal-safe.
 */
bool traceDrainCpu(unsigned int cpu, std::vector<TraceEvent> &out, bool final = false);

/*
 * The order events go out in: by timestamp, then by CPU (as trace-cmd
 * report breaks a tie); use with a stable sort so that a CPU's events keep
 * their ring order and its Lost mark stays after them.
 */
static inline bool traceBefore(const TraceEvent &a, const TraceEvent &b)
{
	return a.ts != b.ts ? a.ts < b.ts : a.cpu < b.cpu;
}

/* The session's per-CPU identity and counters so far. Task context. */
std::vector<TraceCpu> traceCpus();

/* text_poke_batch's phase as its __print_symbolic() names it ("begin", "int3", ...). Allocates. */
std::string traceBatchPhaseName(int phase);

/* ct_work_flush's work as its __print_flags() names it. Allocates. */
std::string traceCtWorkName(int work);

} /* namespace kshim */
