// SPDX-License-Identifier: GPL-2.0-only
/*
 * R2, stale after return: when an operation returns, every CPU that could
 * still fetch a byte older than the operation's must be in an EQS with a
 * deferred sync pending; at its first instrumentable fetch after the EQS
 * (xmcFirstFetch(), any context), it must have serialised since.
 */
#include <linux/cpumask.h>

#define XMC_PRIVATE
#include "xmc_internal.h"

namespace kshim {

namespace xmc {

/*
 * What a CPU that R2 exempted at an operation's return (in an EQS with a
 * deferred sync pending) could still fetch, kept for the report if it then
 * reaches instrumentable code without serialising.
 */
Exempt exempt[NR_CPUS];
/* Per CPU: the last write of the last operation it was reported stale at (R2). */
u64 staleReported[NR_CPUS];
bool (*syncPending)(int cpu);

/* R2 at an operation's return, for every online CPU (opClose()). */
void checkStaleAtReturn()
{
	for (unsigned int cpu = 0; op->last && cpu < nr_cpu_ids; cpu++) {
		XmcCpu *c = &xmcCpus[cpu];
		const ByteHist *stale = nullptr;
		bool noinstrStale = false, fetching, deferred;
		u64 s;

		if (!online(cpu))
			continue;
		/*
		 * Its state first, its serial last: a CPU that leaves the EQS
		 * meanwhile serialises first (its flush), so its serial is
		 * never older than the state it was exempted in.
		 */
		fetching = __atomic_load_n(&c->fetching, __ATOMIC_ACQUIRE);
		deferred = !fetching && syncPending && syncPending(cpu);
		s = serialOf(cpu);
		stats.returnChecks++;
		if (s >= op->last)
			continue;
		for (unsigned int i = 0; i < op->nbytes; i++) {
			const ByteHist *b = &op->bytes[i];
			PSet p;

			if (!b->n || !mayFetch(b, cpu, s))
				continue;
			p = possible(b, s, op->last);
			if (p.n == 1 && p.v[0] == currentValue(b))
				continue;
			if (!stale)
				stale = b;
			if (b->inNoinstr) {
				noinstrStale = true;
				stale = b;
				break;
			}
		}
		if (!stale)
			continue;

		XmcViolation v = siteViolation(XmcRule::Stale, cpu, stale, s);

		v.inEqs = !fetching;

		if (!noinstrStale && deferred) {
			/* In an EQS with a deferred sync: checked at its first instrumentable fetch. */
			if (!exempt[cpu].have || exempt[cpu].serial != s) {
				exempt[cpu].have = true;
				exempt[cpu].serial = s;
				exempt[cpu].v = v;
			}
			continue;
		}
		report(v);
		forgive(cpu, op->last);
		staleReported[cpu] = op->last;
	}
}

/* R2 records made by CPUs at their first instrumentable fetch, into the log. */
void takeStaleAtEntry()
{
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		XmcCpu *c = &xmcCpus[cpu];
		XmcViolation v = {};

		if (!__atomic_load_n(&c->staleHave, __ATOMIC_ACQUIRE))
			continue;
		if (c->staleOpEnd <= staleReported[cpu]) {
			/* reported at that operation's return already: one fault, one report */
			__atomic_store_n(&c->staleHave, 0, __ATOMIC_RELEASE);
			continue;
		}
		if (exempt[cpu].have && exempt[cpu].serial == c->staleSerial)
			v = exempt[cpu].v;
		v.rule = XmcRule::StaleAtEntry;
		v.cpu = cpu;
		v.ip = c->staleIp;
		v.cpuSerial = c->staleSerial;
		if (!v.op)
			v.op = "an earlier operation";
		exempt[cpu].have = false;
		__atomic_store_n(&c->staleHave, 0, __ATOMIC_RELEASE);
		report(v);
	}
}

} /* namespace xmc */

using namespace xmc;

void xmcFirstFetch(int cpu, unsigned long ip) noexcept
{
	XmcCpu *c = &xmcCpus[cpu];
	u64 s, now, end;

	/*
	 * Pairs with the writer's publication of a write and its look at
	 * fetching (xmcTextWrite()): either the writer sees this CPU fetching,
	 * or this CPU sees the write here.
	 *
	 *	CPU n (first fetch)		writer
	 *	fetching = 1			textWriteSeq = seq
	 *	now = textWriteSeq		load fetching[n]
	 */
	__atomic_store_n(&c->fetching, 1, __ATOMIC_RELEASE);
	cpuRecentEvent(CPU_EV_KERNEL_ENTRY, ip, 0);
	if (!xmcEnabled)
		return;
	cpuCountOwn(&c->entryChecks);
	s = serialOf(cpu);
	end = __atomic_load_n(&xmcLastOpEnd, __ATOMIC_ACQUIRE);
	now = __atomic_load_n(&textWriteSeq, __ATOMIC_ACQUIRE);
	if (s < end) {
		/* R2: an operation returned that this CPU never serialised against. */
		cpuCountOwn(&c->staleCount);
		if (!__atomic_load_n(&c->staleHave, __ATOMIC_ACQUIRE)) {
			c->staleIp = ip;
			c->staleSerial = s;
			c->staleOpEnd = end;
			__atomic_store_n(&c->staleHave, 1, __ATOMIC_RELEASE);
		}
		cpuRaiseOwn(&c->forgiven, end);
		s = end;
	}
	if (s < now) {
		/* R1: writes of an operation in progress that it has not serialised against. */
		u64 head = c->freshHead;

		if (head - __atomic_load_n(&c->freshTail, __ATOMIC_ACQUIRE) >= 16) {
			cpuCountOwn(&c->freshDropped);	/* unjudged, counted */
		} else {
			c->fresh[head % 16].serial = s;
			c->fresh[head % 16].upTo = now;
			__atomic_store_n(&c->freshHead, head + 1, __ATOMIC_RELEASE);
		}
	}
}

void xmcSetSyncPending(bool (*fn)(int cpu))
{
	syncPending = fn;
}

} /* namespace kshim */
