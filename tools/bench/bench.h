/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pokelab bench: micro-benchmarks of the machinery, printed the way
 * tools/testing/selftests/bpf/bench prints them: one "Iter" line per
 * iteration, then "Summary:" lines with the median and its spread (the
 * median absolute deviation), and the mean ± standard deviation.
 *
 * Each cost is a ratio between pokelab's operation and the raw primitive it
 * is built on, measured side by side in one process, alternating within each
 * iteration so that drift hits both alike. Absolute times on a shared
 * machine are noise; the ratios are the result.
 *
 * A benchmark registers itself with a file-scope BenchRegistrar; the CLI
 * adds "bench NAME" for each, and "bench all", which runs them in turn and
 * prints one markdown table of their rows. Task context, main thread only;
 * a benchmark boots and shuts down the machine itself if it needs one.
 */
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hostload.h"

namespace CLI {
class App;
}

namespace pokelab::bench {

/* One line of the "bench all" table: a measured ratio and the goal it is held to. */
struct BenchRow {
	std::string bench;	/* "int3: emulated hit / raw SIGTRAP" */
	std::string ours;	/* pokelab's median, with its unit */
	std::string raw;	/* the primitive's median, with its unit */
	double ratio;		/* median of the per-iteration ratios */
	std::string goal;	/* "<= 1.25x", or "-" */
	bool met;
	/* why the goal was not judged ("host busy", "spread 14% > 10%"), or empty */
	std::string unjudged;
};

struct BenchOptions {
	unsigned int iters = 10;	/* Iter lines */
	unsigned int rounds = 0;	/* operations timed per iteration; 0 = the bench's default */
	unsigned int cpus = 0;		/* nr_cpus, 0 = the bench's default */
	std::vector<std::string> params;	/* extra boot parameters */
	std::string plot;		/* bench scale: SVG plot to write */
	bool itersGiven = false;	/* --iters was on the command line */
	bool plotGiven = false;		/* --plot was on the command line (perhaps empty) */
	std::vector<BenchRow> *rows = nullptr;	/* bench all: where rows go */
};

struct Bench {
	const char *name;
	const char *help;
	/* Prints to stdout; returns the process exit status (2 = bad arguments). */
	int (*run)(const BenchOptions &o);
};

void registerBench(const Bench &b);
const std::vector<Bench> &benches();

struct BenchRegistrar {
	explicit BenchRegistrar(const Bench &b) { registerBench(b); }
};

/* Mean, sample standard deviation, median and median absolute deviation of @v. */
struct Stat {
	double mean;
	double stddev;
	double median;
	double mad;
};
Stat stat(const std::vector<double> &v);

/* @o.rounds, or @def when the user gave none. */
unsigned int roundsOr(const BenchOptions &o, unsigned int def);

/*
 * Boot the machine for bench @name: @o.params, then nr_cpus=@o.cpus (or
 * @defCpus when 0; 0 = the machine's default). Fewer than @minCpus CPUs is
 * a usage error. Prints the machine line. Returns 0, or 2 after printing
 * one line naming the problem.
 */
int bootBench(const char *name, const BenchOptions &o, unsigned int defCpus,
	      unsigned int minCpus);

/* A bench that boots nothing refuses --cpus and boot parameters: 0, or 2 with a line. */
int refuseMachineOptions(const char *name, const BenchOptions &o);

/*
 * Time @ours and @raw side by side: each returns ns per operation for one
 * half-iteration; an iteration runs ours, raw, raw, ours. Prints an Iter
 * line per iteration, one Summary line and the host's load over the run
 * (hostload.h). Returns the statistics of ours, raw and the per-iteration
 * ratio ours/raw, and the host's load.
 */
struct PairStat {
	Stat ours, raw, ratio;
	std::vector<double> oursNs, rawNs;
	HostLoad host;
};

/*
 * Why a goal cannot be judged on @p: "host busy" (hostload.h), "spread
 * N% > 10%" (the ratio's MAD over its median beyond kSpreadBound), or ""
 * when it can.
 */
std::string unjudged(const PairStat &p);

/* The line under a figure that says so, or "" when @p can be judged. */
std::string unjudgedLine(const PairStat &p);
PairStat runPair(const std::string &what, unsigned int iters, const std::function<double()> &ours,
		 const std::function<double()> &raw);

/* "1.234 us" style: @ns scaled to ns, us or ms. */
std::string fmtNs(double ns);

/* Append a row for "bench all" (no-op when not under it). */
void addRow(const BenchOptions &o, const std::string &bench, const PairStat &p,
	    const std::string &goal, bool met);

/*
 * Adds "bench NAME [--iters N] [--rounds N] [--cpus N] [--plot FILE]
 * [BOOT-PARAM ...]" to @app. After app.parse(), benchParsed() says whether
 * it was chosen and runSelectedBench() runs it.
 */
void addBenchSubcommand(CLI::App &app);
bool benchParsed();
int runSelectedBench();

} /* namespace pokelab::bench */
