// SPDX-License-Identifier: GPL-2.0-only
/*
 * What every benchmark shares: statistics, booting, the side-by-side timing
 * of an operation and its raw primitive, and the rows of "bench all".
 */
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include <kernel_shim/boot.h>
#include <kernel_shim/clock.h>
#include <linux/smp.h>

#include "../median.h"
#include "../stop.h"
#include "bench.h"
#include "boot_twin.h"

namespace pokelab::bench {

Stat stat(const std::vector<double> &v)
{
	double sum = 0, sq = 0;

	if (v.empty())
		return {0, 0, 0, 0};
	for (double x : v)
		sum += x;
	double mean = sum / v.size();
	for (double x : v)
		sq += (x - mean) * (x - mean);
	MedianMad m = medianMadOf(v);
	return {mean, v.size() > 1 ? std::sqrt(sq / (v.size() - 1)) : 0, m.median, m.mad};
}

unsigned int roundsOr(const BenchOptions &o, unsigned int def)
{
	return o.rounds ? o.rounds : def;
}

int bootBench(const char *name, const BenchOptions &o, unsigned int defCpus,
	      unsigned int minCpus)
{
	std::string cmdline, err;
	unsigned int cpus = o.cpus ? o.cpus : defCpus;

	std::string twin = bootTwinConflict(o.params, "--cpus",
					    o.cpus ? std::to_string(o.cpus) : "", "nr_cpus");

	if (!twin.empty()) {
		fmt::print(stderr, "pokelab: {}\n", twin);
		return 2;
	}
	for (const std::string &p : o.params) {
		cmdline += p + " ";
		/* the boot parameter, not the benchmark's own default, when given */
		if (!o.cpus && p.rfind("nr_cpus=", 0) == 0)
			cpus = 0;
	}
	if (cpus)
		cmdline += fmt::format("nr_cpus={}", cpus);
	if (kshim::boot(cmdline, &err, true)) {
		fmt::print(stderr, "pokelab: {}\n", err);
		return 2;
	}
	if (nr_cpu_ids < minCpus) {
		kshim::shutdown();
		fmt::print(stderr, "pokelab: bench {} needs at least {} CPUs; got nr_cpus={}\n", name,
			   minCpus, nr_cpu_ids);
		return 2;
	}
	fmt::print("{}\n", kshim::machineLine());
	return 0;
}

int refuseMachineOptions(const char *name, const BenchOptions &o)
{
	/* It boots no machine, so a CPU count or a boot parameter would be silently ignored. */
	if (!o.cpus && o.params.empty())
		return 0;
	fmt::print(stderr, "pokelab: bench {} runs on the calling thread and boots nothing; it "
		   "takes only --iters and --rounds (got {})\n", name,
		   o.cpus ? fmt::format("--cpus {}", o.cpus) : o.params.front());
	return 2;
}

PairStat runPair(const std::string &what, unsigned int iters, const std::function<double()> &ours,
		 const std::function<double()> &raw)
{
	PairStat p;
	std::vector<double> ratio;
	HostLoadMeter meter;

	/* Warm-up: page in, settle the threads. */
	ours();
	raw();
	for (unsigned int it = 0; it < iters; it++) {
		u64 t0 = kshim::clockNs();

		/* SIGINT/SIGTERM/SIGHUP: the iterations so far are the result */
		if (stopRequested()) {
			fmt::print("Interrupted after {} of {} iterations ({})\n", it, iters,
				   stopSignalName());
			break;
		}
		double o = ours(), r = raw();

		r = (r + raw()) / 2;
		o = (o + ours()) / 2;
		p.oursNs.push_back(o);
		p.rawNs.push_back(r);
		ratio.push_back(o / r);
		meter.sample();
		fmt::print("Iter {:3} ({:8.3f}ms): {} ours {:>11}, raw {:>11}, ratio {:6.3f}\n", it,
			   (kshim::clockNs() - t0) / 1e6, what, fmtNs(o), fmtNs(r), o / r);
	}
	p.ours = stat(p.oursNs);
	p.raw = stat(p.rawNs);
	p.ratio = stat(ratio);
	p.host = meter.finish();
	if (ratio.empty()) {
		fmt::print("Summary: {} not measured (interrupted)\n", what);
		return p;
	}
	fmt::print("Summary: {} ours {} ± {}, raw {} ± {}, ratio {:.3f} ± {:.3f} (median ± MAD; "
		   "mean ratio {:.3f} ± {:.3f})\n", what, fmtNs(p.ours.median), fmtNs(p.ours.mad),
		   fmtNs(p.raw.median), fmtNs(p.raw.mad), p.ratio.median, p.ratio.mad,
		   p.ratio.mean, p.ratio.stddev);
	fmt::print("{}\n{}", p.host.line(), unjudgedLine(p));
	return p;
}

std::string unjudged(const PairStat &p)
{
	return unjudgedWhy(p.host, p.ratio.median, p.ratio.mad);
}

std::string unjudgedLine(const PairStat &p)
{
	std::string why = unjudged(p);

	if (why.empty())
		return "";
	return fmt::format("Not judged: {}; the figure above is not held to its goal\n", why);
}

std::string fmtNs(double ns)
{
	if (ns >= 1e6)
		return fmt::format("{:.3f} ms", ns / 1e6);
	if (ns >= 1e3)
		return fmt::format("{:.3f} us", ns / 1e3);
	return fmt::format("{:.2f} ns", ns);
}

void addRow(const BenchOptions &o, const std::string &bench, const PairStat &p,
	    const std::string &goal, bool met)
{
	/* nothing measured (interrupted before its first iteration): no row */
	if (!o.rows || p.ours.median <= 0)
		return;
	o.rows->push_back(BenchRow{bench, fmtNs(p.ours.median), fmtNs(p.raw.median),
				   p.ratio.median, goal, met, unjudged(p)});
}

} /* namespace pokelab::bench */
