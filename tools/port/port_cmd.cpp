// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab where NAME / pokelab port-patch PATCH...: the map from kernel to
 * port, and kernel-tree patches applied to it. Both are the Python tools
 * beside port-drift (tools/port-where, tools/port-patch), which share its
 * code reducer; this runs them in place of itself (docs/porting.md says why
 * they live there). Task context, main thread, before any CPU boots.
 */
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "command.h"

namespace pokelab {

namespace {

CLI::App *whereCmd, *patchCmd;

void add(CLI::App &app)
{
	whereCmd = app.add_subcommand("where", "Where the port keeps a kernel function, struct or "
				      "macro (and the reverse), with its drift verdict");
	whereCmd->prefix_command();
	/* --help and --help-all go to the tool, which draws them as CLI11 does (clihelp.py) */
	whereCmd->set_help_flag();
	whereCmd->set_help_all_flag();
	whereCmd->footer("Usage: pokelab where [--upstream DIR] NAME...   (pokelab where --help "
			 "for the options)");
	patchCmd = app.add_subcommand("port-patch", "Apply patches written against the Linux 7.3 "
				      "tree (git diff, git format-patch, a b4 am mbox) to the port; "
				      "--torture for a verdict");
	patchCmd->prefix_command();
	patchCmd->set_help_flag();
	patchCmd->set_help_all_flag();
	patchCmd->footer("Usage: pokelab port-patch [OPTIONS] PATCH... [--torture [TORTURE-OPTIONS]]"
			 "   (pokelab port-patch --help for the options)");
}

/* The tool's file in the source tree this pokelab was built from. */
std::string toolPath(const CLI::App *cmd)
{
	return std::string(POKELAB_SOURCE_ROOT) + "/tools/" +
	       (cmd == whereCmd ? "port-where" : "port-patch");
}

bool parsed()
{
	return whereCmd->parsed() || patchCmd->parsed();
}

/* Run the tool in place of this process, signals as a fresh process has them. */
int run()
{
	CLI::App *cmd = whereCmd->parsed() ? whereCmd : patchCmd;
	std::string tool = toolPath(cmd);
	std::vector<std::string> args = cmd->remaining();
	std::vector<char *> argv;
	sigset_t all;

	argv.push_back(const_cast<char *>("/usr/bin/python3"));
	argv.push_back(const_cast<char *>(tool.c_str()));
	for (std::string &a : args)
		argv.push_back(a.data());
	argv.push_back(nullptr);
	if (access(tool.c_str(), R_OK)) {
		fmt::print(stderr, "pokelab: {}: {}: {} (the source tree this pokelab was built "
			   "from)\n", cmd->get_name(), tool, strerror(errno));
		return kExitUsage;
	}
	/* stopInit() blocked these for its watcher thread; the tool takes its own */
	sigfillset(&all);
	pthread_sigmask(SIG_UNBLOCK, &all, nullptr);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	setenv("POKELAB_BIN", "/proc/self/exe", 0);
	/* the name a help's Usage: line gives, as CLI11's does for the other commands */
	setenv("POKELAB_PROG", programName().c_str(), 1);
	execv(argv[0], argv.data());
	fmt::print(stderr, "pokelab: {}: cannot run /usr/bin/python3: {} (tools/install-deps.sh "
		   "installs it)\n", cmd->get_name(), strerror(errno));
	return kExitUsage;
}

CommandRegistrar reg({80, add, parsed, run});

} /* namespace */

std::string externalHelp(const CLI::App *cmd)
{
	std::string tool, out;
	char buf[4096];
	size_t n;
	FILE *f;

	if (!cmd || (cmd != whereCmd && cmd != patchCmd))
		return "";
	tool = toolPath(cmd);
	if (access(tool.c_str(), R_OK))
		return "";
	/* the name its Usage: line gives, as run() passes it */
	setenv("POKELAB_PROG", programName().c_str(), 1);
	setenv("POKELAB_HELP_INDENT", "2", 1);	/* folded to fit 2 columns in */
	std::fflush(stdout);
	f = popen(fmt::format("/usr/bin/python3 '{}' --help 2>&1", tool).c_str(), "r");
	if (!f)
		return "";
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		out.append(buf, n);
	return pclose(f) == 0 ? out : "";
}

} /* namespace pokelab */
