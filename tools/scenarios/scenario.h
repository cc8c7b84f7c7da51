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

namespace kshim {
struct TraceSnapshot;
}

namespace pokelab::scenario {

struct Common {
	bool quiet = false;	/* --quiet: no progress on stderr */
	std::string timeline;	/* --timeline: every machine the run boots, one SVG */
	double timelineWindow = 10;	/* --timeline-window: the last seconds of each */
};

struct Scenario {
	const char *name;	/* "bpf-stats" */
	const char *cases;	/* "000/001": the cases of docs/reproduction.md; "-": none */
	const char *help;	/* one line */
	/*
	 * Add this scenario's options to @sub (the "run NAME" subcommand) and
	 * return the function that runs it with them once parsed.
	 */
	int (*(*setup)(CLI::App *sub))(const Common &common);
	/* Run at `pokelab reproduce` size. */
	int (*reproduce)(const Common &common);
	/*
	 * Why --timeline has nothing to draw for this scenario (no text is
	 * patched while other CPUs run), or nullptr when it draws one (it
	 * records through ScenarioTimeline). A scenario that says nothing draws
	 * none, and --timeline is refused.
	 */
	const char *noTimeline = "it records no timeline (a scenario draws one through "
				 "ScenarioTimeline, docs/timeline.md)";
};

void registerScenario(const Scenario &s);
const std::vector<Scenario> &scenarios();

struct ScenarioRegistrar {
	explicit ScenarioRegistrar(const Scenario &s) { registerScenario(s); }
};

/*
 * --timeline for a scenario (docs/timeline.md): open() before the first boot
 * (a bad path is a usage error then); per machine, start() after boot and
 * stop() before shutdown, or add() of a trace the scenario took itself;
 * commit() writes the one SVG, each machine under the last. Every call but
 * open() does nothing when --timeline was not given. Main thread (CPU 0).
 */
class ScenarioTimeline
{
public:
	ScenarioTimeline(const Common &c, const std::string &scenario);
	~ScenarioTimeline();
	/* 0, or 2 with one line on stderr naming the path */
	int open();
	bool active() const;
	/* The events a scenario tracing itself adds for the timeline (0 when inactive). */
	unsigned int events() const;
	/* Trace the timeline's events of the booted machine. 0, or 1 with a line on stderr. */
	int start();
	/* Stop that trace; the machine's section, titled @label (its boot line, say). */
	void stop(const std::string &label);
	/* A section from a trace the scenario took itself (the booted machine's). */
	void add(const kshim::TraceSnapshot &snap, const std::string &label);
	/* Write the file: 0, or 1 with a line on stderr. */
	int commit();

private:
	struct State;
	State *st_;
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
 * The header every table opens with: "== case NNN: title ==" and the
 * machine line (CPUs, PUs, oversubscription, kernel, sync back-end,
 * sync_core flavour) of the booted machine. Call while booted.
 */
std::string reportHeader(const std::string &cases, const std::string &title);

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
