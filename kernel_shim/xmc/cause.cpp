// SPDX-License-Identifier: GPL-2.0-only
/*
 * Causes: why a CPU was left unsynced, and which refs operation went wrong,
 * in indented lines after a report's own (the first line, which trace
 * tools and tests read, stays as it was).
 *
 *  - A CPU that could still fetch old bytes (R1's torn fetch, R2, R3's
 *    orphaned INT3) last serialised at write s. Each sync round that began
 *    after s should have reached it; the writer keeps its last rounds (the
 *    waited cross-call each was, from the machine's record, at
 *    xmcSyncRoundDone()), and says what each did with the CPU: not in its
 *    mask; skipped by its condition while its context-tracking state read
 *    X (and, at a kernel entry without the sync, the deferred work lost
 *    there); the function run without a serialising instruction; not run
 *    when the round returned. None at all: no round began after s.
 *  - R3's counts: an increment from zero (the handler's take that left
 *    the count at 1), a count the batch never published, a drain that
 *    returned with a count up.
 *  - Each with the CPU's last few events (kernel_shim/cpu_events.h).
 *
 * The model's reading of its own records, for a person: no rule depends
 * on it. The writer, task context.
 */
#include <string>

#include <fmt/format.h>

#include <kernel_shim/call_events.h>
#include <kernel_shim/plural.h>
#include <kernel_shim/symbols.h>
#include <linux/cpumask.h>

#define XMC_PRIVATE
#include "xmc_internal.h"

namespace kshim {

namespace xmc {

namespace {

enum RoundOutcome : u8 {
	ROUND_NOT_IN_MASK,
	ROUND_SENDER,		/* it sent the round (and ran the function itself or not) */
	ROUND_SKIPPED,
	ROUND_ENDED,
	ROUND_BEGUN,
	ROUND_NOT_RUN,
};

struct Round {
	u64 seq;		/* textWriteSeq when it began: the writes it could cover */
	int sender;
	int phase;		/* of the operation when it returned (0: none) */
	const char *op;
	unsigned long func;
	bool membarrier;
	bool senderRan;
	u8 outcome[NR_CPUS];
	u8 pending[NR_CPUS];
	u8 fetching[NR_CPUS];
	int state[NR_CPUS];
};

constexpr unsigned int kRounds = 8;
Round rounds[kRounds];
u64 nrounds;
u64 membarrierSeq;	/* a membarrier round's, until its xmcSyncRoundDone() (0: none) */

const char *phaseWords(int phase)
{
	switch (phase) {
	case 1:
		return "phase 1 (INT3s)";
	case 2:
		return "phase 2 (tails)";
	case 3:
		return "phase 3 (first bytes)";
	}
	return nullptr;
}

std::string roundName(const Round &r)
{
	const char *p = phaseWords(r.phase);
	std::string what = r.membarrier ? "membarrier(SYNC_CORE)"
					: traceSymbol(r.func, false) + "()";

	if (p)
		return fmt::format("the sync round after {} of {} ({} from CPU {})", p, r.op, what,
				   r.sender);
	return fmt::format("the sync round at write {} ({} from CPU {})", r.seq, what, r.sender);
}

/*
 * The CPU's first kernel entry its ring holds at or after write @seq: one
 * made without serialising, if its last serialisation is older than @seq.
 */
bool entryAfter(int cpu, u64 seq, unsigned long *ip, u64 *when)
{
	const CpuRecent *r = &cpuRecent[cpu];
	u64 head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);

	for (u64 i = head > kCpuRecent ? head - kCpuRecent : 0; i < head; i++) {
		const CpuRecentEvent *e = &r->ev[i % kCpuRecent];

		if (__atomic_load_n(&e->stamp, __ATOMIC_ACQUIRE) != i + 1 ||
		    e->kind != CPU_EV_KERNEL_ENTRY || e->seq < seq)
			continue;
		*ip = e->arg;
		*when = e->seq;
		return true;
	}
	return false;
}

std::string roundOutcome(const Round &r, int cpu, const XmcViolation &v)
{
	std::string fn = r.membarrier ? "" : traceSymbol(r.func, false) + "()";

	if (r.membarrier)
		return cpu == r.sender ? "it was the caller, whom membarrier does not serialise"
				       : "membarrier covered every other CPU thread";
	switch (r.outcome[cpu]) {
	case ROUND_NOT_IN_MASK:
		return "not in the round's mask";
	case ROUND_SENDER:
		return r.senderRan ? fmt::format("it sent the round and ran {} itself, without a "
						 "serialising instruction", fn)
				   : "it sent the round and did not run it itself";
	case ROUND_SKIPPED: {
		std::string s = fmt::format("skipped by the round's condition while its "
					    "context-tracking state read {}",
					    ctStateWords(r.state[cpu]));

		unsigned long at;
		u64 when;

		if (noinstrText(v.site) && v.len)
			s += "; the site is noinstr text, which an entering CPU runs before its "
			     "flush: a batch that writes it must not defer";
		if (!r.pending[cpu])
			return s + "; no deferred sync was left for its next kernel entry";
		if (r.fetching[cpu])
			return s + "; but it was running instrumentable kernel code then (outside "
				   "any EQS): the work waits for its next entry, after it next "
				   "leaves the kernel";
		if (v.rule == XmcRule::StaleAtEntry)
			return s + fmt::format("; that deferred work was lost at its kernel entry: it "
					       "reached instrumentable code at {} without "
					       "serialising", traceSymbol(v.ip, true));
		if (entryAfter(cpu, r.seq, &at, &when))
			return s + fmt::format("; that deferred work was lost at its kernel entry at "
					       "write {}: it reached instrumentable code at {} without "
					       "serialising", when, traceSymbol(at, true));
		return s + "; deferred work pending, for its next kernel entry";
	}
	case ROUND_ENDED:
		return fmt::format("it ran {} (began and ended it) without a serialising "
				   "instruction", fn);
	case ROUND_BEGUN:
		return fmt::format("it had begun {} but not ended it when the round returned", fn);
	case ROUND_NOT_RUN:
		return fmt::format("it had not run {} when the round returned", fn);
	}
	return "?";
}

std::string eventWords(const CpuRecentEvent &e)
{
	switch (e.kind) {
	case CPU_EV_SERIALISE:
		return fmt::format("serialised (to write {})", e.arg);
	case CPU_EV_EQS_ENTER:
		return "entered an EQS (user or idle)";
	case CPU_EV_KERNEL_ENTRY:
		return fmt::format("first instrumentable fetch after an EQS, at {}",
				   traceSymbol(e.arg, true));
	case CPU_EV_FUNC_BEGIN:
		return fmt::format("began {}() from CPU {}", traceSymbol(e.arg, false), e.arg2);
	case CPU_EV_FUNC_END:
		return fmt::format("ended {}()", traceSymbol(e.arg, false));
	case CPU_EV_REF_GET:
		return fmt::format("INT3 handler took a ref from a count of 0 (count now {})",
				   (long)e.arg);
	case CPU_EV_REF_PUT:
		return fmt::format("INT3 handler put a ref, the count to {}", (long)e.arg);
	}
	return "?";
}

} /* namespace */

/* "  CPU n's last events, ..." lines: the newest few of its ring, oldest first. */
std::string lastEvents(int cpu)
{
	const CpuRecent *r = &cpuRecent[cpu];
	u64 head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
	std::string s;
	unsigned int n = 0;

	for (u64 i = head > kCpuRecent ? head - kCpuRecent : 0; i < head; i++) {
		const CpuRecentEvent *e = &r->ev[i % kCpuRecent];
		CpuRecentEvent copy;

		if (__atomic_load_n(&e->stamp, __ATOMIC_ACQUIRE) != i + 1)
			continue;
		copy = *e;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&e->stamp, __ATOMIC_RELAXED) != i + 1)
			continue;	/* refilled meanwhile */
		s += fmt::format("    at write {}: {}\n", copy.seq, eventWords(copy));
		n++;
	}
	if (!n)
		return fmt::format("  CPU {}'s last events: none recorded\n", cpu);
	return fmt::format("  CPU {}'s last events, oldest first:\n", cpu) + s;
}

/* Why CPU @cpu, last serialised at write @serial, was not serialised since. */
std::string unsyncedCause(const XmcViolation &v, int cpu, u64 serial)
{
	std::string s;
	u64 first = nrounds > kRounds ? nrounds - kRounds : 0;
	unsigned int shown = 0, since = 0;

	const char *before = v.opFirst && serial < v.opFirst ? " (before the operation began)" : "";
	/* what it serialised itself; the rest the model counted it from (serialOf()) */
	u64 own = __atomic_load_n(&cpuEvents[cpu].serial, __ATOMIC_ACQUIRE);
	bool membarrier = false;

	for (u64 i = first; i < nrounds; i++) {
		since += rounds[i % kRounds].seq > serial;
		membarrier |= rounds[i % kRounds].membarrier && rounds[i % kRounds].seq == serial;
	}
	if (own >= serial)
		s = fmt::format("  why: CPU {} last serialised at write {}{}; ", cpu, serial,
				before);
	else if (membarrier)
		s = fmt::format("  why: CPU {} last serialised at write {}, and a membarrier round "
				"covered it to write {}{}; ", cpu, own, serial, before);
	else
		s = fmt::format("  why: CPU {} last serialised at write {}; the model counts it "
				"from write {}{}, where an earlier report on it ended (one report per "
				"CPU and fault); ", cpu, own, serial, before);
	if (!since) {
		s += "no sync round began after that";
		if (nrounds > kRounds && rounds[first % kRounds].seq > serial)
			s += fmt::format(" among the last {} kept", kRounds);
		return s + "\n" + lastEvents(cpu);
	}
	s += fmt::format("{} began after that{}:\n", nOf(since, "sync round"),
			 since > 3 ? fmt::format(" (the last 3 of them here)") : "");
	for (u64 i = first; i < nrounds; i++) {
		const Round &r = rounds[i % kRounds];

		if (r.seq <= serial)
			continue;
		/* the last three: the one that should have reached it is among them */
		if (since - shown++ > 3)
			continue;
		s += fmt::format("    {}: {}\n", roundName(r), roundOutcome(r, cpu, v));
	}
	return s + lastEvents(cpu);
}

/* Which refs operation went wrong: R3 on the counts. */
std::string refsCause(const XmcViolation &v)
{
	std::string s;
	int who = -1;

	/* the CPU's own count; the shared one (refs=global) is every CPU's */
	for (unsigned int c = 0; c < nr_cpu_ids; c++) {
		if (!__atomic_load_n(&int3Cpus[c].fromZeroHave, __ATOMIC_ACQUIRE))
			continue;
		if ((int)c == v.cpu || (who < 0 && refsGlobalMode()))
			who = c;
	}
	if (who >= 0) {
		const Int3Cpu *t = &int3Cpus[who];

		s = fmt::format("  why: an increment from zero: CPU {}'s INT3 handler took a ref at "
				"write {} (its trap at {}) while the count read 0, and it read 1 "
				"after: an inc where inc_not_zero belongs (try_get_text_poke_array()'s "
				"raw_atomic_inc_not_zero() fails on 0 and declines the trap)\n",
				who, t->fromZeroSeq, traceSymbol(t->fromZeroSite, true));
		if (v.rule == XmcRule::Int3Unpublished)
			s += fmt::format("  the batch's publish (atomic_set_release(refs, 1)) then "
					 "overwrote that ref, and the handler's put "
					 "(raw_atomic_dec()) took the batch's own: the count read "
					 "{}\n", v.refs);
		else
			s += fmt::format("  no drain accounts for that ref: the count read {} at the "
					 "drain's return\n", v.refs);
	} else if (v.rule == XmcRule::Int3Unpublished) {
		s = fmt::format("  why: the count read {} when the INT3 was written: the batch's "
				"publish (atomic_set_release(refs, 1) for every CPU) had not reached "
				"it, or a put (raw_atomic_dec()) without its take dropped it\n", v.refs);
	} else {
		s = fmt::format("  why: the drain's atomic_dec_and_test() left the count at {} (a "
				"handler's ref up) and the drain returned without waiting for it to "
				"reach 0 (atomic_cond_read_acquire(refs, !VAL))\n", v.refs);
	}
	return s + lastEvents(v.cpu);
}

std::string causeOf(const XmcViolation &v)
{
	if (v.cpu < 0 || (unsigned int)v.cpu >= NR_CPUS)
		return "";
	switch (v.rule) {
	case XmcRule::Torn:
	case XmcRule::Stale:
	case XmcRule::StaleAtEntry:
	case XmcRule::Int3Orphaned:
		return unsyncedCause(v, v.cpu, v.cpuSerial);
	case XmcRule::Int3Unpublished:
	case XmcRule::Int3RefsHeld:
		return refsCause(v);
	case XmcRule::CallReturnedEarly:
		return lastEvents(v.cpu);
	default:
		return "";
	}
}

/*
 * A sync round returned (xmcSyncRoundDone()): the writer's last cross-call
 * as the machine recorded it, or the membarrier round before it.
 */
void recordRound()
{
	int w = tlsCpu;
	Round &r = rounds[nrounds % kRounds];
	const CallRecord *c;

	if (w < 0)
		return;
	c = &callRecords[w];
	r.sender = w;
	r.phase = op && op->open ? op->phase : 0;
	r.op = op && op->open ? op->what : "";
	r.membarrier = membarrierSeq != 0;
	if (r.membarrier) {
		r.seq = membarrierSeq;
		membarrierSeq = 0;
		nrounds++;
		return;
	}
	if (!c->gen)
		return;
	r.seq = c->seq;
	r.func = c->func;
	r.senderRan = __atomic_load_n(&callRan[w][w].ended, __ATOMIC_ACQUIRE) == c->gen;
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		const CallRan *ran = &callRan[cpu][w];

		r.pending[cpu] = 0;
		if ((int)cpu == w) {
			r.outcome[cpu] = ROUND_SENDER;
		} else if (!cpumask_test_cpu(cpu, &c->targets)) {
			r.outcome[cpu] = ROUND_NOT_IN_MASK;
		} else if (cpumask_test_cpu(cpu, &c->skipped)) {
			r.outcome[cpu] = ROUND_SKIPPED;
			r.pending[cpu] = skipPending[w][cpu];
			r.fetching[cpu] = skipFetching[w][cpu];
			r.state[cpu] = skipState[w][cpu];
		} else if (__atomic_load_n(&ran->ended, __ATOMIC_ACQUIRE) == c->gen) {
			r.outcome[cpu] = ROUND_ENDED;
		} else if (__atomic_load_n(&ran->began, __ATOMIC_ACQUIRE) == c->gen) {
			r.outcome[cpu] = ROUND_BEGUN;
		} else {
			r.outcome[cpu] = ROUND_NOT_RUN;
		}
	}
	nrounds++;
}

void recordMembarrierRound(u64 seq)
{
	membarrierSeq = seq ? seq : 1;
}

void roundsReset()
{
	nrounds = 0;
	membarrierSeq = 0;
}

} /* namespace xmc */

} /* namespace kshim */
