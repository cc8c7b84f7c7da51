// SPDX-License-Identifier: GPL-2.0-only
/*
 * The marks of the timeline (timeline_draw.h): IPI arrows, INT3 traps,
 * deferred flushes, lost events and model violations; past
 * timelineMarkLimit marks, their density per lane and pixel column.
 */
#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <kernel_shim/trace.h>
#include <linux/cpumask.h>

#include "timeline/timeline_draw.h"

namespace pokelab::timeline_svg {

namespace {

void arrow(Canvas &c, int from, int to, double x, unsigned long n)
{
	double y0 = c.y(from) + c.laneH / 2, y1 = c.y(to) + c.laneH / 2;
	double d = y1 > y0 ? -4 : 4;

	c.out += fmt::format("<g class=\"ipi\" data-from=\"{}\" data-to=\"{}\" data-n=\"{}\">"
			     "<title>{} IPI{} CPU {} -> CPU {}</title><line x1=\"{:.1f}\" "
			     "y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#a50f15\" "
			     "stroke-width=\"0.8\"/><path d=\"M{:.1f} {:.1f} l-2.5 {:.1f} l5 0 z\" "
			     "fill=\"#a50f15\"/></g>\n",
			     from, to, n, n, n == 1 ? "" : "s", from, to, x, y0, x + 1.5, y1, x + 1.5,
			     y1, d);
}

/*
 * Density instead of marks: per lane and pixel column, a bar for each kind
 * (IPIs received, INT3 traps, deferred flushes) as high as the column's
 * count against the section's largest column of that kind. One path per
 * lane and kind; its data-n is the lane's total of that kind.
 */
void drawDensity(Canvas &c, const std::map<std::pair<int, int>, unsigned long> bins[3])
{
	static const struct {
		const char *cls, *what, *colour;
	} kinds[3] = {
		{"density-ipi", "IPIs received", "#6a51a3"},
		{"density-int3", "INT3 traps", "#cb181d"},
		{"density-flush", "deferred flushes at entry", "#08519c"},
	};
	const double band = (c.laneH - 4) / 3;

	for (int k = 0; k < 3; k++) {
		unsigned long max = 1;
		std::map<int, std::pair<std::string, unsigned long>> lanes;	/* lane -> path, n */

		for (const auto &[key, n] : bins[k])
			max = std::max(max, n);
		for (const auto &[key, n] : bins[k]) {
			auto &[d, total] = lanes[key.second];
			double base = c.y(key.second * c.per) + 2 + band * (k + 1);

			d += fmt::format("M{}.5 {:.1f}v-{:.1f}", key.first, base,
					 std::max(0.6, band * (double)n / (double)max));
			total += n;
		}
		for (const auto &[lane, p] : lanes) {
			unsigned int first = lane * c.per;

			c.out += fmt::format("<path class=\"density {}\" data-cpu=\"{}\" data-n=\"{}\" "
					     "d=\"{}\" stroke=\"{}\" stroke-width=\"1\" fill=\"none\">"
					     "<title>{} {}: {} {}, binned per pixel column (the tallest "
					     "column of the picture: {})</title></path>\n",
					     kinds[k].cls, first, p.second, p.first, kinds[k].colour,
					     c.per > 1 ? "CPUs from" : "CPU", first, p.second,
					     kinds[k].what, max);
			c.drawn.insert(kinds[k].cls);
		}
	}
}

} /* namespace */

/*
 * IPIs, INT3 traps and deferred flushes. Marks of one kind that fall on the
 * same pixel column of a lane are drawn once, with their count, so that a
 * long run's picture stays small; past timelineMarkLimit marks the section
 * draws their density instead (drawDensity()), and says so in *@note.
 */
void drawMarks(Canvas &c, const std::vector<TraceEvent> &ev, unsigned int nr, std::string *note)
{
	std::map<std::tuple<int, int, int>, unsigned long> ipis;	/* (x, from, to) */
	std::map<std::pair<int, int>, unsigned long> int3s;		/* (x, cpu) */
	std::map<std::pair<int, int>, unsigned long> bins[3];		/* (x, lane): ipi, int3, flush */
	std::vector<const TraceEvent *> flushes;
	unsigned long marks;

	for (const TraceEvent &e : ev) {
		if (e.cpu >= nr)
			continue;
		double x = c.x(e.ts), ym = c.y(e.cpu) + c.laneH / 2;
		int px = (int)x;

		switch (e.type) {
		case TraceType::IpiSendCpu:
			if (e.target >= 0 && (unsigned int)e.target < nr)
				ipis[{px, e.cpu, e.target}]++;
			break;
		case TraceType::IpiSendCpumask:
			for (unsigned int t = 0; t < nr; t++)
				if (cpumask_test_cpu(t, &e.mask))
					ipis[{px, e.cpu, (int)t}]++;
			break;
		case TraceType::Int3Emulate:
			int3s[{px, e.cpu}]++;
			break;
		case TraceType::CtWorkFlush:
			flushes.push_back(&e);
			bins[2][{px, (int)(e.cpu / c.per)}]++;
			break;
		case TraceType::Lost:
			c.out += fmt::format("<text class=\"lost\" data-cpu=\"{}\" x=\"{:.1f}\" "
					     "y=\"{:.1f}\" font-size=\"11\" fill=\"#000\">x<title>{} "
					     "events dropped on CPU {} here</title></text>\n",
					     e.cpu, x - 3, ym + 4, e.target, e.cpu);
			c.drawn.insert("lost");
			break;
		default:
			break;
		}
	}
	marks = ipis.size() + int3s.size() + flushes.size();
	if (marks > timelineMarkLimit) {
		for (const auto &[k, n] : ipis)
			bins[0][{std::get<0>(k), (int)(std::get<2>(k) / c.per)}] += n;
		for (const auto &[k, n] : int3s)
			bins[1][{k.first, (int)(k.second / c.per)}] += n;
		drawDensity(c, bins);
		*note += fmt::format("{}{} marks, more than {}: drawn as density, a bar per lane "
				     "and pixel column", note->empty() ? "" : "; ", marks,
				     timelineMarkLimit);
		return;
	}
	for (const TraceEvent *e : flushes) {
		c.out += fmt::format("<path class=\"flush\" data-cpu=\"{}\" d=\"M{:.1f} {:.1f} "
				     "l4 4 l-4 4 l-4 -4 z\" fill=\"#08519c\"><title>CPU {} ran "
				     "its deferred {} at kernel entry</title></path>\n",
				     e->cpu, c.x(e->ts), c.y(e->cpu) + c.laneH / 2 - 4, e->cpu,
				     esc(kshim::traceCtWorkName(e->target)));
		c.drawn.insert("flush");
	}
	for (const auto &[k, n] : ipis) {
		arrow(c, std::get<1>(k), std::get<2>(k), std::get<0>(k), n);
		c.drawn.insert("ipi");
	}
	for (const auto &[k, n] : int3s) {
		c.out += fmt::format("<path class=\"int3\" data-cpu=\"{}\" data-n=\"{}\" "
				     "d=\"M{} {:.1f} l-3 -6 l6 0 z\" fill=\"#cb181d\"><title>CPU {} "
				     "trapped on an INT3 {} time{} and emulated the site</title></path>\n",
				     k.second, n, k.first, c.y(k.second) + c.laneH - 2, k.second, n,
				     n == 1 ? "" : "s");
		c.drawn.insert("int3");
	}
}

/* A model violation: a red ring on the CPU's lane and a dashed line down the picture. */
void drawViolations(Canvas &c, const std::vector<TimelineMark> &marks, unsigned int nr)
{
	for (const TimelineMark &m : marks) {
		if (m.cpu < 0 || (unsigned int)m.cpu >= nr || m.ts < c.t0 || m.ts > c.t1)
			continue;
		double x = c.x(m.ts), y = c.y(m.cpu) + c.laneH / 2;

		c.out += fmt::format("<g class=\"violation\" data-cpu=\"{}\"><title>{}</title>"
				     "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
				     "stroke=\"#d00\" stroke-dasharray=\"3 3\"/><circle cx=\"{:.1f}\" "
				     "cy=\"{:.1f}\" r=\"{:.1f}\" fill=\"none\" stroke=\"#d00\" "
				     "stroke-width=\"2.5\"/></g>\n",
				     m.cpu, esc(m.text), x, kTop, x, c.bottom(), x, y,
				     std::max(5.0, c.laneH / 2));
		c.drawn.insert("violation");
	}
}

} /* namespace pokelab::timeline_svg */
