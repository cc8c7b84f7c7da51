// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab: the command line.
 *
 *	pokelab demo [--cpus N] [--flips N] [BOOT-PARAM ...]
 *
 * Bad arguments print one line naming the value and the accepted form and
 * exit with status 2.
 */
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <kernel_shim/boot.h>

#include "demo/bpf_stats.h"

namespace {

constexpr int kExitUsage = 2;

int usageError(const std::string &msg)
{
	fmt::print(stderr, "pokelab: {}\n", msg);
	return kExitUsage;
}

std::string joinParams(const std::vector<std::string> &params)
{
	std::string s;

	for (const std::string &p : params)
		s += (s.empty() ? "" : " ") + p;
	return s;
}

struct DemoOptions {
	unsigned int cpus = 0;	/* 0 = the machine's default */
	unsigned int flips = 20;
	std::vector<std::string> params;
};

int runDemo(const DemoOptions &o)
{
	std::string cmdline = joinParams(o.params);
	std::string err;

	if (o.cpus)
		cmdline += fmt::format(" nr_cpus={}", o.cpus);
	if (kshim::boot(cmdline, &err))
		return usageError(err);
	if (nr_cpu_ids < 2) {
		kshim::shutdown();
		return usageError(fmt::format("the demo needs at least 2 CPUs (CPU 0 patches, the "
					      "others run the sites); got nr_cpus={}", nr_cpu_ids));
	}

	fmt::print("{}\n", kshim::machineLine());
	fmt::print("demo: {} bpf_prog_run() sites of bpf_stats_enabled_key on CPUs 1-{}; CPU 0 "
		   "flips kernel.bpf_stats_enabled {} times\n\n",
		   pokelab::kNrBpfSites, nr_cpu_ids - 1, o.flips);
	std::fflush(stdout);

	pokelab::BpfStatsConfig cfg;
	cfg.flips = o.flips;
	cfg.onFlip = [](unsigned int, unsigned int nr, u64 ns) {
		fmt::print("smp_text_poke_batch_finish(nr_entries={}): took {} usec\n", nr,
			   ns / 1000);
		std::fflush(stdout);
	};
	pokelab::BpfStatsResult r = pokelab::runBpfStats(cfg);
	fmt::print("{}", pokelab::formatBpfStats(r));
	kshim::shutdown();
	return r.ok() ? 0 : 1;
}

} /* namespace */

int main(int argc, char **argv)
{
	CLI::App app{"pokelab: Linux x86 live text patching and context tracking, in userspace"};
	DemoOptions demo;

	app.require_subcommand(1);
	app.set_help_all_flag("--help-all", "Show help for every subcommand");

	CLI::App *d = app.add_subcommand(
		"demo", "Flip a 164-site static key while the other CPUs run the sites, and check "
			"that no CPU runs stale text");
	d->add_option("--cpus", demo.cpus, "Simulated CPUs (2..512; default: the allowed PUs)")
		->check(CLI::Range(2u, 512u));
	d->add_option("--flips", demo.flips, "Key flips (1..100000)")
		->check(CLI::Range(1u, 100000u));
	d->add_option("params", demo.params,
		      "Boot parameters, kernel command-line style (nr_cpus=N nohz_full=LIST ...)");

	try {
		app.parse(argc, argv);
	} catch (const CLI::CallForHelp &e) {
		return app.exit(e);
	} catch (const CLI::CallForAllHelp &e) {
		return app.exit(e);
	} catch (const CLI::ParseError &e) {
		return usageError(e.what());
	}

	if (d->parsed())
		return runDemo(demo);
	return usageError("no command given; try 'pokelab --help'");
}
