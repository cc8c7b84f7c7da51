// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab run / pokelab reproduce: the scenario registry and shared report
 * helpers.
 */
#include <algorithm>
#include <cstdio>

#include <CLI/CLI.hpp>
#include <unistd.h>

#include <fmt/format.h>

#include <kernel_shim/boot.h>

#include "command.h"
#include "options.h"
#include "scenario.h"
#include "stop.h"
#include "timeline/timeline.h"

namespace pokelab::scenario {

namespace {

std::vector<Scenario> &table()
{
	static std::vector<Scenario> t;
	return t;
}

Common common;
CLI::App *runCmd;
CLI::App *reproduceCmd;
std::vector<std::pair<CLI::App *, int (*)(const Common &)>> runners;

} /* namespace */

void registerScenario(const Scenario &s)
{
	table().push_back(s);
}

const std::vector<Scenario> &scenarios()
{
	return table();
}

void Progress::stage(const std::string &what)
{
	done();
	stage_ = what;
	if (quiet_)
		return;
	/* a whole line: whatever prints next (the boot's smp: line) starts on its own */
	fmt::print(stderr, "[{}] {}\n", name_, stage_);
	std::fflush(stderr);
}

void Progress::step(unsigned long i, unsigned long n)
{
	/* a counter rewritten with \r is for a terminal; a log gets the stage lines only */
	static const bool tty = isatty(STDERR_FILENO);

	if (quiet_ || !tty)
		return;
	fmt::print(stderr, "\r[{}] {}: {}/{}", name_, stage_, i, n);
	std::fflush(stderr);
	open_ = true;
}

void Progress::done()
{
	if (quiet_ || !open_)
		return;
	fmt::print(stderr, "\n");
	open_ = false;
}

std::string reportHeader(const std::string &cases, const std::string &title)
{
	return fmt::format("\n== case {}: {} ==\n{}\n", cases, title, kshim::machineLine());
}

std::string claimTable(const std::vector<std::vector<std::string>> &rows)
{
	std::vector<std::vector<std::string>> all = {{"", "kernel (patch mail)", "pokelab",
						      "ratio / count"}};
	std::vector<size_t> w(4, 0);
	std::string out;

	all.insert(all.end(), rows.begin(), rows.end());
	for (const auto &r : all)
		for (size_t i = 0; i < 4 && i < r.size(); i++)
			w[i] = std::max(w[i], r[i].size());
	for (const auto &r : all) {
		for (size_t i = 0; i < 4; i++) {
			std::string cell = i < r.size() ? r[i] : "";

			out += fmt::format("{:<{}}{}", cell, w[i], i < 3 ? " | " : "\n");
		}
	}
	return out;
}

void addScenarioCommands(CLI::App &app)
{
	runCmd = app.add_subcommand("run", "Run one scenario that reproduces a kernel result");
	runCmd->require_subcommand(1);
	runCmd->add_flag("--quiet", common.quiet, "No progress on stderr");
	for (const Scenario &s : scenarios()) {
		/* a scenario of one's own (docs/tutorial.md) may reproduce no case: "-" */
		bool reproduces = s.cases && *s.cases && std::string(s.cases) != "-";
		CLI::App *sub = runCmd->add_subcommand(
			s.name, reproduces ? fmt::format("case {}: {}", s.cases, s.help) : s.help);

		sub->add_flag("--quiet", common.quiet, "No progress on stderr");
		/*
		 * A scenario with nothing to draw does not list --timeline; it
		 * takes it only to refuse it saying why (runSelectedScenario()).
		 */
		if (s.noTimeline) {
			sub->add_option("--timeline", common.timeline)->group("");
			runners.push_back({sub, s.setup(sub)});
			continue;
		}
		sub->add_option("--timeline", common.timeline,
				"Draw every machine the run boots as an SVG timeline, one under the "
				"other (docs/timeline.md)");
		sub->add_option("--timeline-window", common.timelineWindow,
				"Seconds of each machine the timeline keeps, the last ones "
				"(default: 10)")
			->check(timelineWindowCheck());
		addTimelineGapOption(sub);
		runners.push_back({sub, s.setup(sub)});
	}

	reproduceCmd = app.add_subcommand(
		"reproduce", "Run every scenario at a size that takes under a minute (about 25 s "
			     "on 2 PUs) and print each case's table");
	reproduceCmd->add_flag("--quiet", common.quiet, "No progress on stderr");
}

bool scenarioParsed()
{
	return (runCmd && runCmd->parsed()) || (reproduceCmd && reproduceCmd->parsed());
}

int runSelectedScenario()
{
	if (reproduceCmd && reproduceCmd->parsed()) {
		int worst = 0;

		for (const Scenario &s : scenarios()) {
			worst = std::max(worst, s.reproduce(common));
			/* A scenario that stops in order was interrupted: run no more. */
			if (pokelab::stopRequested()) {
				fmt::print("reproduce: interrupted ({}) after {}\n",
					   pokelab::stopSignalName(), s.name);
				return pokelab::stopExitStatus();
			}
		}
		return worst;
	}
	for (size_t i = 0; i < runners.size(); i++) {
		const Scenario &s = scenarios()[i];

		if (!runners[i].first->parsed())
			continue;
		if (!common.timeline.empty() && s.noTimeline) {
			fmt::print(stderr, "pokelab: run {}: --timeline {}: {}; expected it with "
				   "bpf-stats or isolation\n", s.name, common.timeline,
				   s.noTimeline);
			return 2;
		}
		return runners[i].second(common);
	}
	return 2;
}

namespace {

const CommandRegistrar scenarioCommands({20, addScenarioCommands, scenarioParsed,
					 runSelectedScenario});

} /* namespace */

} /* namespace pokelab::scenario */
