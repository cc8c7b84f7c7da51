/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Tracepoints of the machine: the kernel's ipi, csd and context_tracking
 * events and pokelab's own (text pokes, batch phases, INT3 emulation,
 * idle and deferred-work flushes), recorded in per-CPU lock-free rings that
 * a recorder thread drains while the run goes on.
 *
 * CUSTOM: the kernel's ftrace ring buffer in its no-overwrite mode
 * (tracing/options/overwrite = 0): when a CPU's ring is full, new events are
 * dropped and counted, never blocking and never overwriting. Which events
 * record is the trace_event= boot parameter's choice (kernel syntax:
 * SYSTEM:EVENT, SYSTEM:* or EVENT, comma-separated; default
 * ipi:*,csd:*,pokelab:text_poke_batch).
 *
 * Writing (the trace_*() calls) is lock-free and async-signal-safe: a
 * relaxed load of the enabled-events mask when the event is off; when on, a
 * compare-and-swap that reserves a slot (it retries only when a signal
 * handler on the same CPU reserved one in between), a clock_gettime()
 * (vDSO) and a release store of the slot's commit tag. It never allocates,
 * locks or waits for the reader. Only simulated CPUs write.
 *
 * Reading: traceSnapshot() after traceStop(), or a recorder
 * (trace_record.h) that drains the rings during the run.
 */
#pragma once

#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include <linux/compiler.h>
#include <linux/cpumask.h>
#include <linux/types.h>

namespace kshim {

enum class TraceType : u8 {
	IpiSendCpu = 1,		/* ipi:ipi_send_cpu: cpu= callsite= callback= */
	IpiSendCpumask,		/* ipi:ipi_send_cpumask: cpumask= callsite= callback= */
	CsdQueueCpu,		/* csd:csd_queue_cpu: cpu= callsite= func= csd= */
	CsdFunctionEntry,	/* csd:csd_function_entry: func=, csd= */
	CsdFunctionExit,	/* csd:csd_function_exit: func=, csd= */
	UserEnter,		/* context_tracking:user_enter */
	UserExit,		/* context_tracking:user_exit */
	TextPoke,		/* pokelab:text_poke: addr=@callsite len=@target bytes=@fn */
	TextPokeBatch,		/* pokelab:text_poke_batch: nr_entries=@callsite phase=@target */
	Int3Emulate,		/* pokelab:int3_emulate: addr=@callsite to=@fn */
	CtIdleEnter,		/* pokelab:ct_idle_enter */
	CtIdleExit,		/* pokelab:ct_idle_exit */
	CtWorkFlush,		/* pokelab:ct_work_flush: work=@target */
	Lost,			/* not recorded: a reader's mark, @target events dropped here */
	NrTypes,
};

/* One event type: its tracefs system and name, and whether trace_event= enables it by default. */
struct TraceEventInfo {
	TraceType type;
	const char *system;
	const char *name;
	bool byDefault;
};
/* Every recordable type, in TraceType order (Lost excluded). */
const std::vector<TraceEventInfo> &traceEventTypes();

static constexpr u32 traceBit(TraceType t)
{
	return 1u << (unsigned int)t;
}

/* text_poke_batch's phases */
enum : int {
	TRACE_BATCH_BEGIN = 0,
	TRACE_BATCH_INT3 = 1,
	TRACE_BATCH_TAILS = 2,
	TRACE_BATCH_FIRST_BYTES = 3,
	TRACE_BATCH_DONE = 4,
};

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

/* The events that record now (traceBit()s): 0 when tracing is off. Read by every tracepoint. */
extern std::atomic<u32> traceEnabled;

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
 * Record one event on the calling CPU (slow path of the trace_*() calls).
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

/*
 * %pS / %ps of an address as trace-cmd prints them: "name+0xoff" (@offset) or
 * "name", from the executable's symbol table (local symbols included), else
 * dladdr(); C++ names are demangled and shown without parameter lists or
 * "(anonymous namespace)::". Unknown: "0x<hex>". Task context; allocates.
 */
std::string traceSymbol(unsigned long addr, bool offset);

/* text_poke_batch's phase as its __print_symbolic() names it ("begin", "int3", ...). Allocates. */
std::string traceBatchPhaseName(int phase);

/* ct_work_flush's work as its __print_flags() names it. Allocates. */
std::string traceCtWorkName(int work);

/* The start address and the name traceSymbol() shows for @addr; false when unknown. */
bool traceSymbolStart(unsigned long addr, unsigned long *start, std::string *name);

/* Every function of the executable's symbol table: start address and shown name, by address. */
std::vector<std::pair<unsigned long, std::string>> traceSymbolTable();

} /* namespace kshim */

#define KSHIM_TRACE_ON(t) \
	unlikely(kshim::traceEnabled.load(std::memory_order_relaxed) & kshim::traceBit(t))

/* Port of the ipi_send_cpu tracepoint, include/trace/events/ipi.h, v6.16 */
static __always_inline void trace_ipi_send_cpu(unsigned int cpu, unsigned long callsite,
					       void *callback)
{
	if (KSHIM_TRACE_ON(kshim::TraceType::IpiSendCpu))
		kshim::traceRecord(kshim::TraceType::IpiSendCpu, (int)cpu, callsite,
				   (unsigned long)callback, 0, nullptr);
}

static __always_inline bool trace_ipi_send_cpumask_enabled(void)
{
	return KSHIM_TRACE_ON(kshim::TraceType::IpiSendCpumask);
}

/* Port of the ipi_send_cpumask tracepoint, include/trace/events/ipi.h, v6.16 */
static __always_inline void trace_ipi_send_cpumask(const struct cpumask *cpumask,
						   unsigned long callsite, void *callback)
{
	if (KSHIM_TRACE_ON(kshim::TraceType::IpiSendCpumask))
		kshim::traceRecord(kshim::TraceType::IpiSendCpumask, -1, callsite,
				   (unsigned long)callback, 0, cpumask);
}

/* Port of the csd_queue_cpu tracepoint, include/trace/events/csd.h, v6.16 */
static __always_inline void trace_csd_queue_cpu(unsigned int cpu, unsigned long callsite,
						void (*func)(void *), const void *csd)
{
	if (KSHIM_TRACE_ON(kshim::TraceType::CsdQueueCpu))
		kshim::traceRecord(kshim::TraceType::CsdQueueCpu, (int)cpu, callsite,
				   (unsigned long)func, (unsigned long)csd, nullptr);
}

/* Port of the csd_function_entry tracepoint, include/trace/events/csd.h, v6.16 */
static __always_inline void trace_csd_function_entry(void (*func)(void *), const void *csd)
{
	if (KSHIM_TRACE_ON(kshim::TraceType::CsdFunctionEntry))
		kshim::traceRecord(kshim::TraceType::CsdFunctionEntry, -1, 0,
				   (unsigned long)func, (unsigned long)csd, nullptr);
}

/* Port of the csd_function_exit tracepoint, include/trace/events/csd.h, v6.16 */
static __always_inline void trace_csd_function_exit(void (*func)(void *), const void *csd)
{
	if (KSHIM_TRACE_ON(kshim::TraceType::CsdFunctionExit))
		kshim::traceRecord(kshim::TraceType::CsdFunctionExit, -1, 0,
				   (unsigned long)func, (unsigned long)csd, nullptr);
}

/* Port of the user_enter tracepoint, include/trace/events/context_tracking.h */
static __always_inline void trace_user_enter(int dummy)
{
	if (KSHIM_TRACE_ON(kshim::TraceType::UserEnter))
		kshim::traceRecord(kshim::TraceType::UserEnter, dummy, 0, 0, 0, nullptr);
}

/* Port of the user_exit tracepoint, include/trace/events/context_tracking.h */
static __always_inline void trace_user_exit(int dummy)
{
	if (KSHIM_TRACE_ON(kshim::TraceType::UserExit))
		kshim::traceRecord(kshim::TraceType::UserExit, dummy, 0, 0, 0, nullptr);
}

/*
 * pokelab's own events: no upstream tracepoint exists for these; each
 * takes the place of a one-line hook and has a format of its own
 * (docs/tracing.md).
 */
static __always_inline void trace_pokelab_text_poke(const void *addr, const void *src, size_t len)
{
	if (KSHIM_TRACE_ON(kshim::TraceType::TextPoke)) {
		unsigned long bytes = 0;

		__builtin_memcpy(&bytes, src, len < 8 ? len : 8);
		kshim::traceRecord(kshim::TraceType::TextPoke, (int)len, (unsigned long)addr,
				   bytes, 0, nullptr);
	}
}

static __always_inline void trace_pokelab_text_poke_batch(unsigned int nr_entries, int phase)
{
	if (KSHIM_TRACE_ON(kshim::TraceType::TextPokeBatch))
		kshim::traceRecord(kshim::TraceType::TextPokeBatch, phase, nr_entries, 0, 0,
				   nullptr);
}

static __always_inline void trace_pokelab_int3_emulate(unsigned long addr, unsigned long to)
{
	if (KSHIM_TRACE_ON(kshim::TraceType::Int3Emulate))
		kshim::traceRecord(kshim::TraceType::Int3Emulate, 0, addr, to, 0, nullptr);
}

static __always_inline void trace_pokelab_ct_idle(bool enter)
{
	kshim::TraceType t = enter ? kshim::TraceType::CtIdleEnter : kshim::TraceType::CtIdleExit;

	if (KSHIM_TRACE_ON(t))
		kshim::traceRecord(t, 0, 0, 0, 0, nullptr);
}

static __always_inline void trace_pokelab_ct_work_flush(unsigned int work)
{
	if (KSHIM_TRACE_ON(kshim::TraceType::CtWorkFlush))
		kshim::traceRecord(kshim::TraceType::CtWorkFlush, (int)work, 0, 0, 0, nullptr);
}
