/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The timeline picture of a run (docs/timeline.md): one lane per CPU, the
 * user, kernel and idle spans, each INT3 batch's phases as bands on the
 * patching CPU's lane, IPIs as arrows from sender to receiver, INT3 traps
 * and deferred flushes at entry as marks, dropped events marked where they
 * were lost. Drawn from trace events, recorded (a sink on the recorder
 * thread) or read back from trace-cmd report text.
 *
 * Task context; allocates; not async-signal-safe.
 */
#pragma once

#include <istream>
#include <memory>
#include <string>
#include <vector>

#include <kernel_shim/trace.h>
#include <kernel_shim/trace_output.h>
#include <kernel_shim/trace_record.h>

namespace CLI {
class App;
}

namespace pokelab {

/* A mark a run adds to its picture: a model violation, at @ts on @cpu. */
struct TimelineMark {
	u64 ts;			/* CLOCK_MONOTONIC, ns, as the events' */
	int cpu;
	std::string text;	/* what a reader sees on hover */
};

/* One machine's picture: its events (time order), CPUs, title, note and marks. */
struct TimelineSection {
	std::vector<kshim::TraceEvent> events;
	unsigned int nrCpus;
	std::string title;
	std::string note;
	std::vector<TimelineMark> marks;
};

/*
 * How a picture follows the batches: a stretch longer than this (ns) with
 * no event on any CPU is drawn as a labelled break ("... 48 ms ...") a few
 * pixels wide, not to scale; 0 draws all time to scale. Set once from the
 * command's --timeline-gap (pokelab timeline: --gap) before drawing; 1 ms
 * by default.
 */
extern u64 timelineGapNs;
/*
 * Past this many marks (IPI arrows, INT3 triangles, flush diamonds, after
 * those of one pixel column are merged) a section draws density instead:
 * per lane and pixel column, a bar as high as the column's count of each
 * kind. Set before drawing; 2500 by default.
 */
extern unsigned long timelineMarkLimit;

/*
 * Add @name (--timeline-gap; pokelab timeline: --gap) to @app: seconds,
 * 0..3600, that set timelineGapNs.
 */
void addTimelineGapOption(CLI::App *app, const char *name = "--timeline-gap");

/*
 * What a cross-call to @func is for, as a timeline tells its IPIs apart: 0
 * a sync (do_sync_core: a text-poke sync round), 1 a TLB flush
 * (do_flush_tlb_all, do_kernel_range_flush, flush_tlb_func, ...), 2 other.
 */
int timelineIpiKind(const std::string &func);

/* The events a timeline draws (kshim::traceBit()s). */
u32 timelineEvents();

/*
 * The SVG of @events (time order, Lost marks included) on @nrCpus CPUs,
 * under @title; @note, if not empty, goes under the title (a window, say).
 */
std::string timelineSvg(const std::vector<kshim::TraceEvent> &events, unsigned int nrCpus,
			const std::string &title, const std::string &note,
			const std::vector<TimelineMark> &marks = {});

/*
 * Several machines (a run that boots one per variant) in one SVG, each
 * section under the last; @title is the file's (the command line, say),
 * drawn over the sections unless it is the one section's own title. More than 32 CPUs share
 * lanes, as few to a lane as fit, and the section's note says so.
 */
std::string timelineSvg(const std::vector<TimelineSection> &sections, const std::string &title);

/* Retitle a makeTimelineSink()'s picture (the machine line is known after boot). */
void timelineSinkTitle(kshim::TraceSink *sink, const std::string &title,
		       const std::string &subtitle);

/* Add @m to a makeTimelineSink() or makeTimelineWindow() sink's picture, before it finishes. */
void timelineSinkMark(kshim::TraceSink *sink, const TimelineMark &m);

/*
 * A sink that keeps the events of the last @windowNs (ns; 0: all of them)
 * and writes @path as an SVG timeline, @title over @subtitle (the machine
 * line, say), when the session finishes (through
 * kshim::OutputFile: never half-written). nullptr with one line in *@err
 * when @path cannot be written.
 */
std::unique_ptr<kshim::TraceSink> makeTimelineSink(const std::string &path, u64 windowNs,
						   const std::string &title,
						   const std::string &subtitle, std::string *err);

/*
 * A sink that only keeps the events of the last @windowNs (0: all) for
 * timelineWindowSection(), after it finished: the sessions of a
 * TimelineBook.
 */
std::unique_ptr<kshim::TraceSink> makeTimelineWindow(u64 windowNs);
TimelineSection timelineWindowSection(const kshim::TraceSink *window, const std::string &title,
				      const std::string &subtitle);

/*
 * The one SVG of a run that boots several machines: open() takes the path
 * before the first boot (a bad one fails then), add() a section per
 * machine, commit() writes them all (never half-written). Main thread.
 */
class TimelineBook
{
public:
	bool open(const std::string &path, const std::string &title, std::string *err);
	bool active() const { return file_.fd() >= 0; }
	void add(TimelineSection s) { sections_.push_back(std::move(s)); }
	bool commit(std::string *err);

private:
	std::string title_;
	std::vector<TimelineSection> sections_;
	kshim::OutputFile file_;
};

/* A sink that passes @inner only the events in @mask (and the Lost marks). */
std::unique_ptr<kshim::TraceSink> maskTraceSink(std::unique_ptr<kshim::TraceSink> inner,
						u32 mask);

/*
 * Read `trace-cmd report` text (what --trace FILE writes) back into events:
 * the types, CPUs, times, targets, masks and phases a timeline draws;
 * *@nrCpus from the "cpus=" header. Lines of other events are skipped;
 * *@lines (if not NULL) counts every event line read, drawn or not.
 * False with one line naming the line number in *@err.
 */
bool parseTraceReport(std::istream &in, std::vector<kshim::TraceEvent> *events,
		      unsigned int *nrCpus, std::string *err, unsigned long *lines = nullptr);

} /* namespace pokelab */
