// SPDX-License-Identifier: GPL-2.0-only
/*
 * R3, orphaned INT3: when a CPU's INT3 refs are drained, it must no longer
 * be able to fetch an INT3 the operation wrote and then removed; when an
 * INT3 is written, the refs of every CPU that may fetch it are live.
 */
#include <linux/cpumask.h>

#define XMC_PRIVATE
#include "xmc_internal.h"

namespace kshim {

namespace xmc {

/* INT3 refs as the model was told: per CPU, and the shared count. */
bool int3Live[NR_CPUS];
bool int3LiveGlobal;

/* R3, arming: a CPU that may fetch the INT3 just written must have live refs. */
void checkInt3Armed(const ByteHist *b)
{
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		if (!online(cpu) || (b->onlyCpu >= 0 && (int)cpu != b->onlyCpu))
			continue;
		stats.int3Checks++;
		if (int3LiveGlobal || int3Live[cpu])
			continue;
		report(siteViolation(XmcRule::Int3Unpublished, cpu, b, 0));
		return;
	}
}

} /* namespace xmc */

using namespace xmc;

void xmcInt3RefsPublish(int cpu) noexcept
{
	if (cpu < 0)
		int3LiveGlobal = true;
	else
		int3Live[cpu] = true;
}

void xmcInt3RefsDrain(int cpu) noexcept
{
	if (cpu < 0)
		int3LiveGlobal = false;
	else
		int3Live[cpu] = false;
	if (!xmcEnabled || !op || !op->open)
		return;

	/* R3: no CPU whose refs go may still fetch an INT3 that the operation removed. */
	takeFresh();
	for (unsigned int c = 0; c < nr_cpu_ids; c++) {
		XmcCpu *x = &xmcCpus[c];
		bool fetching;
		u64 s;

		if ((cpu >= 0 && (int)c != cpu) || !online(c))
			continue;
		fetching = __atomic_load_n(&x->fetching, __ATOMIC_ACQUIRE);
		s = serialOf(c);
		stats.int3Checks++;
		for (u32 i : op->int3Bytes) {
			const ByteHist *b = &op->bytes[i];

			if (currentValue(b) == kInt3 || (!fetching && !b->inNoinstr) ||
			    (b->onlyCpu >= 0 && b->onlyCpu != (int)c))
				continue;
			if (!possible(b, s, op->last).has(kInt3))
				continue;
			report(siteViolation(XmcRule::Int3Orphaned, c, b, s));
			break;
		}
	}
}

} /* namespace kshim */
