/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The ipi tracepoints (include/trace/events/ipi.h).
 *
 * Each tracepoint is one relaxed load of its enable bit when off, a call of
 * the registered probe when on (linux/tracepoint.h); async-signal-safe,
 * callable in any context the probe allows (the trace room's: any).
 */
#pragma once

#include <linux/tracepoint.h>

/* Port of the ipi_send_cpu tracepoint, include/trace/events/ipi.h, v6.16 */
static __always_inline void trace_ipi_send_cpu(unsigned int cpu, unsigned long callsite,
					      void *callback)
{
	if (KSHIM_TRACE_ON(kshim::TraceType::IpiSendCpu))
		kshim::traceProbe(kshim::TraceType::IpiSendCpu, (int)cpu, callsite,
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
		kshim::traceProbe(kshim::TraceType::IpiSendCpumask, -1, callsite,
				  (unsigned long)callback, 0, cpumask);
}
