/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pokelab's subcommands: each registers itself with a file-scope
 * CommandRegistrar (demo, run/reproduce, bench, torture), and pokelab.cpp
 * adds, parses and runs whichever was chosen. Task context, main thread.
 */
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace pokelab {

struct Command {
	int order;			/* place in --help: lower first */
	void (*add)(CLI::App &app);	/* add the subcommand(s) and their options */
	bool (*parsed)();		/* after parsing: was it chosen? */
	int (*run)();			/* run it: the process's exit status */
};

void registerCommand(const Command &c);
/* Every registered command, by order. */
std::vector<Command> commands();

struct CommandRegistrar {
	explicit CommandRegistrar(const Command &c) { registerCommand(c); }
};

/*
 * The command line pokelab was run with, "pokelab explain int3-batch
 * --timeline t.svg" (an argument with a space or a quote quoted): what a
 * timeline's title names. main() sets it before parsing.
 */
void setCommandLine(int argc, char **argv);
const std::string &commandLine();
/* argv[0] as pokelab was run ("build/tools/pokelab"): what a help's Usage: line names. */
const std::string &programName();
/*
 * The help of a command another program draws (where and port-patch, the
 * Python tools), as that program prints it for --help; "" for the others.
 * pokelab --help-all shows it under the command. Task context (it runs
 * the tool and waits for it).
 */
std::string externalHelp(const CLI::App *cmd);

/*
 * A boot parameter whose default @cmd's boot sets otherwise ("torture: the
 * PUs, at least 4"), or that @cmd refuses (@option: what to give instead):
 * --help-all shows @what beside the parameter's default, and leaves a refused
 * parameter out, naming @option. The command reads the same constants for
 * both, so that its help cannot say another default than it boots with.
 */
void bootParamDefault(CLI::App *cmd, const std::string &param, const std::string &what);
void bootParamRefused(CLI::App *cmd, const std::string &param, const std::string &option);

/* Exit status of bad input everywhere: one line naming the value, then 2. */
inline constexpr int kExitUsage = 2;

} /* namespace pokelab */
