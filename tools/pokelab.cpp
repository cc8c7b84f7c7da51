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

namespace {

std::string cmdline = "pokelab";

} /* namespace */

void setCommandLine(int argc, char **argv)
{
	cmdline = "pokelab";
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];

		if (!a.empty() && a.find_first_of(" \t'\"\\$`*?") == std::string::npos) {
			cmdline += " " + a;
			continue;
		}
		/* single quotes, each ' in it as '\'' */
		cmdline += " '";
		for (char c : a)
			cmdline += c == '\'' ? std::string("'\\''") : std::string(1, c);
		cmdline += "'";
	}
}

const std::string &commandLine()
{
	return cmdline;
}

std::vector<Command> commands()
{
	std::vector<Command> c = table();

	std::sort(c.begin(), c.end(), [](const Command &a, const Command &b) {
		return a.order < b.order;
	});
	return c;
}

namespace {

constexpr size_t kHelpColumns = 100;

/*
 * Fold one help line at @kHelpColumns. A continuation starts under the
 * line's text column: where a run of two or more spaces after the first
 * word ends (an option's or a subcommand's description, a footer's table),
 * else under the line's own indent.
 */
std::string foldLine(const std::string &line)
{
	size_t lead = line.find_first_not_of(' '), col, gap;
	std::string out, rest = line;

	if (line.size() <= kHelpColumns || lead == std::string::npos)
		return line;
	gap = line.find("  ", line.find(' ', lead));
	col = gap != std::string::npos && gap < kHelpColumns / 2 ?
		      line.find_first_not_of(' ', gap) : lead;
	if (col == std::string::npos || col >= kHelpColumns / 2)
		col = lead;
	while (rest.size() > kHelpColumns) {
		size_t cut = rest.rfind(' ', kHelpColumns), next;

		/* no space to break at past the text column: leave the word whole */
		if (cut == std::string::npos || cut <= col)
			cut = rest.find(' ', kHelpColumns);
		if (cut == std::string::npos)
			break;
		next = rest.find_first_not_of(' ', cut);
		if (next == std::string::npos) {	/* only spaces after it */
			rest.resize(cut);
			break;
		}
		out += rest.substr(0, cut) + "\n";
		rest = std::string(col, ' ') + rest.substr(next);
	}
	return out + rest;
}

/* CLI11's help, every line folded at 100 columns (CLI11 2.1 does not wrap). */
class FoldingFormatter : public CLI::Formatter
{
public:
	std::string make_help(const CLI::App *app, std::string name,
			      CLI::AppFormatMode mode) const override
	{
		std::string help = CLI::Formatter::make_help(app, std::move(name), mode), out;
		size_t pos = 0, nl;

		while ((nl = help.find('\n', pos)) != std::string::npos) {
			out += foldLine(help.substr(pos, nl - pos)) + "\n";
			pos = nl + 1;
		}
		return out + foldLine(help.substr(pos));
	}
};

} /* namespace */

} /* namespace pokelab */

int main(int argc, char **argv)
{
	CLI::App app{"pokelab: Linux x86 live text patching and context tracking, in userspace"};
	std::vector<pokelab::Command> cmds;

	/* before the subcommands are added: they take their parent's formatter */
	app.formatter(std::make_shared<pokelab::FoldingFormatter>());
	cmds = pokelab::commands();

	pokelab::setCommandLine(argc, argv);
	app.require_subcommand(1);
	app.set_help_all_flag("--help-all", "Show help for every subcommand");
	for (const pokelab::Command &c : cmds)
		c.add(app);

	app.set_version_flag("--version", std::string("pokelab ") + POKELAB_VERSION);

	/*
	 * CLI11 would only say that a subcommand is required: name the word it
	 * got, at each level ("pokelab run nosuch": the scenario).
	 */
	CLI::App *level = &app;
	std::string path = "pokelab";
	auto what = [&app](const CLI::App *l) { return l == &app ? "command" : "scenario"; };

	for (int i = 1; i <= argc && (i == argc || argv[i][0] != '-'); i++) {
		std::vector<CLI::App *> subs =
			level->get_subcommands([](CLI::App *) { return true; });
		std::string names;
		CLI::App *next = nullptr;

		if (subs.empty())
			break;
		if (i == argc) {
			for (CLI::App *sc : subs)
				names += (names.empty() ? "" : ", ") + sc->get_name();
			fmt::print(stderr, "{}: expected a {} (one of: {}); try '{} --help'\n", path,
				   what(level), names, path);
			return pokelab::kExitUsage;
		}
		for (CLI::App *sc : subs) {
			if (sc->get_name() == argv[i])
				next = sc;
			names += (names.empty() ? "" : ", ") + sc->get_name();
		}
		if (!next) {
			fmt::print(stderr, "{}: {}: unknown {}; expected one of: {}\n", path,
				   argv[i], what(level), names);
			return pokelab::kExitUsage;
		}
		path += std::string(" ") + argv[i];
		level = next;
	}

	try {
		app.parse(argc, argv);
	} catch (const CLI::CallForHelp &e) {
		return app.exit(e);
	} catch (const CLI::CallForAllHelp &e) {
		return app.exit(e);
	} catch (const CLI::CallForVersion &e) {
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
