// SPDX-License-Identifier: GPL-2.0-only
/*
 * The benchmark registry and the "bench" subcommand.
 */
#include <cmath>
#include <ctime>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <kernel_shim/clock.h>

#include "bench.h"
#include "command.h"

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

Stat stat(const std::vector<double> &v)
{
	double sum = 0, sq = 0;

	if (v.empty())
		return {0, 0};
	for (double x : v)
		sum += x;
	double mean = sum / v.size();
	for (double x : v)
		sq += (x - mean) * (x - mean);
	return {mean, v.size() > 1 ? std::sqrt(sq / (v.size() - 1)) : 0};
}

void addBenchSubcommand(CLI::App &app)
{
	std::vector<std::string> names;
	std::string help;

	for (const Bench &b : benches()) {
		names.push_back(b.name);
		help += fmt::format("{}{}: {}", help.empty() ? "" : "; ", b.name, b.help);
	}
	benchCmd = app.add_subcommand("bench", "Benchmark the machinery (" + help + ")");
	benchCmd->add_option("name", selected, "Benchmark to run")
		->required()
		->check(CLI::IsMember(names));
	benchCmd->add_option("--iters", options.iters, "Iterations (1..1000)")
		->check(CLI::Range(1u, 1000u));
	benchCmd->add_option("--rounds", options.rounds, "Operations per iteration (1..10000000)")
		->check(CLI::Range(1u, 10000000u));
	benchCmd->add_option("--cpus", options.cpus,
			     "Simulated CPUs (2..512; default: the allowed PUs)")
		->check(CLI::Range(2u, 512u));
	benchCmd->add_option("params", options.params, "Boot parameters (nr_cpus=N ...)");
}

bool benchParsed()
{
	return benchCmd && benchCmd->parsed();
}

int runSelectedBench()
{
	for (const Bench &b : benches())
		if (selected == b.name)
			return b.run(options);
	return 2;
}

namespace {

const CommandRegistrar benchCommand({30, addBenchSubcommand, benchParsed, runSelectedBench});

} /* namespace */

} /* namespace pokelab::bench */
