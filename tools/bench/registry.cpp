// SPDX-License-Identifier: GPL-2.0-only
/*
 * The benchmark registry and the "bench" subcommand.
 */

#include <algorithm>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <kernel_shim/clock.h>

#include "bench.h"
#include "command.h"
#include "options.h"
#include "../stop.h"

namespace pokelab::bench {

namespace {

std::vector<Bench> &table()
{
	static std::vector<Bench> t;
	return t;
}

CLI::App *benchCmd;
std::string selected;
BenchOptions options;

} /* namespace */

void registerBench(const Bench &b)
{
	table().push_back(b);
}

const std::vector<Bench> &benches()
{
	return table();
}

void addBenchSubcommand(CLI::App &app)
{
	std::vector<std::string> names;
	std::string help;

	/* the benchmarks, one a line, after the options (the help wraps them) */
	for (const Bench &b : benches()) {
		names.push_back(b.name);
		help += fmt::format("  {:<13}  {}\n", b.name, b.help);
	}
	names.push_back("all");
	help += fmt::format("  {:<13}  {}\n", "all", "every benchmark, then one markdown table");
	benchCmd = app.add_subcommand("bench", "Benchmark the machinery: one benchmark by NAME "
					       "(listed by bench --help), or all");
	benchCmd->footer("\nBenchmarks:\n" + help);
	/*
	 * Checked in runSelectedBench(), not by CLI11, whose line would name the positional
	 * ("name: foo not in {...}"); the help shows the same form as IsMember's.
	 */
	std::string members;

	for (const std::string &n : names)
		members += (members.empty() ? "" : ",") + n;
	benchCmd->add_option("name", selected, "Benchmark to run")
		->type_name("TEXT:{" + members + "}");
	benchCmd->add_option("--iters", options.iters, "Iterations (default: 10)")
		->check(wholeNumber(1, 1000));
	benchCmd->add_option("--rounds", options.rounds,
			     "Operations per iteration (default: the benchmark's)")
		->check(wholeNumber(1, 10000000));
	benchCmd->add_option("--cpus", options.cpus,
			     "Simulated CPUs (default: the allowed PUs, at least 2); boot "
			     "parameter nr_cpus=")
		->check(wholeNumber(2, 512));
	benchCmd->add_option("--plot", options.plot, "bench scale: write the table as an SVG plot");
	benchCmd->add_option("params", options.params, "Boot parameters (nr_cpus=N ...)");
}

bool benchParsed()
{
	return benchCmd && benchCmd->parsed();
}

namespace {

/*
 * bench all: each benchmark with its defaults, then
 * the rows as one markdown table. Options other than --iters apply to none.
 */
int runAll()
{
	std::vector<BenchRow> rows;
	BenchOptions o;
	int ret = 0;
	u64 t0 = kshim::clockNs();

	if (options.rounds || options.cpus || !options.params.empty() || !options.plot.empty()) {
		fmt::print(stderr, "pokelab: bench all runs every benchmark with its own defaults; "
			   "it takes only --iters (got {})\n",
			   options.rounds ? "--rounds" : options.cpus ? "--cpus"
					    : options.plot.empty() ? options.params.front() : "--plot");
		return 2;
	}
	o.iters = options.iters;
	o.rows = &rows;
	std::string cut;	/* the benchmark the stop came in */

	for (const Bench &b : benches()) {
		fmt::print("\n## bench {}\n\n", b.name);
		fflush(stdout);
		int r = b.run(o);
		if (r)
			ret = r;
		if (stopRequested()) {
			cut = b.name;
			break;
		}
	}
	fmt::print("\n| benchmark | ours | raw | ratio | goal | met |\n|---|---|---|---|---|---|\n");
	for (const BenchRow &r : rows)
		fmt::print("| {} | {} | {} | {:.3f} | {} | {} |\n", r.bench, r.ours, r.raw, r.ratio,
			   r.goal, r.goal == "-" ? "-" : !r.unjudged.empty()
			   ? "not judged: " + r.unjudged : r.met ? "yes" : "no");
	fmt::print("\nbench all: {} rows in {:.1f} s; a ratio is the median of {} per-iteration "
		   "ratios (both sides timed back to back), not ours over raw of the medians\n",
		   rows.size(), (kshim::clockNs() - t0) / 1e9, o.iters);
	if (stopRequested()) {
		fmt::print("bench all: interrupted ({}) in bench {}; the benchmarks after it did "
			   "not run\n", stopSignalName(), cut);
		return stopExitStatus();
	}
	return ret;
}

} /* namespace */

int runSelectedBench()
{
	if (selected.empty()) {
		std::string names;

		for (const Bench &b : benches())
			names += b.name + std::string(", ");
		fmt::print(stderr, "pokelab: bench: expected a benchmark (one of: {}all); try "
			   "'pokelab bench --help'\n", names);
		return 2;
	}
	if (selected != "all" &&
	    std::none_of(benches().begin(), benches().end(),
			 [](const Bench &b) { return selected == b.name; })) {
		std::string names;

		for (const Bench &b : benches())
			names += b.name + std::string(", ");
		fmt::print(stderr, "pokelab: bench: {}: unknown benchmark; expected one of: {}all\n",
			   selected, names);
		return 2;
	}
	/* a second benchmark name among the boot parameters: one benchmark a run, or all */
	for (const std::string &p : options.params)
		if (p == "all" || std::any_of(benches().begin(), benches().end(),
					      [&](const Bench &b) { return p == b.name; })) {
			fmt::print(stderr, "pokelab: bench: {} and {}: one benchmark a run; expected "
				   "pokelab bench NAME, or pokelab bench all\n", selected, p);
			return 2;
		}
	options.itersGiven = benchCmd->count("--iters") > 0;
	options.plotGiven = benchCmd->count("--plot") > 0;
	if (options.plotGiven && selected != "scale") {
		fmt::print(stderr, "pokelab: bench {}: --plot {}: only bench scale draws a plot; "
			   "expected pokelab bench scale --plot FILE.svg\n", selected,
			   options.plot.empty() ? "\"\"" : options.plot);
		return 2;
	}
	/* SIGINT/SIGTERM/SIGHUP end the iterations in progress; the result so far is printed */
	stopOrderly();
	if (selected == "all")
		return runAll();
	for (const Bench &b : benches()) {
		if (selected != b.name)
			continue;
		int ret = b.run(options);

		if (stopRequested()) {
			fmt::print("bench {}: interrupted ({})\n", b.name, stopSignalName());
			return stopExitStatus();
		}
		return ret;
	}
	return 2;
}

namespace {

const CommandRegistrar benchCommand({30, addBenchSubcommand, benchParsed, runSelectedBench});

} /* namespace */

} /* namespace pokelab::bench */
