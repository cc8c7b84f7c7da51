/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Was the host busy while we measured? A figure taken beside other work is
 * not a figure of pokelab, so every A/B comparison (bench, reproduce) meters
 * the host over its run and says so next to the figure instead of judging a
 * goal. Read from /proc, nothing modelled:
 *
 *  - steal: the share of all CPU time /proc/stat counts as stolen by the
 *    hypervisor over the run;
 *  - other processes: non-idle CPU time in /proc/stat less this process's
 *    own (utime + stime of /proc/self/stat), as a share of all CPU time;
 *  - run queue: procs_running of /proc/stat less this process's runnable
 *    threads (state R in /proc/self/task/N/stat), sampled at each iteration
 *    boundary, the mean.
 *
 * busy = steal > 5 %, or other processes > 25 % (over at least 100 ticks of
 * CPU time), or a foreign run queue of
 * at least max(1, PUs / 2) at every sample (docs/performance.md): margins wide enough
 * for the tick-sampled /proc/stat and the exact per-process times, which
 * disagree by up to ~15 % over a run that signals heavily. Main thread; it reads
 * files, so never from signal context or inside a timed region.
 */
#pragma once

#include <string>

namespace pokelab {

struct HostLoad {
	double stealPct = 0;	/* % of all CPU time, over the run */
	double othersPct = 0;	/* % of all CPU time used by other processes */
	double runQueue = 0;	/* runnable tasks not ours, the least of the samples */
	unsigned int pus = 0;	/* CPUs /proc/stat lists */
	unsigned int samples = 0;
	bool known = false;	/* /proc could be read */
	bool weighed = false;	/* long enough (100 ticks) for steal and others to count */
	bool busy = false;

	/* "host quiet: steal 0.0%, other processes 0.4% ... run queue at least 0 ...", or BUSY */
	std::string line() const;
};

class HostLoadMeter {
public:
	/* Start metering (the first sample). */
	HostLoadMeter();
	/* One run-queue sample; call between iterations, outside the timed work. */
	void sample();
	/* The load since construction (a last sample included). */
	HostLoad finish();

private:
	unsigned long long nonIdle0_ = 0, total0_ = 0, steal0_ = 0, own0_ = 0;
	double rqMin_ = 0;
	unsigned int rqSamples_ = 0;
	bool ok_ = false;
};

/* Spread bound of a ratio: MAD / median above it, a goal is not judged (20 %). */
inline constexpr double kSpreadBound = 0.20;

/*
 * Why a ratio of median @median and median absolute deviation @mad, taken
 * under host load @h, is not held to its goal: "host busy", "spread 24% >
 * 20%" (@mad / @median beyond kSpreadBound), or "" when it can be judged.
 */
std::string unjudgedWhy(const HostLoad &h, double median, double mad);

} /* namespace pokelab */
