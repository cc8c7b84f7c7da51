/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The bpf-stats scenario's measurement (seeds 000/001, E. Dumazet's per-CPU
 * INT3 refs): the bpf_stats_enabled_key flip plus a two-site key flip while
 * the other CPUs run the sites, once with pokelab.refs=global and once with
 * pokelab.refs=percpu, one machine per mode booted in turn, the modes
 * alternated in rounds so that drift on the host hits both.
 */
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include <kernel_shim/xmc_verdict.h>
#include <linux/types.h>

namespace pokelab {

struct RefsCompareConfig {
	unsigned int cpus = 4;		/* simulated CPUs per machine (nr_cpus=) */
	unsigned int flips = 8;		/* flips per mode, split over the rounds */
	unsigned int rounds = 2;	/* alternations global, percpu, global, ... */
	bool quiet = true;		/* boot lines on stderr */
	/* Progress: stage text, flip i of n within the stage. Task context, CPU 0. */
	std::function<void(const std::string &stage)> onStage;
	/* Called while each machine is booted, before it runs. Task context, CPU 0. */
	std::function<void(const std::string &mode)> onBooted;
	/* Called before each machine shuts down, its flips done. Task context, CPU 0. */
	std::function<void(const std::string &mode)> onShutdown;
	std::function<void(unsigned int i, unsigned int n)> onFlip;
	/* When set (any thread), the flip in progress completes and no more machines run. */
	const std::atomic<bool> *stop = nullptr;
	/* Out: the run was stopped by @stop before all its flips. */
	bool *interrupted = nullptr;
};

struct RefsModeResult {
	std::string mode;			/* "global" or "percpu" */
	std::string machineLine;		/* of the last machine of this mode */
	unsigned int sites = 0;			/* bpf_stats_enabled_key sites */
	unsigned int smallSites = 0;		/* pokelab_small_key sites */
	std::vector<u64> batchNs;		/* 164-entry batches, one per flip */
	std::vector<unsigned int> nrEntries;
	std::vector<unsigned int> syncRounds;
	std::vector<u64> smallBatchNs;		/* two-entry batches, one per flip */
	std::vector<unsigned int> smallEntries;
	std::vector<unsigned int> smallSyncRounds;
	unsigned long int3Hits = 0;		/* INT3 traps emulated, all CPUs */
	u64 int3Ns = 0;				/* time in the SIGTRAP handler, hot-loop CPUs */
	u64 loopNs = 0;				/* hot-loop wall time, summed over CPUs */
	unsigned long calls = 0;		/* hot-loop calls */
	unsigned long refsXcpu = 0;		/* cross-CPU writes to a refs line */
	unsigned long refsPatcherWrites = 0;	/* the patcher's publish/drain writes */
	unsigned long staleCalls = 0;
	unsigned long checkedCalls = 0;
	unsigned int deadLoops = 0;
	unsigned long violations = 0;		/* the cross-modifying-code model's */
	kshim::XmcStats xmc{};			/* its counters, over this mode's machines */
	unsigned int flips = 0;

	double int3Share() const { return loopNs ? (double)int3Ns / loopNs : 0; }
	double nsPerCall() const { return calls ? (double)loopNs / calls : 0; }
	/* no stale calls, no dead loops, all sites found, no model violation */
	bool ok() const;
};

/*
 * Boot, run and shut down 2 * @cfg.rounds machines (the caller must not be
 * booted); @out[0] is refs=global, @out[1] refs=percpu. Returns 0, or the
 * boot error (-errno) with @err set. Task context, main thread.
 */
int runRefsCompare(const RefsCompareConfig &cfg, RefsModeResult out[2], std::string *err);

/*
 * The claim, as counts: both modes ok(); every flip made a 164-entry and a
 * 2-entry batch with 3 sync rounds each; cross-CPU refs-line writes are
 * higher with refs=global (@m[0]) than with refs=percpu (@m[1]); and
 * percpu's do not exceed the patcher's own publish/drain writes. False
 * names the first check that fails in @why. Any thread.
 */
bool refsClaimHolds(const RefsModeResult m[2], std::string *why);

/* Median and max of @v (0 for an empty one). */
u64 medianOf(std::vector<u64> v);
u64 maxOf(const std::vector<u64> &v);

} /* namespace pokelab */
