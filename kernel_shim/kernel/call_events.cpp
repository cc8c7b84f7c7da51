// SPDX-License-Identifier: GPL-2.0-only
/*
 * The machine's record of cross-calls (kernel_shim/call_events.h): the
 * sender's call and each target's runs of it, for the checker's rule on
 * waited cross-calls.
 *
 * CUSTOM: instrumentation, not a port. The sender's side runs in task
 * context; the target's in the IPI handler, so it only loads and stores.
 */
#include <algorithm>
#include <cstring>

#include <kernel_shim/call_events.h>
#include <kernel_shim/cpu_events.h>
#include <linux/cpumask.h>

namespace kshim {

CallRecord callRecords[NR_CPUS];
CallRan callRan[NR_CPUS][NR_CPUS];
CallHooks callHooks;

namespace {

/* The call a CPU's running function belongs to, for its end (csds do not nest; two for safety). */
struct alignas(SMP_CACHE_BYTES) CallCur {
	unsigned int depth;
	int src[2];
	u64 gen[2];
	unsigned long func[2];
};

CallCur callCur[NR_CPUS];

} /* namespace */

void callBegin(const char *sender, const struct cpumask *mask, int single, unsigned long func,
	       bool wait, unsigned long caller) noexcept
{
	int cpu = tlsCpu;
	CallRecord *r;

	if (cpu < 0)
		return;
	r = &callRecords[cpu];
	r->sender = sender;
	r->caller = caller;
	r->wait = wait;
	r->seq = __atomic_load_n(&textWriteSeq, __ATOMIC_ACQUIRE);
	cpumask_clear(&r->skipped);
	if (mask) {
		cpumask_and(&r->targets, mask, cpu_online_mask);
	} else {
		cpumask_clear(&r->targets);
		if (single >= 0 && (unsigned int)single < nr_cpu_ids && cpu_online(single))
			cpumask_set_cpu(single, &r->targets);
	}
	cpumask_clear_cpu(cpu, &r->targets);
	/* the function before the number: a target that reads the new number reads it too */
	__atomic_store_n(&r->func, func, __ATOMIC_RELAXED);
	__atomic_store_n(&r->gen, r->gen + 1, __ATOMIC_RELEASE);
	r->open = true;
}

void callSkipped(int cpu) noexcept
{
	int self = tlsCpu;

	if (self < 0 || cpu < 0 || (unsigned int)cpu >= nr_cpu_ids)
		return;
	cpumask_set_cpu(cpu, &callRecords[self].skipped);
	if (callHooks.skipped)
		callHooks.skipped(self, cpu);
}

void callEnd() noexcept
{
	int cpu = tlsCpu;
	CallRecord *r;

	if (cpu < 0)
		return;
	r = &callRecords[cpu];
	if (!r->open)
		return;
	r->open = false;
	if (r->wait && callHooks.returned)
		callHooks.returned(cpu);
}

void callFuncBegin(unsigned long func, int src) noexcept
{
	int cpu = tlsCpu;
	CallCur *c;
	unsigned int d;
	u64 gen = 0;

	if (cpu < 0)
		return;
	if (src >= 0 && (unsigned int)src < NR_CPUS) {
		const CallRecord *r = &callRecords[src];

		gen = __atomic_load_n(&r->gen, __ATOMIC_ACQUIRE);
		if (__atomic_load_n(&r->func, __ATOMIC_RELAXED) != func)
			gen = 0;	/* not the call its sender is making now */
	}
	if (gen)
		__atomic_store_n(&callRan[cpu][src].began, gen, __ATOMIC_RELAXED);
	c = &callCur[cpu];
	d = c->depth;
	if (d < 2) {
		c->src[d] = src;
		c->gen[d] = gen;
		c->func[d] = func;
	}
	__atomic_store_n(&c->depth, d + 1, __ATOMIC_RELAXED);
	cpuRecentEvent(CPU_EV_FUNC_BEGIN, func, (u32)src);
}

void callFuncEnd() noexcept
{
	int cpu = tlsCpu;
	CallCur *c;
	unsigned int d;

	if (cpu < 0)
		return;
	c = &callCur[cpu];
	d = c->depth;
	if (!d)
		return;
	d--;
	if (d < 2) {
		/* before csd_unlock()'s release: a sender that sees the csd free sees this */
		if (c->gen[d])
			__atomic_store_n(&callRan[cpu][c->src[d]].ended, c->gen[d],
					 __ATOMIC_RELAXED);
		cpuRecentEvent(CPU_EV_FUNC_END, c->func[d], (u32)c->src[d]);
	}
	__atomic_store_n(&c->depth, d, __ATOMIC_RELAXED);
}

void callReset() noexcept
{
	/* the CPUs of this boot and of the largest one before: the rows ever written */
	static unsigned int used;
	unsigned int n = std::max(used, (unsigned int)nr_cpu_ids);

	for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++) {
		callRecords[cpu].gen = 0;
		callRecords[cpu].func = 0;
		callRecords[cpu].open = false;
		callCur[cpu].depth = 0;
		cpuRecent[cpu].head = 0;
		memset(cpuRecent[cpu].ev, 0, sizeof(cpuRecent[cpu].ev));
	}
	for (unsigned int cpu = 0; cpu < n && cpu < NR_CPUS; cpu++)
		memset(callRan[cpu], 0, std::min(n, (unsigned int)NR_CPUS) * sizeof(CallRan));
	used = n;
}

} /* namespace kshim */
