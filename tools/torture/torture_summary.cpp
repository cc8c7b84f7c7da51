// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab torture: the end of a run. The summary (counts, the model's
 * verdict, NMIs, the module writer, the knobs, the console), the verdict
 * line (SUCCESS, FAILURE or INTERRUPTED), the timeline and the result
 * record, for a run that ended in order and for one ended without its
 * wedged CPUs (torture_end.h).
 */
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <asm/nmi.h>
#include <kernel_shim/boot.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/plural.h>
#include <kernel_shim/port_map.h>
#include <kernel_shim/trace_record.h>
#include <kernel_shim/watchdog.h>
#include <kernel_shim/xmc.h>
#include <kernel_shim/xmc_verdict.h>
#include <linux/bug.h>

#include "stop.h"
#include "torture_end.h"
#include "torture_results.h"
#include "torture_run.h"
#include "torture_text.h"
#include "torture/torture_module.h"
#include "timeline/timeline.h"
#include "wrote.h"

namespace pokelab::torture {

/*
 * The run's summary, verdict and timeline: by the main thread once every
 * CPU returned (End::InOrder), or by torture_end.cpp's thread or the stop
 * watcher with some CPU wedged (the others told to stop; the wedged ones
 * left behind: the caller _exit()s with the status returned).
 */
int finishRun(End end, int sig, const std::vector<std::string> &modBad)
{
	bool forced = end != End::InOrder;
	unsigned int n = (unsigned int)work.size();

	stopAll.store(true);
	if (forced) {
		std::string left;

		for (unsigned int cpu = 0; cpu < n; cpu++)
			if (!work[cpu].done.load(std::memory_order_acquire))
				left += fmt::format("{}CPU#{}", left.empty() ? "" : ", ", cpu);
		std::string why =
			end == End::Lockup ? "the CPUs did not stop within 1 s of the lockup report"
			: end == End::Interrupted
				? fmt::format("{} and the CPUs did not stop within 1 s",
					      pokelab::stopSignalName())
				: fmt::format("the run outlived its --duration of {} s by {:.0f} s",
					      opts.duration, endBoundNs() / 1e9);

		fmt::print("torture: {}: ending the run without the CPUs that did not return "
			   "({})\n", why, left.empty() ? "none" : left);
		fmt::print("{}", kshim::watchdogCpuStates(0));
	}
	bool timelineWritten = false;

	if (timeline) {
		std::string err;

		kshim::traceStop();
		for (const kshim::XmcViolation &v : kshim::xmcViolations()) {
			std::string t = kshim::xmcFormat(v);

			pokelab::timelineSinkMark(timeline.get(),
						  {v.ts, v.cpu, t.substr(0, t.find('\n'))});
		}
		if (!timeline->finish(kshim::traceRecorderStop(), &err))
			fmt::print(stderr, "pokelab: --timeline: {}\n", err);
		else
			timelineWritten = true;	/* named after the verdict (docs/cli.md) */
	}

	double secs = (kshim::clockNs() - runT0) / 1e9;
	kshim::XmcStats x = kshim::xmcStats();
	bool lockup = endLockedUp();
	std::vector<std::string> bad = violationsSeen.load() || forced || lockup
					       ? std::vector<std::string>{} : checkKnobs();

	/*
	 * As rcutorture's console scan: any WARNING: or BUG: report (a WARN(),
	 * a might-sleep check) fails the run, whatever the model says.
	 */
	unsigned long warns = kshim::warnCount() - warnsAtBoot;

	bad.insert(bad.end(), modBad.begin(), modBad.end());
	bool success = x.violations == 0 && bad.empty() && warns == 0 && x.writes > 0 && !lockup &&
		       !forced;
	unsigned long decisions = 0, shown = std::min(violationsSeen.load(), opts.shown);
	u64 digest = 0xcbf29ce484222325ull;
	bool complete = !forced;

	for (unsigned int cpu = 0; cpu < n; cpu++) {
		decisions += work[cpu].decisions;
		digest = (digest ^ work[cpu].digest) * 0x100000001b3ull;
		complete &= work[cpu].decisions == opts.ops;
	}
	if (violationsSeen.load() > shown)
		fmt::print("({} not shown; --violations all prints every one)\n",
			   kshim::nOf(violationsSeen.load() - shown, "more violation"));
	fmt::print("torture: {:.1f} s: {}\n", secs, counters());
	fmt::print("{}\n", kshim::xmcVerdict(x));
	fmt::print("throughput: {:.0f} text writes/s, {:.0f} model events/s, {} decisions\n",
		   x.writes / secs, x.events() / secs, decisions);
	{
		unsigned long nmis = 0, inInt3 = 0, inIpi = 0;

		for (unsigned int cpu = 0; cpu < n; cpu++) {
			nmis += kshim::nmiCount(cpu);
			inInt3 += nmisInInt3[cpu];
			inIpi += nmisInIpi[cpu];
		}
		fmt::print("nmi: {}, {} inside an INT3 handler, {} inside an IPI handler\n",
			   kshim::nOf(nmis, "NMI"), inInt3, inIpi);
	}
	if (moduleWriterActive())
		fmt::print("{}\n", moduleWriterSummary());
	for (const std::string &b : bad)
		fmt::print("knob: {}\n", b);
	if (warns)
		fmt::print("console: {} (the WARNING: and BUG: lines above)\n",
			   kshim::nOf(warns, "WARN/BUG report"));
	if (forced || lockup) {
		fmt::print("knobs: not checked: {}\n", forced ? "the run did not end in order"
								 : "a lockup was reported");
	} else if (!violationsSeen.load()) {
		std::string s;

		for (int k = 0; k < KnobNr; k++)
			s += fmt::format("{}{} {}", k ? ", " : "", knobName((Knob)k),
					 knobWrites((Knob)k));
		fmt::print("knobs: {} in the state their last writer asked for ({} writes: {})\n",
			   bad.empty() ? "all" : "NOT all", "per knob", s);
	}
	if (opts.ops && complete)
		fmt::print("decision digest: {:016x} ({} decisions per CPU, {} CPUs, seed {})\n",
			   digest, opts.ops, n, seedUsed);
	else if (opts.ops)
		fmt::print("decision digest: none: the run stopped early, after {} of {} decisions "
			   "({} per CPU)\n", decisions, (unsigned long)n * opts.ops, opts.ops);
	/* the kernel functions the violations name, where the port keeps each: for the verdict */
	std::vector<std::string> named;
	std::string where;

	for (const kshim::XmcViolation &v : kshim::xmcViolations()) {
		const char *at = success ? nullptr : kshim::portWhere(v.op);

		if (!at || std::find(named.begin(), named.end(), v.op) != named.end())
			continue;
		named.push_back(v.op);
		where += fmt::format("{}{}() at {}", where.empty() ? "; in " : ", ", v.op, at);
	}
	bool interrupted = pokelab::stopRequested();
	std::string why = x.violations ? kshim::nOf(x.violations, "violation") : "";

	if (lockup)
		why += (why.empty() ? "" : " and ") + endLockupTitle();
	else if (end == End::Overrun)
		why = (why.empty() ? "" : why + " and ") +
		      fmt::format("the run did not end within {:.0f} s of its --duration (CPUs "
				  "wedged with no lockup reported)", endBoundNs() / 1e9);
	/*
	 * One verdict line (docs/cli.md). A run cut short is no verdict of
	 * success: what it found stays a FAILURE, what it did not is
	 * INTERRUPTED, with the counts above; one that had failed before the
	 * signal says both on the INTERRUPTED line, which scripts that stop a
	 * run grep for.
	 */
	bool failed = !success && (!why.empty() || !bad.empty() || warns || !interrupted);
	std::string reason = !failed ? ""
			     : !why.empty() ? why
			     : !bad.empty() ? "a knob did not end as asked"
			     : warns ? kshim::nOf(warns, "WARN/BUG report") + " on the console"
			     : !kshim::xmcEnabled
				     ? "NOTHING CHECKED: the model is off (pokelab.xmc=0)"
				     : "NOTHING CHECKED: no text was written";

	if (success && !interrupted && x.lost)
		fmt::print("torture: SUCCESS, PARTIAL (seed {}): the model judged all but {} past "
			   "its capacity: {}; {}\n", seedUsed, kshim::nOf(x.lost, "window or value",
								       "windows or values"),
			   kshim::xmcLostCauses(x), kshim::xmcPartialHint(x));
	else if (success && !interrupted)
		fmt::print("torture: SUCCESS (seed {})\n", seedUsed);
	else if (!interrupted && !kshim::xmcEnabled && why.empty() && bad.empty() && !warns)
		/* nothing went wrong that anything saw, and the judge was off: no verdict */
		fmt::print("torture: NOTHING CHECKED (seed {}): the model is off (pokelab.xmc=0)\n",
			   seedUsed);
	else if (!interrupted)
		fmt::print("torture: FAILURE (seed {}): {}{}\n", seedUsed, reason, where);
	else if (failed)
		fmt::print("torture: INTERRUPTED after {:.1f} s ({}), seed {}: FAILURE in what was "
			   "run: {}{}; no verdict on what was not\n", secs,
			   pokelab::stopSignalName(), seedUsed, reason, where);
	else
		fmt::print("torture: INTERRUPTED after {:.1f} s ({}), seed {}: no verdict on what "
			   "was not run; {}{} so far\n", secs, pokelab::stopSignalName(), seedUsed,
			   kshim::nOf(x.violations, "violation"), lockup ? " and a lockup" : "");
	if (timelineWritten)
		sayWrote(opts.timeline, "--timeline");
	std::fflush(stdout);
	std::fflush(stderr);
	(void)sig;
	/* the record: rendered while the counts are there, appended once the machine is down */
	resultsEnd(failed ? "FAILURE" : interrupted ? "INTERRUPTED" : "SUCCESS", reason,
		   !failed ? "" : !bad.empty() ? "knob: " + bad[0]
		   : warns && !x.violations ? fmt::format("console: {}", kshim::nOf(warns,
									     "WARN/BUG report"))
					    : reason,
		   decisions, warns, secs,
		   interrupted ? pokelab::stopExitStatus() : success ? 0 : 1);
	if (interrupted)
		return pokelab::stopExitStatus();
	return success ? 0 : 1;
}

/* torture_end.h's forced end: the summary without the wedged CPUs, then _exit(). */
int finishForced(End end, int sig)
{
	int status = finishRun(end, sig, {});
	std::string err;

	/* the CPUs left behind: the record is appended now, the machine never comes down */
	if (resultsWanted() && !resultsWrite(&err)) {
		fmt::print(stderr, "pokelab: {}\n", err);
		std::fflush(stderr);
	}
	return status;
}

} /* namespace pokelab::torture */
