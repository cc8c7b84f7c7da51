// SPDX-License-Identifier: GPL-2.0-only
/*
 * The timeline picture (timeline.h): each section drawn layer by layer
 * (timeline_draw.h), the sections written as one SVG.
 *
 * The SVG is written directly: every lane, band and mark is an element with
 * a class and a <title> a browser shows on hover, and the text stays text.
 * Cairo, which draws pokelab's other plots, would turn each label into glyph
 * outlines and flatten the structure that a reader searches and the tests
 * check (docs/timeline.md).
 */
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <kernel_shim/plural.h>

#include "timeline/timeline.h"
#include "timeline/timeline_draw.h"

namespace pokelab {

namespace timeline_svg {

std::string esc(const std::string &s)
{
	std::string o;

	for (char c : s) {
		switch (c) {
		case '<': o += "&lt;"; break;
		case '>': o += "&gt;"; break;
		case '&': o += "&amp;"; break;
		case '"': o += "&quot;"; break;
		default: o += c;
		}
	}
	return o;
}

std::string dur(double ns)
{
	/* 999.6 ms is "1 s": three significant digits of ms would print "1e+03 ms" */
	if (ns >= 999.5e6)
		return fmt::format("{:.3g} s", ns / 1e9);
	if (ns >= 999.5e3)
		return fmt::format("{:.3g} ms", ns / 1e6);
	if (ns >= 999.5)
		return fmt::format("{:.3g} us", ns / 1e3);
	return fmt::format("{:.0f} ns", ns);
}

} /* namespace timeline_svg */

using namespace timeline_svg;

u64 timelineGapNs = 1000000;
unsigned long timelineMarkLimit = 2500;

u32 timelineEvents()
{
	u32 m = 0;

	for (TraceType t : {TraceType::IpiSendCpu, TraceType::IpiSendCpumask, TraceType::UserEnter,
			    TraceType::UserExit, TraceType::TextPokeBatch, TraceType::Int3Emulate,
			    TraceType::CtIdleEnter, TraceType::CtIdleExit, TraceType::CtWorkFlush,
			    TraceType::CsdQueueCpu})
		m |= kshim::traceBit(t);
	return m;
}

namespace {

/* One machine's picture, without the <svg> around it, and its height (px). */
std::string drawSection(const TimelineSection &s, double *height)
{
	Canvas c;
	unsigned int nr = std::max(1u, s.nrCpus);
	std::string note = s.note;
	const std::vector<TraceEvent> &events = s.events;

	c.t0 = events.empty() ? 0 : events.front().ts;
	c.t1 = events.empty() ? 1 : std::max(events.back().ts, c.t0 + 1);
	c.per = (nr + kMaxLanes - 1) / kMaxLanes;
	c.lanes = (nr + c.per - 1) / c.per;
	c.laneH = c.lanes <= 16 ? 28 : 18;
	if (c.per > 1)
		note += fmt::format("{}{} CPUs, {} to a lane (a mark's title names its CPU)",
				    note.empty() ? "" : "; ", nr, c.per);
	layout(c, events);

	/*
	 * Past timelineMarkLimit marks: the whole run as density over a window
	 * drawn mark by mark, around a batch near its middle (chooseWindow())
	 * or its first violation, so that what tells two runs apart (a few
	 * marks around each batch) is seen; the whole run as density when it
	 * has no batch.
	 */
	unsigned long marks = drawMarks(c, events, nr, true);
	const std::vector<TraceEvent> *detail = &events;
	std::vector<TraceEvent> win;
	std::string over;	/* the overview, under the frame's lanes' */
	bool density = false, windowed = false;
	Window w;

	u64 focus = events.empty() ? 0 : events.front().ts + (events.back().ts - events.front().ts) / 2;

	for (const TimelineMark &m : s.marks)
		focus = &m == &s.marks.front() ? m.ts : std::min(focus, m.ts);
	w.violation = !s.marks.empty();
	if (marks > timelineMarkLimit && chooseWindow(events, nr, focus, &w, &win)) {
		windowed = true;
		c.t0 = w.t0;
		c.t1 = std::max(w.t1, w.t0 + 1);
		layout(c, win);
		detail = &win;
		note += fmt::format("{}{} marks, more than {}: {} from +{} of the run's {} drawn in "
				    "detail, around batch {} of {} ({}); above, the whole run as "
				    "density", note.empty() ? "" : "; ", marks, timelineMarkLimit,
				    dur((double)(w.t1 - w.t0)), dur((double)(w.t0 - events.front().ts)),
				    dur((double)(events.back().ts - events.front().ts)), w.batch,
				    w.batches,
				    w.violation ? "nearest the first violation"
				    : w.deferred ? "near the middle, the one whose deferred work ran "
						   "soonest"
						 : "nearest the middle");
	} else if (marks > timelineMarkLimit) {
		density = true;
		note += fmt::format("{}{} marks, more than {}: drawn as density, a bar per lane "
				    "and pixel column", note.empty() ? "" : "; ", marks,
				    timelineMarkLimit);
	}
	size_t gaps = std::count_if(c.seg.begin(), c.seg.end(), [](const Segment &g) {
		return g.gap;
	});

	if (gaps)
		note += fmt::format("{}{} with no event drawn as {} (not to scale)",
				    note.empty() ? "" : "; ",
				    kshim::nOf(gaps, "stretch", "stretches"),
				    gaps == 1 ? "a break" : "breaks");
	/* the header as high as its lines, then the overview (if any) under it */
	Header head = layoutHeader(s.title, note);

	c.top = head.top;
	if (windowed) {
		Canvas o = c;

		o.out.clear();
		c.top += drawOverview(o, events, nr, w);
		over = o.out;
		c.drawn = o.drawn;
	}
	/* the frame goes first, under the rest */
	Canvas frame = c;

	drawSpans(c, *detail, nr);
	drawBatches(c, *detail, nr);
	drawGaps(c);
	if (density)
		drawDensity(c, *detail, nr);
	else
		drawMarks(c, *detail, nr);
	drawViolations(c, s.marks, nr);
	*height = drawLegend(c) + 10;
	drawFrame(frame, nr, head);
	return frame.out + over + c.out;
}

std::string svgOpen(double h, const std::string &title)
{
	return fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg "
			   "xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{:.0f}\" "
			   "viewBox=\"0 0 {} {:.0f}\" font-family=\"sans-serif\">\n<title>{}</title>\n"
			   "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n",
			   kWidth, h, kWidth, h, esc(title));
}

} /* namespace */

std::string timelineSvg(const std::vector<TraceEvent> &events, unsigned int nrCpus,
			const std::string &title, const std::string &note,
			const std::vector<TimelineMark> &marks)
{
	return timelineSvg({TimelineSection{events, nrCpus, title, note, marks}}, title);
}

std::string timelineSvg(const std::vector<TimelineSection> &sections, const std::string &title)
{
	std::string body;
	double y = 0;

	/* the file's title (the command line), unless the one section says it already */
	if (!title.empty() && !(sections.size() == 1 && sections[0].title == title)) {
		body += fmt::format("<text class=\"command\" x=\"{}\" y=\"20\" font-size=\"13\" "
				    "fill=\"#333\">{}</text>\n", kLeft, esc(title));
		y = 26;
	}
	for (const TimelineSection &s : sections) {
		double h;
		std::string part = drawSection(s, &h);

		/* each machine under the last, separated by a rule */
		if (&s != &sections.front())
			body += fmt::format("<line class=\"section-rule\" x1=\"0\" y1=\"{0:.0f}\" "
					    "x2=\"{1}\" y2=\"{0:.0f}\" stroke=\"#888\"/>\n", y, kWidth);
		body += fmt::format("<g class=\"section\" transform=\"translate(0 {:.0f})\">\n{}</g>\n",
				    y, part);
		y += h;
	}
	return svgOpen(std::max(y, 1.0), title) + body + "</svg>\n";
}

} /* namespace pokelab */
