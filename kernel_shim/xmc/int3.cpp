// SPDX-License-Identifier: GPL-2.0-only
/*
 * R3, an INT3 and its handler, read from the refs counters themselves (the
 * atomics the handler increments and the batch drains), never from what
 * the batch says it did:
 *
 *  - arming: when an INT3 batch writes an INT3, every CPU that may fetch
 *    it has a live ref count (> 0), or its trap would find no array;
 *  - the drain's return: every CPU's count is 0 (a handler still holding a
 *    ref reads an array that the next batch refills), and no CPU can still
 *    fetch an INT3 the batch wrote and removed (its trap would find none);
 *  - a declined trap: the handler returned 0 for an INT3 that the open
 *    batch wrote and has not removed, and whose site the batch was not
 *    asked to leave an INT3 (then the trap dies as "Oops: int3": the model
 *    says why before it does);
 *  - a late trap: an unclaimed trap on an INT3 that a batch wrote, removed
 *    and drained: the CPU executed it while the batch was live, and its
 *    handler ran after the batch ended, which the kernel's sync round
 *    (its IPI waits for every CPU to leave the trap, IRQs off from the
 *    trap on) and drain never let happen.
 *
 * The counters' addresses are registered at boot (xmcInt3Refs()), and so
 * is that of the mode flag the handler reads (pokelab.refs=, switched
 * between batches by text_poke_set_refs_mode()): the model loads the flag
 * as the handler does, so it reads the counts the handler takes, in either
 * mode. The handler's entries and returns and its declined traps come from
 * exc_int3() on the trapping CPU, in signal context: the armed sites the
 * declined-trap check needs are published by the writer as a
 * seqcount-guarded list that the SIGTRAP path reads without a lock.
 */
#include <cstring>

#include <linux/cpumask.h>
#include <asm/processor.h>
#include <asm/ptrace.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/sigsafe.h>

#define XMC_PRIVATE
#include "xmc_internal.h"

namespace kshim {

namespace xmc {

/*
 * Where the handler's ref counts live: per CPU, and the one shared count
 * (refs=global); and the flag that says which of them the handler takes.
 */
const int *refsPerCpu[NR_CPUS];
const int *refsShared;
const bool *refsGlobalFlag;

/*
 * The INT3s the open batch armed: written by the writer only, read in any
 * context. @gen is odd while the list changes (a seqcount); a reader that
 * sees it change retries or gives up.
 */
ArmedList armed;

/* The last batch's INT3 sites, kept when it is forgotten: a late trap's proof. */
ArmedList retired;

/* Per CPU: the handler's nesting and the site of its outermost trap (any context). */
Int3Cpu int3Cpus[NR_CPUS];

/* The mode in force now, read from the handler's own flag (stable while a batch is open). */
bool refsGlobalMode()
{
	return refsGlobalFlag && __atomic_load_n(refsGlobalFlag, __ATOMIC_ACQUIRE);
}

long refsOf(unsigned int cpu)
{
	const int *r = refsGlobalMode() ? refsShared : refsPerCpu[cpu];

	return r ? __atomic_load_n(r, __ATOMIC_ACQUIRE) : -1;
}

bool refsKnown()
{
	return refsGlobalMode() ? refsShared != nullptr : refsPerCpu[0] != nullptr;
}

void armedAdd(unsigned long site, u8 oldOp, u8 newOp)
{
	unsigned int n = armed.n;

	if (n >= kArmedMax) {
		countLost(&XmcStats::lostArmed);
		return;
	}
	__atomic_store_n(&armed.gen, armed.gen + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	armed.site[n] = site;
	armed.removed[n] = 0;
	armed.oldOp[n] = oldOp;
	armed.newOp[n] = newOp;
	__atomic_store_n(&armed.n, n + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&armed.gen, armed.gen + 1, __ATOMIC_RELEASE);
}

/*
 * A site has at most one live entry, the newest (an INT3 is armed again
 * only after its removal): the entry after the last one removed (phase 3
 * goes in phase 1's order), else the newest match, looking back.
 */
void armedRemove(unsigned long site)
{
	static unsigned int hint;
	unsigned int n = armed.n, i;

	if (hint < n && armed.site[hint] == site && !armed.removed[hint]) {
		i = hint;
	} else {
		for (i = n; i-- > 0;)
			if (armed.site[i] == site)
				break;
		if (i >= n || armed.removed[i])
			return;
	}
	__atomic_store_n(&armed.removed[i], 1, __ATOMIC_RELEASE);
	hint = i + 1;
}

void armedClear()
{
	unsigned int n = armed.n;

	if (n) {
		__atomic_store_n(&retired.gen, retired.gen + 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		memcpy(retired.site, armed.site, n * sizeof(armed.site[0]));
		__atomic_store_n(&retired.n, n, __ATOMIC_RELAXED);
		__atomic_store_n(&retired.gen, retired.gen + 1, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&armed.gen, armed.gen + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&armed.n, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&armed.gen, armed.gen + 1, __ATOMIC_RELEASE);
}

/* R3, arming: a CPU that may fetch the INT3 just written must have a live ref count. */
void checkInt3Armed(const ByteHist *b)
{
	const Intent *in = intentAt(b->addr);

	/* an INT3 the batch was asked to leave (a probe) is armed for nobody's emulation */
	if (!in || in->addr != b->addr || in->bytes[0] != kInt3) {
		u8 e[kSiteMax];

		if (in && in->addr == b->addr)
			emulatedAs(in->bytes, in->len, in->addr, e);
		armedAdd(b->addr, b->old, !in || in->addr != b->addr ? b->old : e[0]);
	}
	if (!refsKnown())
		return;
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		long r;

		if (!online(cpu) || !mayFetch(b, cpu, serialOf(cpu)))
			continue;
		if (!b->inNoinstr && !__atomic_load_n(&xmcCpus[cpu].fetching, __ATOMIC_ACQUIRE))
			continue;
		stats.int3Checks++;
		if ((r = refsOf(cpu)) > 0)
			continue;
		XmcViolation v = siteViolation(XmcRule::Int3Unpublished, cpu, b, 0);

		v.refs = r;
		report(v);
		return;
	}
}

/* The declined traps the CPUs recorded (xmcInt3Declined()), into the log. */
void takeDeclined()
{
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		Int3Cpu *t = &int3Cpus[cpu];
		XmcViolation v = {};

		if (__atomic_load_n(&t->declinedHave, __ATOMIC_ACQUIRE) != 1)
			continue;
		const ByteHist *b = op && op->open ? findByte(t->declinedSite) : nullptr;

		v.rule = XmcRule::Int3Declined;
		v.cpu = cpu;
		v.site = t->declinedSite;
		v.len = 1;
		v.nposs[0] = 1;
		v.poss[0][0] = kInt3;
		v.oldBytes[0] = b ? b->old : kInt3;
		v.newBytes[0] = kInt3;
		v.phase = 1;
		v.phaseTo = t->declinedPhase;
		v.refs = t->declinedRefs;
		v.op = "smp_text_poke_batch_finish";
		__atomic_store_n(&t->declinedHave, 0, __ATOMIC_RELEASE);
		report(v);
	}
}

} /* namespace xmc */

using namespace xmc;

void xmcInt3Refs(const int *const *percpu, const int *shared, const bool *global) noexcept
{
	for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++)
		refsPerCpu[cpu] = percpu ? percpu[cpu] : nullptr;
	refsShared = shared;
	refsGlobalFlag = global;
}

void xmcInt3RefsDrained() noexcept
{
	bool global = refsGlobalMode();

	if (!xmcEnabled || !op || !op->open)
		return;
	takeFresh();
	for (unsigned int c = 0; c < nr_cpu_ids; c++) {
		XmcCpu *x = &xmcCpus[c];
		bool fetching;
		long r;
		u64 s;

		if (!online(c))
			continue;
		/* The counts themselves: every handler is done with the array. */
		stats.int3Checks++;
		r = refsOf(c);
		if (r > 0 && (!global || __atomic_load_n(&int3Cpus[c].depth, __ATOMIC_ACQUIRE))) {
			XmcViolation v = {};

			v.rule = XmcRule::Int3RefsHeld;
			v.cpu = c;
			v.op = op->what;
			v.refs = r;
			v.site = __atomic_load_n(&int3Cpus[c].site, __ATOMIC_ACQUIRE);
			report(v);
			continue;
		}
		/* And no CPU can still fetch an INT3 that the batch removed. */
		fetching = __atomic_load_n(&x->fetching, __ATOMIC_ACQUIRE);
		s = serialOf(c);
		for (u32 i : op->int3Bytes) {
			const ByteHist *b = &op->bytes[i];

			if (currentValue(b) == kInt3 || (!fetching && !b->inNoinstr) ||
			    !mayFetch(b, c, s) || b->lossSeq > s)
				continue;
			if (!possible(b, s, op->last).has(kInt3))
				continue;
			report(siteViolation(XmcRule::Int3Orphaned, c, b, s));
			break;
		}
	}
	/* refs=global: the shared count is 0 with no CPU inside the handler to blame */
	if (global && refsOf(0) > 0) {
		XmcViolation v = {};

		v.rule = XmcRule::Int3RefsHeld;
		v.cpu = tlsCpu >= 0 ? tlsCpu : 0;
		v.op = op->what;
		v.refs = refsOf(0);
		report(v);
	}
}

void xmcInt3Enter(const struct pt_regs *regs) noexcept
{
	int cpu = tlsCpu;
	Int3Cpu *t;

	if (cpu < 0)
		return;
	t = &int3Cpus[cpu];
	if (!t->depth) {
		/* the trap reports the byte after the INT3 */
		__atomic_store_n(&t->site, regs->ip - 1, __ATOMIC_RELAXED);
		t->enterSp = regs->sp;
		t->enterTop = *(const unsigned long *)regs->sp;
	}
	__atomic_store_n(&t->depth, t->depth + 1, __ATOMIC_RELEASE);
}

void xmcInt3Exit() noexcept
{
	int cpu = tlsCpu;

	if (cpu >= 0 && int3Cpus[cpu].depth)
		__atomic_store_n(&int3Cpus[cpu].depth, int3Cpus[cpu].depth - 1, __ATOMIC_RELEASE);
}

namespace {

/*
 * Is @site an INT3 of the open batch, armed and not removed? A seqcount
 * read. The writer feeds a write after its bytes are in memory, so a CPU
 * may trap on a fresh INT3 before the model knows it is armed:
 *
 *	writer				this CPU
 *	text_poke_memcpy(): INT3	fetches the INT3, traps, declined
 *	xmcTextWrite(): armedAdd()	looks: not armed yet
 *
 * With @wait (the trap is on its way to an Oops: nobody claimed it), look
 * again while the site holds an INT3, for up to 50 ms.
 */
bool armedSite(unsigned long site, bool wait, u8 *oldOp = nullptr, u8 *newOp = nullptr,
	       bool removedToo = false)
{
	u64 until = wait ? clockNs() + 50000000ull : 0;

	for (;;) {
		bool found = false;
		unsigned int g, tries = 0;
		u8 o = 0, w = 0;

		do {
			g = __atomic_load_n(&armed.gen, __ATOMIC_ACQUIRE);
			if (g & 1)
				continue;
			found = false;
			for (unsigned int i = 0; i < __atomic_load_n(&armed.n, __ATOMIC_RELAXED) &&
						 i < kArmedMax; i++)
				if (armed.site[i] == site &&
				    (removedToo ||
				     !__atomic_load_n(&armed.removed[i], __ATOMIC_RELAXED))) {
					found = true;
					o = armed.oldOp[i];
					w = armed.newOp[i];
				}
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (__atomic_load_n(&armed.gen, __ATOMIC_RELAXED) == g)
				break;
		} while (++tries < 64);
		if (found && tries < 64) {
			if (oldOp)
				*oldOp = o;
			if (newOp)
				*newOp = w;
			return true;
		}
		if (!wait || __atomic_load_n((const u8 *)site, __ATOMIC_RELAXED) != kInt3 ||
		    clockNs() >= until)
			return false;
		cpu_relax();
	}
}

bool recordDeclined(int cpu, unsigned long site)
{
	Int3Cpu *t = &int3Cpus[cpu];

	/* the first one is kept: a nested handler's, or this one's if none came first */
	if (!claimOwn(&t->declinedHave, 0, kRecFilling))
		return true;
	t->declinedSite = site;
	t->declinedPhase = op ? __atomic_load_n(&op->phase, __ATOMIC_RELAXED) : 0;
	t->declinedRefs = refsOf(cpu);
	/* pairs with the acquire in takeDeclined() */
	__atomic_store_n(&t->declinedHave, 1, __ATOMIC_RELEASE);
	return true;
}

} /* namespace */

namespace xmc {

bool armedOpcodes(unsigned long site, u8 *oldOp, u8 *newOp)
{
	return armedSite(site, false, oldOp, newOp);
}

/* Did the last batch the model forgot arm an INT3 at @site? A seqcount read, any context. */
bool retiredSite(unsigned long site)
{
	for (unsigned int tries = 0; tries < 1000; tries++) {
		unsigned int g = __atomic_load_n(&retired.gen, __ATOMIC_ACQUIRE);
		bool found = false;

		if (g & 1)
			continue;
		for (unsigned int i = 0; i < __atomic_load_n(&retired.n, __ATOMIC_RELAXED) &&
					 i < kArmedMax; i++)
			found |= retired.site[i] == site;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&retired.gen, __ATOMIC_RELAXED) == g)
			return found;
	}
	return false;
}

} /* namespace xmc */

/*
 * A decline is wrong when the site is the open batch's: armed and not yet
 * removed, or removed by phase 3 while this CPU was already in the handler
 * with its ref up. Phase 3 writes before its sync, and the sync cannot pass
 * a CPU whose handler holds the IPI off, so the ref still reads >= 1:
 *
 *	CPU0 (smp_text_poke_batch_finish)	CPU1
 *						trap on the INT3, ref taken
 *	phase 3: first byte written		lookup misses, ref put
 *	armedRemove()				declined: refs read 1, removed
 *	sync: waits for CPU1
 *
 * Once the batch drained (refs 0), a decline at a removed site is a late
 * trap: the handler returns 0 and exc_int3() dies ("Oops: int3"), and R3's
 * other checks say why.
 */
bool xmcInt3Declined(unsigned long site) noexcept
{
	int cpu = tlsCpu;

	if (cpu < 0 || !xmcEnabled)
		return false;
	if (!armedSite(site, false) &&
	    !(refsOf(cpu) > 0 && armedSite(site, false, nullptr, nullptr, true)))
		return false;
	return recordDeclined(cpu, site);
}

/*
 * The handler took or put a ref: its CPU's recent events, and a take that
 * left the count at 1, which a take that must find the batch's own ref up
 * (inc_not_zero) never does: an increment from zero. One race reads 1 too:
 * a drain that drops the batch's ref between the handler's take and this
 * load, which the drain then waits out (no sync lets it happen with the
 * IPI back-end); the record is only ever a report's cause, never a rule.
 */
void xmcInt3RefOp(const int *refs, bool get) noexcept
{
	int cpu = tlsCpu;
	Int3Cpu *t;
	int n;

	if (cpu < 0 || !xmcEnabled)
		return;
	n = __atomic_load_n(refs, __ATOMIC_RELAXED);
	/* only the takes from zero and the puts to zero: the batch's own ref is 1, never 0 */
	if ((get && n == 1) || (!get && n <= 0))
		cpuRecentEvent(get ? CPU_EV_REF_GET : CPU_EV_REF_PUT, (unsigned long)(long)n, 0);
	t = &int3Cpus[cpu];
	if (!get || n != 1 || __atomic_load_n(&t->fromZeroHave, __ATOMIC_RELAXED))
		return;
	t->fromZeroSeq = __atomic_load_n(&textWriteSeq, __ATOMIC_RELAXED);
	t->fromZeroSite = t->site;
	__atomic_store_n(&t->fromZeroHave, 1, __ATOMIC_RELEASE);
}

void xmcInt3DeclinedNote(unsigned long site) noexcept
{
	int cpu = tlsCpu;
	Int3Cpu *t;
	SigSafeBuf b;

	if (cpu < 0)
		return;
	t = &int3Cpus[cpu];
	/* nobody claimed it: an INT3 the writer has not fed yet is looked for again */
	if (xmcEnabled && !__atomic_load_n(&t->declinedHave, __ATOMIC_ACQUIRE) &&
	    armedSite(site, true))
		recordDeclined(cpu, site);
	if (__atomic_load_n(&t->declinedHave, __ATOMIC_ACQUIRE) != 1) {
		/*
		 * A late trap: the INT3 was a batch's, removed and drained (its
		 * site in the open batch's list as removed with every count at 0,
		 * or in the last batch's). The CPU executed it while the batch
		 * was live; the handler ran after the batch ended.
		 *
		 *	CPU0 (smp_text_poke_batch_finish)	CPU1
		 *						execute the INT3 (trap)
		 *	phase 3: first byte written
		 *	sync round returns, not waiting
		 *	drain: refs 0, batch gone
		 *						handler: no ref, Oops
		 */
		if (!xmcEnabled || !(retiredSite(site) ||
				     (refsOf(cpu) == 0 && armedSite(site, false, nullptr, nullptr,
								    true))))
			return;
		b.str("xmc: INT3 handled after its batch: CPU ").dec(cpu).str(" at ").hex(site)
			.str(" in smp_text_poke_batch_finish: it trapped on an INT3 the batch wrote "
			     "in phase 1, and its handler ran only after the batch had removed it "
			     "and drained its refs: a sync round or the drain returned while this "
			     "CPU was between its trap and its handler (the kernel's sync IPI waits "
			     "for it: IRQs are off from the trap on)\n");
		b.emit();
		xmcNoteReported();
		return;
	}
	b.str("xmc: INT3 declined on an armed site: CPU ").dec(cpu).str(" at ")
		.hex(t->declinedSite).str(" in smp_text_poke_batch_finish: the INT3 handler "
					  "declined (returned 0 for) a trap on an INT3 that the "
					  "batch armed in phase 1, its refs still up (phase ")
		.dec(t->declinedPhase).str(" now; this CPU's refs read ").dec(t->declinedRefs)
		.str(")\n");
	b.emit();
	xmcNoteReported();
}

} /* namespace kshim */
