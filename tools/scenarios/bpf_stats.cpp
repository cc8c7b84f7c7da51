// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab run bpf-stats: cases 000/001, E. Dumazet's per-CPU INT3 refs
 * (4334336e769b). The 164-site bpf_stats_enabled_key flip and a two-site
 * key flip while every other CPU runs the sites, with the v6.15 global
 * refcount (refs=global) and the v6.16 per-CPU one (refs=percpu),
 * interleaved flip by flip on one machine (workloads/refs_compare.h), side
 * by side with the patch mail's figures.
 *
 * The latency figures are ratios taken over quads (global, percpu, percpu,
 * global: each mode's enable and disable flip, the two centred on the
 * same instant): their median ± MAD over the quads, held to nothing when
 * the host was busy over the run (hostload.h), the MAD exceeds 20% of the
 * median, or fewer than 3 quads ran, which the report then says next to
 * them. The check, and the exit status, rest on counts alone (refs-line
 * writes, stale calls, sync rounds, model violations), which do not
 * depend on the host.
 */
#include <functional>
#include <utility>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <kernel_shim/boot.h>

#include <workloads/bpf_stats.h>
#include <workloads/machine_notes.h>
#include <workloads/refs_compare.h>
#include "hostload.h"
#include "median.h"
#include "options.h"
#include "scenario.h"
#include "stop.h"

namespace pokelab::scenario {

namespace {

const char *const kCases = "000/001";
const char *const kTitle = "per-CPU INT3 refs (bpf_stats_enabled_key, 164 sites)";

unsigned int optCpus = 8;
unsigned int optFlips = 20;
unsigned int optRounds = 2;

std::string usec(u64 ns)
{
	return fmt::format("{}", (ns + 500) / 1000);
}

/* A per-quad ratio: its median ± MAD, and why it is not judged ("" when it is). */
struct QuadRatio {
	MedianMad r;
	std::string unjudged;
};

/* Fewer quads than this give no spread to speak of: their ratios are not judged. */
constexpr unsigned int kMinQuads = 3;

/* Quad q's @num / @den, q over the complete quads, as a QuadRatio under host load @host. */
QuadRatio quadRatio(unsigned int quads, const std::function<double(unsigned int)> &num,
		    const std::function<double(unsigned int)> &den, const HostLoad &host)
{
	std::vector<double> v;
	QuadRatio p;

	for (unsigned int q = 0; q < quads; q++)
		if (den(q) > 0)
			v.push_back(num(q) / den(q));
	p.r = medianMadOf(v);
	if (v.size() < kMinQuads)
		p.unjudged = fmt::format("{} quad{}, fewer than {} to give a spread", v.size(),
					 v.size() == 1 ? "" : "s", kMinQuads);
	else
		p.unjudged = unjudgedWhy(host, p.r.median, p.r.mad);
	return p;
}

/* A mode's two flips of quad @q: the sum of @v's entries 2q and 2q + 1. */
template <typename T>
double quadSum(const std::vector<T> &v, unsigned int q)
{
	return (double)v[2 * q] + (double)v[2 * q + 1];
}

std::string ratioText(const std::string &what, const QuadRatio &p)
{
	return fmt::format("{} {:.2f}x ± {:.2f}", what, p.r.median, p.r.mad);
}

/* The claim column: the ratio, then the mail's, or why it is not held to it. */
std::string ratioClaim(const std::string &what, const QuadRatio &p, const std::string &kernel)
{
	if (!p.unjudged.empty())
		return ratioText(what, p) + ", not judged: " + p.unjudged;
	return ratioText(what, p) + " (kernel " + kernel + ")";
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
	unsigned int machines = refsMachines(flips, rounds);
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
			header = reportHeader(kCases, kTitle);
		if (!tlret)
			tlret = timeline.start();
	};
	cfg.onShutdown = [&](const std::string &) {
		timeline.stop(kshim::bootInfo().cmdline);
	};
	cfg.onStage = [&](const std::string &s) { progress.stage(s); };
	/* SIGINT/SIGTERM/SIGHUP: the flip in progress completes, the report covers the rest */
	cfg.stop = pokelab::stopFlag();
	cfg.interrupted = &interrupted;

	/* the host over the whole run, a run-queue sample after each flip's batches */
	HostLoadMeter meter;

	cfg.onFlip = [&](unsigned int i, unsigned int n) {
		meter.sample();
		progress.step(i, n);
	};
	ret = runRefsCompare(cfg, m, &err);
	HostLoad host = meter.finish();
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
	unsigned int pairs = refsPairs(m), quads = refsQuads(m);
	auto nsPerCall = [](const RefsModeResult &x, unsigned int q) {
		double calls = quadSum(x.flipCalls, q);

		return calls > 0 ? quadSum(x.flipLoopNs, q) / calls : 0;
	};
	QuadRatio big = quadRatio(quads, [&](unsigned int q) { return quadSum(g.batchNs, q); },
				  [&](unsigned int q) { return quadSum(p.batchNs, q); }, host);
	QuadRatio small = quadRatio(quads,
				    [&](unsigned int q) { return quadSum(p.smallBatchNs, q); },
				    [&](unsigned int q) { return quadSum(g.smallBatchNs, q); },
				    host);
	QuadRatio call = quadRatio(quads, [&](unsigned int q) { return nsPerCall(g, q); },
				   [&](unsigned int q) { return nsPerCall(p, q); }, host);
	std::string out = header;

	out += fmt::format("{} pairs of flips, one per mode, on {} machine{} booted in turn, refs "
			   "switched between flips\n(text_poke_set_refs_mode()) in quads global, "
			   "percpu, percpu, global; hot loops on CPUs 1-{}\n\n",
			   pairs, machines, machines > 1 ? "s" : "", cpus - 1);
	out += batchLine(g, false) + batchLine(p, false) + batchLine(g, true) + batchLine(p, true);
	out += fmt::format("\nper quad (each mode's enable and disable flip), median ± MAD of {} "
			   "quad{}:\n", quads, quads == 1 ? "" : "s");
	for (const auto &[what, x] : {std::pair{"nr_entries=164 global/percpu", &big},
				      std::pair{"nr_entries=2 percpu/global", &small},
				      std::pair{"ns per call global/percpu", &call}})
		out += fmt::format("  {:<28} {:.3f} ± {:.3f}{}\n", what, x->r.median, x->r.mad,
				   x->unjudged.empty() ? "" : "  not judged: " + x->unjudged);
	out += host.line() + "\n\n";
	out += claimTable({
		{"nr_entries=164, refs=global", "took 2655300 usec", fmt::format("took {} usec (max {})",
		 usec(medianOf(g.batchNs)), usec(maxOf(g.batchNs))), ""},
		{"nr_entries=164, refs=percpu", "took 702 usec", fmt::format("took {} usec (max {})",
		 usec(medianOf(p.batchNs)), usec(maxOf(p.batchNs))),
		 ratioClaim("global/percpu", big, "3782x")},
		{"nr_entries=2, refs=global", "took 324 usec", fmt::format("took {} usec (max {})",
		 usec(medianOf(g.smallBatchNs)), usec(maxOf(g.smallBatchNs))), ""},
		{"nr_entries=2, refs=percpu", "took 519 usec", fmt::format("took {} usec (max {})",
		 usec(medianOf(p.smallBatchNs)), usec(maxOf(p.smallBatchNs))),
		 ratioClaim("percpu/global", small, "1.60x")},
		{"mean ns per call, refs=global", "36 ns (hn_egress)",
		 fmt::format("{:.1f} ns", g.nsPerCall()), ""},
		{"mean ns per call, refs=percpu", "28 ns", fmt::format("{:.1f} ns", p.nsPerCall()),
		 ratioClaim("global/percpu", call, "1.29x")},
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
	if (!big.unjudged.empty() || !small.unjudged.empty() || !call.unjudged.empty())
		out += "The ratios marked 'not judged' are shown, not held to the mail's (run "
		       "again on a quiet machine);\nthe counts and the check below do not depend "
		       "on the host.\n";

	bool ok = refsClaimHolds(m, &why);

	out += fmt::format("\nrefs=global: {}\nrefs=percpu: {}\n", kshim::xmcVerdict(g.xmc),
			   kshim::xmcVerdict(p.xmc));
	out += fmt::format("check: cross-CPU refs-line writes global {} > percpu {} (<= {} "
			   "publish/drain writes); {} + {} stale calls; 3 sync rounds per batch "
			   "({} + {} flips, {} pairs); {} + {} model violations -> {}{}\n",
			   g.refsXcpu, p.refsXcpu, p.refsPatcherWrites, g.staleCalls, p.staleCalls,
			   g.flips, p.flips, pairs, g.violations, p.violations,
			   ok ? "PASS" : "FAIL", ok ? "" : ": " + why);
	fmt::print("{}", out);
	return ok ? 0 : 1;
}

int runBpfStatsCli(const Common &common)
{
	return runWith(common, optCpus, optFlips, optRounds);
}

int (*setupBpfStats(CLI::App *sub))(const Common &)
{
	sub->add_option("--cpus", optCpus, "Simulated CPUs per machine (CPU 0 patches, the rest "
			"run the sites; at least 3, so that two CPUs can share a refs line; "
			"default: 8, not the allowed PUs: seven CPUs on the refs lines, the size "
			"docs/reproduction.md shows)")
		->check(wholeNumber(3, 256));
	sub->add_option("--flips", optFlips, "Key flips per refs mode, i.e. pairs of one flip per "
			"mode, two pairs a quad of the ratios (each flip a 164- and a 2-entry "
			"batch; default: 20)")
		->check(wholeNumber(1, 100000));
	sub->add_option("--rounds", optRounds,
			"Machines booted in turn, each interleaving the two modes flip by flip; "
			"the quads are split over them (at most one machine a quad; default: 2)")
		->check(wholeNumber(1, 100));
	return runBpfStatsCli;
}

int reproduceBpfStats(const Common &common)
{
	/* 20 quads: a flip is a few ms here, and a median wants more than a handful */
	return runWith(common, 8, 40, 2);
}

ScenarioRegistrar bpfStatsRegistrar({
	"bpf-stats", kCases,
	"164-site bpf_stats_enabled_key flip, refs=global vs refs=percpu",
	setupBpfStats, reproduceBpfStats,
	nullptr});

} /* namespace */

} /* namespace pokelab::scenario */
