// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab run isolation: the report (isolation.h).
 */
#include <cstdio>
#include <map>
#include <string>

#include <fmt/format.h>

#include "isolation.h"
#include "scenario.h"

namespace pokelab::scenario {

namespace {

unsigned long get(const std::map<std::string, unsigned long> &m, const std::string &k)
{
	auto it = m.find(k);

	return it == m.end() ? 0 : it->second;
}

std::string us(unsigned long ns)
{
	return fmt::format("{:.1f}", ns / 1000.0);
}

} /* namespace */

int isolationReport(const VariantResult &off, const VariantResult &v7, const IsolationRun &run)
{
	const std::string gscfi = "callback=generic_smp_call_function_single_interrupt+0x0";
	unsigned long syncOff = get(off.csd, "func=do_sync_core");
	unsigned long syncV7 = get(v7.csd, "func=do_sync_core");
	unsigned long allOff = get(off.csd, "func=do_flush_tlb_all");
	unsigned long allV7 = get(v7.csd, "func=do_flush_tlb_all");
	unsigned long rngOff = get(off.csd, "func=do_kernel_range_flush");
	unsigned long rngV7 = get(v7.csd, "func=do_kernel_range_flush");
	bool syncClaim = syncOff > 0 && syncV7 == 0;
	/*
	 * Every TLB flush of the load is mm/vmalloc.c's
	 * flush_tlb_kernel_range_deferrable() (the vmap purge on the kworker,
	 * vm_reset_perms()): v7-tlbi (28-31) and v8 gate it on
	 * kernel_cr3_loaded, so no IPI at all reaches an isolated CPU in its
	 * user loop; v7 keeps both callbacks.
	 */
	bool tlbi = v7.policy == "v7-tlbi" || v7.policy == "v8";
	bool tlbClaim = tlbi ? allOff > 0 && allV7 == 0 && rngOff > 0 && rngV7 == 0
			     : allOff > 0 && allV7 > 0 && rngOff > 0 && rngV7 > 0;
	bool clean = off.violations == 0 && v7.violations == 0 && off.dropped == 0 &&
		     v7.dropped == 0 && off.ops.badRuns == 0 && v7.ops.badRuns == 0 &&
		     off.ops.allocFail == 0 && v7.ops.allocFail == 0;
	unsigned long sumCsdOff = 0, sumCsdV7 = 0, sumIpiOff = 0, sumIpiV7 = 0;
	bool consistent;

	for (const auto &[k, v] : off.csd)
		sumCsdOff += v;
	for (const auto &[k, v] : v7.csd)
		sumCsdV7 += v;
	for (const auto &[k, v] : off.ipi)
		sumIpiOff += v;
	for (const auto &[k, v] : v7.ipi)
		sumIpiV7 += v;
	/* The pipelines must count what the snapshot holds under the same filter. */
	consistent = sumCsdOff == off.csdEvents && sumCsdV7 == v7.csdEvents &&
		     sumIpiOff == off.ipiEvents && sumIpiV7 == v7.ipiEvents;
	/* v7-tlbi and v8: nothing at all reaches the isolated CPUs */
	if (tlbi)
		tlbClaim = tlbClaim && sumCsdV7 == 0 && sumIpiV7 == 0;

	std::string s = fmt::format("\n== case 003: IPIs and CSDs to isolated CPUs, "
				    "ct_defer=off vs {} ==\n{}\n{}\n",
				    v7.policy, off.machine, v7.machine);
	s += fmt::format("pokelab: {:.1f} s per variant, {} CPUs, isolated CPUs in a user loop "
			 "with a system call every {} ms;\n"
			 "kernel: 3 h of rteval (kernel build + hackbench) on a Xeon E5-2699, "
			 "v6.14 vs v6.14 + v5.\n"
			 "Census of the trace filtered to the isolated CPUs (kernel: v6.14 / +v5; "
			 "pokelab: ct_defer=off / {}):\n\n",
			 run.seconds, run.cpus, run.syscallMs, v7.policy);

	/*
	 * The work each side did: its housekeeping operations. Counts are shown
	 * with their rate per 1000 operations beside them, and two sides whose
	 * work is more than 2x apart (one held up by the host) are not compared.
	 */
	unsigned long workOff = off.ops.flips + off.ops.moduleLoads + off.ops.jits + off.ops.exits;
	unsigned long workV7 = v7.ops.flips + v7.ops.moduleLoads + v7.ops.jits + v7.ops.exits;
	bool comparable = workOff && workV7 && workOff <= 2 * workV7 && workV7 <= 2 * workOff;
	std::string notCompared = fmt::format("not compared: off did {} housekeeping operations, "
					      "{} did {}, more than 2x apart", workOff,
					      v7.policy, workV7);
	auto pair = [&](unsigned long a, unsigned long b) {
		return fmt::format("{} / {} ({:.1f} / {:.1f} per 1k ops)", a, b,
				   workOff ? a * 1000.0 / workOff : 0.0,
				   workV7 ? b * 1000.0 / workV7 : 0.0);
	};
	std::vector<std::vector<std::string>> rows = {
		{"IPI callback generic_smp_call_function_single_interrupt", "93 / 86",
		 pair(get(off.ipi, gscfi), get(v7.ipi, gscfi)),
		 tlbi ? fmt::format("none with {}: {}", v7.policy, get(v7.ipi, gscfi) ? "NO" : "yes")
		      : "TLB-flush IPIs remain with v7"},
		{"IPI callback nohz_full_kick_func", "22 / 41", "- / -",
		 "not modelled: no tick, no nohz kicks"},
		{"csd_queue do_flush_tlb_all", "1456 / 1378", pair(allOff, allV7),
		 tlbi ? fmt::format("vmalloc's flushes of large ranges, gated: > 0 -> 0: "
				    "{}", allOff && !allV7 ? "yes" : "NO")
		      : fmt::format("present in both: {}", allOff && allV7 ? "yes" : "NO")},
		{"csd_queue do_sync_core", "78 / 0", pair(syncOff, syncV7),
		 fmt::format("> 0 -> 0: {}", syncClaim ? "yes" : "NO")},
		{"csd_queue nohz_full_kick_func", "33 / 33", "- / -", "not modelled"},
		{"csd_queue do_kernel_range_flush", "26 / 0", pair(rngOff, rngV7),
		 tlbi ? fmt::format("v7 28-31 gate it on kernel_cr3_loaded: > 0 -> 0: {}",
				    rngOff && !rngV7 ? "yes" : "NO")
		      : fmt::format("v5 deferred it, v7 does not; present in both: {}",
				    rngOff && rngV7 ? "yes" : "NO")},
	};
	std::map<std::string, int> shown = {{"func=do_sync_core", 1},
					    {"func=do_flush_tlb_all", 1},
					    {"func=do_kernel_range_flush", 1}};
	std::map<std::string, int> extra;

	for (const auto &[k, v] : off.csd)
		if (!shown.count(k))
			extra[k] = 1;
	for (const auto &[k, v] : v7.csd)
		if (!shown.count(k))
			extra[k] = 1;
	for (const auto &[k, v] : extra)
		rows.push_back({"csd_queue " + k.substr(5), "-",
				pair(get(off.csd, k), get(v7.csd, k)), "other"});
	for (const auto &[k, v] : off.ipi)
		if (k != gscfi)
			rows.push_back({"IPI " + k, "-", pair(v, get(v7.ipi, k)), "other"});
	if (!comparable)
		for (auto &r : rows)
			if (r[3] != "other" && r[3].rfind("not modelled", 0))
				r[3] = "not compared (work > 2x apart)";
	s += claimTable(rows);

	/*
	 * The census of each trace: as the commands that give it where the
	 * traces are kept (--trace-dir), else as what it counts (the files
	 * were temporary: no command to run on them).
	 */
	for (const VariantResult *v : {&off, &v7}) {
		std::string file = run.traceDir + "/trace-" + v->policy + ".txt";

		if (run.traceDir.empty())
			s += fmt::format("{}csd_queue_cpu events by func, ct_defer={} (--trace-dir "
					 "DIR keeps its trace):\n{}ipi callbacks by function, "
					 "ct_defer={}:\n{}", v == &off ? "\n" : "", v->policy,
					 v->csdRaw, v->policy, v->ipiRaw);
		else
			s += fmt::format("{}$ grep csd_queue {} | awk '{{ print $(NF-1) }}' | sort "
					 "| uniq -c\n{}$ grep callback {} | awk '{{ print $(NF) "
					 "}}' | sort | uniq "
					 "-c\n{}", v == &off ? "\n" : "", file, v->csdRaw,
					 file, v->ipiRaw);
	}

	s += fmt::format("\nLoad on the housekeeping CPUs (off / {}): ", v7.policy);
	s += fmt::format("{} / {} static-key flips (164 sites), {} / {} module loads, {} / {} "
			 "BPF JIT images, {} / {} process exits, {} / {} hackbench messages; "
			 "module text allocation failures {} / {}, JIT'd or relocated code "
			 "returning a wrong value {} / {}\n",
			 off.ops.flips, v7.ops.flips, off.ops.moduleLoads, v7.ops.moduleLoads,
			 off.ops.jits, v7.ops.jits, off.ops.exits, v7.ops.exits, off.messages,
			 v7.messages, off.ops.allocFail, v7.ops.allocFail, off.ops.badRuns,
			 v7.ops.badRuns);
	s += fmt::format("Where the TLB flushes came from (off / {}): {} / {} vmap purges, {} / {} "
			 "of them drain_vmap_work on CPU 0's kworker (free_vmap_area_noflush() "
			 "past lazy_max_pages), the rest vm_reset_perms() in module unloads; all "
			 "through flush_tlb_kernel_range_deferrable()\n",
			 v7.policy, off.ops.purges, v7.ops.purges, off.ops.drains, v7.ops.drains);

	s += "\nosnoise-style interference on the isolated CPUs (durations in us; an IPI's time "
	     "includes a deferred flush its entry ran):\n";
	s += fmt::format("{:>8} {:>4} {:>9} {:>6} {:>10} {:>8} {:>14} {:>10} {:>8}\n", "ct_defer",
			 "CPU", "syscalls", "IPIs", "IPI total", "IPI max", "flushes@entry",
			 "flush tot", "flush max");
	for (const VariantResult *v : {&off, &v7})
		for (const IsoCpu &c : v->iso)
			s += fmt::format("{:>8} {:>4} {:>9} {:>6} {:>10} {:>8} {:>14} {:>10} "
					 "{:>8}\n", v->policy, c.cpu, c.syscalls, c.ipis,
					 us(c.ipiNs),
					 us(c.ipiMaxNs), c.flushes, us(c.flushNs),
					 us(c.flushMaxNs));

	s += fmt::format("\ncross-modifying-code model, ct_defer=off: {}\n", off.xmcVerdict);
	s += fmt::format("cross-modifying-code model, ct_defer={}: {}\n", v7.policy, v7.xmcVerdict);
	for (const VariantResult *v : {&off, &v7})
		for (const std::string &l : v->violationLines)
			s += l;
	s += fmt::format("sync rounds: {} / {}; trace events dropped: {} / {}; pipelines match the "
			 "snapshot: {}\n",
			 off.syncRounds, v7.syncRounds, off.dropped, v7.dropped,
			 consistent ? "yes" : "NO");
	s += "Not shown here: the 3 h scale (counts grow with --seconds), nohz_full kicks (no "
	     "tick), and absolute interference: the isolated CPUs share 2 PUs with the "
	     "housekeeping ones, so a duration includes any host preemption of the CPU thread.\n";
	s += fmt::format("probe (untraced, after the load): isolated CPU {} inside a system call "
			 "while {} flips patched: {} IPIs reached it (off / {}: {} / {}); model "
			 "violations during the probe {} / {}\n",
			 v7.probeCpu, v7.probeFlips, v7.probeIpis, v7.policy, off.probeIpis,
			 v7.probeIpis, off.probeViolations, v7.probeViolations);
	s += fmt::format("idle probe (untraced, labelled apart from the census): isolated CPU {} "
			 "idle, on the kernel CR3 (kernel_cr3_loaded stays 1), while 2 flips "
			 "patched and a kernel range was flushed; IPIs that reached it: {} (off / {}: "
			 "{} / {}), of which do_sync_core {} / {} and TLB flushes {} / {}; model "
			 "violations {} / {}{}\n",
			 v7.probeCpu, v7.idleIpis, v7.policy, off.idleIpis, v7.idleIpis,
			 off.idleSyncIpis, v7.idleSyncIpis, off.idleTlbIpis, v7.idleTlbIpis,
			 off.idleViolations, v7.idleViolations,
			 v7.policy == "v8" && v7.idleSyncIpis && v7.idleTlbIpis
				 ? " (v8: an idle isolated CPU gets IPIs again)"
				 : "");
	bool pass = syncClaim && tlbClaim && clean && consistent && off.idleViolations == 0 &&
		    v7.idleViolations == 0 && comparable;

	s += fmt::format("result: {}\n", run.interrupted ? "interrupted: the counts above are of "
							       "the operations made, no claim"
					  : !comparable ? notCompared + "; run again on a quiet machine"
					  : !pass ? "claim NOT reproduced"
					  : tlbi ? "do_sync_core, do_flush_tlb_all and "
						   "do_kernel_range_flush > 0 -> 0, no IPI reaches an "
						   "isolated CPU: claim reproduced"
						 : "do_sync_core > 0 -> 0, TLB flushes kept: claim "
						   "reproduced");
	fmt::print("{}", s);
	std::fflush(stdout);
	return pass ? 0 : 1;
}

} /* namespace pokelab::scenario */
