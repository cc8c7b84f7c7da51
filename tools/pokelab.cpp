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
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <kernel_shim/boot_params.h>

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
constexpr size_t kOptionColumn = 30;	/* CLI11's description column */

/*
 * Fold one help line at @kHelpColumns. A continuation starts under the
 * line's text column: where a run of two or more spaces after the first
 * word ends (an option's or a subcommand's description, a footer's table),
 * else under the line's own indent; or at @hang where one is given.
 */
std::string foldLine(const std::string &line, size_t hang = std::string::npos)
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
	/* an option whose name fills CLI11's column has one space before its text: column 30 */
	if (gap == std::string::npos && line[lead] == '-' && line.size() > kOptionColumn)
		col = kOptionColumn;
	if (hang != std::string::npos)
		col = hang;
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

/*
 * An option without effect is refused, by one rule (docs/cli.md): an option
 * that only shapes another's output needs one of those others given. The
 * line names the option, its value, what it does, and what is missing.
 */
struct Needs {
	const char *opt;
	std::vector<const char *> any;	/* at least one of these, where the command has it */
	const char *does;
};

const Needs needs[] = {
	{"--timeline-window", {"--timeline"}, "sets how much of the run the timeline keeps"},
	{"--timeline-gap", {"--timeline"}, "sets where the timeline breaks its time axis"},
	{"--trace-cpus", {"--trace", "--trace-json", "--timeline"}, "filters a trace"},
	{"--trace-format", {"--trace"}, "sets the format of --trace FILE"},
};

int refuseWithoutEffect(const CLI::App *leaf)
{
	for (const Needs &n : needs) {
		const CLI::Option *o = leaf->get_option_no_throw(n.opt);
		std::string names;
		bool given = false;

		if (!o || !o->count())
			continue;
		for (const char *other : n.any) {
			const CLI::Option *w = leaf->get_option_no_throw(other);

			if (!w)
				continue;
			given |= w->count() > 0;
			names += std::string(names.empty() ? "" : " or ") + other;
		}
		if (given || names.empty())
			continue;
		fmt::print(stderr, "pokelab: {} {}: {}, but no {} was given; expected {} with it, "
			   "or neither\n", n.opt, o->results().empty() ? "" : o->results()[0],
			   n.does, names, names);
		return kExitUsage;
	}
	return 0;
}

/*
 * One name for a value of one kind, whichever command takes it (docs/cli.md):
 * a file written is FILE, FILE.svg where it is a picture; a module object to
 * load FILE.o; a directory DIR. CLI11 names a value by its C++ type and its
 * check ("TEXT", "TEXT:FILE", "TEXT:FILE.svg"), which differed by command for
 * the same kind of option.
 */
struct ValueName {
	const char *opt;
	const char *name;
};

const ValueName valueNames[] = {
	{"--trace", "FILE"},	       {"--trace-json", "FILE"}, {"--results", "FILE"},
	{"--timeline", "FILE.svg"},    {"--plot", "FILE.svg"},	 {"--output", "FILE.svg"},
	{"--module", "FILE.o"},	       {"--trace-dir", "DIR"},
};

void nameValues(CLI::App *app)
{
	for (const ValueName &v : valueNames) {
		CLI::Option *o = app->get_option_no_throw(v.opt);

		if (o)
			o->option_text(std::string(v.name) + (o->get_required() ? " REQUIRED" : ""));
	}
	for (CLI::App *sc : app->get_subcommands([](CLI::App *) { return true; }))
		nameValues(sc);
}

/* The command chosen, its scenario if it has one: the innermost subcommand parsed. */
CLI::App *chosenLeaf(CLI::App *app)
{
	while (!app->get_subcommands().empty())
		app = app->get_subcommands().front();
	return app;
}

/*
 * --help-all on a command that takes boot parameters (demo, torture, bench,
 * explain): after its help, every boot parameter's accepted form, which
 * --help only hints at ("nr_cpus=N nohz_full=LIST ..."). CLI11's --help-all
 * shows the subcommands' help too, and a leaf has none: without this it
 * would print --help's text again.
 */
void bootParamsHelp(const CLI::App *leaf)
{
	if (!leaf->get_option_no_throw("params"))
		return;
	fmt::print("Boot parameters (kernel command-line style, after the options; docs/cli.md):\n");
	for (const std::string &form : kshim::bootParamForms())
		fmt::print("{}\n", foldLine("  " + form, 6));
}

/*
 * The words of @argv that are not options of pokelab itself before the
 * command: "pokelab --cpus 4 demo" is told where options go.
 */
int refuseOptionsBeforeCommand(CLI::App &app, int argc, char **argv)
{
	std::string opt = argv[1];

	if (opt == "--help" || opt == "-h" || opt == "--help-all" || opt == "--version")
		return 0;
	for (int i = 2; i < argc; i++)
		for (CLI::App *sc : app.get_subcommands([](CLI::App *) { return true; }))
			if (sc->get_name() == argv[i]) {
				fmt::print(stderr, "pokelab: {}: not an option of pokelab itself; "
					   "options go after the command: pokelab {} {} ...\n", opt,
					   argv[i], opt);
				return kExitUsage;
			}
	return 0;
}

} /* namespace */

} /* namespace pokelab */

int main(int argc, char **argv)
{
	CLI::App app{"pokelab: Linux x86 live text patching and context tracking, in userspace"};
	std::vector<pokelab::Command> cmds;

	/*
	 * Whole lines on stdout, written as each ends: a line on stderr (the
	 * boot's smp: line, a warning) never lands inside one when both go to
	 * one pipe, and progress lines come as they are printed.
	 */
	setvbuf(stdout, nullptr, _IOLBF, 0);

	/* before the subcommands are added: they take their parent's formatter */
	app.formatter(std::make_shared<pokelab::FoldingFormatter>());
	cmds = pokelab::commands();

	pokelab::setCommandLine(argc, argv);
	app.require_subcommand(1);
	app.set_help_all_flag("--help-all", "Show help for every subcommand, and every boot "
			      "parameter where the command takes them");
	for (const pokelab::Command &c : cmds)
		c.add(app);
	pokelab::nameValues(&app);

	app.set_version_flag("--version", std::string("pokelab ") + POKELAB_VERSION);

	/*
	 * CLI11 would only say that a subcommand is required: name the word it
	 * got, at each level ("pokelab run nosuch": the scenario).
	 */
	CLI::App *level = &app;
	std::string path = "pokelab";
	auto what = [&app](const CLI::App *l) { return l == &app ? "command" : "scenario"; };

	if (argc > 1 && argv[1][0] == '-' && pokelab::refuseOptionsBeforeCommand(app, argc, argv))
		return pokelab::kExitUsage;
	for (int i = 1; i <= argc; i++) {
		std::vector<CLI::App *> subs =
			level->get_subcommands([](CLI::App *) { return true; });
		std::string names;
		CLI::App *next = nullptr;

		if (subs.empty())
			break;
		/* a flag of this level before the word ("run --quiet isolation") */
		if (i < argc && argv[i][0] == '-') {
			const CLI::Option *f = level->get_option_no_throw(argv[i]);

			if (f && f->get_expected_max() == 0 && level != &app &&
			    f != level->get_help_ptr() && f != level->get_help_all_ptr())
				continue;
			break;
		}
		if (i == argc) {
			for (CLI::App *sc : subs)
				names += (names.empty() ? "" : ", ") + sc->get_name();
			fmt::print(stderr,
				   "pokelab: {}expected a {} (one of: {}); try '{} --help'\n",
				   level == &app ? "" : path.substr(8) + ": ", what(level), names,
				   path);
			return pokelab::kExitUsage;
		}
		for (CLI::App *sc : subs) {
			if (sc->get_name() == argv[i])
				next = sc;
			names += (names.empty() ? "" : ", ") + sc->get_name();
		}
		if (!next) {
			fmt::print(stderr, "pokelab: {}{}: unknown {}; expected one of: {}\n",
				   level == &app ? "" : path.substr(8) + ": ", argv[i], what(level),
				   names);
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
		int ret = app.exit(e);

		pokelab::bootParamsHelp(pokelab::chosenLeaf(&app));
		return ret;
	} catch (const CLI::CallForVersion &e) {
		return app.exit(e);
	} catch (const CLI::ParseError &e) {
		fmt::print(stderr, "pokelab: {}\n", e.what());
		return pokelab::kExitUsage;
	}

	/* the chosen command, its subcommand if it has one: an option without effect is refused */
	if (pokelab::refuseWithoutEffect(pokelab::chosenLeaf(&app)))
		return pokelab::kExitUsage;

	/* Before any thread exists: SIGINT, SIGTERM, SIGHUP go to one watcher (stop.h). */
	pokelab::stopInit();
	for (const pokelab::Command &c : cmds)
		if (c.parsed())
			return c.run();
	fmt::print(stderr, "pokelab: no command given; try 'pokelab --help'\n");
	return pokelab::kExitUsage;
}
