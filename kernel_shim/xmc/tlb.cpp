// SPDX-License-Identifier: GPL-2.0-only
/*
 * R6, stale TLB: a kernel range touched through a translation its flush
 * removed. The TLB model (kernel_shim/mm/tlb.cpp) finds it on the CPU that
 * touches the range; the model keeps the first per CPU and reports it at
 * its next operation boundary.
 */
#include <linux/cpumask.h>

#define XMC_PRIVATE
#include "xmc_internal.h"

namespace kshim {

namespace xmc {

/* R6 records, one per CPU until reported (xmcTlbStale()) */
TlbStale tlbStale[NR_CPUS];

void takeStaleTlb()
{
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		TlbStale *t = &tlbStale[cpu];
		XmcViolation v = {};

		if (!__atomic_load_n(&t->have, __ATOMIC_ACQUIRE))
			continue;
		v.rule = XmcRule::StaleTlb;
		v.cpu = cpu;
		v.site = t->start;
		v.rangeEnd = t->end;
		v.ip = t->ip;
		v.tlbGen = t->gen;
		v.tlbCpuGen = t->cpuGen;
		__atomic_store_n(&t->have, 0, __ATOMIC_RELEASE);
		report(v);
	}
}

} /* namespace xmc */

using namespace xmc;

void xmcTlbStale(int cpu, unsigned long start, unsigned long end, u64 gen, u64 cpuGen,
		 unsigned long ip) noexcept
{
	TlbStale *t = &tlbStale[cpu];

	if (!xmcEnabled || __atomic_load_n(&t->have, __ATOMIC_ACQUIRE))
		return;
	t->start = start;
	t->end = end;
	t->ip = ip;
	t->gen = gen;
	t->cpuGen = cpuGen;
	/* pairs with the acquire in takeStaleTlb() */
	__atomic_store_n(&t->have, 1, __ATOMIC_RELEASE);
}

} /* namespace kshim */
