/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * RCU's tracepoints, as a kernel without CONFIG_RCU_TRACE has them.
 *
 * PORT: written fresh after include/trace/events/rcu.h: with
 * CONFIG_RCU_TRACE off, trace_rcu_watching() compiles to nothing, and
 * tracepoint_string() (include/linux/tracepoint.h, for TPS()) is the
 * string itself. userspace: pokelab traces context tracking through its
 * own events (trace/events/context_tracking.h, pokelab.h), not RCU's.
 * Any context.
 */
#pragma once

#define trace_rcu_watching(polarity, oldnesting, newnesting, watching) \
	do {                                                            \
	} while (0)

#ifndef tracepoint_string
#define tracepoint_string(str) str
#endif
