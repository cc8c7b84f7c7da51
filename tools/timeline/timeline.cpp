// SPDX-License-Identifier: GPL-2.0-only
/*
 * The timeline picture (timeline.h), and the sinks that feed it.
 *
 * The SVG is written directly: every lane, band and mark is an element with
 * a class and a <title> a browser shows on hover, and the text stays text.
 * Cairo, which draws pokelab's other plots, would turn each label into glyph
 * outlines and flatten the structure that a reader searches and the tests
 * check (docs/timeline.md).
 */
#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include <kernel_shim/plural.h>
#include <kernel_shim/trace_output.h>
#include <linux/bug.h>
#include <linux/cpumask.h>

#include "timeline/timeline.h"

namespace pokelab {

namespace {

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
	if (ns >= 1e9)
		return fmt::format("{:.3g} s", ns / 1e9);
	if (ns >= 1e6)
		return fmt::format("{:.3g} ms", ns / 1e6);
	if (ns >= 1e3)
		return fmt::format("{:.3g} us", ns / 1e3);
	return fmt::format("{:.0f} ns", ns);
}

/* A tick's time, with as many decimals as tell it from a neighbour @step ns away. */
std::string tickLabel(double ns, double step)
{
	double unit = ns >= 1e9 ? 1e9 : ns >= 1e6 ? 1e6 : ns >= 1e3 ? 1e3 : 1;
	const char *name = unit == 1e9 ? "s" : unit == 1e6 ? "ms" : unit == 1e3 ? "us" : "ns";
	int decimals = step > 0 ? (int)std::ceil(-std::log10(step / unit)) : 0;

	return fmt::format("{:.{}f} {}", ns / unit, std::clamp(decimals, 0, 6), name);
}

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
	double y(int cpu) const { return kTop + (cpu / per) * laneH; }
	double bottom() const { return kTop + lanes * laneH; }
};

/*
 * The time axis: to scale, but for the longest stretches with no event
 * (longer than timelineGapNs), each drawn kGapPx wide as a break, as many
 * as leave half the width to scale, and only those that would otherwise be
 * wider than two breaks.
 */
void layout(Canvas &c, const std::vector<TraceEvent> &ev)
{
	const double w = kWidth - kLeft - kRight;
	const size_t maxGaps = (size_t)(w / 2 / kGapPx);
	std::vector<std::pair<u64, u64>> quiet, chosen;
	u64 kept = c.t1 - c.t0;

	for (size_t i = 1; timelineGapNs && i < ev.size(); i++)
		if (ev[i].ts > ev[i - 1].ts && ev[i].ts - ev[i - 1].ts > timelineGapNs)
			quiet.push_back({ev[i - 1].ts, ev[i].ts});
	std::sort(quiet.begin(), quiet.end(), [](const auto &a, const auto &b) {
		return a.second - a.first > b.second - b.first;
	});
	for (const auto &q : quiet) {
		u64 len = q.second - q.first;

		if (chosen.size() >= maxGaps || len >= kept)
			break;
		double scale = (w - (double)(chosen.size() + 1) * kGapPx) / (double)(kept - len);

		if ((double)len * scale < 2 * kGapPx)
			break;	/* the rest are shorter still */
		chosen.push_back(q);
		kept -= len;
	}
	std::sort(chosen.begin(), chosen.end());
	double scale = (w - (double)chosen.size() * kGapPx) / (double)std::max<u64>(kept, 1);
	double x = kLeft;
	u64 t = c.t0;

	c.seg.clear();
	for (const auto &g : chosen) {
		double x1 = x + (double)(g.first - t) * scale;

		c.seg.push_back({t, g.first, x, x1, false});
		c.seg.push_back({g.first, g.second, x1, x1 + kGapPx, true});
		x = x1 + kGapPx;
		t = g.second;
	}
	c.seg.push_back({t, c.t1, x, kLeft + w, false});
}

/* Each break: a veil over the lanes between two zig-zags, its length written above. */
void drawGaps(Canvas &c)
{
	for (const Segment &s : c.seg) {
		if (!s.gap)
			continue;
		std::string zz[2];

		for (int side = 0; side < 2; side++) {
			double x = side ? s.x1 - 5 : s.x0 + 5;

			zz[side] = fmt::format("M{:.1f} {:.1f}", x, kTop);
			for (double y = kTop + 4, k = 1; y <= c.bottom(); y += 4, k = -k)
				zz[side] += fmt::format(" L{:.1f} {:.1f}", x + 2.5 * k, y);
		}
		c.out += fmt::format("<g class=\"gap\" data-ns=\"{}\"><title>{} with no event on any "
				     "CPU, drawn {:.0f} px wide, not to scale</title><rect x=\"{:.1f}\" "
				     "y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#fff\" "
				     "fill-opacity=\"0.85\"/><path d=\"{}\" stroke=\"#666\" "
				     "fill=\"none\"/><path d=\"{}\" stroke=\"#666\" fill=\"none\"/>"
				     "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"9\" "
				     "text-anchor=\"middle\" fill=\"#444\">\u2026 {} \u2026</text></g>\n",
				     s.t1 - s.t0, dur((double)(s.t1 - s.t0)), kGapPx, s.x0 + 5, kTop,
				     s.x1 - s.x0 - 10, c.bottom() - kTop, zz[0], zz[1],
				     (s.x0 + s.x1) / 2, kTop - 5, dur((double)(s.t1 - s.t0)));
		c.drawn.insert("gap");
	}
}

/*
 * User and idle spans: from each CPU's enter to its exit (or the edge of
 * the picture). Spans of a CPU less than a pixel apart are drawn as one,
 * its title counting them.
 */
void drawSpans(Canvas &c, const std::vector<TraceEvent> &ev, unsigned int nr)
{
	static const struct {
		TraceType enter, exit;
		const char *cls, *fill;
	} kinds[] = {
		{TraceType::UserEnter, TraceType::UserExit, "user", "#c7e9c0"},
		{TraceType::CtIdleEnter, TraceType::CtIdleExit, "idle", "#d9d9d9"},
	};
	struct Open {
		bool in = false;
		u64 since = 0;
		/* the span waiting to be drawn, perhaps with the next ones */
		unsigned long n = 0;
		u64 a = 0, b = 0, busy = 0;
	};
	std::vector<bool> seen(nr);
	std::vector<Open> open(nr * 2);
	auto emit = [&](int cpu, int k) {
		Open &o = open[cpu * 2 + k];

		if (!o.n)
			return;
		c.out += fmt::format("<rect class=\"{}\" data-cpu=\"{}\" x=\"{:.1f}\" "
				     "y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
				     "fill=\"{}\"><title>CPU {} {} for {}{}</title></rect>\n",
				     kinds[k].cls, cpu, c.x(o.a), c.y(cpu) + 1,
				     std::max(0.5, c.x(o.b) - c.x(o.a)), c.laneH - 2, kinds[k].fill, cpu,
				     kinds[k].cls, dur((double)o.busy),
				     o.n > 1 ? fmt::format(" in {} spans over {}, less than a pixel "
							   "apart", o.n, dur((double)(o.b - o.a)))
					     : "");
		c.drawn.insert(kinds[k].cls);
		o.n = 0;
	};
	auto span = [&](int cpu, int k, u64 a, u64 b) {
		Open &o = open[cpu * 2 + k];

		if (o.n && c.x(a) - c.x(o.b) < 1.0) {
			o.b = b;
			o.busy += b - a;
			o.n++;
			return;
		}
		emit(cpu, k);
		o.n = 1;
		o.a = a;
		o.b = b;
		o.busy = b - a;
	};

	for (const TraceEvent &e : ev) {
		if (e.cpu >= nr)
			continue;
		for (int k = 0; k < 2; k++) {
			Open &o = open[e.cpu * 2 + k];

			if (e.type == kinds[k].enter) {
				o.in = true;
				o.since = e.ts;
			} else if (e.type == kinds[k].exit) {
				/* the first we see of this CPU: it was there from the start */
				span(e.cpu, k, o.in ? o.since : seen[e.cpu] ? e.ts : c.t0, e.ts);
				o.in = false;
			}
		}
		seen[e.cpu] = true;
	}
	for (unsigned int cpu = 0; cpu < nr; cpu++)
		for (int k = 0; k < 2; k++) {
			if (open[cpu * 2 + k].in)
				span(cpu, k, open[cpu * 2 + k].since, c.t1);
			emit(cpu, k);
		}
}

/* Each batch's phases, from one phase event of the patching CPU to its next. */
void drawBatches(Canvas &c, const std::vector<TraceEvent> &ev, unsigned int nr)
{
	std::map<int, const TraceEvent *> open;	/* patching CPU -> its last phase event */
	unsigned int batch = 0;

	for (const TraceEvent &e : ev) {
		if (e.type != TraceType::TextPokeBatch || e.cpu >= nr)
			continue;
		auto it = open.find(e.cpu);

		if (it != open.end() && it->second->target >= 0 &&
		    it->second->target < (int)(sizeof(kPhases) / sizeof(kPhases[0]))) {
			const PhaseStyle &p = kPhases[it->second->target];
			double x0 = c.x(it->second->ts), x1 = c.x(e.ts);

			c.out += fmt::format("<rect class=\"phase phase-{}\" data-cpu=\"{}\" "
					     "data-batch=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
					     "height=\"{:.1f}\" fill=\"{}\"><title>batch {} of {} "
					     "sites, {}: {}</title></rect>\n",
					     p.name, e.cpu, batch, x0, c.y(e.cpu) + 2,
					     std::max(1.0, x1 - x0), c.laneH / 2 - 2, p.fill, batch,
					     e.callsite, p.label, dur((double)(e.ts - it->second->ts)));
			c.drawn.insert(std::string("phase-") + p.name);
		}
		if (e.target == kshim::TRACE_BATCH_DONE) {
			open.erase(e.cpu);
			batch++;
		} else {
			open[e.cpu] = &e;
		}
	}
}

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

void drawFrame(Canvas &c, unsigned int nr, const std::string &title, const std::string &note)
{
	c.out += fmt::format("<text x=\"{}\" y=\"24\" font-size=\"16\">{}</text>\n", kLeft,
			     esc(title));
	/* the note on two lines when it is wider than the picture, broken after a "; " */
	const size_t fit = (size_t)((kWidth - kLeft - kRight) / 6.4);
	size_t cut = note.size() > fit ? note.rfind("; ", fit) : std::string::npos;

	if (cut == std::string::npos || cut == 0) {
		if (!note.empty())
			c.out += fmt::format("<text x=\"{}\" y=\"44\" font-size=\"12\" "
					     "fill=\"#444\">{}</text>\n", kLeft, esc(note));
	} else {
		c.out += fmt::format("<text x=\"{0}\" y=\"40\" font-size=\"11\" fill=\"#444\">{1}"
				     "</text>\n<text x=\"{0}\" y=\"54\" font-size=\"11\" "
				     "fill=\"#444\">{2}</text>\n", kLeft, esc(note.substr(0, cut + 1)),
				     esc(note.substr(cut + 2)));
	}
	for (unsigned int lane = 0; lane < c.lanes; lane++) {
		unsigned int first = lane * c.per, last = std::min(nr, first + c.per) - 1;
		std::string name = first == last ? fmt::format("CPU {}", first)
						 : fmt::format("CPUs {}-{}", first, last);

		c.out += fmt::format("<g class=\"lane\" data-cpu=\"{0}\" data-cpus=\"{1}\">"
				     "<rect x=\"{2}\" y=\"{3:.1f}\" width=\"{4}\" height=\"{5:.1f}\" "
				     "fill=\"{6}\" stroke=\"#eee\"/><text x=\"8\" y=\"{7:.1f}\" "
				     "font-size=\"12\">{8}</text></g>\n",
				     first, last - first + 1, kLeft, c.y(first), kWidth - kLeft - kRight,
				     c.laneH, lane % 2 ? "#fafafa" : "#ffffff",
				     c.y(first) + c.laneH / 2 + 4, name);
	}
	/* the time axis: ten ticks, each at the time it stands for (none inside a break) */
	double ya = c.bottom() + 14;

	for (int i = 0; i <= 10; i++) {
		double x = kLeft + (kWidth - kLeft - kRight) * i / 10, step;
		bool inGap, g2;
		u64 ts = c.at(x, &inGap);

		if (inGap)
			continue;
		/* what a tenth of the width stands for here */
		step = (double)c.at(x + (kWidth - kLeft - kRight) / 10, &g2) - (double)ts;
		if (step <= 0 || g2)
			step = (double)ts - (double)c.at(x - (kWidth - kLeft - kRight) / 10, &g2);
		c.out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" "
				     "stroke=\"#999\" stroke-width=\"0.5\"/><text x=\"{0:.1f}\" "
				     "y=\"{3:.1f}\" font-size=\"10\" text-anchor=\"middle\">+{4}</text>\n",
				     x, kTop, c.bottom(), ya, tickLabel((double)(ts - c.t0), step));
	}
}

/* The legend: the kinds of mark the section drew, no others. Its bottom (px). */
double drawLegend(Canvas &c)
{
	double y = c.bottom() + 36, x = kLeft;
	auto item = [&](const char *kind, const std::string &swatch, const std::string &label) {
		if (!c.drawn.count(kind))
			return;
		double w = 16 + 6.2 * (double)label.size() + 18;

		if (x > kLeft && x + w > kWidth - kRight) {	/* the next row */
			x = kLeft;
			y += 20;
		}
		c.out += fmt::format("<g class=\"legend\" data-kind=\"{}\">{}<text x=\"{:.1f}\" "
				     "y=\"{:.1f}\" font-size=\"11\">{}</text></g>\n",
				     kind, swatch, x + 16, y + 10, esc(label));
		x += w;
	};
	auto box = [&](const char *fill) {
		return fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"12\" height=\"12\" "
				   "fill=\"{}\"/>", x, y, fill);
	};
	auto bar = [&](const char *colour) {
		return fmt::format("<path d=\"M{0:.1f} {1:.1f}v-8M{2:.1f} {1:.1f}v-4M{3:.1f} "
				   "{1:.1f}v-11\" stroke=\"{4}\"/>", x + 3, y + 12, x + 6, x + 9,
				   colour);
	};

	item("user", box("#c7e9c0"), "user mode");
	item("idle", box("#d9d9d9"), "idle");
	for (const PhaseStyle &p : kPhases)
		item((std::string("phase-") + p.name).c_str(), box(p.fill), p.label);
	item("ipi", fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" "
				"y2=\"{2:.1f}\" stroke=\"#a50f15\"/>", x + 6, y, y + 12), "IPI");
	item("int3", fmt::format("<path d=\"M{:.1f} {:.1f} l-3 -6 l6 0 z\" fill=\"#cb181d\"/>",
				 x + 6, y + 10), "INT3 trap");
	item("flush", fmt::format("<path d=\"M{:.1f} {:.1f} l4 4 l-4 4 l-4 -4 z\" "
				  "fill=\"#08519c\"/>", x + 6, y + 2), "deferred flush at entry");
	item("density-ipi", bar("#6a51a3"), "IPIs received per pixel column");
	item("density-int3", bar("#cb181d"), "INT3 traps per pixel column");
	item("density-flush", bar("#08519c"), "deferred flushes per pixel column");
	item("lost", fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\">x</text>",
				 x + 3, y + 10), "events dropped (a full ring)");
	item("violation", fmt::format("<circle cx=\"{0:.1f}\" cy=\"{1:.1f}\" r=\"5\" "
				      "fill=\"none\" stroke=\"#d00\" stroke-width=\"2\"/><line "
				      "x1=\"{0:.1f}\" y1=\"{2:.1f}\" x2=\"{0:.1f}\" y2=\"{3:.1f}\" "
				      "stroke=\"#d00\" stroke-dasharray=\"2 2\"/>", x + 6, y + 6, y - 2,
				      y + 14),
	     "model violation: the ring on its CPU, the dashed line its time on every lane");
	item("gap", fmt::format("<path d=\"M{0:.1f} {1:.1f} l2.5 4 l-5 4 l2.5 4\" stroke=\"#666\" "
				"fill=\"none\"/>", x + 6, y),
	     "a stretch with no event, not to scale (its length above it)");
	return y + 20;
}

} /* namespace */

u64 timelineGapNs = 1000000;
unsigned long timelineMarkLimit = 2500;

u32 timelineEvents()
{
	u32 m = 0;

	for (TraceType t : {TraceType::IpiSendCpu, TraceType::IpiSendCpumask, TraceType::UserEnter,
			    TraceType::UserExit, TraceType::TextPokeBatch, TraceType::Int3Emulate,
			    TraceType::CtIdleEnter, TraceType::CtIdleExit, TraceType::CtWorkFlush})
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
	size_t gaps = std::count_if(c.seg.begin(), c.seg.end(), [](const Segment &g) {
		return g.gap;
	});

	if (gaps)
		note += fmt::format("{}{} with no event drawn as {} (not to scale)",
				    note.empty() ? "" : "; ",
				    kshim::nOf(gaps, "stretch", "stretches"),
				    gaps == 1 ? "a break" : "breaks");
	/* the frame goes first, under the rest: drawn after the marks, it learns their note */
	Canvas frame = c;

	drawSpans(c, events, nr);
	drawBatches(c, events, nr);
	drawGaps(c);
	drawMarks(c, events, nr, &note);
	drawViolations(c, s.marks, nr);
	*height = drawLegend(c) + 10;
	drawFrame(frame, nr, s.title, note);
	return frame.out + c.out;
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

namespace {

/* The events of the last @window ns (0: all), and what the session dropped. */
class WindowSink : public kshim::TraceSink
{
public:
	explicit WindowSink(u64 windowNs) : window_(windowNs) {}

	void begin(const std::vector<kshim::TraceCpu> &cpus) override { nr_ = cpus.size(); }

	void event(const TraceEvent &e) override
	{
		ev_.push_back(e);
		while (window_ && ev_.front().ts + window_ < e.ts) {
			ev_.pop_front();
			cut_ = true;
		}
	}

	bool finish(const std::vector<kshim::TraceCpu> &cpus, std::string *) override
	{
		dropped_ = 0;
		for (const kshim::TraceCpu &c : cpus)
			dropped_ += c.dropped;
		nr_ = std::max<size_t>(nr_, cpus.size());
		return true;
	}

	void mark(const TimelineMark &m) { marks_.push_back(m); }

	/* The picture of what was kept, @title over @subtitle and the window's notes. */
	TimelineSection section(const std::string &title, const std::string &subtitle) const
	{
		TimelineSection s{std::vector<TraceEvent>(ev_.begin(), ev_.end()), (unsigned int)nr_,
				  title, subtitle, marks_};

		if (cut_)
			s.note += fmt::format("{}the last {} of the run (--timeline-window)",
					      s.note.empty() ? "" : "; ", dur((double)window_));
		if (dropped_)
			s.note += fmt::format("{}{} events dropped (x marks)",
					      s.note.empty() ? "" : "; ", dropped_);
		if (!marks_.empty())
			s.note += fmt::format("{}{} (red rings)", s.note.empty() ? "" : "; ",
					      kshim::nOf(marks_.size(), "model violation"));
		return s;
	}

private:
	u64 window_;
	std::deque<TraceEvent> ev_;
	size_t nr_ = 0;
	bool cut_ = false;
	unsigned long dropped_ = 0;
	std::vector<TimelineMark> marks_;
};

/* A window written as one picture when the session finishes. */
class TimelineSink : public WindowSink
{
public:
	TimelineSink(u64 windowNs, const std::string &title, const std::string &subtitle)
		: WindowSink(windowNs), title_(title), note_(subtitle)
	{
	}

	bool open(const std::string &path, std::string *err) { return file_.open(path, err); }
	void retitle(const std::string &title, const std::string &subtitle)
	{
		title_ = title;
		note_ = subtitle;
	}

	bool finish(const std::vector<kshim::TraceCpu> &cpus, std::string *err) override
	{
		TimelineSection s;

		WindowSink::finish(cpus, err);
		s = section(title_, note_);
		file_.write(timelineSvg({s}, title_));
		return file_.commit(err);
	}

private:
	std::string title_, note_;
	kshim::OutputFile file_;
};

class MaskSink : public kshim::TraceSink
{
public:
	MaskSink(std::unique_ptr<kshim::TraceSink> inner, u32 mask)
		: inner_(std::move(inner)), mask_(mask)
	{
	}

	void begin(const std::vector<kshim::TraceCpu> &cpus) override { inner_->begin(cpus); }

	void event(const TraceEvent &e) override
	{
		if (e.type == TraceType::Lost || (mask_ & kshim::traceBit(e.type)))
			inner_->event(e);
	}

	bool finish(const std::vector<kshim::TraceCpu> &cpus, std::string *err) override
	{
		return inner_->finish(cpus, err);
	}

private:
	std::unique_ptr<kshim::TraceSink> inner_;
	u32 mask_;
};

} /* namespace */

std::unique_ptr<kshim::TraceSink> makeTimelineSink(const std::string &path, u64 windowNs,
						   const std::string &title,
						   const std::string &subtitle, std::string *err)
{
	auto s = std::make_unique<TimelineSink>(windowNs, title, subtitle);

	if (!s->open(path, err))
		return nullptr;
	return s;
}

void timelineSinkTitle(kshim::TraceSink *sink, const std::string &title,
		       const std::string &subtitle)
{
	if (auto *t = dynamic_cast<TimelineSink *>(sink))
		t->retitle(title, subtitle);
}

void timelineSinkMark(kshim::TraceSink *sink, const TimelineMark &m)
{
	if (auto *t = dynamic_cast<WindowSink *>(sink))
		t->mark(m);
}

std::unique_ptr<kshim::TraceSink> makeTimelineWindow(u64 windowNs)
{
	return std::make_unique<WindowSink>(windowNs);
}

TimelineSection timelineWindowSection(const kshim::TraceSink *window, const std::string &title,
				      const std::string &subtitle)
{
	const auto *w = dynamic_cast<const WindowSink *>(window);

	BUG_ON(!w);
	return w->section(title, subtitle);
}

bool TimelineBook::open(const std::string &path, const std::string &title, std::string *err)
{
	title_ = title;
	return file_.open(path, err);
}

bool TimelineBook::commit(std::string *err)
{
	if (sections_.empty())
		sections_.push_back({{}, 1, title_, "no machine ran (stopped before the first boot)",
				     {}});
	file_.write(timelineSvg(sections_, title_));
	return file_.commit(err);
}

std::unique_ptr<kshim::TraceSink> maskTraceSink(std::unique_ptr<kshim::TraceSink> inner, u32 mask)
{
	return std::make_unique<MaskSink>(std::move(inner), mask);
}

} /* namespace pokelab */
