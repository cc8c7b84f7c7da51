/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pokelab bench: micro-benchmarks of the machinery, printed the way
 * tools/testing/selftests/bpf/bench prints them: one "Iter" line per
 * iteration, then a "Summary:" line of mean ± standard deviation.
 *
 * A benchmark registers itself with a file-scope BenchRegistrar; the CLI
 * adds one "bench NAME" subcommand that runs it. Task context, main thread
 * only; a benchmark boots and shuts down the machine itself if it needs one.
 */
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace pokelab::bench {

struct BenchOptions {
	unsigned int iters = 10;	/* Iter lines */
	unsigned int rounds = 2000;	/* operations timed per iteration */
	unsigned int cpus = 0;		/* nr_cpus, 0 = the machine's default */
	std::vector<std::string> params;	/* extra boot parameters */
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

/* Mean and sample standard deviation of @v. */
struct Stat {
	double mean;
	double stddev;
};
Stat stat(const std::vector<double> &v);

/*
 * Adds "bench NAME [--iters N] [--rounds N] [--cpus N] [BOOT-PARAM ...]" to
 * @app. After app.parse(), benchParsed() says whether it was chosen and
 * runSelectedBench() runs it.
 */
void addBenchSubcommand(CLI::App &app);
bool benchParsed();
int runSelectedBench();

} /* namespace pokelab::bench */
