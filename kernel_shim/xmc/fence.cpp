// SPDX-License-Identifier: GPL-2.0-only
/*
 * R8, the store→load rule: a protocol's load that x86-TSO would let pass
 * the protocol's earlier store must have a full fence (MFENCE, a locked
 * instruction, a serialising one) between them on its CPU.
 *
 * The machine counts the kernel's fences per CPU and a protocol's store
 * records the count (kernel_shim/cpu_events.h); the load's check
 * (xmcFenceCheck()) compares. So a deleted smp_mb() is found at the first
 * load it leaves unfenced, deterministically: the host's store buffer,
 * which may or may not have let the load pass in this run, plays no part.
 * The pairs:
 *
 *	entering CPU (entry stub, NMI)		flusher (flush_tlb_kernel_range_deferrable())
 *	kernel_cr3_loaded = 1	[CR3_LOADED]	vunmap: PTE cleared	[PT_CHANGE]
 *	smp_mb()				(the clear is an XCHG: its own fence)
 *	flush: read the page tables		read kernel_cr3_loaded[n]
 *
 * x86 needs the entering side's smp_mb(): the flush, INVPCID where the
 * CPU has it, is not a serialising instruction (the CR4 fallback is). The
 * flusher's side is fenced by ptep_get_and_clear()'s locked XCHG; a clear
 * by plain store (pte_clear()) would leave it unfenced.
 *
 *	patcher (v8)
 *	write text		[TEXT_WRITE]
 *	(fence)
 *	read kernel_cr3_loaded[n]
 *
 * Records are made on the CPU (noinstr, any context) and reported by the
 * writer at its next operation boundary, as R6's.
 */
#include <linux/cpumask.h>

#define XMC_PRIVATE
#include "xmc_internal.h"

namespace kshim {

namespace xmc {

FenceMissing fenceMissing[NR_CPUS];

const char *fencePairStore(int pair)
{
	switch (pair) {
	case FENCE_PAIR_CR3_LOADED:
		return "stored kernel_cr3_loaded = 1 (the entry stub or the NMI's paranoid entry)";
	case FENCE_PAIR_PT_CHANGE:
		return "changed a kernel range's page tables";
	case FENCE_PAIR_TEXT_WRITE:
		return "wrote text";
	}
	return "made a store";
}

const char *fencePairLoad(int pair)
{
	switch (pair) {
	case FENCE_PAIR_CR3_LOADED:
		return "read the page tables in its kernel TLB flush";
	case FENCE_PAIR_PT_CHANGE:
		return "read another CPU's kernel_cr3_loaded to decide its flush IPI";
	case FENCE_PAIR_TEXT_WRITE:
		return "read another CPU's kernel_cr3_loaded to decide its sync IPI";
	}
	return "made a load";
}

void takeMissingFences()
{
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		FenceMissing *f = &fenceMissing[cpu];
		XmcViolation v = {};

		if (!__atomic_load_n(&f->have, __ATOMIC_ACQUIRE))
			continue;
		v.rule = XmcRule::MissingFence;
		v.cpu = cpu;
		v.pair = f->pair;
		v.ip = f->ip;
		v.op = "a store→load pair";
		__atomic_store_n(&f->have, 0, __ATOMIC_RELEASE);
		report(v);
	}
}

} /* namespace xmc */

using namespace xmc;

noinstr void xmcFenceMissing(enum CpuFencePair pair, unsigned long ip) noexcept
{
	int cpu = tlsCpu;
	FenceMissing *f;

	if (cpu < 0 || !xmcEnabled)
		return;
	f = &fenceMissing[cpu];
	if (__atomic_load_n(&f->have, __ATOMIC_ACQUIRE))
		return;
	f->pair = pair;
	f->ip = ip;
	/* pairs with the acquire in takeMissingFences() */
	__atomic_store_n(&f->have, 1, __ATOMIC_RELEASE);
}

} /* namespace kshim */
