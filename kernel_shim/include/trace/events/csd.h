/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The csd tracepoints (include/trace/events/csd.h).
 *
 * Each tracepoint is one relaxed load of its enable bit when off, a call of
 * the registered probe when on (linux/tracepoint.h); async-signal-safe,
 * callable in any context the probe allows (the trace room's: any).
 */
#pragma once

#include <linux/tracepoint.h>

/* Port of the csd_queue_cpu tracepoint, include/trace/events/csd.h, v6.16 */
static __always_inline void trace_csd_queue_cpu(unsigned int cpu, unsigned long callsite,
						void (*func)(void *), const void *csd)
{
	if (KSHIM_TRACE_ON(kshim::TraceType::CsdQueueCpu))
		kshim::traceProbe(kshim::TraceType::CsdQueueCpu, (int)cpu, callsite,
				  (unsigned long)func, (unsigned long)csd, nullptr);
}

/* trace_csd_queue_cpu_enabled(): whether csd_queue_cpu records now */
static __always_inline bool trace_csd_queue_cpu_enabled(void)
{
	return KSHIM_TRACE_ON(kshim::TraceType::CsdQueueCpu);
}

/*
 * trace_call__csd_queue_cpu(): the probe call alone, for a caller that has
 * tested trace_csd_queue_cpu_enabled() (the probe re-checks the bit itself).
 */
static __always_inline void trace_call__csd_queue_cpu(unsigned int cpu, unsigned long callsite,
						      void (*func)(void *), const void *csd)
{
	kshim::traceProbe(kshim::TraceType::CsdQueueCpu, (int)cpu, callsite, (unsigned long)func,
			  (unsigned long)csd, nullptr);
}

/* Port of the csd_function_entry tracepoint, include/trace/events/csd.h, v6.16 */
static __always_inline void trace_csd_function_entry(void (*func)(void *), const void *csd)
{
	if (KSHIM_TRACE_ON(kshim::TraceType::CsdFunctionEntry))
		kshim::traceProbe(kshim::TraceType::CsdFunctionEntry, -1, 0,
				  (unsigned long)func, (unsigned long)csd, nullptr);
}

/* Port of the csd_function_exit tracepoint, include/trace/events/csd.h, v6.16 */
static __always_inline void trace_csd_function_exit(void (*func)(void *), const void *csd)
{
	if (KSHIM_TRACE_ON(kshim::TraceType::CsdFunctionExit))
		kshim::traceProbe(kshim::TraceType::CsdFunctionExit, -1, 0,
				  (unsigned long)func, (unsigned long)csd, nullptr);
}
