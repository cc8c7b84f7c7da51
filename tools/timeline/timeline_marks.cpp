// SPDX-License-Identifier: GPL-2.0-only
/*
 * The marks of the timeline (timeline_draw.h): IPI arrows by kind (sync,
 * TLB flush, other), INT3 traps, deferred flushes, lost events and model
 * violations; and their density per lane and pixel column.
 */
#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <kernel_shim/symbols.h>
#include <kernel_shim/trace.h>
#include <linux/cpumask.h>

#include "timeline/timeline_draw.h"

namespace pokelab {

int timelineIpiKind(const std::string &func)
{
	static const char *const tlb[] = {"do_flush_tlb_all", "do_kernel_range_flush",
					  "flush_tlb_func", "kernel_tlb_flush_all",
					  "kernel_tlb_flush_range"};

	if (func == "do_sync_core")
		return timeline_svg::IPI_SYNC;
	for (const char *f : tlb)
		if (func == f)
			return timeline_svg::IPI_TLB;
	return timeline_svg::IPI_OTHER;
}

} /* namespace pokelab */

namespace pokelab::timeline_svg {

const IpiStyle kIpiStyles[NR_IPI_KINDS] = {
	{"sync", "IPI: sync (do_sync_core)", "#a50f15", "none"},
	{"tlb", "IPI: TLB flush", "#6a51a3", "4 2"},
	{"other", "IPI: other cross-call", "#636363", "1 2"},
	{"unknown", "IPI (no csd_queue_cpu traced: kind unknown)", "#000000", "none"},
};

/*
 * The csd_queue_cpu event names the function a cross-call runs; the IPI
 * that follows it from the same sender to the same target is for that
 * csd (smp_call_function_many_cond() queues, then sends one IPI per target
 * whose queue was empty), and no IPI after it: one with no csd_queue_cpu
 * since the last is of a kind unknown. Recorded events carry the address, resolved
 * once per function; read back from report text, the reader keeps the
 * kind in @csd + 1 (timeline_cmd.cpp).
 */
void IpiKinds::see(const TraceEvent &e)
{
	if (e.type != TraceType::CsdQueueCpu)
		return;
	IpiKind k = IPI_UNKNOWN;

	if (e.fn) {
		auto it = byFunc_.find(e.fn);

		if (it == byFunc_.end())
			it = byFunc_.emplace(e.fn, (IpiKind)timelineIpiKind(
						      kshim::traceSymbol(e.fn, false))).first;
		k = it->second;
	} else if (e.csd >= 1 && e.csd <= NR_IPI_KINDS) {
		k = (IpiKind)(e.csd - 1);
	}
	last_[{e.cpu, e.target}] = k;
}

IpiKind IpiKinds::of(int from, int to)
{
	auto it = last_.find({from, to});
	IpiKind k = it == last_.end() ? IPI_UNKNOWN : it->second;

	/* one IPI per csd: the next IPI to that target needs a csd of its own */
	if (it != last_.end())
		last_.erase(it);
	return k;
}

namespace {

/* An x where events were dropped: a full ring. */
std::string lostMark(const Canvas &c, const TraceEvent &e)
{
	return fmt::format("<text class=\"lost\" data-cpu=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" "
			   "font-size=\"11\" fill=\"#000\">x<title>{} events dropped on CPU {} "
			   "here</title></text>\n",
			   e.cpu, c.x(e.ts) - 3, c.y(e.cpu) + c.laneH / 2 + 4, e.target, e.cpu);
}

void arrow(Canvas &c, int from, int to, double x, IpiKind k, unsigned long n)
{
	const IpiStyle &st = kIpiStyles[k];
	double y0 = c.y(from) + c.laneH / 2, y1 = c.y(to) + c.laneH / 2;
	double d = y1 > y0 ? -4 : 4;

	c.out += fmt::format("<g class=\"ipi ipi-{}\" data-from=\"{}\" data-to=\"{}\" "
			     "data-n=\"{}\"><title>{} {} CPU {} -> CPU {}</title><line "
			     "x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
			     "stroke-width=\"1\" stroke-dasharray=\"{}\"/><path d=\"M{:.1f} {:.1f} "
			     "l-2.5 {:.1f} l5 0 z\" fill=\"{}\"/></g>\n",
			     st.name, from, to, n, n, n == 1 ? st.label : st.label + std::string(" x"),
			     from, to, x, y0, x + 1.5, y1, st.colour, st.dash, x + 1.5, y1, d,
			     st.colour);
	c.drawn.insert(std::string("ipi-") + st.name);
}

/*
 * The event loop both kinds of drawing share: each event of @ev's first
 * @nr CPUs to @f(e, px, to), at its pixel column @px; an IPI once per
 * target among them (@to), any other event once, with @to -1.
 */
template <typename F>
void eachMark(const Canvas &c, const std::vector<TraceEvent> &ev, unsigned int nr, F &&f)
{
	for (const TraceEvent &e : ev) {
		if (e.cpu >= nr)
			continue;
		int px = (int)c.x(e.ts);

		if (e.type == TraceType::IpiSendCpu) {
			if (e.target >= 0 && (unsigned int)e.target < nr)
				f(e, px, e.target);
		} else if (e.type == TraceType::IpiSendCpumask) {
			for (unsigned int t = 0; t < nr; t++)
				if (cpumask_test_cpu(t, &e.mask))
					f(e, px, (int)t);
		} else {
			f(e, px, -1);
		}
	}
}

} /* namespace */

/*
 * Density instead of marks: per lane and pixel column, a bar for each kind
 * (IPIs received, INT3 traps, deferred flushes) as high as the column's
 * count against the largest column of that kind. One path per lane and
 * kind; its data-n is the lane's total of that kind. Lost events are
 * still each an x.
 */
void drawDensity(Canvas &c, const std::vector<TraceEvent> &ev, unsigned int nr)
{
	static const struct {
		const char *cls, *what, *colour;
	} kinds[3] = {
		{"density-ipi", "IPIs received", "#6a51a3"},
		{"density-int3", "INT3 traps", "#cb181d"},
		{"density-flush", "deferred flushes at entry", "#08519c"},
	};
	std::map<std::pair<int, int>, unsigned long> bins[3];	/* (x, lane): ipi, int3, flush */
	const double band = (c.laneH - 4) / 3;

	eachMark(c, ev, nr, [&](const TraceEvent &e, int px, int to) {
		switch (e.type) {
		case TraceType::IpiSendCpu:
		case TraceType::IpiSendCpumask:
			bins[0][{px, (int)(to / c.per)}]++;
			break;
		case TraceType::Int3Emulate:
			bins[1][{px, (int)(e.cpu / c.per)}]++;
			break;
		case TraceType::CtWorkFlush:
			bins[2][{px, (int)(e.cpu / c.per)}]++;
			break;
		case TraceType::Lost:
			c.out += lostMark(c, e);
			c.drawn.insert("lost");
			break;
		default:
			break;
		}
	});
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
					     "column: {})</title></path>\n",
					     kinds[k].cls, first, p.second, p.first, kinds[k].colour,
					     c.per > 1 ? "CPUs from" : "CPU", first, p.second,
					     kinds[k].what, max);
			c.drawn.insert(kinds[k].cls);
		}
	}
}

/*
 * IPIs (by kind), INT3 traps, deferred flushes and lost events. Marks of
 * one kind that fall on the same pixel column of a lane are drawn once,
 * with their count, so that a long run's picture stays small; INT3 traps
 * per triangle's width, so that neighbouring triangles never merge into a
 * bar. The number of marks drawn (@dryRun: that would be drawn).
 */
unsigned long drawMarks(Canvas &c, const std::vector<TraceEvent> &ev, unsigned int nr,
			bool dryRun)
{
	constexpr int kInt3Px = 8;	/* a triangle is 6 px wide: 2 px between two */
	std::map<std::tuple<int, int, int, int>, unsigned long> ipis;	/* (x, from, to, kind) */
	std::map<std::pair<int, int>, unsigned long> int3s;		/* (x / 8, cpu) */
	std::vector<const TraceEvent *> flushes;
	IpiKinds kinds;
	std::string lost;

	/* a csd of a CPU past @nr is never asked for: its IPIs are not drawn */
	eachMark(c, ev, nr, [&](const TraceEvent &e, int px, int to) {
		kinds.see(e);
		switch (e.type) {
		case TraceType::IpiSendCpu:
		case TraceType::IpiSendCpumask:
			ipis[{px, e.cpu, to, kinds.of(e.cpu, to)}]++;
			break;
		case TraceType::Int3Emulate:
			int3s[{px / kInt3Px, e.cpu}]++;
			break;
		case TraceType::CtWorkFlush:
			flushes.push_back(&e);
			break;
		case TraceType::Lost:
			lost += lostMark(c, e);
			break;
		default:
			break;
		}
	});
	if (dryRun)
		return ipis.size() + int3s.size() + flushes.size();
	if (!lost.empty()) {
		c.out += lost;
		c.drawn.insert("lost");
	}
	for (const TraceEvent *e : flushes) {
		c.out += fmt::format("<path class=\"flush\" data-cpu=\"{}\" d=\"M{:.1f} {:.1f} "
				     "l4 4 l-4 4 l-4 -4 z\" fill=\"#08519c\"><title>CPU {} ran "
				     "its deferred {} at kernel entry (the IPI it was not sent)"
				     "</title></path>\n",
				     e->cpu, c.x(e->ts), c.y(e->cpu) + c.laneH / 2 - 4, e->cpu,
				     esc(kshim::traceCtWorkName(e->target)));
		c.drawn.insert("flush");
	}
	for (const auto &[k, n] : ipis)
		arrow(c, std::get<1>(k), std::get<2>(k), std::get<0>(k), (IpiKind)std::get<3>(k),
		      n);
	for (const auto &[k, n] : int3s) {
		double x = k.first * kInt3Px + kInt3Px / 2.0;

		c.out += fmt::format("<path class=\"int3\" data-cpu=\"{}\" data-n=\"{}\" "
				     "d=\"M{:.1f} {:.1f} l-3 -6 l6 0 z\" fill=\"#cb181d\"><title>CPU {} "
				     "trapped on an INT3 {} time{} and emulated the site</title></path>\n",
				     k.second, n, x, c.y(k.second) + c.laneH - 2, k.second, n,
				     n == 1 ? "" : "s");
		c.drawn.insert("int3");
	}
	return ipis.size() + int3s.size() + flushes.size();
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
				     m.cpu, esc(m.text), x, c.top, x, c.bottom(), x, y,
				     std::max(5.0, c.laneH / 2));
		c.drawn.insert("violation");
	}
}

} /* namespace pokelab::timeline_svg */
