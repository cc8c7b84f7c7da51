/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Tracepoints: the machine's events and the one probe they call.
 *
 * CUSTOM: include/linux/tracepoint.h and kernel/tracepoint.c. Each event is
 * an inline trace_*() function (include/trace/events/) that tests its bit
 * of traceEnabled, the stand-in for the tracepoint's static key, and calls
 * traceProbe, the probe the trace room (kernel_shim/trace/) registers when
 * it starts recording. The core knows the events; what records them, and
 * where, is the trace room's business (kernel/trace/ in the kernel).
 *
 * Memory ordering: traceStart() stores traceProbe before it stores
 * traceEnabled with release; a tracepoint reads traceEnabled relaxed, and
 * the probe itself re-reads it with acquire before it touches a ring.
 *
 * Async-signal-safety: a disabled tracepoint is one relaxed load and a
 * branch; an enabled one calls the probe, which must itself be
 * async-signal-safe and lock-free (the trace room's is).
 */
#pragma once

#include <atomic>

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

/* The events that record now (traceBit()s): 0 when tracing is off. Read by every tracepoint. */
extern std::atomic<u32> traceEnabled;

/*
 * The probe every enabled tracepoint calls, on the CPU that hit it: the
 * event's type, the CPU or integer field it is aimed at, its addresses and
 * its cpumask (ipi_send_cpumask). Set by the trace room before it enables
 * an event; never NULL (a probe that records nothing until then).
 */
using TraceProbe = void (*)(TraceType type, int target, unsigned long callsite,
			    unsigned long fn, unsigned long csd,
			    const struct cpumask *mask) noexcept;
extern TraceProbe traceProbe;

} /* namespace kshim */

#define KSHIM_TRACE_ON(t) \
	unlikely(kshim::traceEnabled.load(std::memory_order_relaxed) & kshim::traceBit(t))
