// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab run recursion (case 002): bpf bench trig-fentry with the three
 * recursion guards of bpf_recursion.h, side by side, in bench's output
 * form, then the ratio table beside P. Mohan's arm64 figures and the x86
 * regression the mail reports.
 */
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <kernel_shim/boot.h>
#include <kernel_shim/xmc.h>
#include <kernel_shim/xmc_verdict.h>

#include <workloads/bpf_recursion.h>
#include <workloads/machine_notes.h>
#include "hostload.h"
#include "median.h"
#include "options.h"
#include "scenario.h"
#include "stop.h"

namespace pokelab::scenario {

namespace {

unsigned int optProducers = 1;
double optSeconds = 5;		/* --seconds: a decimal, as run isolation's */

/* Calls per variant in the detection check, and how often the program recurses. */
constexpr unsigned long kCheckCalls = 10000;
constexpr unsigned long kCheckEvery = 7;

struct Summary {
	double mean = 0, stddev = 0;
};

Summary summarize(const std::vector<double> &v)
{
	Summary s;

	if (v.empty())
		return s;
	for (double x : v)
		s.mean += x;
	s.mean /= v.size();
	for (double x : v)
		s.stddev += (x - s.mean) * (x - s.mean);
	s.stddev = v.size() > 1 ? std::sqrt(s.stddev / (v.size() - 1)) : 0;
	return s;
}

/* After each round: the progress line, and a sample of the host's run queue. */
struct RoundHook {
	Progress *progress;
	pokelab::HostLoadMeter *meter;
};

void progressStep(unsigned int i, unsigned int n, void *arg)
{
	RoundHook *h = static_cast<RoundHook *>(arg);

	h->meter->sample();
	h->progress->step(i, n);
}

/* Median and median absolute deviation of per-round percentages. */
struct Pct {
	double median = 0, mad = 0;
};

Pct pctOf(const std::vector<RecursionRound> &rounds, int from, int to)
{
	std::vector<double> v;
	MedianMad m;

	for (const RecursionRound &r : rounds)
		v.push_back((r.rate[to] / r.rate[from] - 1.0) * 100.0);
	m = medianMadOf(v);
	return {m.median, m.mad};
}

std::string pctText(const Pct &p, const Summary &from, const Summary &to)
{
	return fmt::format("{:+.2f}% ± {:.2f} ({:.3f} -> {:.3f} M/s)", p.median, p.mad, from.mean,
			   to.mean);
}

/* Spread bound of a guard comparison, in percentage points (MAD of the per-round figure). */
constexpr double kSpreadPoints = 10.0;

int runRecursion(const Common &common, unsigned int producers, unsigned int sliceMs,
		 unsigned int rounds)
{
	const RecursionGuard guards[] = {RecursionGuard::Atomic, RecursionGuard::PerCtxU8,
					 RecursionGuard::NonLockedInc};
	std::string err, report, lines;
	Progress progress(common, "recursion");
	Summary sum[3];
	bool ok = true;
	std::string checkLine, why;
	/* SIGINT/SIGTERM/SIGHUP: the round in progress is dropped, the rest reported */
	const std::atomic<bool> *stop = pokelab::stopFlag();
	std::vector<RecursionRound> measured;

	if (kshim::boot(fmt::format("nr_cpus={}", producers + 1), &err, common.quiet)) {
		fmt::print(stderr, "pokelab: {}\n", err);
		return 2;
	}
	report = reportHeader("002", "BPF recursion detection without atomics (trig-fentry)");

	/* Recursion detection first: provoked nested calls must be refused, and only they. */
	progress.stage("recursion check");
	for (RecursionGuard g : guards) {
		RecursionCounts c;

		recursionAttach(g, kCheckEvery);
		recursionTrigger(kCheckCalls);
		c = recursionCounts();
		checkLine += fmt::format("  {:<8} {} calls, program recursing every {}th run: "
					 "hits {}, misses {} (expected {} and {})\n",
					 recursionGuardName(g), kCheckCalls, kCheckEvery, c.hits,
					 c.misses, kCheckCalls, kCheckCalls / kCheckEvery);
		if (c.hits != kCheckCalls || c.misses != kCheckCalls / kCheckEvery)
			ok = false;
	}

	progress.stage(fmt::format("atomic, u8[4], x86-inc interleaved ({} producer{})", producers,
				   producers > 1 ? "s" : ""));
	pokelab::HostLoadMeter meter;
	RoundHook hook = {&progress, &meter};

	measured = recursionInterleaved(producers, sliceMs, 1, rounds, &lines, progressStep, &hook,
					stop);
	pokelab::HostLoad host = meter.finish();
	RecursionCounts c = recursionCounts();

	report += fmt::format("\nSetting up benchmark 'trig-fentry' (guards interleaved: each "
			      "round runs atomic, u8[4] and x86-inc for {} ms each, forwards and "
			      "backwards in turn, after one warm-up round)...\n"
			      "Benchmark 'trig-fentry' started.\n{}",
			      sliceMs, lines);
	if (stop->load()) {
		progress.done();
		fmt::print("{}\nrun recursion: interrupted after {} of {} measured rounds ({}); no "
			   "ratio table for an incomplete run\n", report, measured.size(), rounds,
			   pokelab::stopSignalName());
		kshim::shutdown();
		return pokelab::stopExitStatus();
	}
	progress.done();
	if (c.hits == 0 || c.misses != 0)
		ok = false;
	for (int v = 0; v < 3; v++) {
		std::vector<double> rates;

		for (const RecursionRound &r : measured)
			rates.push_back(r.rate[v]);
		sum[v] = summarize(rates);
		report += fmt::format("Summary: {:<8} hits {:8.3f} ± {:5.3f}M/s ({:7.3f}M/prod)\n",
				      recursionGuardName(guards[v]), sum[v].mean, sum[v].stddev,
				      sum[v].mean / producers);
	}
	report += fmt::format("Summary: misses {} over the run\n", c.misses);

	Pct a2u = pctOf(measured, 0, 1), x2u = pctOf(measured, 2, 1), a2x = pctOf(measured, 0, 2);

	/* a figure taken beside other work, or one that swung, is shown but not judged */
	if (host.busy)
		why = "host busy";
	else if (x2u.mad > kSpreadPoints)
		why = fmt::format("spread ± {:.1f} points > {:.0f}", x2u.mad, kSpreadPoints);
	report += fmt::format("{}\n", host.line());
	report += fmt::format("\nrecursion detection (nested call from the program itself):\n{}",
			      checkLine);
	report += "\n";
	report += claimTable({
		{"fentry, atomic -> u8[4] (arm64 claim)",
		 "+25.03% (43.149 -> 53.948 M/s, Neoverse-V2)", pctText(a2u, sum[0], sum[1]),
		 "x86: LOCK XADD, not arm64 LSE"},
		{"fentry, x86 inc -> u8[4] (x86 claim)", "-30% (regression, why arm64-only)",
		 pctText(x2u, sum[2], sum[1]),
		 !why.empty() ? "not judged: " + why
		 : x2u.median >= 0 ? "not slower here"
		 : x2u.median > -15 ? "slower, less than the mail"
		 : x2u.median >= -45 ? "slower: the mail's order"
				     : "slower, more than the mail"},
		{"fentry, atomic -> x86 inc", "-", pctText(a2x, sum[0], sum[2]),
		 "cost of the LOCK prefix"},
		{"provoked recursions refused", "all (misses counter)",
		 ok ? fmt::format("{} of {} per guard", kCheckCalls / kCheckEvery,
				  kCheckCalls / kCheckEvery)
		    : "WRONG",
		 ok ? "counts ok" : "COUNTS WRONG"},
	});
	if (why.empty())
		report += pokelab::recursionMachineNote(kshim::detectMachine(), a2u.median,
							x2u.median);
	else
		report += fmt::format("\nThe ratios above were taken with the {}: they are shown, "
				      "not compared with the mail's (run again on a quiet machine)."
				      "\n", why);
	kshim::xmcQuiesce();
	/*
	 * informational: the benchmark patches no text (boot's patching aside),
	 * so the model's verdict is a line of its own, as the other scenarios
	 * print it; the check line ends in one verdict, the check's
	 */
	report += fmt::format("\n{}\ncheck: hits and misses per guard {}\n",
			      kshim::xmcVerdict(kshim::xmcStats()),
			      ok ? "as expected -> PASS" : "WRONG -> FAIL");
	fmt::print("{}", report);
	kshim::shutdown();
	return ok ? 0 : 1;
}

int runRecursionCli(const Common &common)
{
	/* --seconds S: S seconds per guard in rounds of 250 ms each, a part of one dropped */
	return runRecursion(common, optProducers, 250, (unsigned int)std::floor(4 * optSeconds));
}

int (*setupRecursion(CLI::App *sub))(const Common &)
{
	sub->add_option("--producers", optProducers,
			"Producer CPUs calling the traced function (bench's -p; default: 1)")
		->check(wholeNumber(1, 255));
	sub->add_option("--seconds", optSeconds,
			"Measured seconds per guard (bench's -d), interleaved: rounds of 250 ms "
			"per guard (a part of one is dropped), after one warm-up round (default: 5)")
		->check(decimalNumber(0.25, 3600.0));
	return runRecursionCli;
}

int reproduceRecursion(const Common &common)
{
	return runRecursion(common, 1, 125, 24);
}

ScenarioRegistrar recursionRegistrar({
	"recursion", "002",
	"bpf bench trig-fentry: atomic, u8[4] per context, x86 non-locked inc",
	setupRecursion, reproduceRecursion,
	"the recursion guards patch no text and send no IPIs: there is nothing for a timeline to "
	"draw"});

} /* namespace */

} /* namespace pokelab::scenario */
