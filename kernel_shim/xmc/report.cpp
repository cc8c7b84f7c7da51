// SPDX-License-Identifier: GPL-2.0-only
/*
 * The cross-modifying-code model's reports: the violation log and the
 * counters, a violation's line with its CPU, site, phase and bytes (each
 * decoded with Zydis), the verdict, and the note left on the way down.
 */
#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>

#include <kernel_shim/boot.h>
#include <kernel_shim/disasm.h>
#include <kernel_shim/plural.h>
#include <kernel_shim/port_map.h>
#include <kernel_shim/symbols.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/xmc.h>
#include <kernel_shim/xmc_verdict.h>
#include <linux/cpumask.h>

#define XMC_PRIVATE
#include "xmc_internal.h"

namespace kshim {

namespace xmc {

XmcStats stats;
std::vector<XmcViolation> violationLog;
unsigned long violationsOn[NR_CPUS];
/* CPUs already reported in the open operation: one report per CPU and operation. */
bool reportedInOp[NR_CPUS];
/* The first violation, formatted when found, for the way down (xmcDeathNote()). */
char firstText[4096];
size_t firstLen;
void (*reporter)(const XmcViolation &v);

void report(const XmcViolation &found)
{
	/* the writer, and R7's checks under the table lock: the model's own lock */
	static std::mutex reportLock;
	std::lock_guard<std::mutex> lk(reportLock);
	XmcViolation v = found;

	v.ts = clockNs();	/* when the model saw it, for a timeline's mark */
	if (v.cause.empty())
		v.cause = causeOf(v);
	/* the rules a CPU records itself are one report per fault already */
	if (v.rule != XmcRule::StaleAtEntry && v.rule != XmcRule::MissingFence &&
	    v.rule != XmcRule::Int3Declined && v.rule != XmcRule::WrongSite &&
	    v.rule != XmcRule::CallReturnedEarly) {
		if (reportedInOp[v.cpu]) {
			stats.more++;
			return;
		}
		reportedInOp[v.cpu] = true;
	}
	stats.violations++;
	violationsOn[v.cpu]++;
	if (violationLog.size() < kViolationsKept)
		violationLog.push_back(v);
	if (!firstLen) {
		std::string t = xmcFormat(v);
		size_t n = std::min(t.size(), sizeof(firstText));

		memcpy(firstText, t.data(), n);
		__atomic_store_n(&firstLen, n, __ATOMIC_RELEASE);
	}
	if (reporter)
		reporter(v);
}

/* A reported CPU starts again from @seq, so that one fault is one report. */
void forgive(int cpu, u64 seq)
{
	if (raised[cpu] < seq)
		__atomic_store_n(&raised[cpu], seq, __ATOMIC_RELEASE);
}

/* A violation that names the site holding byte @b, as CPU @cpu may fetch it. */
XmcViolation siteViolation(XmcRule rule, int cpu, const ByteHist *b, u64 serial)
{
	const Intent *in = intentAt(b->addr);
	Intent self = {b->addr, 1, {currentValue(b)}, 0, {}, false, {}};
	XmcViolation v = {};
	Window w;

	if (!in)
		in = &self;
	buildWindow(*in, serial, op->last, &w);
	v.rule = rule;
	v.cpu = cpu;
	v.op = op->what;
	v.cpuSerial = serial;
	v.opFirst = op->first;
	phasesIn(&v, *in, serial, op->last);
	fillBytes(&v, w, 0, w.siteLen);
	return v;
}

} /* namespace xmc */

using namespace xmc;

namespace {

/* The first instruction of @len bytes at @addr, and how much is left after it. */
std::string decode(const u8 *bytes, unsigned int len, unsigned long addr)
{
	unsigned int l;
	std::string t = disasmOne(bytes, len, addr, &l);

	if (l && l < len)
		return fmt::format("{} (+{} bytes after it)", t, len - l);
	return t;
}

std::string hex(const u8 *b, unsigned int n)
{
	std::string s;

	for (unsigned int i = 0; i < n; i++)
		s += fmt::format("{}{:02x}", i ? " " : "", b[i]);
	return s;
}

std::string phaseName(int phase)
{
	switch (phase) {
	case 1:
		return "phase 1 (INT3 on each first byte)";
	case 2:
		return "phase 2 (tails)";
	case 3:
		return "phase 3 (first bytes)";
	default:
		return "a text write";
	}
}

/* "in phase 2 (tails)" or "from phase 1 (...) to phase 3 (...)". */
std::string phaseSpan(const XmcViolation &v)
{
	if (v.phase == v.phaseTo || !v.phaseTo)
		return "in " + phaseName(v.phase);
	return "from " + phaseName(v.phase) + " to " + phaseName(v.phaseTo);
}

} /* namespace */

namespace {

std::string formatBody(const XmcViolation &v);

} /* namespace */

/* The report, then the port's place of the kernel function it names. */
std::string xmcFormat(const XmcViolation &v)
{
	std::string s = formatBody(v);
	const char *at = kshim::portWhere(v.op);

	/* the cause after the report's own lines: line 1 stays what trace tools read */
	if (!v.cause.empty())
		s += v.cause;

	if (at)
		s += fmt::format("  port: {}() at {}\n", v.op, at);
	return s;
}

namespace {

std::string formatBody(const XmcViolation &v)
{
	std::string s = fmt::format("xmc: {}: CPU {}", xmcRuleName(v.rule), v.cpu);

	if (v.len)
		s += fmt::format(" at {} [{:#x}]", traceSymbol(v.site, true), v.site);
	switch (v.rule) {
	case XmcRule::Torn:
		s += fmt::format(" in {}: it could fetch a mix of the bytes written {}, not having "
				 "serialised since {}", v.op, phaseSpan(v),
				 v.cpuSerial < v.opFirst ? "before the operation began"
							 : "an earlier write of it");
		break;
	case XmcRule::Stale:
		s += fmt::format(": {} returned while it could still fetch bytes from before the "
				 "writes {}, {}", v.op, phaseSpan(v),
				 v.inEqs ? "in an extended quiescent state with no deferred sync "
					   "pending (or with noinstr text to fetch)"
					 : "outside any extended quiescent state");
		break;
	case XmcRule::StaleAtEntry:
		s += fmt::format(": reached instrumentable code at {} after leaving an extended "
				 "quiescent state without serialising since {} returned",
				 traceSymbol(v.ip, true), v.op ? v.op : "an earlier operation");
		break;
	case XmcRule::Int3Orphaned:
		s += fmt::format(": {} drained its INT3 refs while it could still fetch an INT3 "
				 "that the batch had removed, not having serialised since the writes {}", v.op,
				 phaseSpan(v));
		break;
	case XmcRule::Int3Unpublished:
		s += fmt::format(": {} wrote an INT3 it may fetch before publishing its refs "
				 "(the INT3 written {})", v.op, phaseSpan(v));
		break;
	case XmcRule::StrayWrite:
		s += fmt::format(": {} wrote a byte outside every site it was given", v.op);
		break;
	case XmcRule::Unfinished:
		s += fmt::format(": {} returned with the site holding other bytes than its "
				 "caller asked for", v.op);
		break;
	case XmcRule::Int3Misemulated:
		s += fmt::format(": it trapped on the INT3 of {} and resumed as neither the "
				 "site's old nor its new instruction would", v.op);
		break;
	case XmcRule::StaleTlb:
		s += fmt::format(" at {}: touched kernel range [{:#x}, {:#x}) through a translation "
				 "from before its page-table change (generation {}; this CPU's "
				 "kernel TLB is from generation {}), after flush_tlb_kernel_range() "
				 "had returned", traceSymbol(v.ip, true), v.site, v.rangeEnd,
				 v.tlbGen, v.tlbCpuGen);
		break;
	case XmcRule::WrongSite:
		s += ": " + v.detail;
		break;
	case XmcRule::MissingFence:
		s += fmt::format(": it {} and then {} at {} [{:#x}] with no full fence between: "
				 "x86-TSO lets the load pass the store (smp_mb(), a locked "
				 "instruction or a serialising one must come between)",
				 fencePairStore(v.pair), fencePairLoad(v.pair),
				 traceSymbol(v.ip, true), v.ip);
		break;
	case XmcRule::Int3RefsHeld:
		s += fmt::format(": {}'s INT3 refs drain returned while this CPU's refs count read "
				 "{}: a handler still holds one and may read the array the next "
				 "batch refills", v.op, v.refs);
		break;
	case XmcRule::CallReturnedEarly:
		s += fmt::format(" had not ended {}() when {}() on CPU {} returned from its wait "
				 "to {}", traceSymbol(v.func, false), v.op, v.sender,
				 traceSymbol(v.caller, true));
		break;
	case XmcRule::Int3Declined:
		s += fmt::format(": the INT3 handler declined (returned 0 for) a trap on an INT3 "
				 "that {} wrote {}, its refs still up (this CPU's refs read {})",
				 v.op, phaseSpan(v), v.refs);
		break;
	}
	if (!v.len)
		return s + "\n" + (v.detail.empty() || v.rule != XmcRule::CallReturnedEarly
				   ? "" : "  " + v.detail + "\n");
	/* a site against its table: what the build left there, and what it holds now */
	if (v.rule == XmcRule::WrongSite) {
		s += fmt::format("\n  build: {:<43} {}\n  {} {:<43} {}\n", hex(v.oldBytes, v.len),
				 decode(v.oldBytes, v.len, v.site), v.request ? "asked:" : "now:  ",
				 hex(v.newBytes, v.len), decode(v.newBytes, v.len, v.site));
		return s;
	}
	/* what the CPU could fetch; the rules on a site's final bytes have no such set */
	if (v.rule != XmcRule::Unfinished && v.rule != XmcRule::Int3Misemulated) {
		s += "\n  possible bytes:";
		for (unsigned int i = 0; i < v.len; i++) {
			std::string alt;

			for (unsigned int k = 0; k < v.nposs[i]; k++)
				alt += fmt::format("{}{:02x}", k ? "|" : "", v.poss[i][k]);
			s += " [" + alt + "]";
		}
	}
	s += fmt::format("\n  old:  {:<44} {}\n  new:  {:<44} {}\n", hex(v.oldBytes, v.len),
			 decode(v.oldBytes, v.len, v.site), hex(v.newBytes, v.len),
			 decode(v.newBytes, v.len, v.site));
	if (v.tornLen)
		s += fmt::format("  {} {:<44} {}\n", v.rule == XmcRule::Unfinished ? "now: " : "torn:",
				 hex(v.tornBytes, v.tornLen), decode(v.tornBytes, v.tornLen, v.site));
	if (!v.detail.empty() && v.rule != XmcRule::WrongSite)
		s += "  " + v.detail + "\n";
	return s;
}

} /* namespace */

std::string xmcVerdict(const XmcStats &s)
{
	std::string what = fmt::format(
		"model of cross-modifying code (SDM Vol. 3A 8.1.3): {} ({} bytes) in {}; checked {}, "
		"{} at returns, {}, {}, {} at returns, {}{}, {} against their tables",
		nOf(s.writes, "text write"), s.bytes, nOf(s.ops, "operation"),
		nOf(s.windows, "fetch window"), nOf(s.returnChecks, "CPU"),
		nOf(s.entryChecks, "kernel entry", "kernel entries"),
		nOf(s.int3Checks, "INT3 refs check"), nOf(s.siteChecks, "site"),
		nOf(s.emulations, "INT3 emulation"),
		/* the emulations a full ring dropped: the count it belongs to */
		s.emuSkipped ? fmt::format(" ({} more not sampled)", s.emuSkipped) : "",
		nOf(s.tableChecks, "site"));

	what += fmt::format("; {} seen", nOf(s.serialisations, "serialisation"));
	/* what was not kept, by its limit: "N fetch windows" above counts those decided */
	if (s.lost)
		what += "; past the model's capacity: " + xmcLostCauses(s);
	if (!xmcEnabled)
		return "xmc: the cross-modifying-code model is off (pokelab.xmc=0) -> NOTHING CHECKED";
	if (s.violations)
		return fmt::format("xmc: {}; {}{} -> FAIL", what, nOf(s.violations, "violation"),
				   s.more ? fmt::format(" (and {} of the same CPUs and operations)",
							nOf(s.more, "more window", "more windows"))
					  : "");
	if (!s.writes)
		return fmt::format("xmc: no text written, the cross-modifying-code model had "
				   "nothing to check -> NOTHING CHECKED");
	/* a PASS is of what the model kept: what did not fit is said in the verdict itself */
	if (s.lost)
		return fmt::format("xmc: {}; 0 violations -> PASS, PARTIAL: {} past its capacity "
				   "not judged", what, nOf(s.lost, "window or value",
							   "windows or values"));
	return fmt::format("xmc: {}; 0 violations -> PASS", what);
}

std::string xmcLostCauses(const XmcStats &s)
{
	std::string out;
	auto add = [&out](unsigned long n, const std::string &what) {
		if (n)
			out += fmt::format("{}{} {}", out.empty() ? "" : ", ", n, what);
	};

	add(s.lostWrites, fmt::format("writes past the {} an operation keeps", writesLimit));
	add(s.lostBytes, fmt::format("bytes past the {} an operation keeps", bytesLimit));
	add(s.lostValues, fmt::format("values or windows of a byte written more than {} times in "
				      "one operation", kHist));
	add(s.lostArmed, fmt::format("INT3s armed past the {} the model keeps at once", kArmedMax));
	add(s.lostWindows, "fetch windows that a CPU's ring of 16 was too full to take (kernel "
			   "entries faster than the writer took them)");
	return out;
}

std::string xmcPartialHint(const XmcStats &s)
{
	const BootInfo &bi = bootInfo();
	unsigned int cap = xmcCapacityParam();
	std::string again, out;

	if (cap && s.lostWrites)
		again = fmt::format("without pokelab.xmc_capacity={} (it lowered the writes an "
				    "operation keeps from {})", cap, kWritesMax);
	if (s.lostWindows)
		again += (again.empty() ? "" : " and ") +
			 (bi.oversubscribed
				  ? fmt::format("with --cpus {} (one CPU per PU: with {} CPUs on {} "
						"PUs the writer waited for a PU)",
						std::max(bi.nrPus, 2u), bi.nrCpus, bi.nrPus)
				  : std::string("on a quieter host (the writer waited for its PU)"));
	if (!again.empty())
		out = "for a whole verdict, run it again " + again;
	if ((!cap && s.lostWrites) || s.lostBytes || s.lostValues || s.lostArmed)
		out += std::string(out.empty() ? "" : "; the rest ") +
		       "passed a limit of the model itself, which no option raises (docs/testing.md, "
		       "\"Capacity\")";
	return out;
}

/* On the way down (BUG, an unclaimed INT3, a fatal signal): say what the model had found. */
void xmcDeathNote() noexcept
{
	static const char msg[] =
		"xmc: before this crash, the cross-modifying-code model had reported:\n";
	u64 t0 = clockNs();
	size_t n;
	ssize_t r;

	/*
	 * A crash may race the check of the very write that caused it, or
	 * the checks at the return of the operation it happened in: give
	 * them 200 ms.
	 */
	do {
		n = __atomic_load_n(&firstLen, __ATOMIC_ACQUIRE);
		if (n || (!__atomic_load_n(&busy, __ATOMIC_ACQUIRE) &&
			  !__atomic_load_n(&opActive, __ATOMIC_ACQUIRE)))
			break;
	} while (clockNs() - t0 < 200000000ull);
	n = __atomic_load_n(&firstLen, __ATOMIC_ACQUIRE);
	if (!n) {
		/* what the trapping CPUs found themselves, before the crash, that the writer did not take */
		if (stackPending()) {
			r = write(2, msg, sizeof(msg) - 1);
			(void)r;
			stackNotes();
			xmcNoteReported();
		}
		return;
	}
	r = write(2, msg, sizeof(msg) - 1);
	r = write(2, firstText, n);
	(void)r;
}

int xmc::notedOnTheWayDown;

void xmc::xmcNoteReported() noexcept
{
	__atomic_store_n(&notedOnTheWayDown, 1, __ATOMIC_RELEASE);
}

bool xmcReported() noexcept
{
	return __atomic_load_n(&firstLen, __ATOMIC_ACQUIRE) != 0 ||
	       __atomic_load_n(&notedOnTheWayDown, __ATOMIC_ACQUIRE);
}

XmcStats xmcStats() noexcept
{
	XmcStats s = stats;

	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		s.serialisations += __atomic_load_n(&cpuEvents[cpu].serialCount, __ATOMIC_RELAXED);
		s.entryChecks += __atomic_load_n(&xmcCpus[cpu].entryChecks, __ATOMIC_RELAXED);
		for (const EmuRing &e : emuRings[cpu])
			s.emuSkipped += __atomic_load_n(&e.dropped, __ATOMIC_RELAXED);
		s.lostWindows += __atomic_load_n(&xmcCpus[cpu].freshDropped, __ATOMIC_RELAXED);
	}
	/* stats.lostWindows stays 0: the rings count their own */
	s.lost += s.lostWindows;
	return s;
}

XmcStats operator-(const XmcStats &a, const XmcStats &b) noexcept
{
	XmcStats d;

	d.writes = a.writes - b.writes;
	d.bytes = a.bytes - b.bytes;
	d.ops = a.ops - b.ops;
	d.windows = a.windows - b.windows;
	d.returnChecks = a.returnChecks - b.returnChecks;
	d.entryChecks = a.entryChecks - b.entryChecks;
	d.int3Checks = a.int3Checks - b.int3Checks;
	d.siteChecks = a.siteChecks - b.siteChecks;
	d.emulations = a.emulations - b.emulations;
	d.tableChecks = a.tableChecks - b.tableChecks;
	d.emuSkipped = a.emuSkipped - b.emuSkipped;
	d.serialisations = a.serialisations - b.serialisations;
	d.violations = a.violations - b.violations;
	d.more = a.more - b.more;
	d.lost = a.lost - b.lost;
	d.lostBytes = a.lostBytes - b.lostBytes;
	d.lostWrites = a.lostWrites - b.lostWrites;
	d.lostValues = a.lostValues - b.lostValues;
	d.lostArmed = a.lostArmed - b.lostArmed;
	d.lostWindows = a.lostWindows - b.lostWindows;
	return d;
}

XmcStats &operator+=(XmcStats &a, const XmcStats &b) noexcept
{
	a.writes += b.writes;
	a.bytes += b.bytes;
	a.ops += b.ops;
	a.windows += b.windows;
	a.returnChecks += b.returnChecks;
	a.entryChecks += b.entryChecks;
	a.int3Checks += b.int3Checks;
	a.siteChecks += b.siteChecks;
	a.emulations += b.emulations;
	a.tableChecks += b.tableChecks;
	a.emuSkipped += b.emuSkipped;
	a.serialisations += b.serialisations;
	a.violations += b.violations;
	a.more += b.more;
	a.lost += b.lost;
	a.lostBytes += b.lostBytes;
	a.lostWrites += b.lostWrites;
	a.lostValues += b.lostValues;
	a.lostArmed += b.lostArmed;
	a.lostWindows += b.lostWindows;
	return a;
}

u64 xmcSerialOf(int cpu) noexcept
{
	return serialOf(cpu);
}

unsigned long xmcViolationsOn(int cpu) noexcept
{
	return violationsOn[cpu];
}

std::vector<XmcViolation> xmcViolations()
{
	return violationLog;
}

void xmcSetReporter(void (*fn)(const XmcViolation &v))
{
	reporter = fn;
}

const char *xmcRuleName(XmcRule r)
{
	switch (r) {
	case XmcRule::Torn:
		return "torn fetch";
	case XmcRule::Stale:
		return "stale after return";
	case XmcRule::StaleAtEntry:
		return "stale at kernel entry";
	case XmcRule::Int3Orphaned:
		return "INT3 without its handler";
	case XmcRule::Int3Unpublished:
		return "INT3 before its refs";
	case XmcRule::StrayWrite:
		return "write outside the batch";
	case XmcRule::Unfinished:
		return "site left unfinished";
	case XmcRule::Int3Misemulated:
		return "INT3 emulated wrongly";
	case XmcRule::StaleTlb:
		return "stale TLB";
	case XmcRule::WrongSite:
		return "site holds the wrong instruction";
	case XmcRule::MissingFence:
		return "no fence between a store and its load";
	case XmcRule::Int3RefsHeld:
		return "INT3 refs held past the drain";
	case XmcRule::Int3Declined:
		return "INT3 declined on an armed site";
	case XmcRule::CallReturnedEarly:
		return "waited call returned early";
	}
	return "?";
}

} /* namespace kshim */
