// SPDX-License-Identifier: GPL-2.0-only
/*
 * The cross-modifying-code model's report lines: a violation with its CPU,
 * site, phase and bytes (each decoded with Zydis), and the verdict.
 */
#include <string>

#include <fmt/format.h>

#include <kernel_shim/disasm.h>
#include <kernel_shim/plural.h>
#include <kernel_shim/symbols.h>
#include <kernel_shim/xmc.h>

namespace kshim {

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

std::string xmcFormat(const XmcViolation &v)
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
	}
	if (!v.len)
		return s + "\n";
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
	if (!v.detail.empty())
		s += "  " + v.detail + "\n";
	return s;
}

std::string xmcVerdict(const XmcStats &s)
{
	std::string what = fmt::format(
		"model of cross-modifying code (SDM Vol. 3A 8.1.3): {} ({} bytes) in {}; checked {}, "
		"{} at returns, {}, {}, {} at returns, {}",
		nOf(s.writes, "text write"), s.bytes, nOf(s.ops, "operation"),
		nOf(s.windows, "fetch window"), nOf(s.returnChecks, "CPU"),
		nOf(s.entryChecks, "kernel entry", "kernel entries"),
		nOf(s.int3Checks, "INT3 refs check"), nOf(s.siteChecks, "site"),
		nOf(s.emulations, "INT3 emulation"));

	if (s.emuSkipped)
		what += fmt::format(" ({} more not sampled)", s.emuSkipped);
	what += fmt::format("; {} seen", nOf(s.serialisations, "serialisation"));
	if (s.lost)
		what += fmt::format("; {} past the model's capacity",
				    nOf(s.lost, "window or value", "windows or values"));
	if (!xmcEnabled)
		return "xmc: the cross-modifying-code model is off (pokelab.xmc=0) -> NOTHING CHECKED";
	if (s.violations)
		return fmt::format("xmc: {}; {}{} -> FAIL", what, nOf(s.violations, "violation"),
				   s.more ? fmt::format(" (and {} of the same CPUs and operations)",
							nOf(s.more, "more window", "more windows"))
					  : "");
	if (!s.writes)
		return fmt::format("xmc: no text written, the cross-modifying-code model had nothing "
				   "to check -> NOTHING CHECKED");
	return fmt::format("xmc: {}; 0 violations -> PASS", what);
}

} /* namespace kshim */
