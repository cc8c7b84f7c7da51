/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pokelab's own tracepoints: no upstream tracepoint exists for these;
 * each takes the place of a one-line hook and has a format of its own
 * (docs/tracing.md).
 *
 * Each tracepoint is one relaxed load of its enable bit when off, a call of
 * the registered probe when on (linux/tracepoint.h); async-signal-safe,
 * callable in any context the probe allows (the trace room's: any).
 */
#pragma once

#include <linux/tracepoint.h>

static __always_inline void trace_pokelab_text_poke(const void *addr, const void *src, size_t len)
{
	if (KSHIM_TRACE_ON(kshim::TraceType::TextPoke)) {
		unsigned long bytes = 0;

		__builtin_memcpy(&bytes, src, len < 8 ? len : 8);
		kshim::traceProbe(kshim::TraceType::TextPoke, (int)len, (unsigned long)addr,
				  bytes, 0, nullptr);
	}
}

static __always_inline void trace_pokelab_text_poke_batch(unsigned int nr_entries, int phase)
{
	if (KSHIM_TRACE_ON(kshim::TraceType::TextPokeBatch))
		kshim::traceProbe(kshim::TraceType::TextPokeBatch, phase, nr_entries, 0, 0,
				  nullptr);
}

static __always_inline void trace_pokelab_int3_emulate(unsigned long addr, unsigned long to)
{
	if (KSHIM_TRACE_ON(kshim::TraceType::Int3Emulate))
		kshim::traceProbe(kshim::TraceType::Int3Emulate, 0, addr, to, 0, nullptr);
}

static __always_inline void trace_pokelab_ct_idle(bool enter)
{
	kshim::TraceType t = enter ? kshim::TraceType::CtIdleEnter : kshim::TraceType::CtIdleExit;

	if (KSHIM_TRACE_ON(t))
		kshim::traceProbe(t, 0, 0, 0, 0, nullptr);
}

static __always_inline void trace_pokelab_ct_work_flush(unsigned int work)
{
	if (KSHIM_TRACE_ON(kshim::TraceType::CtWorkFlush))
		kshim::traceProbe(kshim::TraceType::CtWorkFlush, (int)work, 0, 0, 0, nullptr);
}
