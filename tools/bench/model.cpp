// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench model: what the cross-modifying-code model costs the patching. The
 * demo's workload (bpf_stats_enabled_key's 164 sites run by every CPU but
 * CPU 0, CPU 0 flipping the key), with the model switched on and off
 * between flips of one run (xmcSetEnabled()): flips go in pairs, on then off
 * and off then on in turn, so that each side sees as many enabling as
 * disabling batches and drift hits both alike. The ratio of a pair is
 * batch(164) with the model over batch(164) without; the figure is the
 * median ratio with its spread. Run at --cpus 2 and 8 (or the --cpus given).
 */
#include <fmt/format.h>

#include <kernel_shim/boot.h>
#include <kernel_shim/xmc.h>
#include <kernel_shim/xmc_verdict.h>
#include <workloads/bpf_stats.h>

#include "../stop.h"
#include "bench.h"

namespace pokelab::bench {

namespace {

/* Flip @f (1-based) of a run: the model on? Pairs (on, off), (off, on), ... */
bool modelOnFor(unsigned int f)
{
	unsigned int pair = (f - 1) / 2, second = (f - 1) % 2;

	return (second ^ (pair & 1)) == 0;
}

int runAt(const BenchOptions &o, unsigned int cpus, unsigned int pairs, int *status)
{
	BenchOptions b = o;
	BpfStatsConfig cfg;
	std::vector<double> on, off, ratio;
	HostLoadMeter meter;
	PairStat p;

	b.cpus = cpus;
	if (bootBench("model", b, cpus, 2))
		return 2;
	if (!kshim::xmcEnabled) {
		/* pokelab.xmc=0 is refused before boot; this is a second line of defence */
		kshim::shutdown();
		fmt::print(stderr, "pokelab: bench model: the model is off; it needs it on\n");
		return 2;
	}
	cfg.flips = 2 * pairs;
	cfg.stop = stopFlag();
	/* after flip f's batch: set the model for flip f + 1 (on again after the last) */
	cfg.onFlip = [&](unsigned int f, unsigned int, u64) {
		kshim::xmcSetEnabled(f == cfg.flips || modelOnFor(f + 1));
		if (f % 2 == 0)
			meter.sample();
	};
	BpfStatsResult r = runBpfStats(cfg);
	kshim::xmcSetEnabled(true);
	for (unsigned int k = 0; k + 1 < r.batchNs.size(); k += 2) {
		double a = (double)r.batchNs[k], z = (double)r.batchNs[k + 1];
		double withNs = modelOnFor(k + 1) ? a : z, withoutNs = modelOnFor(k + 1) ? z : a;

		on.push_back(withNs);
		off.push_back(withoutNs);
		ratio.push_back(withNs / withoutNs);
		fmt::print("Iter {:3}: --cpus {:3} batch(164) model on {:>11}, off {:>11}, ratio "
			   "{:6.3f}\n", k / 2, cpus, fmtNs(withNs), fmtNs(withoutNs),
			   withNs / withoutNs);
	}
	p.ours = stat(on);
	p.raw = stat(off);
	p.ratio = stat(ratio);
	p.oursNs = on;
	p.rawNs = off;
	p.host = meter.finish();
	if (ratio.empty()) {
		fmt::print("Summary: --cpus {} not measured (interrupted)\n", cpus);
		kshim::shutdown();
		return 0;
	}
	fmt::print("Summary: --cpus {} batch(164) model on {} ± {}, off {} ± {}, ratio {:.3f} ± "
		   "{:.3f} (median ± MAD of {} pairs); stale calls {} of {}; model: {} text "
		   "writes checked in the model-on flips, {} violations\n", cpus,
		   fmtNs(p.ours.median), fmtNs(p.ours.mad), fmtNs(p.raw.median), fmtNs(p.raw.mad),
		   p.ratio.median, p.ratio.mad, ratio.size(), r.staleCalls, r.checkedCalls,
		   r.xmc.writes, r.violations);
	fmt::print("{}\n{}", p.host.line(), unjudgedLine(p));
	if (r.staleCalls || r.violations || r.deadLoops)
		*status = 1;
	addRow(o, fmt::format("model: demo batch(164) at --cpus {}, model on / off", cpus), p,
	       "<= 2.0x", p.ratio.median <= 2.0);
	kshim::shutdown();
	return 0;
}

int benchModel(const BenchOptions &o)
{
	unsigned int pairs = o.itersGiven || o.rows ? o.iters : 20;
	int status = 0;

	if (o.rounds) {
		fmt::print(stderr, "pokelab: bench model times one batch per flip; it takes no "
			   "--rounds (got --rounds {}); --iters sets the pairs\n", o.rounds);
		return 2;
	}
	for (const std::string &p : o.params)
		if (p == "pokelab.xmc=0" || p == "pokelab.xmc=off") {
			fmt::print(stderr, "pokelab: bench model switches the model itself; it "
				   "takes no {}\n", p);
			return 2;
		}
	fmt::print("bench model: {} pairs of flips per CPU count; the demo's batch with the "
		   "cross-modifying-code model on and off in one run, every CPU but 0 running the "
		   "sites\n", pairs);
	for (unsigned int cpus : {2u, 8u}) {
		int ret;

		if (o.cpus && cpus != 2)
			break;
		if ((ret = runAt(o, o.cpus ? o.cpus : cpus, pairs, &status)))
			return ret;
		if (stopRequested())
			break;
	}
	return status;
}

BenchRegistrar modelBench({"model", "the demo's batch(164) with the cross-modifying-code "
			   "model on / off, flips interleaved, at --cpus 2 and 8", benchModel});

} /* namespace */

} /* namespace pokelab::bench */
