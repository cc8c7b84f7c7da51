// SPDX-License-Identifier: GPL-2.0-only
/*
 * Delay injection for pokelab torture (kernel_shim/torture.h).
 */
#include <ctime>
#include <sched.h>

#include <asm/processor.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/torture.h>
#include <linux/irqflags.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/smp.h>

namespace kshim {

bool tortureDelaysOn;
bool tortureNmisOn;
unsigned long nmisRaised;

namespace {

u64 seedUsed;

struct alignas(64) DelayStream {
	u64 index;
};

DelayStream streams[NR_CPUS];
unsigned long counts[(int)TortureDelay::Nr];

/* The stream of delays: stream 1 of every CPU (stream 0 is the torture's decisions). */
constexpr unsigned int kDelayStream = 1;

} /* namespace */

u64 tortureDraw(u64 seed, unsigned int cpu, unsigned int stream, u64 index) noexcept
{
	u64 z = seed ^ ((u64)cpu << 48) ^ ((u64)stream << 40) ^ (index * 0x9e3779b97f4a7c15ull);

	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void tortureDelayAt(TortureDelay where) noexcept
{
	int cpu = raw_smp_processor_id();
	u64 d, idx;

	if (cpu < 0)
		return;
	/* One index per draw, taken atomically: an interrupt on this CPU draws its own. */
	idx = __atomic_fetch_add(&streams[cpu].index, 1, __ATOMIC_RELAXED);
	d = tortureDraw(seedUsed, cpu, kDelayStream, idx);
	/*
	 * One point in eight delays; of those, mostly short spins. Before a
	 * batch's drain and in the entry's window between its flush and its
	 * kernel_cr3_loaded store (where a remote flush must land to show the
	 * posted order's bug), one in two: a point once per batch or entry,
	 * whose window another CPU's step must overlap.
	 */
	bool often = where == TortureDelay::BeforeRefsDrain || where == TortureDelay::EntryCr3Window;

	if ((d & (often ? 1 : 7)) != 0)
		return;
	__atomic_fetch_add(&counts[(int)where], 1, __ATOMIC_RELAXED);
	if (((d >> 3) & 15) == 0 && inTask() && !irqs_disabled() &&
	    where != TortureDelay::EntryBeforeFlush && where != TortureDelay::EntryBeforeRmw &&
	    where != TortureDelay::ExitBeforeRmw) {
		sched_yield();
		return;
	}

	/*
	 * Up to 20 us; up to 200 us in the windows another CPU's step must
	 * fall into to show a bug: the entry's CR3 window (a remote
	 * kernel-range flush), an INT3 handler holding its ref and the
	 * patcher before its drain (a handler that traps on an INT3 the
	 * batch leaves, whose drain's wait is then all that keeps the vector).
	 */
	bool cr3 = where == TortureDelay::EntryCr3Window || where == TortureDelay::EntryPtiWindow ||
		   where == TortureDelay::ExitPtiWindow;
	/* and the entry's window before its RMW, where a remote ct_set_cpu_work() must land */
	bool wide = cr3 || where == TortureDelay::Int3AfterRef ||
		    where == TortureDelay::BeforeRefsDrain || where == TortureDelay::EntryBeforeRmw ||
		    where == TortureDelay::NmiCr3Window;
	u64 until = clockNs() + ((d >> 8) % (wide ? 200000 : 20000));

	while (clockNs() < until)
		cpu_relax();
	/*
	 * An NMI at the end of the window: what a remote flush did meanwhile
	 * is for it to see; inside the INT3 and IPI handlers, it nests there.
	 */
	bool handler = where == TortureDelay::Int3AfterRef || where == TortureDelay::Int3BeforePut ||
		       where == TortureDelay::BeforeIpiFunc;
	/*
	 * Half the CR3 windows' delays; one in 16 of the handlers' (an NMI's
	 * handler runs every site, each an INT3 while a batch is open). None
	 * from inside an NMI: the signal would wait for its return and land
	 * again, an NMI storm no CPU sees.
	 */
	bool nmi = cr3 ? ((d >> 40) & 1) : handler && ((d >> 40) & 15) == 0;

	if (nmi && !in_nmi() && __atomic_load_n(&tortureNmisOn, __ATOMIC_RELAXED)) {
		__atomic_fetch_add(&nmisRaised, 1, __ATOMIC_RELAXED);
		nmiSelf();
	}
}

void tortureNmis(bool on) noexcept
{
	__atomic_store_n(&tortureNmisOn, on, __ATOMIC_SEQ_CST);
}

unsigned long tortureNmiCount() noexcept
{
	return __atomic_load_n(&nmisRaised, __ATOMIC_RELAXED);
}

void tortureDelays(bool on, u64 seed) noexcept
{
	seedUsed = seed;
	for (DelayStream &s : streams)
		__atomic_store_n(&s.index, 0, __ATOMIC_RELAXED);
	for (unsigned long &c : counts)
		__atomic_store_n(&c, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&nmisRaised, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&tortureDelaysOn, on, __ATOMIC_SEQ_CST);
}

unsigned long tortureDelayCount(TortureDelay where) noexcept
{
	return __atomic_load_n(&counts[(int)where], __ATOMIC_RELAXED);
}

} /* namespace kshim */
