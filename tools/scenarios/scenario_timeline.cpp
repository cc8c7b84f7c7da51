// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab run SCENARIO --timeline FILE.svg: every machine the run boots,
 * drawn one under the other in one SVG (scenario.h, docs/timeline.md).
 */
#include <fmt/format.h>

#include <kernel_shim/boot.h>
#include <kernel_shim/trace.h>
#include <kernel_shim/trace_record.h>

#include "command.h"
#include "scenario.h"
#include "timeline/timeline.h"
#include "wrote.h"

namespace pokelab::scenario {

struct ScenarioTimeline::State {
	std::string path, scenario;
	u64 windowNs;
	TimelineBook book;
	std::unique_ptr<kshim::TraceSink> window;
};

ScenarioTimeline::ScenarioTimeline(const Common &c, const std::string &scenario)
	: st_(new State{c.timeline, scenario, (u64)(c.timelineWindow * 1e9), {}, {}})
{
}

ScenarioTimeline::~ScenarioTimeline()
{
	delete st_;
}

int ScenarioTimeline::open()
{
	std::string err;

	if (st_->path.empty())
		return 0;
	std::string title = commandLine();

	/* the title: the command line and the case (docs/reproduction.md) the scenario runs */
	for (const Scenario &s : scenarios())
		if (st_->scenario == s.name && s.cases && *s.cases &&
		    std::string(s.cases) != "-")
			title += fmt::format(", case {}", s.cases);
	if (!st_->book.open(st_->path, title, &err)) {
		fmt::print(stderr, "pokelab: run {}: --timeline {}: {}\n", st_->scenario, st_->path,
			   err);
		return 2;
	}
	return 0;
}

bool ScenarioTimeline::active() const
{
	return st_->book.active();
}

unsigned int ScenarioTimeline::events() const
{
	return active() ? timelineEvents() : 0;
}

int ScenarioTimeline::start()
{
	std::string err;

	if (!active())
		return 0;
	st_->window = makeTimelineWindow(st_->windowNs);
	if (kshim::traceStart(0, &err, timelineEvents()) ||
	    kshim::traceRecorderStart({st_->window.get()}, 1000000, &err)) {
		kshim::traceStop();
		st_->window.reset();
		fmt::print(stderr, "pokelab: run {}: --timeline: {}\n", st_->scenario, err);
		return 1;
	}
	return 0;
}

void ScenarioTimeline::stop(const std::string &label)
{
	std::string err;

	if (!st_->window)
		return;
	kshim::traceStop();
	st_->window->finish(kshim::traceRecorderStop(), &err);
	st_->book.add(timelineWindowSection(st_->window.get(),
					    fmt::format("pokelab run {}: {}", st_->scenario, label),
					    kshim::machineLine()));
	st_->window.reset();
}

void ScenarioTimeline::add(const kshim::TraceSnapshot &snap, const std::string &label)
{
	std::unique_ptr<kshim::TraceSink> w;
	std::string err;

	if (!active())
		return;
	/* the same window as a recorded session's: fed in time order, then finished */
	w = makeTimelineWindow(st_->windowNs);
	w->begin(snap.cpus);
	for (const kshim::TraceEvent &e : snap.events)
		w->event(e);
	w->finish(snap.cpus, &err);
	st_->book.add(timelineWindowSection(w.get(),
					    fmt::format("pokelab run {}: {}", st_->scenario, label),
					    kshim::machineLine()));
}

int ScenarioTimeline::commit()
{
	std::string err;

	if (!active())
		return 0;
	if (!st_->book.commit(&err)) {
		fmt::print(stderr, "pokelab: run {}: --timeline {}: {}\n", st_->scenario,
			   st_->path, err);
		return 1;
	}
	sayWrote(st_->path, "--timeline");
	return 0;
}

} /* namespace pokelab::scenario */
