/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Tracepoints of the machine: the kernel's ipi and csd events, recorded in
 * per-CPU lock-free ring buffers.
 *
 * CUSTOM: the kernel's ftrace ring buffer and the events of
 * include/trace/events/ipi.h and include/trace/events/csd.h, reduced to what
 * the isolation census needs. The ring runs in the kernel's no-overwrite
 * mode (tracing/options/overwrite = 0): when a CPU's ring is full, new events
 * are dropped and counted, never blocking and never overwriting.
 *
 * Writing (the trace_*() calls) is wait-free and async-signal-safe: a relaxed
 * load of one flag when tracing is off; when on, one fetch_add to reserve a
 * slot, a clock_gettime(CLOCK_MONOTONIC) (vDSO) and a release store that
 * commits the slot. It never allocates or locks. Only simulated CPUs write.
 *
 * Reading (traceSnapshot()) is done from task context once tracing is off.
 */
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include <linux/compiler.h>
#include <linux/cpumask.h>
#include <linux/types.h>

namespace kshim {

enum class TraceType : u8 {
	IpiSendCpu = 1,		/* ipi_send_cpu: cpu= callsite= callback= */
	IpiSendCpumask,		/* ipi_send_cpumask: cpumask= callsite= callback= */
	CsdQueueCpu,		/* csd_queue_cpu: cpu= callsite= func= csd= */
	CsdFunctionEntry,	/* csd_function_entry: func=, csd= */
	CsdFunctionExit,	/* csd_function_exit: func=, csd= */
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
 * ipi_send_cpumask: -1, see @mask). Addresses are raw; they are resolved to
 * symbols at output time.
 */
struct TraceEvent {
	u64 ts;			/* CLOCK_MONOTONIC, ns */
	u32 seq;		/* commit mark: equals the ring's generation once written */
	u32 pid;		/* writer thread id */
	u16 cpu;
	TraceType type;
	u8 flags;		/* TRACE_FLAG_* */
	int target;
	unsigned long callsite;	/* ipi_*, csd_queue_cpu */
	unsigned long fn;	/* callback (ipi_*) or func (csd_*) */
	unsigned long csd;	/* csd_* */
	struct cpumask mask;	/* ipi_send_cpumask */
};

/* Tracing on? A relaxed flag, read by every tracepoint. */
extern std::atomic<bool> traceOn;

/*
 * Start recording on every CPU of the booted machine, with rings of
 * @eventsPerCpu events (0: the trace_buf_size= boot parameter's, in bytes
 * per CPU as the kernel's, default 1441792). Rings are allocated here, before
 * the flag goes on, and reused by later sessions; each session starts empty
 * with zeroed drop counters. Task context, from the booting thread (CPU 0),
 * tracing off. Not async-signal-safe. Returns 0, or -ENOMEM (tracing stays
 * off) with a line in *@err when the rings would take more than half the
 * RAM or cannot be allocated.
 */
int traceStart(size_t eventsPerCpu = 0, std::string *err = nullptr);

/* Stop recording: clear the flag. Events being written finish or are skipped. */
void traceStop() noexcept;

/* Events per CPU in the current rings (0 before the first traceStart()). */
size_t traceRingSize() noexcept;

/*
 * Record one event on the calling CPU (slow path of the trace_*() calls).
 * Async-signal-safe, wait-free; a no-op on a thread that is not a CPU.
 */
void traceRecord(TraceType type, int target, unsigned long callsite, unsigned long fn,
		 unsigned long csd, const struct cpumask *mask) noexcept;

/* What one CPU recorded in the last session. */
struct TraceCpu {
	int cpu = 0;
	std::string comm;		/* thread name of the CPU at traceStart() */
	unsigned long written = 0;	/* events committed to the ring */
	unsigned long dropped = 0;	/* events lost because the ring was full */
};

struct TraceSnapshot {
	std::vector<TraceCpu> cpus;	/* one per CPU of the machine, in CPU order */
	std::vector<TraceEvent> events;	/* every committed event, sorted by ts */
	unsigned int nrCpuIds = 0;
};

/*
 * Copy out the last session (call after traceStop(), once the CPUs are quiet).
 * Task context; allocates.
 */
TraceSnapshot traceSnapshot();

/*
 * %pS / %ps of an address as trace-cmd prints them: "name+0xoff" (@offset) or
 * "name", from the executable's symbol table (local symbols included), else
 * dladdr(); C++ names are demangled and shown without parameter lists or
 * "(anonymous namespace)::". Unknown: "0x<hex>". Task context; allocates.
 */
std::string traceSymbol(unsigned long addr, bool offset);

} /* namespace kshim */

/* Port of the ipi_send_cpu tracepoint, include/trace/events/ipi.h, v6.16 */
static __always_inline void trace_ipi_send_cpu(unsigned int cpu, unsigned long callsite,
					       void *callback)
{
	if (unlikely(kshim::traceOn.load(std::memory_order_relaxed)))
		kshim::traceRecord(kshim::TraceType::IpiSendCpu, (int)cpu, callsite,
				   (unsigned long)callback, 0, nullptr);
}

static __always_inline bool trace_ipi_send_cpumask_enabled(void)
{
	return unlikely(kshim::traceOn.load(std::memory_order_relaxed));
}

/* Port of the ipi_send_cpumask tracepoint, include/trace/events/ipi.h, v6.16 */
static __always_inline void trace_ipi_send_cpumask(const struct cpumask *cpumask,
						   unsigned long callsite, void *callback)
{
	if (unlikely(kshim::traceOn.load(std::memory_order_relaxed)))
		kshim::traceRecord(kshim::TraceType::IpiSendCpumask, -1, callsite,
				   (unsigned long)callback, 0, cpumask);
}

/* Port of the csd_queue_cpu tracepoint, include/trace/events/csd.h, v6.16 */
static __always_inline void trace_csd_queue_cpu(unsigned int cpu, unsigned long callsite,
						void (*func)(void *), const void *csd)
{
	if (unlikely(kshim::traceOn.load(std::memory_order_relaxed)))
		kshim::traceRecord(kshim::TraceType::CsdQueueCpu, (int)cpu, callsite,
				   (unsigned long)func, (unsigned long)csd, nullptr);
}

/* Port of the csd_function_entry tracepoint, include/trace/events/csd.h, v6.16 */
static __always_inline void trace_csd_function_entry(void (*func)(void *), const void *csd)
{
	if (unlikely(kshim::traceOn.load(std::memory_order_relaxed)))
		kshim::traceRecord(kshim::TraceType::CsdFunctionEntry, -1, 0,
				   (unsigned long)func, (unsigned long)csd, nullptr);
}

/* Port of the csd_function_exit tracepoint, include/trace/events/csd.h, v6.16 */
static __always_inline void trace_csd_function_exit(void (*func)(void *), const void *csd)
{
	if (unlikely(kshim::traceOn.load(std::memory_order_relaxed)))
		kshim::traceRecord(kshim::TraceType::CsdFunctionExit, -1, 0,
				   (unsigned long)func, (unsigned long)csd, nullptr);
}
