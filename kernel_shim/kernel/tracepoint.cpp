// SPDX-License-Identifier: GPL-2.0-only
/*
 * The tracepoints' enable mask and probe (linux/tracepoint.h), and the
 * context_tracking tracepoints' iterator (trace/events/context_tracking.h).
 *
 * CUSTOM: kernel/tracepoint.c. The trace room (kernel_shim/trace/) installs
 * the probe that records; until it does, nothing is enabled and the probe
 * below is never reached.
 */
#include <linux/tracepoint.h>
#include <trace/events/context_tracking.h>

namespace kshim {

namespace {

void noProbe(TraceType, int, unsigned long, unsigned long, unsigned long,
	     const struct cpumask *) noexcept
{
}

} /* namespace */

std::atomic<u32> traceEnabled{0};
TraceProbe traceProbe = noProbe;
TraceIter traceIter;

} /* namespace kshim */
