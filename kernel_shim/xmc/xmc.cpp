// SPDX-License-Identifier: GPL-2.0-only
/*
 * The cross-modifying-code model: its operations and text writes, the
 * feeds that tie the rules together (kernel_shim/xmc.h, docs/testing.md).
 * The rules are one file each: torn.cpp (R1), stale.cpp (R2), int3.cpp
 * (R3), sites.cpp (R4), emulation.cpp (R5), tlb.cpp (R6), tables.cpp and
 * altcheck.cpp (R7), fence.cpp (R8), calls.cpp (R9), boot.cpp (the boot
 * stages and the INT3 self-test's R5); storage in
 * bytes.cpp, fetch windows in window.cpp, reports in report.cpp.
 *
 * State, and who touches it:
 *  - per CPU (XmcCpu): its last serialisation, whether it fetches
 *    instrumentable text, its fresh fetch windows and a stale-at-entry
 *    record; written by the CPU itself in any context, read by the writer;
 *  - per operation (Op, xmc_internal.h): every byte the operation wrote with
 *    its value history, its writes in order, and its sites with the bytes
 *    each is to hold when it returns (for an INT3 batch, what its caller
 *    asked smp_text_poke_batch_add() for); written and read only by the
 *    writer (text_mutex holder), so it needs no atomics;
 *  - the violation log, written by the writer.
 *
 * A fetch window is (CPU serial s, last write u): the CPU, outside an EQS,
 * may fetch for each byte its value at s or any value written in (s, u].
 * R1 is decided on a site's window as soon as the window grows: when the
 * site is written (for every fetching CPU but the writer), when the writer
 * enables IRQs again, and when a CPU leaves an EQS mid-operation. So a
 * verdict comes before the CPU could act on the torn bytes, even where the
 * memory itself holds them. CPUs that share a serial share the verdict, so
 * a write costs one pass over the online CPUs and one check per distinct
 * serial among them.
 */
#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include <fmt/format.h>

#include <kernel_shim/boot.h>
#include <kernel_shim/machine.h>
#include <linux/bug.h>
#include <linux/cpumask.h>
#include <linux/irqflags.h>

#define XMC_PRIVATE
#include "xmc_internal.h"

namespace kshim {

XmcCpu xmcCpus[NR_CPUS];
u64 xmcLastOpEnd;
bool xmcEnabled = true;

namespace xmc {

/* What the CPUs recorded for the writer to report: R2 at entry, R6, R8, R9. */
void takeCpuRecords()
{
	takeStaleAtEntry();
	takeStaleTlb();
	takeMissingFences();
	takeDeclined();
	takeSelftest();
	takeCallRecords();
}

Op *op;
u64 raised[NR_CPUS];
/* A write is being checked: a crash on another CPU waits for its verdict. */
int busy;
/* An operation is open: a crash waits a little for its verdict at the return. */
int opActive;
bool paramEnabled = true;
/* text writes since boot, for takeEmulations()'s pace */
unsigned long emuTick;

void opOpen(const char *what, bool implicit, bool int3Batch)
{
	op->open = true;
	op->implicit = implicit;
	op->int3Batch = int3Batch;
	op->full = false;
	op->what = what;
	op->phase = 0;
	op->first = op->last = 0;
	memset(reportedInOp, 0, sizeof(reportedInOp));
	__atomic_store_n(&opActive, 1, __ATOMIC_RELEASE);
	if (int3Batch) {
		op->intents.swap(queuedIntents);
		intentsChanged();
		queuedIntents.clear();
	}
}

/*
 * The operation returns (@returning; false: it goes on in a new one, the
 * model's capacity reached): R4 and R5 for an INT3 batch, R2 for every
 * online CPU (stale.cpp), then forget it.
 */
void opClose(bool returning)
{
	takeFresh();
	takeEmulations(nr_cpu_ids * kEmuLevels * kEmuRing);	/* all that is left */
	if (returning && op->int3Batch)
		checkFinished();

	/*
	 * Publish the return before looking at the CPUs: a CPU that leaves
	 * an EQS from here on sees it at its first fetch, and one that left
	 * before is seen fetching below.
	 *
	 *	CPU n (xmcFirstFetch)		writer (here)
	 *	fetching = 1			xmcLastOpEnd = last
	 *	load xmcLastOpEnd		load fetching[n]
	 */
	if (op->last)
		__atomic_store_n(&xmcLastOpEnd, op->last, __ATOMIC_RELEASE);

	checkStaleAtReturn();
	stats.ops++;

	opForget();
	__atomic_store_n(&opActive, 0, __ATOMIC_RELEASE);
	takeCpuRecords();
}

} /* namespace xmc */

using namespace xmc;

void xmcTextWrite(const void *addr, const u8 *before, const u8 *after, size_t len) noexcept
{
	unsigned long a = (unsigned long)addr;
	int writer = tlsCpu, gate;
	Reach only;
	bool changed = false, inNoinstr = false, int3 = false;
	u64 seq, serials[NR_CPUS];
	int firstOf[NR_CPUS];
	unsigned int nserials = 0;
	const Intent *in;

	if (!xmcEnabled || !op)
		return;
	/* R9 first: a round that returned early explains what R1 finds next */
	if (unlikely(__atomic_load_n(&callLatePending, __ATOMIC_ACQUIRE)))
		takeCallRecords();
	for (size_t i = 0; i < len; i++)
		changed |= before[i] != after[i];
	if (!changed)
		return;
	only = reachableBy(a);
	if (only.cpu == -2)
		return;		/* hidden text: nobody fetches it yet */
	gate = only.cpu == -3 ? gateOf(only) : -1;

	__atomic_store_n(&busy, 1, __ATOMIC_RELEASE);
	/*
	 * Past the model's capacity an operation goes on unsplit (its return
	 * is its caller's, not the model's): what does not fit is not
	 * recorded, counted, and left unjudged. Never stricter.
	 */
	if (!op->open)
		opOpen("text_poke", true, false);

	/* R4: an INT3 batch writes only inside the sites it was given. */
	if (op->int3Batch)
		checkStray(a, before, after, len, writer);

	/* Outside an INT3 batch, the write is its own site: what it wrote is the new text. */
	in = intentAt(a);
	if (!in || !op->int3Batch) {
		for (size_t off = 0; off < len; off += kSiteMax) {
			Intent self = {a + off, (unsigned int)std::min<size_t>(len - off, kSiteMax), {},
				       0, {}, false, {}};
			Intent &slot = op->intents[self.addr];

			intentsChanged();
			memcpy(self.bytes, after + off, self.len);
			/* the site written again: the windows R1 decided stay decided */
			if (slot.len == self.len) {
				memcpy(self.decSerial, slot.decSerial, sizeof(self.decSerial));
				memcpy(self.decUpTo, slot.decUpTo, sizeof(self.decUpTo));
				self.decN = slot.decN;
				self.decNext = slot.decNext;
			}
			slot = self;
		}
	}

	seq = recordWrite(a, before, after, len, only);
	for (size_t i = 0; i < len; i++) {
		const ByteHist *b = findByte(a + i);

		inNoinstr |= b && b->inNoinstr;
		int3 |= after[i] == kInt3 && before[i] != kInt3;
	}
	/*
	 * The bytes are in memory: CPUs that serialise from now on cover this
	 * write. A release store, no fence: the ordering a protocol needs after
	 * a text write is its own (the store→load rule holds it to that).
	 */
	__atomic_store_n(&textWriteSeq, seq, __ATOMIC_RELEASE);
	cpuFenceStore(FENCE_PAIR_TEXT_WRITE);

	takeFresh();
	/*
	 * Trap returns every kEmuEvery writes, not at each: a look at a ring
	 * is a cache miss on a line its CPU writes, and a trapping CPU fills
	 * fewer than kEmuRing records in that many writes (the rest wait for
	 * the return; what a full ring drops is counted as not sampled).
	 */
	if (++emuTick % kEmuEvery == 0)
		takeEmulations(kEmuEvery * kEmuPerWrite);

	/*
	 * R1: every CPU that may fetch this text, grouped by its last
	 * serialisation (CPUs that share it share the verdict).
	 */
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		XmcCpu *c = &xmcCpus[cpu];
		bool seen = false;
		u64 s;

		if ((int)cpu == writer || !online(cpu) || (only.cpu >= 0 && (int)cpu != only.cpu))
			continue;
		if (!inNoinstr && !__atomic_load_n(&c->fetching, __ATOMIC_ACQUIRE))
			continue;
		s = serialOf(cpu);
		if (s >= seq)
			continue;
		/* a gated range: only a CPU whose gate branched into it may fetch it */
		if (gate >= 0 && !gateReaches(gates[gate], s))
			continue;
		for (unsigned int k = 0; k < nserials && !seen; k++)
			seen = serials[k] == s;
		if (!seen) {
			serials[nserials] = s;
			firstOf[nserials++] = cpu;
		}
	}
	IntentCursor ic;
	const Intent *prevSite = nullptr;

	for (size_t off = 0; off < len; off++) {
		const Intent *site = ic.at(a + off);
		bool same = off && prevSite == site;

		prevSite = site;
		if (!site || same)
			continue;
		for (unsigned int k = 0; k < nserials; k++)
			checkSite(*site, serials[k], seq, firstOf[k], true);
	}
	/* The writer: now if it writes with IRQs on, else when it turns them on. */
	if (writer >= 0 && (only.cpu == -1 || only.cpu == writer ||
			    (gate >= 0 && gateReaches(gates[gate], serialOf(writer))))) {
		XmcCpu *c = &xmcCpus[writer];

		if (archIrqsDisabled()) {
			if (!cpuEvents[writer].irqsOnCall) {
				c->writerSince = seq;
				__atomic_store_n(&cpuEvents[writer].irqsOnCall, 1, __ATOMIC_RELAXED);
			}
		} else {
			u64 s = serialOf(writer);

			if (s < seq)
				checkSince(s, std::max(s, seq - 1), seq, writer);
		}
	}
	if (int3 && op->int3Batch)
		for (size_t i = 0; i < len; i++)
			if (after[i] == kInt3 && before[i] != kInt3)
				checkInt3Armed(findByte(a + i));
	__atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
}

void xmcWriterIrqsOn(int cpu) noexcept
{
	XmcCpu *c = &xmcCpus[cpu];
	u64 s, now;

	__atomic_store_n(&cpuEvents[cpu].irqsOnCall, 0, __ATOMIC_RELAXED);
	if (!op || !op->open || !op->nwrites)
		return;
	s = serialOf(cpu);
	now = textWriteSeq;
	if (s >= now)
		return;
	/*
	 * The sites it wrote with IRQs off, as it may fetch them now; its
	 * earlier writes were checked at an earlier IRQ enable, and a site's
	 * window only grows when the site is written.
	 */
	__atomic_store_n(&busy, 1, __ATOMIC_RELEASE);
	checkSince(s, std::max(s, c->writerSince - 1), now, cpu);
	__atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
}

void xmcOpBegin(const char *what, bool int3Batch) noexcept
{
	if (!xmcEnabled || !op)
		return;
	if (op->open)
		opClose();
	opOpen(what, false, int3Batch);
	takeCpuRecords();
}

void xmcOpEnd() noexcept
{
	if (!xmcEnabled || !op || !op->open)
		return;
	opClose();
}

void xmcPhase(int phase) noexcept
{
	if (op && op->open)
		op->phase = phase;
}

void xmcSyncRoundDone() noexcept
{
	if (!xmcEnabled)
		return;
	recordRound();
	if (__atomic_load_n(&callLatePending, __ATOMIC_ACQUIRE))
		takeCallRecords();
	if (op && op->open && op->implicit)
		opClose();
}

void xmcMembarrierRound(u64 seq) noexcept
{
	int self = tlsCpu;

	recordMembarrierRound(seq);
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++)
		if ((int)cpu != self && online(cpu))
			if (raised[cpu] < seq)
				__atomic_store_n(&raised[cpu], seq, __ATOMIC_RELEASE);
}

void xmcQuiesce() noexcept
{
	if (!op)
		return;
	if (op->open)
		opClose();
	takeCpuRecords();
}

void xmcSetEnabled(bool on) noexcept
{
	if (on == xmcEnabled)
		return;
	xmcQuiesce();
	__atomic_store_n(&xmcEnabled, on, __ATOMIC_RELAXED);
}

void xmcReset() noexcept
{
	if (!op) {
		op = new Op();
		op->int3Bytes.reserve(kBytesMax);
	}
	opForget();
	queuedIntents.clear();
	for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++) {
		XmcCpu *c = &xmcCpus[cpu];

		cpuEvents[cpu].serial = 0;
		cpuEvents[cpu].serialCount = 0;
		c->forgiven = 0;
		raised[cpu] = 0;
		cpuEvents[cpu].irqsOnCall = 0;
		c->fetching = 1;
		c->freshHead = c->freshTail = 0;
		c->freshDropped = 0;
		c->staleCount = 0;
		c->entryChecks = 0;
		c->staleHave = 0;
		int3Cpus[cpu].declinedHave = 0;
		int3Cpus[cpu].depth = 0;
		int3Cpus[cpu].stackHave = 0;
		int3Cpus[cpu].fromZeroHave = 0;
		int3Cpus[cpu].selftestHave = 0;
		exempt[cpu].have = false;
		staleReported[cpu] = 0;
		for (EmuRing &e : emuRings[cpu]) {
			e.head = e.tail = 0;
			e.headSeen = e.tailSeen = 0;
			e.dropped = 0;
		}
		violationsOn[cpu] = 0;
		reportedInOp[cpu] = false;
		tlbStale[cpu].have = 0;
		fenceMissing[cpu].have = 0;
	}
	armedClear();
	textWriteSeq = 0;
	xmcLastOpEnd = 0;
	stats = {};
	violationLog.clear();
	firstLen = 0;
	notedOnTheWayDown = 0;
	addDeathHook(xmcDeathNote);
	forgetRegions();
	xmcEnabled = paramEnabled;
	irqsOnHook = xmcWriterIrqsOn;
	callsReset();
	roundsReset();
	bootReset();
}

namespace {

int setXmc(const char *val, std::string &err)
{
	if (!val || !strcmp(val, "1") || !strcmp(val, "on")) {
		paramEnabled = true;
		return 0;
	}
	if (!strcmp(val, "0") || !strcmp(val, "off")) {
		paramEnabled = false;
		return 0;
	}
	err = std::string("pokelab.xmc=") + val + ": expected pokelab.xmc=1 (the default) or 0";
	return -EINVAL;
}

BootParamRegistrar xmcParam({
	"pokelab.xmc", setXmc, [] { paramEnabled = true; },
	"pokelab.xmc=1|0: the cross-modifying-code model checks every text write (default: 1)",
});

unsigned int capacityParam;

int setCapacity(const char *val, std::string &err)
{
	char *end;
	unsigned long n = val ? strtoul(val, &end, 10) : 0;

	if (!val || !isdigit((unsigned char)*val) || *end || n < 1 || n > kWritesMax) {
		err = fmt::format("pokelab.xmc_capacity={}: expected pokelab.xmc_capacity=N, the "
				  "writes an operation keeps, 1 to {}", val ? val : "", kWritesMax);
		return -EINVAL;
	}
	capacityParam = (unsigned int)n;
	return 0;
}

BootParamRegistrar capacityParamReg({
	"pokelab.xmc_capacity", setCapacity, [] { capacityParam = 0; },
	"pokelab.xmc_capacity=N: the model keeps N writes per operation, not 16384 (test only: what "
	"does not fit is not judged, and the verdict says PARTIAL)",
});

/* The model starts empty at every boot, before anything writes text. */
int xmcBoot(std::string &)
{
	xmcReset();
	xmcTestCapacity(0, capacityParam);
	setMachineAttr("xmc", !xmcEnabled ? "off" : eretSerialises ? "on (eret serialising)"
							     : "on (eret plain)");
	return 0;
}

BootHookRegistrar xmcHook({"xmc", BootStage::Machine, xmcBoot});

} /* namespace */

unsigned int xmcCapacityParam() noexcept
{
	return capacityParam;
}

namespace {

/*
 * The booted machine: every site as its table demands (R7), once the
 * patching of boot is done; the last boot stage (boot.cpp): a fault panics.
 */
int xmcBooted(std::string &)
{
	xmcBootStage("boot", XMC_TABLES_ALL);
	return 0;
}

BootHookRegistrar xmcBootedHook({"xmc_tables", BootStage::Booted, xmcBooted});

} /* namespace */

} /* namespace kshim */
