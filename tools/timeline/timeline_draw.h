/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * How the timeline picture (timeline.h) is drawn, private to
 * tools/timeline/: the canvas that maps time to x and a CPU to its lane,
 * the batch phases' styles, and one function per layer, each appending its
 * elements to the canvas. The layers, by file:
 *
 *	timeline.cpp		a section from its layers; the sections into one SVG
 *	timeline_layout.cpp	the time axis that follows the batches: quiet
 *				stretches drawn as breaks (--timeline-gap)
 *	timeline_bands.cpp	user and idle spans, each batch's phases
 *	timeline_marks.cpp	IPIs (by kind), INT3 traps, deferred flushes, lost
 *				events and violations; their density
 *	timeline_window.cpp	past --max-marks: the window drawn in detail, around
 *				a batch, under an overview of the whole run
 *	timeline_frame.cpp	title, note, lanes, time axis, legend
 *	timeline_sink.cpp	the sinks that feed a picture, the book of sections
 *
 * Task context; allocates; not async-signal-safe.
 */
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <string>
#include <vector>

#include "timeline/timeline.h"

namespace pokelab::timeline_svg {

using kshim::TraceEvent;
using kshim::TraceType;

constexpr double kWidth = 1400, kLeft = 90, kRight = 30, kTop = 70;

/* The batch phases as the bands show them: what the phase event starts. */
struct PhaseStyle {
	const char *name;	/* traceBatchPhaseName() */
	const char *label;
	const char *fill;
};
const PhaseStyle kPhases[] = {
	{"begin", "refs published", "#bdbdbd"},
	{"int3", "phase 1: INT3s + sync", "#e6550d"},
	{"tails", "phase 2: tails + sync", "#fdae6b"},
	{"first_bytes", "phase 3: first bytes + sync", "#3182bd"},
};

/* @s with <, >, & and " written as entities: SVG text or an attribute's value. */
std::string esc(const std::string &s);
/* @ns with three significant digits in s, ms, us or ns ("2.65 ms"). */
std::string dur(double ns);

/* More CPUs than this share lanes, as few to a lane as fit (docs/timeline.md). */
constexpr unsigned int kMaxLanes = 32;

/* A stretch of the picture: time to scale, or a quiet stretch drawn as a break. */
struct Segment {
	u64 t0, t1;
	double x0, x1;
	bool gap;
};

/* Pixels a quiet stretch takes, and at most how many are compressed. */
constexpr double kGapPx = 36;

struct Canvas {
	u64 t0, t1;
	double top = kTop;	/* the first lane's top (px) */
	double laneH;
	unsigned int per = 1;	/* CPUs to a lane */
	unsigned int lanes = 1;
	std::vector<Segment> seg;	/* t0..t1, left to right */
	std::set<std::string> drawn;	/* the kinds of mark drawn: the legend's items */
	std::string out;

	double x(u64 ts) const
	{
		if (seg.empty() || ts <= seg.front().t0)
			return kLeft;
		auto it = std::lower_bound(seg.begin(), seg.end(), ts,
					   [](const Segment &s, u64 t) { return s.t1 < t; });

		if (it == seg.end())
			return seg.back().x1;
		double span = it->t1 > it->t0 ? (double)(it->t1 - it->t0) : 1.0;

		return it->x0 + (it->x1 - it->x0) * (double)(ts - it->t0) / span;
	}
	/* The time at @px, and whether it falls in a break. */
	u64 at(double px, bool *inGap) const
	{
		for (const Segment &s : seg) {
			if (px > s.x1 && &s != &seg.back())
				continue;
			*inGap = s.gap && px > s.x0 && px < s.x1;
			double f = s.x1 > s.x0 ? std::clamp((px - s.x0) / (s.x1 - s.x0), 0.0, 1.0) : 0;

			return s.t0 + (u64)(f * (double)(s.t1 - s.t0));
		}
		*inGap = false;
		return t0;
	}
	double y(int cpu) const { return top + (cpu / per) * laneH; }
	double bottom() const { return top + lanes * laneH; }
};

/*
 * What an IPI was sent for (timelineIpiKind()), told from the csd_queue_cpu
 * event its sender wrote for that target before it: the cross-call's func=.
 */
enum IpiKind { IPI_SYNC, IPI_TLB, IPI_OTHER, IPI_UNKNOWN, NR_IPI_KINDS };
struct IpiStyle {
	const char *name;	/* class "ipi ipi-NAME", the legend's data-kind "ipi-NAME" */
	const char *label;
	const char *colour;
	const char *dash;	/* stroke-dasharray, "none" for solid: told apart in grey too */
};
extern const IpiStyle kIpiStyles[NR_IPI_KINDS];

/* The kind of each IPI a sender sends a target: feed it every event in time order. */
class IpiKinds
{
public:
	void see(const TraceEvent &e);
	IpiKind of(int from, int to);	/* and forgets that csd */

private:
	std::map<unsigned long, IpiKind> byFunc_;	/* func address -> kind */
	std::map<std::pair<int, int>, IpiKind> last_;	/* (sender, target) -> its last csd's */
};

/* The time axis of @c (c.seg) over the events @ev of c.t0..c.t1 (timeline_layout.cpp). */
void layout(Canvas &c, const std::vector<TraceEvent> &ev);
void drawGaps(Canvas &c);

/* The bands (timeline_bands.cpp): spans, then phases, of @ev's first @nr CPUs. */
void drawSpans(Canvas &c, const std::vector<TraceEvent> &ev, unsigned int nr);
void drawBatches(Canvas &c, const std::vector<TraceEvent> &ev, unsigned int nr);

/*
 * The marks (timeline_marks.cpp), one per kind and pixel column of a lane
 * (INT3 traps: per triangle's width). drawMarks() returns how many it drew
 * (@dryRun: would draw, drawing none); drawDensity() draws, per lane and
 * pixel column, a bar per kind of mark as high as the column's count.
 */
unsigned long drawMarks(Canvas &c, const std::vector<TraceEvent> &ev, unsigned int nr,
			bool dryRun = false);
void drawDensity(Canvas &c, const std::vector<TraceEvent> &ev, unsigned int nr);
void drawViolations(Canvas &c, const std::vector<TimelineMark> &marks, unsigned int nr);

/*
 * Past timelineMarkLimit marks (timeline_window.cpp): the window drawn in
 * detail, around a batch near @focus (the run's middle, or its first model
 * violation: then the nearest); false when the run has no batch (the whole
 * run is drawn as density then). @ev's events of the window in *@win, after the
 * user and idle spans open at its start and each sender's last csd per
 * target, moved to it.
 */
struct Window {
	bool violation = false;		/* in: @focus is a violation's time */
	u64 t0 = 0, t1 = 0;
	unsigned int batch = 0, batches = 0;	/* which batch (from 1), of how many */
	bool deferred = false;		/* chosen for its deferred work at entry */
};
bool chooseWindow(const std::vector<TraceEvent> &ev, unsigned int nr, u64 focus, Window *w,
		  std::vector<TraceEvent> *win);
/* The whole run above the window, as density, the window boxed; its height (px). */
double drawOverview(Canvas &c, const std::vector<TraceEvent> &ev, unsigned int nr,
		    const Window &w);

/*
 * The section's header (timeline_frame.cpp): its title and the note under
 * it, each in as many lines as fit the picture's width, measured as a
 * renderer lays out the text; the lanes (or the overview over them) start
 * at @top, under the last line.
 */
struct Header {
	std::vector<std::string> title, note;
	double noteSize;	/* px: 12 for one line, 11 for more */
	double top;
};
Header layoutHeader(const std::string &title, const std::string &note);

/* What frames the section (timeline_frame.cpp): drawn first, under the rest. */
void drawFrame(Canvas &c, unsigned int nr, const Header &h);
/* A lane's label, as the lanes and the overview's rows show it: "CPU 3", "CPUs 0-1". */
std::string laneName(const Canvas &c, unsigned int lane, unsigned int nr);
double drawLegend(Canvas &c);

} /* namespace pokelab::timeline_svg */
