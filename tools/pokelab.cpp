// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab: the command line.
 *
 *	pokelab demo [--cpus N] [--flips N] [--trace FILE] [--trace-json FILE]
 *		     [--trace-cpus LIST] [--refs M] [--sync B] [--nohz-full LIST]
 *		     [--ct-defer P] [--isolated-in-kernel] [BOOT-PARAM ...]
 *	pokelab run [--quiet] SCENARIO [options]	(bpf-stats, isolation, alternatives,
 *	pokelab reproduce [--quiet]			 recursion; reproduce: all four)
 *	pokelab bench NAME [--iters N] [--rounds N] [--cpus N] [BOOT-PARAM ...]
 *	pokelab torture [--duration S] [--seed N] [--ops K] [--cpus N]
 *			[--nohz-full LIST] [--ct-defer P] [BOOT-PARAM ...]
 *
 * Each subcommand registers itself (command.h). Bad arguments print one
 * line naming the value and the accepted form and exit with status 2.
 */
#include <algorithm>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "command.h"
#include "stop.h"

namespace pokelab {

namespace {

std::vector<Command> &table()
{
	static std::vector<Command> t;
	return t;
}

} /* namespace */

void registerCommand(const Command &c)
{
	table().push_back(c);
}

std::vector<Command> commands()
{
	std::vector<Command> c = table();

	std::sort(c.begin(), c.end(), [](const Command &a, const Command &b) {
		return a.order < b.order;
	});
	return c;
}

} /* namespace pokelab */

int main(int argc, char **argv)
{
	CLI::App app{"pokelab: Linux x86 live text patching and context tracking, in userspace"};
	std::vector<pokelab::Command> cmds = pokelab::commands();

	app.require_subcommand(1);
	app.set_help_all_flag("--help-all", "Show help for every subcommand");
	for (const pokelab::Command &c : cmds)
		c.add(app);

	/* CLI11 would only say that a subcommand is required: name the word it got. */
	if (argc > 1 && argv[1][0] != '-') {
		std::string names;
		bool known = false;

		for (const CLI::App *sc : app.get_subcommands([](CLI::App *) { return true; })) {
			known |= sc->get_name() == argv[1];
			names += (names.empty() ? "" : ", ") + sc->get_name();
		}
		if (!known) {
			fmt::print(stderr, "pokelab: {}: unknown command; expected one of: {}\n",
				   argv[1], names);
			return pokelab::kExitUsage;
		}
	}

	try {
		app.parse(argc, argv);
	} catch (const CLI::CallForHelp &e) {
		return app.exit(e);
	} catch (const CLI::CallForAllHelp &e) {
		return app.exit(e);
	} catch (const CLI::ParseError &e) {
		fmt::print(stderr, "pokelab: {}\n", e.what());
		return pokelab::kExitUsage;
	}

	/* Before any thread exists: SIGINT, SIGTERM, SIGHUP go to one watcher (stop.h). */
	pokelab::stopInit();
	for (const pokelab::Command &c : cmds)
		if (c.parsed())
			return c.run();
	fmt::print(stderr, "pokelab: no command given; try 'pokelab --help'\n");
	return pokelab::kExitUsage;
}
