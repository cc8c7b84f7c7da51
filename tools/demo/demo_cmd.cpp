// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab demo: the command (options, boot, run, report); the runner itself
 * is tools/demo/bpf_stats.cpp.
 *
 *	pokelab demo [--cpus N] [--flips N] [--trace FILE] [--trace-json FILE]
 *		     [--trace-cpus LIST] [--refs M] [--sync B] [--nohz-full LIST]
 *		     [--ct-defer P] [--isolated-in-kernel] [BOOT-PARAM ...]
 */
#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <kernel_shim/boot.h>
#include <kernel_shim/boot_cpus.h>
#include <kernel_shim/machine.h>
#include <kernel_shim/sigsafe.h>
#include <linux/bug.h>

#include "command.h"
#include "boot_twin.h"
#include "options.h"
#include "stop.h"
#include "timeline/timeline.h"
#include "wrote.h"
#include <workloads/bpf_stats.h>
#include <kernel_shim/trace_output.h>
#include <kernel_shim/trace_record.h>

namespace {

/* The machine did not boot (the model's panic at boot, its reports above): the demo's verdict. */
void demoPanicNotifier() noexcept
{
	std::fflush(stdout);
	kshim::SigSafeBuf().str("verdict: FAIL (the machine did not boot: the model reported a "
				"fault at boot, above)\n").emit(1);
}

using pokelab::kExitUsage;
using pokelab::wholeNumber;

int usageError(const std::string &msg)
{
	fmt::print(stderr, "pokelab: {}\n", msg);
	return kExitUsage;
}

std::string joinParams(const std::vector<std::string> &params)
{
	std::string s;

	for (const std::string &p : params)
		s += (s.empty() ? "" : " ") + p;
	return s;
}

struct DemoOptions {
	unsigned int cpus = 0;	/* 0 = the machine's default */
	unsigned int flips = 20;
	std::vector<std::string> params;
	std::vector<std::string> traceFiles;	/* --trace: trace-cmd report text or trace.dat */
	std::string traceFormat;	/* --trace-format: text, dat, "" by extension */
	std::string traceJson;		/* --trace-json: Chrome trace-event JSON */
	std::string traceCpus;		/* --trace-cpus: CPU list filter */
	std::string refs;		/* --refs: pokelab.refs= */
	std::string sync;		/* --sync: pokelab.sync= */
	std::string nohzFull;		/* --nohz-full: nohz_full= */
	std::string ctDefer;		/* --ct-defer: pokelab.ct_defer= */
	bool isolatedInKernel = false;	/* --isolated-in-kernel */
	bool nohzFullSet = false;
	bool traceJsonSet = false;
	bool traceCpusSet = false;
	std::string timeline;		/* --timeline: an SVG timeline of the run */
	bool timelineSet = false;
	double timelineWindow = 10;	/* --timeline-window: its last seconds */
};

int runDemo(const DemoOptions &o)
{
	std::string cmdline = joinParams(o.params);
	std::string err;
	kshim::TraceFilter filter;
	/* every output: its option, file and format */
	struct Output {
		const char *opt;
		std::string path;
		kshim::TraceFormat fmt;
	};
	std::vector<Output> outs;

	for (const std::string &f : o.traceFiles) {
		kshim::TraceFormat fm;

		if (f.empty())
			return usageError("--trace \"\": empty file name; expected --trace FILE");
		if (!kshim::traceFormatFor(f, o.traceFormat, &fm, &err))
			return usageError(err);
		outs.push_back({"--trace", f, fm});
	}
	if (o.traceJsonSet && o.traceJson.empty())
		return usageError("--trace-json \"\": empty file name; expected --trace-json FILE");
	if (!o.traceJson.empty())
		outs.push_back({"--trace-json", o.traceJson, kshim::TraceFormat::Json});
	bool tracing = !outs.empty() || !o.timeline.empty();
	if (o.traceCpusSet && !tracing)
		return usageError(fmt::format("--trace-cpus {}: filters a trace, but no --trace or "
					      "--trace-json was given", o.traceCpus));
	if (!o.traceFormat.empty() && o.traceFiles.empty())
		return usageError(fmt::format("--trace-format {}: sets the format of --trace FILE, "
					      "but no --trace was given", o.traceFormat));
	for (size_t i = 0; i < outs.size(); i++)
		for (size_t j = i + 1; j < outs.size(); j++)
			if (kshim::sameOutput(outs[i].path, outs[j].path))
				return usageError(fmt::format("{} '{}' and {} '{}' are the same "
							      "file; give two files", outs[i].opt,
							      outs[i].path, outs[j].opt,
							      outs[j].path));
	for (const Output &out : outs)
		if (!o.timeline.empty() && kshim::sameOutput(out.path, o.timeline))
			return usageError(fmt::format("{} '{}' and --timeline '{}' are the same file; "
						      "give two files", out.opt, out.path,
						      o.timeline));
	if (o.nohzFullSet && o.nohzFull.empty())
		return usageError("--nohz-full: empty CPU list; expected e.g. --nohz-full 1-3,5");

	/* CPUs beyond the machine's (--cpus, else nr_cpus=, else the PUs'), before the boot line */
	if (o.traceCpusSet) {
		unsigned int nr = o.cpus ? o.cpus : kshim::bootNrCpus(cmdline);

		if (!kshim::parseTraceCpus(o.traceCpus, nr, &filter, &err))
			return usageError(err);
	}
	for (const Output &out : outs)
		if (!kshim::checkWritable(out.path, &err))
			return usageError(fmt::format("{} {}", out.opt, err));
	if (o.timelineSet && o.timeline.empty())
		return usageError("--timeline \"\": empty file name; expected --timeline FILE.svg");
	if (!o.timeline.empty() && !kshim::checkWritable(o.timeline, &err))
		return usageError("--timeline " + err);
	/* an option and its boot parameter, both given: neither silently wins */
	for (const auto &[opt, val, key] :
	     {std::tuple<const char *, std::string, const char *>{"--cpus", o.cpus ?
								   std::to_string(o.cpus) : "",
								   "nr_cpus"},
	      {"--refs", o.refs, "pokelab.refs"}, {"--sync", o.sync, "pokelab.sync"},
	      {"--nohz-full", o.nohzFull, "nohz_full"},
	      {"--ct-defer", o.ctDefer, "pokelab.ct_defer"}}) {
		err = pokelab::bootTwinConflict(o.params, opt, val, key);
		if (!err.empty())
			return usageError(err);
	}
	if (o.cpus)
		cmdline += fmt::format(" nr_cpus={}", o.cpus);
	if (!o.refs.empty())
		cmdline += " pokelab.refs=" + o.refs;
	if (!o.sync.empty())
		cmdline += " pokelab.sync=" + o.sync;
	if (!o.nohzFull.empty())
		cmdline += " nohz_full=" + o.nohzFull;
	if (!o.ctDefer.empty())
		cmdline += " pokelab.ct_defer=" + o.ctDefer;
	kshim::addPanicNotifier(demoPanicNotifier);
	if (kshim::boot(cmdline, &err, true))
		return usageError(pokelab::inOptionWords(err, {
			{"--cpus", o.cpus ? std::to_string(o.cpus) : "", "nr_cpus"},
			{"--refs", o.refs, "pokelab.refs"}, {"--sync", o.sync, "pokelab.sync"},
			{"--nohz-full", o.nohzFull, "nohz_full"},
			{"--ct-defer", o.ctDefer, "pokelab.ct_defer"}}));
	if (nr_cpu_ids < 2) {
		kshim::shutdown();
		return usageError(fmt::format("nr_cpus={}: the demo needs at least 2 CPUs (CPU 0 "
					      "patches, the others run the sites); expected "
					      "nr_cpus=2..512", nr_cpu_ids));
	}
	fmt::print(stderr, "{}\n", kshim::smpBootLine());
	if (o.traceCpusSet && !kshim::parseTraceCpus(o.traceCpus, nr_cpu_ids, &filter, &err)) {
		kshim::shutdown();
		return usageError(err);
	}

	fmt::print("{}\n", kshim::machineLine());
	{
		struct cpumask hot;

		cpumask_setall(&hot);
		__cpumask_clear_cpu(0, &hot);
		cpumask_andnot(&hot, &hot, kshim::nohzFullMask());
		fmt::print("demo: {} bpf_prog_run() sites of bpf_stats_enabled_key, run by {}; CPU 0 "
			   "flips kernel.bpf_stats_enabled {} time{}\n",
			   pokelab::kNrBpfSites,
			   cpumask_empty(&hot)
				   ? std::string("no CPU (every CPU but 0 is isolated; the stale-call "
						 "check has nothing to check)")
				   : (cpumask_weight(&hot) == 1 ? "CPU " : "CPUs ") +
					 kshim::cpumaskPrintList(&hot),
			   o.flips, o.flips == 1 ? "" : "s");
		/* every policy but off changes only isolated CPUs (as torture warns) */
		if (cpumask_empty(kshim::nohzFullMask()) && !o.ctDefer.empty() && o.ctDefer != "off")
			fmt::print(stderr, "pokelab: warning: --ct-defer {} only changes isolated "
				   "CPUs, and none is isolated: add --nohz-full LIST\n", o.ctDefer);
		else if (cpumask_empty(kshim::nohzFullMask()) && o.isolatedInKernel)
			fmt::print(stderr, "pokelab: warning: --isolated-in-kernel only changes "
				   "isolated CPUs, and none is isolated: add --nohz-full LIST\n");
	}

	pokelab::BpfStatsConfig cfg;
	cfg.flips = o.flips;
	cfg.stop = pokelab::stopFlag();	/* SIGINT/SIGTERM/SIGHUP: stop after the flip in progress */
	/* v5's bug only bites a CPU that is in the kernel when the flip patches. */
	cfg.isolatedInKernel = o.isolatedInKernel || o.ctDefer == "v5";
	if (!cpumask_empty(kshim::nohzFullMask())) {
		bool one = cpumask_weight(kshim::nohzFullMask()) == 1;

		fmt::print("demo: nohz_full {} {} {} a user-mode loop; {} system calls come {}\n",
			   one ? "CPU" : "CPUs", kshim::cpumaskPrintList(kshim::nohzFullMask()),
			   one ? "runs" : "run", one ? "its" : "their",
			   cfg.isolatedInKernel
				   ? fmt::format("while each flip patches ({} inside one: the v5 "
						 "replay)", one ? "it sits" : "they sit")
				   : fmt::format("between flips, so every flip finds {} in user mode",
						 one ? "it" : "them"));
	}
	fmt::print("\n");
	std::fflush(stdout);
	cfg.onFlip = [](unsigned int, unsigned int nr, u64 ns) {
		fmt::print("smp_text_poke_batch_finish(nr_entries={}): took {} usec\n", nr,
			   ns / 1000);
		std::fflush(stdout);
	};
	/* The outputs are opened now and streamed by the recorder while the demo runs. */
	std::vector<std::unique_ptr<kshim::TraceSink>> sinks;
	std::vector<kshim::TraceSink *> sinkp;
	u32 events = 0;	/* trace_event='s */
	for (const Output &out : outs) {
		sinks.push_back(kshim::makeTraceSink(out.path, out.fmt, filter, &err));
		if (!sinks.back()) {
			kshim::shutdown();
			return usageError(err);
		}
		/* the timeline's events are recorded too; the files keep trace_event='s */
		if (!o.timeline.empty())
			sinks.back() = pokelab::maskTraceSink(std::move(sinks.back()),
							      kshim::traceEventsWanted());
	}
	if (!o.timeline.empty()) {
		sinks.push_back(pokelab::makeTimelineSink(o.timeline,
							  (u64)(o.timelineWindow * 1e9),
							  pokelab::commandLine(),
							  kshim::machineLine(), &err));
		if (!sinks.back()) {
			kshim::shutdown();
			return usageError(fmt::format("--timeline {}: {}", o.timeline, err));
		}
		events = (outs.empty() ? 0 : kshim::traceEventsWanted()) | pokelab::timelineEvents();
	}
	for (auto &sk : sinks)
		sinkp.push_back(sk.get());
	kshim::TraceCounters before = kshim::readTraceCounters();
	if (tracing && (kshim::traceStart(0, &err, events) ||
			kshim::traceRecorderStart(sinkp, 1000000, &err))) {
		kshim::shutdown();
		return usageError(err);
	}
	pokelab::BpfStatsResult r = pokelab::runBpfStats(cfg);
	kshim::traceStop();
	/* said first: the checks below are of the flips made, and the verdict is not a PASS */
	if (r.interrupted)
		fmt::print("demo: interrupted after {} of {} flips ({})\n", r.flips, o.flips,
			   pokelab::stopSignalName());
	fmt::print("{}", pokelab::formatBpfStats(r));
	if (tracing) {
		std::vector<kshim::TraceCpu> cpus = kshim::traceRecorderStop();
		kshim::TraceCounters counted = kshim::readTraceCounters() - before;

		fmt::print("{}", kshim::formatTraceSummary(cpus, counted, filter));
		std::fflush(stdout);
		for (const kshim::TraceCpu &c : cpus)
			if (c.dropped)
				fmt::print(stderr, "pokelab: trace: CPU {} dropped {} events (its "
					   "ring was full; trace_buf_size= is per CPU)\n", c.cpu,
					   c.dropped);
		for (auto &sk : sinks) {
			if (!sk->finish(cpus, &err)) {
				fmt::print(stderr, "pokelab: {}\n", err);
				kshim::shutdown();
				return 1;
			}
		}
		for (const Output &out : outs)
			pokelab::sayWrote(out.path, out.opt);
		if (!o.timeline.empty())
			pokelab::sayWrote(o.timeline, "--timeline");
	}
	kshim::shutdown();
	if (r.interrupted)
		return pokelab::stopExitStatus();
	return r.ok() ? 0 : 1;
}


DemoOptions opts;
CLI::App *d;

void addDemo(CLI::App &app)
{
	d = app.add_subcommand(
		"demo", "Flip a 164-site static key while the other CPUs run the sites, and check "
			"that no CPU runs stale text");
	d->add_option("--cpus", opts.cpus, "Simulated CPUs (default: the allowed PUs, at least 2); "
		      "boot parameter nr_cpus=")
		->check(pokelab::wholeNumber(2, 512));
	d->add_option("--flips", opts.flips, "Key flips (default: 20)")
		->check(pokelab::wholeNumber(1, 100000));
	d->add_option_function<std::vector<std::string>>("--trace",
		[](const std::vector<std::string> &v) { opts.traceFiles = v; },
		"Write the events (trace_event= chooses them) as trace-cmd report text, or as a "
		"trace-cmd trace.dat file when FILE ends in .dat (may be given more than once)")
		->expected(1)
		->allow_extra_args(false)
		->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
	d->add_option("--trace-format", opts.traceFormat,
		      "Format of --trace FILE (default: dat for FILE.dat, else text)")
		->check(CLI::IsMember({"text", "dat"}));
	d->add_option_function<std::string>("--trace-json", [](const std::string &v) {
			opts.traceJson = v;
			opts.traceJsonSet = true;
		}, "Write the events (trace_event= chooses them) as Chrome trace-event JSON (Perfetto)");
	d->add_option_function<std::string>("--trace-cpus", [](const std::string &v) {
			opts.traceCpus = v;
			opts.traceCpusSet = true;
		}, "Trace only events aimed at these CPUs (CPU list, e.g. 1-3,5)");
	d->add_option_function<std::string>("--timeline", [](const std::string &v) {
			opts.timeline = v;
			opts.timelineSet = true;
		}, "Draw the run as an SVG timeline: a lane per CPU, each batch's phases, IPIs, "
		   "INT3 traps, user/idle spans, deferred flushes (docs/timeline.md)");
	d->add_option("--timeline-window", opts.timelineWindow,
		      "Seconds of the run the timeline keeps, the last ones (default: 10)")
		->check(pokelab::timelineWindowCheck());
	pokelab::addTimelineGapOption(d);
	d->add_option("--refs", opts.refs,
		      "INT3 handler refcount: percpu (v6.16) or global (v6.15's bp_desc.refs); "
		      "boot parameter pokelab.refs=")
		->check(CLI::IsMember({"percpu", "global"}));
	d->add_option("--sync", opts.sync,
		      "Sync back-end: ipi (on_each_cpu) or membarrier "
		      "(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE); boot parameter pokelab.sync=")
		->check(CLI::IsMember({"ipi", "membarrier"}));
	d->add_option_function<std::string>("--nohz-full", [](const std::string &v) {
			opts.nohzFull = v;
			opts.nohzFullSet = true;
		},
		      "Isolated CPUs (CPU list): they run a user loop instead of the sites; "
		      "boot parameter nohz_full=");
	d->add_option("--ct-defer", opts.ctDefer,
		      "How isolated CPUs are spared sync IPIs: off (mainline), v7 (the default with "
		      "nohz_full), v7-tlbi (v7 + kernel TLB flushes, RFC 28-31 in pokelab's "
		      "corrected order), v8 (v8: pokelab's reconstruction of an RFC, not posted "
		      "code; gated by kernel_cr3_loaded), v5 (the bug, replayed), pokelab-catchup "
		      "(pokelab's own, after v8's idea); "
		      "boot parameter "
		      "pokelab.ct_defer=")
		->check(CLI::IsMember({"off", "v7", "v7-tlbi", "v8", "v5", "pokelab-catchup"}));
	d->add_flag("--isolated-in-kernel", opts.isolatedInKernel,
		    "Isolated CPUs sit inside a system call while each flip patches (implied by "
		    "--ct-defer v5)");
	d->add_option("params", opts.params,
		      "Boot parameters, kernel command-line style (nr_cpus=N nohz_full=LIST ...)");

}

bool demoParsed()
{
	return d && d->parsed();
}

int runDemoCmd()
{
	return runDemo(opts);
}

pokelab::CommandRegistrar demoCommand({10, addDemo, demoParsed, runDemoCmd});

} /* namespace */
