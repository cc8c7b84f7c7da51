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
#include <kernel_shim/trace_record.h>

namespace pokelab {

/* A mark a run adds to its picture: a model violation, at @ts on @cpu. */
struct TimelineMark {
	u64 ts;			/* CLOCK_MONOTONIC, ns, as the events' */
	int cpu;
	std::string text;	/* what a reader sees on hover */
};

/* The events a timeline draws (kshim::traceBit()s). */
u32 timelineEvents();

/*
 * The SVG of @events (time order, Lost marks included) on @nrCpus CPUs,
 * under @title; @note, if not empty, goes under the title (a window, say).
 */
std::string timelineSvg(const std::vector<kshim::TraceEvent> &events, unsigned int nrCpus,
			const std::string &title, const std::string &note,
			const std::vector<TimelineMark> &marks = {});

/* Add @m to a makeTimelineSink() sink's picture, before it finishes. */
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

/* A sink that passes @inner only the events in @mask (and the Lost marks). */
std::unique_ptr<kshim::TraceSink> maskTraceSink(std::unique_ptr<kshim::TraceSink> inner,
						u32 mask);

/*
 * Read `trace-cmd report` text (what --trace FILE writes) back into events:
 * the types, CPUs, times, targets, masks and phases a timeline draws;
 * *@nrCpus from the "cpus=" header. Lines of other events are skipped.
 * False with one line naming the line number in *@err.
 */
bool parseTraceReport(std::istream &in, std::vector<kshim::TraceEvent> *events,
		      unsigned int *nrCpus, std::string *err);

} /* namespace pokelab */
