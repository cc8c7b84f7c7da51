// SPDX-License-Identifier: GPL-2.0-only
/*
 * The cross-modifying-code model's report lines: a violation with its CPU,
 * site, phase and bytes (each decoded with Zydis), and the verdict.
 */
#include <string>

#include <fmt/format.h>

#include <kernel_shim/disasm.h>
#include <kernel_shim/trace.h>
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
				 traceSymbol(v.ip, true), v.op ? v.op : "an operation");
		break;
	case XmcRule::Int3Orphaned:
		s += fmt::format(": {} drained its INT3 refs while it could still fetch an INT3 "
				 "that the batch had removed", v.op);
		break;
	case XmcRule::Int3Unpublished:
		s += fmt::format(": {} wrote an INT3 it may fetch before publishing its refs",
				 v.op);
		break;
	}
	if (!v.len)
		return s + "\n";
	s += "\n  possible bytes:";
	for (unsigned int i = 0; i < v.len; i++) {
		std::string alt;

		for (unsigned int k = 0; k < v.nposs[i]; k++)
			alt += fmt::format("{}{:02x}", k ? "|" : "", v.poss[i][k]);
		s += " [" + alt + "]";
	}
	s += fmt::format("\n  old:  {:<44} {}\n  new:  {:<44} {}\n", hex(v.oldBytes, v.len),
			 decode(v.oldBytes, v.len, v.site), hex(v.newBytes, v.len),
			 decode(v.newBytes, v.len, v.site));
	if (v.tornLen)
		s += fmt::format("  torn: {:<44} {}\n", hex(v.tornBytes, v.tornLen),
				 decode(v.tornBytes, v.tornLen, v.site));
	return s;
}

std::string xmcVerdict(const XmcStats &s)
{
	std::string what = fmt::format(
		"model of cross-modifying code (SDM Vol. 3A 8.1.3): {} text writes ({} bytes) in {} "
		"operations; checked {} fetch windows, {} CPUs at "
		"returns, {} kernel entries, {} INT3 refs checks; {} serialisations seen",
		s.writes, s.bytes, s.ops, s.windows, s.returnChecks, s.entryChecks, s.int3Checks,
		s.serialisations);

	if (s.lost)
		what += fmt::format("; {} windows or values past the model's capacity", s.lost);
	if (!xmcEnabled)
		return "xmc: the cross-modifying-code model is off (pokelab.xmc=0) -> NOTHING CHECKED";
	if (s.violations)
		return fmt::format("xmc: {}; {} violations{} -> FAIL", what, s.violations,
				   s.more ? fmt::format(" (and {} more windows of the same CPUs and "
							"operations)", s.more)
					  : "");
	if (!s.writes)
		return fmt::format("xmc: no text written, the cross-modifying-code model had nothing "
				   "to check -> NOTHING CHECKED");
	return fmt::format("xmc: {}; 0 violations -> PASS", what);
}

} /* namespace kshim */
