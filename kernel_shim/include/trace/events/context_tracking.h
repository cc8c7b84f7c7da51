/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The context_tracking tracepoints (include/trace/events/context_tracking.h).
 *
 * Each tracepoint is one relaxed load of its enable bit when off, a call of
 * the registered probe when on (linux/tracepoint.h); async-signal-safe,
 * callable in any context the probe allows (the trace room's: any).
 */
#pragma once

#include <linux/tracepoint.h>

/* Port of the user_enter tracepoint, include/trace/events/context_tracking.h */
static __always_inline void trace_user_enter(int dummy)
{
	if (KSHIM_TRACE_ON(kshim::TraceType::UserEnter))
		kshim::traceProbe(kshim::TraceType::UserEnter, dummy, 0, 0, 0, nullptr);
}

/* Port of the user_exit tracepoint, include/trace/events/context_tracking.h */
static __always_inline void trace_user_exit(int dummy)
{
	if (KSHIM_TRACE_ON(kshim::TraceType::UserExit))
		kshim::traceProbe(kshim::TraceType::UserExit, dummy, 0, 0, 0, nullptr);
}
