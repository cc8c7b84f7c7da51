// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab run recursion (seed 002): bpf bench trig-fentry with the three
 * recursion guards of bpf_recursion.h, side by side, in bench's output
 * form, then the ratio table beside P. Mohan's arm64 figures and the x86
 * regression the mail reports.
 */
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
#include "scenario.h"
#include "stop.h"

namespace pokelab::scenario {

namespace {

unsigned int optProducers = 1;
unsigned int optSeconds = 5;

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

void progressStep(unsigned int i, unsigned int n, void *arg)
{
	static_cast<Progress *>(arg)->step(i, n);
}

std::string pct(double before, double after)
{
	return fmt::format("{:+.2f}%", (after / before - 1.0) * 100.0);
}

int runRecursion(const Common &common, unsigned int producers, unsigned int iterMs,
		 unsigned int iters)
{
	const RecursionGuard guards[] = {RecursionGuard::Atomic, RecursionGuard::PerCtxU8,
					 RecursionGuard::NonLockedInc};
	std::string err, report;
	Progress progress(common, "recursion");
	Summary sum[3];
	bool ok = true;
	std::string checkLine;
	/* SIGINT/SIGTERM/SIGHUP: the iteration in progress is dropped, the rest reported */
	const std::atomic<bool> *stop = pokelab::stopFlag();
	unsigned int measured = 0;

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

	for (int v = 0; v < 3; v++) {
		std::string lines;
		std::vector<double> rates;
		RecursionCounts c;

		progress.stage(fmt::format("{} ({} producer{})", recursionGuardName(guards[v]),
					   producers, producers > 1 ? "s" : ""));
		rates = recursionBench(guards[v], producers, iterMs, 1, iters, &lines,
				       progressStep, &progress, stop);
		c = recursionCounts();
		measured += rates.size();
		if (stop->load()) {
			report += fmt::format("\nSetting up benchmark 'trig-fentry' ({} guard)...\n"
					      "Benchmark 'trig-fentry' started.\n{}",
					      recursionGuardName(guards[v]), lines);
			progress.done();
			fmt::print("{}\nrun recursion: interrupted after {} of {} measured iterations "
				   "({}); no ratio table for an incomplete run\n", report, measured,
				   3 * iters, pokelab::stopSignalName());
			kshim::shutdown();
			return pokelab::stopExitStatus();
		}
		if (c.hits == 0 || c.misses != 0)
			ok = false;
		sum[v] = summarize(rates);
		report += fmt::format("\nSetting up benchmark 'trig-fentry' ({} guard)...\n"
				      "Benchmark 'trig-fentry' started.\n{}",
				      recursionGuardName(guards[v]), lines);
		report += fmt::format("Summary: hits {:8.3f} ± {:5.3f}M/s ({:7.3f}M/prod), "
				      "misses {}\n",
				      sum[v].mean, sum[v].stddev, sum[v].mean / producers, c.misses);
	}
	progress.done();

	report += fmt::format("\nrecursion detection (nested call from the program itself):\n{}",
			      checkLine);
	report += "\n";
	report += claimTable({
		{"fentry, atomic -> u8[4] (arm64 claim)",
		 "+25.03% (43.149 -> 53.948 M/s, Neoverse-V2)",
		 fmt::format("{} ({:.3f} -> {:.3f} M/s)", pct(sum[0].mean, sum[1].mean),
			     sum[0].mean, sum[1].mean),
		 "x86: LOCK XADD, not arm64 LSE"},
		{"fentry, x86 inc -> u8[4] (x86 claim)", "-30% (regression, why arm64-only)",
		 fmt::format("{} ({:.3f} -> {:.3f} M/s)", pct(sum[2].mean, sum[1].mean),
			     sum[2].mean, sum[1].mean),
		 sum[1].mean >= sum[2].mean ? "not slower here"
		 : sum[1].mean / sum[2].mean > 0.85 ? "slower, less than the mail"
		 : sum[1].mean / sum[2].mean >= 0.55 ? "slower: the mail's order"
						       : "slower, more than the mail"},
		{"fentry, atomic -> x86 inc", "-",
		 fmt::format("{} ({:.3f} -> {:.3f} M/s)", pct(sum[0].mean, sum[2].mean),
			     sum[0].mean, sum[2].mean),
		 "cost of the LOCK prefix"},
		{"provoked recursions refused", "all (misses counter)",
		 ok ? fmt::format("{} of {} per guard", kCheckCalls / kCheckEvery,
				  kCheckCalls / kCheckEvery)
		    : "WRONG",
		 ok ? "counts ok" : "COUNTS WRONG"},
	});
	report += pokelab::recursionMachineNote(kshim::detectMachine(),
						(sum[1].mean / sum[0].mean - 1.0) * 100.0,
						(sum[1].mean / sum[2].mean - 1.0) * 100.0);
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

int runFromCli(const Common &common)
{
	return runRecursion(common, optProducers, 1000, optSeconds);
}

int (*setup(CLI::App *sub))(const Common &)
{
	sub->add_option("--producers", optProducers,
			"Producer CPUs calling the traced function (bench's -p; default: 1)")
		->check(wholeNumber(1, 255));
	sub->add_option("--seconds", optSeconds,
			"Measured 1-second iterations per guard, after one warm-up (bench's -d; "
			"default: 5)")
		->check(wholeNumber(1, 3600));
	return runFromCli;
}

int reproduce(const Common &common)
{
	return runRecursion(common, 1, 500, 6);
}

ScenarioRegistrar reg({"recursion", "002",
		       "bpf bench trig-fentry: atomic, u8[4] per context, x86 non-locked inc",
		       setup, reproduce,
			     "the recursion guards patch no text and send no IPIs: there is nothing for a timeline to draw"});

} /* namespace */

} /* namespace pokelab::scenario */
