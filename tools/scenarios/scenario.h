/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pokelab run SCENARIO / pokelab reproduce: the four kernel results, each
 * measured by pokelab beside the figure from its patch mail.
 *
 * A scenario registers itself with a file-scope ScenarioRegistrar. It adds
 * its own options to its "run NAME" subcommand, and gives a reproduce()
 * that runs it at the size `pokelab reproduce` uses (the four together in
 * about 60 s on a 2-vCPU machine). Both boot and shut down their own
 * machine(s), print their report on stdout (opening with a machine line, see
 * reportHeader()), show progress on stderr through Progress (silenced by
 * --quiet), and return the exit status: 0 when the claim checks, 1 when it
 * does not, 2 for bad arguments.
 *
 * Task context, main thread only.
 */
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace pokelab::scenario {

struct Common {
	bool quiet = false;	/* --quiet: no progress on stderr */
};

struct Scenario {
	const char *name;	/* "bpf-stats" */
	const char *seeds;	/* "000/001" */
	const char *help;	/* one line */
	/*
	 * Add this scenario's options to @sub (the "run NAME" subcommand) and
	 * return the function that runs it with them once parsed.
	 */
	int (*(*setup)(CLI::App *sub))(const Common &common);
	/* Run at `pokelab reproduce` size. */
	int (*reproduce)(const Common &common);
};

void registerScenario(const Scenario &s);
const std::vector<Scenario> &scenarios();

struct ScenarioRegistrar {
	explicit ScenarioRegistrar(const Scenario &s) { registerScenario(s); }
};

/*
 * Progress on stderr: "[bpf-stats] refs=global: flip 12/40" rewritten in
 * place with \r, ended with a newline by done(). Nothing when quiet.
 */
class Progress
{
public:
	Progress(const Common &c, const std::string &scenario) : quiet_(c.quiet), name_(scenario) {}
	~Progress() { done(); }
	void stage(const std::string &what);	/* new variant/stage line */
	void step(unsigned long i, unsigned long n);	/* counter within the stage */
	void done();

private:
	bool quiet_;
	bool open_ = false;
	std::string name_;
	std::string stage_;
};

/*
 * The header every table opens with: "== seed NNN: title ==" and the
 * machine line (CPUs, PUs, oversubscription, kernel, sync back-end,
 * sync_core flavour) of the booted machine. Call while booted.
 */
std::string reportHeader(const std::string &seed, const std::string &title);

/*
 * A three-column table (kernel figure | pokelab | ratio/count), rows of
 * {label, kernel, pokelab, claim}; widths fitted to the content.
 */
std::string claimTable(const std::vector<std::vector<std::string>> &rows);

/* Adds "run SCENARIO ..." and "reproduce" to @app. */
void addScenarioCommands(CLI::App &app);
/* After parse: was one of them chosen? Run it. */
bool scenarioParsed();
int runSelectedScenario();

} /* namespace pokelab::scenario */
