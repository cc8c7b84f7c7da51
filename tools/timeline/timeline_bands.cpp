// SPDX-License-Identifier: GPL-2.0-only
/*
 * The bands of the timeline's lanes (timeline_draw.h): each CPU's user and
 * idle spans, and each INT3 batch's phases on the patching CPU's lane.
 */
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "timeline/timeline_draw.h"

namespace pokelab::timeline_svg {

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

} /* namespace pokelab::timeline_svg */
