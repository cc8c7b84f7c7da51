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
#include <cstring>
#include <strings.h>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <kernel_shim/boot_params.h>

#include "command.h"
#include "near.h"
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

std::string cmdline = "pokelab", program = "pokelab";

} /* namespace */

void setCommandLine(int argc, char **argv)
{
	cmdline = "pokelab";
	program = argc > 0 && argv[0] ? argv[0] : "pokelab";
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

const std::string &programName()
{
	return program;
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
	/* (--help-all indents a command's options 2 columns more, and their text) */
	if (gap == std::string::npos && line[lead] == '-' && line.size() > lead + kOptionColumn - 2)
		col = lead + kOptionColumn - 2;
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

/* "2", "2 and 3", "2, 3 and 4" */
std::string listed(const std::vector<std::string> &v, const char *last = "and")
{
	std::string s;

	for (size_t i = 0; i < v.size(); i++)
		s += (i == 0 ? "" : i + 1 == v.size() ? std::string(" ") + last + " " : ", ") + v[i];
	return s;
}

/*
 * CLI11's help, every line folded at 100 columns (CLI11 2.1 does not wrap),
 * and never two blank lines in a row (CLI11 puts one before a footer, and a
 * footer may start with its own).
 */
class FoldingFormatter : public CLI::Formatter
{
public:
	std::string make_help(const CLI::App *app, std::string name,
			      CLI::AppFormatMode mode) const override
	{
		std::string help = CLI::Formatter::make_help(app, std::move(name), mode), out;
		size_t pos = 0, nl;

		while ((nl = help.find('\n', pos)) != std::string::npos) {
			/* one blank line between parts: a footer's own leading one is not a second */
			if (nl > pos || out.size() < 2 || out.compare(out.size() - 2, 2, "\n\n"))
				out += foldLine(help.substr(pos, nl - pos)) + "\n";
			pos = nl + 1;
		}
		return out + foldLine(help.substr(pos));
	}

	/* under pokelab --help-all: where's and port-patch's help as the tools draw it */
	std::string make_expanded(const CLI::App *sub) const override
	{
		std::string help = externalHelp(sub), out;
		size_t pos = 0, nl;

		if (help.empty())
			return CLI::Formatter::make_expanded(sub);
		out = sub->get_display_name() + "\n";
		while ((nl = help.find('\n', pos)) != std::string::npos) {
			out += nl > pos ? "  " + help.substr(pos, nl - pos) + "\n" : "\n";
			pos = nl + 1;
		}
		return out;
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
	/* a boot parameter, among the command's params */
	{"trace_event=", {"--trace", "--trace-json", "--timeline", "--trace-dir"},
	 "chooses the events a trace records"},
};

int refuseWithoutEffect(const CLI::App *leaf)
{
	for (const Needs &n : needs) {
		bool param = n.opt[strlen(n.opt) - 1] == '=';
		const CLI::Option *o = leaf->get_option_no_throw(param ? "params" : n.opt);
		std::string names, value;
		bool given = false;

		if (!o || !o->count())
			continue;
		for (const std::string &r : o->results())
			if (!param || !r.compare(0, strlen(n.opt), n.opt))
				value = value.empty() ? r : value;
		if (value.empty())
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
		if (param)
			fmt::print(stderr, "pokelab: {}: {}, but no {} was given; expected {} with "
				   "it, or neither\n", value, n.does, names, names);
		else
			fmt::print(stderr, "pokelab: {} {}: {}, but no {} was given; expected {} with "
				   "it, or neither\n", n.opt, value, n.does, names, names);
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
	const char *example;	/* a value, for the line that says a required one is missing */
};

const ValueName valueNames[] = {
	{"--trace", "FILE", "t.txt"},	     {"--trace-json", "FILE", "t.json"},
	{"--results", "FILE", "r.jsonl"},    {"--timeline", "FILE.svg", "t.svg"},
	{"--plot", "FILE.svg", "t.svg"},     {"--output", "FILE.svg", "t.svg"},
	{"--module", "FILE.o", "m.o"},	     {"--trace-dir", "DIR", "traces"},
};

/*
 * A FILE.svg is written as SVG whatever its name: a name that does not end
 * in .svg ("--timeline x.png") is refused before anything boots, by one
 * check for every option that draws (docs/cli.md).
 */
CLI::Validator svgName(const std::string &opt)
{
	return CLI::Validator(
		[opt](std::string &v) -> std::string {
			if (v.empty())
				return fmt::format("\"\": empty file name; expected {} FILE.svg",
						   opt);
			if (v.size() < 5 || strcasecmp(v.c_str() + v.size() - 4, ".svg"))
				return fmt::format("{}: not a .svg name, and what it writes is SVG; "
						   "expected {} FILE.svg", v, opt);
			return "";
		},
		"");
}

void nameValues(CLI::App *app)
{
	for (const ValueName &v : valueNames) {
		CLI::Option *o = app->get_option_no_throw(v.opt);

		if (!o)
			continue;
		o->option_text(std::string(v.name) + (o->get_required() ? " REQUIRED" : ""));
		if (!strcmp(v.name, "FILE.svg"))
			o->check(svgName(v.opt));
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
 * would print --help's text again. pokelab --help-all, every command's
 * help, lists them once, after them all, naming the commands that take them.
 * A command's own default stands beside the program's ("(default: 0, off;
 * torture: 1, on)"), a parameter it refuses says what to give instead: the
 * notes it registered (bootParamDefault(), bootParamRefused()).
 */
struct BootNote {
	const CLI::App *cmd;
	std::string param, text;
	bool refused;
};

std::vector<BootNote> &bootNotes()
{
	static std::vector<BootNote> n;
	return n;
}

/* "nr_cpus=N: CPUs ..." and @cmds' notes on nr_cpus=; @here: the one command's help */
std::string noted(std::string form, const std::vector<const CLI::App *> &cmds, bool here)
{
	std::string name = form.substr(0, form.find_first_of("=:")), head;
	size_t at = form.find("(default: "), end = std::string::npos;

	head = form.substr(0, form.find(':'));
	for (const BootNote &n : bootNotes()) {
		if (n.param != name || std::find(cmds.begin(), cmds.end(), n.cmd) == cmds.end())
			continue;
		if (n.refused && here)
			return fmt::format("{}: refused here: use {}", head, n.text);
		if (n.refused) {
			form += fmt::format(" ({}: refused, use {})", n.cmd->get_name(), n.text);
			continue;
		}
		/* beside the program's default, inside its parentheses */
		if (at != std::string::npos) {
			int depth = 0;

			for (end = at; end < form.size(); end++) {
				depth += form[end] == '(' ? 1 : form[end] == ')' ? -1 : 0;
				if (!depth)
					break;
			}
		}
		if (at == std::string::npos || end >= form.size())
			form += fmt::format(" ({}: default: {})", n.cmd->get_name(), n.text);
		else
			form.insert(end, fmt::format("; {}: {}", n.cmd->get_name(), n.text));
	}
	return form;
}

void bootParamsHelp(CLI::App *leaf)
{
	std::vector<const CLI::App *> cmds;
	std::vector<std::string> takers;

	if (!leaf->get_parent()) {
		for (CLI::App *sc : leaf->get_subcommands([](CLI::App *) { return true; }))
			if (sc->get_option_no_throw("params")) {
				takers.push_back(sc->get_name());
				cmds.push_back(sc);
			}
		if (takers.empty())
			return;
		fmt::print("{}\n", foldLine(fmt::format(
			"Boot parameters of {} (kernel command-line style, after the options; "
			"docs/cli.md):", listed(takers)), 0));
	} else if (leaf->get_option_no_throw("params")) {
		cmds.push_back(leaf);
		fmt::print("Boot parameters (kernel command-line style, after the options; "
			   "docs/cli.md):\n");
	} else {
		return;
	}
	for (const std::string &form : kshim::bootParamForms())
		fmt::print("{}\n", foldLine("  " + noted(form, cmds, leaf->get_parent()), 6));
}

/* The words that name @leaf under pokelab: "demo", "run isolation". */
std::string commandPath(const CLI::App *leaf)
{
	std::string path;

	for (; leaf && leaf->get_parent(); leaf = leaf->get_parent())
		path = leaf->get_name() + (path.empty() ? "" : " " + path);
	return path;
}

/*
 * The options of @leaf one edit or a prefix away from @typed ("--cpu",
 * "--cpus4", "--flip": --cpus, --cpus, --flips); hidden ones left out.
 */
std::vector<std::string> nearOptions(const CLI::App *leaf, const std::string &typed)
{
	std::string t = typed.substr(0, typed.find('='));
	std::vector<std::string> near;

	t.erase(0, t.find_first_not_of('-'));
	if (t.empty())
		return near;
	for (const CLI::Option *o : leaf->get_options()) {
		if (o->get_positional() || o->get_group().empty())
			continue;
		for (const std::string &l : o->get_lnames()) {
			if (pokelab::nearName(t, l) &&
			    std::find(near.begin(), near.end(), "--" + l) == near.end())
				near.push_back("--" + l);
		}
	}
	return near;
}

/* A value option given more than once, which CLI11 refuses: the first of @leaf's or above. */
const CLI::Option *givenTwice(CLI::App *leaf)
{
	for (CLI::App *a = leaf; a; a = a->get_parent())
		for (const CLI::Option *o : a->get_options())
			if (o->get_multi_option_policy() == CLI::MultiOptionPolicy::Throw &&
			    o->count() > (size_t)std::max(o->get_items_expected_max(), 1))
				return o;
	return nullptr;
}

/* "pokelab timeline TRACE --output FILE.svg": what @leaf must be given. */
std::string requiredForm(const CLI::App *leaf)
{
	std::string form = "pokelab " + commandPath(leaf), text;

	for (const CLI::Option *o : leaf->get_options()) {
		if (!o->get_required())
			continue;
		if (o->get_positional()) {
			std::string n = o->get_name(true);

			std::transform(n.begin(), n.end(), n.begin(), ::toupper);
			form += " " + n;
			continue;
		}
		text = o->get_option_text();
		form += " " + o->get_name() + " " + text.substr(0, text.find(" REQUIRED"));
	}
	return form;
}

/* "The SVG to write" -> "the SVG to write" */
std::string lowerFirst(std::string s)
{
	if (s.size() > 1 && isupper((unsigned char)s[0]) && islower((unsigned char)s[1]))
		s[0] = (char)tolower((unsigned char)s[0]);
	return s;
}

/*
 * CLI11's parse errors in pokelab's words, by one rule for every command
 * (docs/cli.md): an option given twice, an unknown one (and the known one
 * it is nearest), a required one missing (its form and an example). Any
 * other error is CLI11's own line. Without the "pokelab: " prefix.
 */
std::string parseErrorLine(CLI::App *app, const CLI::ParseError &e)
{
	CLI::App *leaf = chosenLeaf(app);
	std::string path = commandPath(leaf), of = path.empty() ? "pokelab" : path;

	if (dynamic_cast<const CLI::ArgumentMismatch *>(&e)) {
		const CLI::Option *o = givenTwice(leaf);

		if (!o) {
			/* CLI11's "--flips: 1 required UINT:1..100000 missing": the value left off */
			std::string w = e.what(), name = w.substr(0, w.find(':'));
			const CLI::Option *m = leaf->get_option_no_throw(name);

			std::string form = m ? m->get_type_name() : "";

			if (!m || w.find(" missing") == std::string::npos)
				return w;
			for (const ValueName &v : valueNames)
				if (name == v.opt)
					form = fmt::format("{}, e.g. {} {}", v.name, name, v.example);
			return fmt::format("{}: no value given; expected {} {} (see 'pokelab {} "
					   "--help')", name, name, form, path);
		}
		return fmt::format("{}: given {} ({}); it may be given once", o->get_name(),
				   o->count() == 2 ? std::string("twice")
						   : fmt::format("{} times", o->count()),
				   listed(o->results()));
	}
	/* an unknown option first: CLI11 checks what is required before what is left over */
	bool extra = dynamic_cast<const CLI::ExtrasError *>(&e) != nullptr,
	     required = dynamic_cast<const CLI::RequiredError *>(&e) != nullptr;

	if (extra || required) {
		std::vector<std::string> extras = app->remaining(true);

		for (const std::string &x : extras) {
			std::vector<std::string> near;

			if (x.size() < 2 || x[0] != '-')
				continue;
			near = nearOptions(leaf, x);
			std::string name = x.substr(0, x.find('='));

			if (near.empty())
				return fmt::format("{}: unknown option of {}; see 'pokelab {} "
						   "--help'", name, of, path);
			return fmt::format("{}: unknown option of {}; did you mean {}?", name, of,
					   listed(near, "or"));
		}
		if (extra)
			return fmt::format("{}: unexpected argument{} of {}; see 'pokelab {} "
					   "--help'", listed(extras), extras.size() > 1 ? "s" : "",
					   of, path);
	}
	if (required) {
		for (const CLI::Option *o : leaf->get_options()) {
			std::string name = o->get_name(o->get_positional()), what, example;

			if (!o->get_required() || o->count())
				continue;
			what = lowerFirst(o->get_description());
			for (const ValueName &v : valueNames)
				if (name == v.opt)
					example = fmt::format(", e.g. {} {} {}", commandLine(),
							      name, v.example);
			return fmt::format("{}: no {} given ({}); expected {}{}", path, name, what,
					   requiredForm(leaf), example);
		}
	}
	/* CLI11's "--refs: x not in {percpu,global}": the value first, then every choice */
	std::string w = e.what();
	size_t colon = w.find(": "), in = w.rfind(" not in {");

	if (dynamic_cast<const CLI::ValidationError *>(&e) && w.rfind("--", 0) == 0 &&
	    colon != std::string::npos && in != std::string::npos && in > colon && w.back() == '}') {
		std::string opt = w.substr(0, colon), val = w.substr(colon + 2, in - colon - 2);
		std::string choices = w.substr(in + 9, w.size() - in - 10);

		std::replace(choices.begin(), choices.end(), ',', '|');
		return fmt::format("{} {}: not one of its choices; expected {} {}", opt, val, opt,
				   choices);
	}
	return w;
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

void bootParamDefault(CLI::App *cmd, const std::string &param, const std::string &what)
{
	bootNotes().push_back({cmd, param, what, false});
}

void bootParamRefused(CLI::App *cmd, const std::string &param, const std::string &option)
{
	bootNotes().push_back({cmd, param, option, true});
}

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

	/* an unknown boot parameter with none near sends the user to this command's list */
	kshim::setBootParamsHelpHint(path + " --help-all");
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
		fmt::print(stderr, "pokelab: {}\n", pokelab::parseErrorLine(&app, e));
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
