// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab run bpf-stats: seeds 000/001, E. Dumazet's per-CPU INT3 refs
 * (4334336e769b). The 164-site bpf_stats_enabled_key flip and a two-site
 * key flip while every other CPU runs the sites, with the v6.15 global
 * refcount (pokelab.refs=global) and the v6.16 per-CPU one
 * (pokelab.refs=percpu), side by side with the patch mail's figures.
 */
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <kernel_shim/boot.h>

#include <workloads/bpf_stats.h>
#include <workloads/machine_notes.h>
#include <workloads/refs_compare.h>
#include "scenario.h"
#include "stop.h"

namespace pokelab::scenario {

namespace {

const char *const kSeed = "000/001";
const char *const kTitle = "per-CPU INT3 refs (bpf_stats_enabled_key, 164 sites)";

unsigned int optCpus = 8;
unsigned int optFlips = 20;
unsigned int optRounds = 2;

std::string usec(u64 ns)
{
	return fmt::format("{}", (ns + 500) / 1000);
}

std::string batchLine(const RefsModeResult &m, bool small)
{
	const std::vector<u64> &ns = small ? m.smallBatchNs : m.batchNs;

	return fmt::format("refs={}: smp_text_poke_batch_finish(nr_entries={}): took {} usec "
			   "(median of {} flips; max {} usec)\n",
			   m.mode, small ? 2u : kNrBpfSites, usec(medianOf(ns)), ns.size(),
			   usec(maxOf(ns)));
}

int runWith(const Common &common, unsigned int cpus, unsigned int flips, unsigned int rounds)
{
	Progress progress(common, "bpf-stats");
	RefsCompareConfig cfg;
	RefsModeResult m[2];
	std::string header, err, why;
	bool interrupted = false;
	int ret;

	cfg.cpus = cpus;
	cfg.flips = flips;
	cfg.rounds = rounds;
	cfg.quiet = true;
	ScenarioTimeline timeline(common, "bpf-stats");
	int tlret = 0;

	if ((ret = timeline.open()))
		return ret;
	cfg.onBooted = [&](const std::string &) {
		if (header.empty())
			header = reportHeader(kSeed, kTitle);
		if (!tlret)
			tlret = timeline.start();
	};
	cfg.onShutdown = [&](const std::string &) {
		timeline.stop(kshim::bootInfo().cmdline);
	};
	cfg.onStage = [&](const std::string &s) { progress.stage(s); };
	cfg.onFlip = [&](unsigned int i, unsigned int n) { progress.step(i, n); };
	/* SIGINT/SIGTERM/SIGHUP: the flip in progress completes, the report covers the rest */
	cfg.stop = pokelab::stopFlag();
	cfg.interrupted = &interrupted;
	ret = runRefsCompare(cfg, m, &err);
	progress.done();
	if (ret) {
		fmt::print(stderr, "pokelab: {}\n", err);
		return 2;
	}
	if (tlret || timeline.commit())
		return 1;

	const RefsModeResult &g = m[0], &p = m[1];

	/* interrupted: what each mode ran, and no claim from an incomplete comparison */
	if (interrupted) {
		std::string out = header;

		for (const RefsModeResult &x : m) {
			if (!x.flips) {
				out += fmt::format("refs={}: not run\n", x.mode);
				continue;
			}
			out += batchLine(x, false) + batchLine(x, true);
			out += fmt::format("refs={}: {}\n", x.mode, kshim::xmcVerdict(x.xmc));
		}
		fmt::print("{}run bpf-stats: interrupted after {} + {} of {} + {} flips ({}); no "
			   "claim table for an incomplete comparison\n", out, g.flips, p.flips,
			   flips, flips, pokelab::stopSignalName());
		return pokelab::stopExitStatus();
	}
	auto ratio = [](double a, double b) { return b > 0 ? fmt::format("{:.2f}x", a / b) : "-"; };
	auto pct = [](double x) { return fmt::format("{:.2f}%", 100 * x); };
	std::string out = header;

	out += fmt::format("{}  (the refs=percpu machines)\n{} flips per mode over {} alternating "
			   "rounds, one machine per mode and round; hot loops on CPUs 1-{}\n\n",
			   p.machineLine, g.flips, std::max(1u, std::min(rounds, flips)), cpus - 1);
	out += batchLine(g, false) + batchLine(p, false) + batchLine(g, true) + batchLine(p, true);
	out += "\n";
	out += claimTable({
		{"nr_entries=164, refs=global", "took 2655300 usec", fmt::format("took {} usec (max {})",
		 usec(medianOf(g.batchNs)), usec(maxOf(g.batchNs))), ""},
		{"nr_entries=164, refs=percpu", "took 702 usec", fmt::format("took {} usec (max {})",
		 usec(medianOf(p.batchNs)), usec(maxOf(p.batchNs))),
		 fmt::format("global/percpu {} (kernel 3782x)",
			     ratio(medianOf(g.batchNs), medianOf(p.batchNs)))},
		{"nr_entries=2, refs=global", "took 324 usec", fmt::format("took {} usec (max {})",
		 usec(medianOf(g.smallBatchNs)), usec(maxOf(g.smallBatchNs))), ""},
		{"nr_entries=2, refs=percpu", "took 519 usec", fmt::format("took {} usec (max {})",
		 usec(medianOf(p.smallBatchNs)), usec(maxOf(p.smallBatchNs))),
		 fmt::format("percpu/global {} (kernel 1.60x)",
			     ratio(medianOf(p.smallBatchNs), medianOf(g.smallBatchNs)))},
		{"mean ns per call, refs=global", "36 ns (hn_egress)",
		 fmt::format("{:.1f} ns", g.nsPerCall()), ""},
		{"mean ns per call, refs=percpu", "28 ns", fmt::format("{:.1f} ns", p.nsPerCall()),
		 fmt::format("global/percpu {} (kernel 1.29x)", ratio(g.nsPerCall(), p.nsPerCall()))},
		{"INT3 path share of hot loop, global", "51.30% in poke_int3_handler",
		 pct(g.int3Share()), "time in exc_int3 / hot-loop time"},
		{"INT3 path share of hot loop, percpu", "-", pct(p.int3Share()), ""},
		{"INT3 hits (emulated), refs=global", "-", fmt::format("{}", g.int3Hits), ""},
		{"INT3 hits (emulated), refs=percpu", "-", fmt::format("{}", p.int3Hits), ""},
		{"cross-CPU refs-line writes, global", "480 threads on bp_desc.refs",
		 fmt::format("{}", g.refsXcpu),
		 fmt::format("global/percpu {}", ratio(g.refsXcpu, p.refsXcpu))},
		{"cross-CPU refs-line writes, percpu", "each CPU its own line",
		 fmt::format("{}", p.refsXcpu),
		 fmt::format("<= {} publish/drain writes", p.refsPatcherWrites)},
	});
	out += pokelab::bpfStatsMachineNote(kshim::detectMachine(), cpus);

	bool ok = refsClaimHolds(m, &why);

	out += fmt::format("\nrefs=global: {}\nrefs=percpu: {}\n", kshim::xmcVerdict(g.xmc),
			   kshim::xmcVerdict(p.xmc));
	out += fmt::format("check: cross-CPU refs-line writes global {} > percpu {} (<= {} "
			   "publish/drain writes); {} + {} stale calls; 3 sync rounds per batch "
			   "({} + {} flips); {} + {} model violations -> {}{}\n",
			   g.refsXcpu, p.refsXcpu, p.refsPatcherWrites, g.staleCalls, p.staleCalls,
			   g.flips, p.flips, g.violations, p.violations, ok ? "PASS" : "FAIL",
			   ok ? "" : ": " + why);
	fmt::print("{}", out);
	return ok ? 0 : 1;
}

int runCli(const Common &common)
{
	return runWith(common, optCpus, optFlips, optRounds);
}

int (*setup(CLI::App *sub))(const Common &)
{
	sub->add_option("--cpus", optCpus, "Simulated CPUs per machine (CPU 0 patches, the rest "
			"run the sites; at least 3, so that two CPUs can share a refs line; "
			"default: 8)")
		->check(wholeNumber(3, 256));
	sub->add_option("--flips", optFlips, "Key flips per refs mode (each a 164- and a 2-entry "
			"batch; default: 20)")
		->check(wholeNumber(1, 100000));
	sub->add_option("--rounds", optRounds,
			"Alternations of the two modes, one machine each (default: 2)")
		->check(wholeNumber(1, 100));
	return runCli;
}

int reproduce(const Common &common)
{
	return runWith(common, 8, 8, 2);
}

ScenarioRegistrar registrar({"bpf-stats", kSeed,
			     "164-site bpf_stats_enabled_key flip, refs=global vs refs=percpu",
			     setup, reproduce,
			     nullptr});

} /* namespace */

} /* namespace pokelab::scenario */
