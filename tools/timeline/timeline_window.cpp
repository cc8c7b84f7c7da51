// SPDX-License-Identifier: GPL-2.0-only
/*
 * Past timelineMarkLimit marks (timeline_draw.h): a run too long to draw
 * mark by mark is drawn as a window around one batch, in detail, under an
 * overview strip of the whole run as density with the window boxed in it.
 * Drawn whole as density, `run isolation`'s 5 s of each policy looked
 * alike (issue 35): what tells ct_defer=off from v7 (the sync IPIs to the
 * isolated CPUs, or their deferred flush at the next entry) is a few
 * marks around each batch, invisible at 5 s to 1300 px.
 */
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "timeline/timeline_draw.h"

namespace pokelab::timeline_svg {

namespace {

/* A batch: from its begin to its done on the patching CPU. */
struct Batch {
	u64 t0, t1;
};

std::vector<Batch> batchesOf(const std::vector<TraceEvent> &ev, unsigned int nr)
{
	std::map<int, u64> open;
	std::vector<Batch> b;

	for (const TraceEvent &e : ev) {
		if (e.type != TraceType::TextPokeBatch || e.cpu >= nr)
			continue;
		if (e.target == kshim::TRACE_BATCH_BEGIN) {
			open[e.cpu] = e.ts;
		} else if (e.target == kshim::TRACE_BATCH_DONE && open.count(e.cpu)) {
			b.push_back({open[e.cpu], e.ts});
			open.erase(e.cpu);
		}
	}
	return b;
}

} /* namespace */

/*
 * The batch nearest @focus (the run's middle: a representative one, not
 * the first, which the boot's warm-up may slow; or a model violation's
 * time), with as long again as the batch on each side (at least 100 us).
 * Where CPUs ran deferred work at entry (an isolated CPU's sync, instead
 * of its IPI), of the kNear batches nearest the middle the one after
 * which each such CPU ran it soonest, before the next batch, and the
 * window stretched to it: what the deferral does is in the picture.
 */
bool chooseWindow(const std::vector<TraceEvent> &ev, unsigned int nr, u64 focus, Window *w,
		  std::vector<TraceEvent> *win)
{
	constexpr size_t kNear = 16;
	constexpr u64 kNever = ~0ull;
	std::vector<Batch> b = batchesOf(ev, nr);
	std::vector<std::vector<u64>> flushes(nr);	/* each CPU's deferred work at entry */

	if (b.empty())
		return false;
	for (const TraceEvent &e : ev)
		if (e.type == TraceType::CtWorkFlush && e.cpu < nr)
			flushes[e.cpu].push_back(e.ts);
	auto off = [focus](const Batch &k) {
		u64 m = k.t0 + (k.t1 - k.t0) / 2;

		return m > focus ? m - focus : focus - m;
	};
	std::vector<size_t> near(b.size());

	for (size_t i = 0; i < b.size(); i++)
		near[i] = i;
	std::stable_sort(near.begin(), near.end(),
			 [&](size_t x, size_t y) { return off(b[x]) < off(b[y]); });
	/* a violation's batch is the one to see; else, of the nearest, the soonest deferral */
	near.resize(w->violation ? 1 : std::min(kNear, near.size()));
	/* the last of each deferring CPU's first work at entry after batch @i, or kNever */
	auto settled = [&](size_t i) {
		u64 until = i + 1 < b.size() ? b[i + 1].t0 : ev.back().ts, last = 0;
		bool any = false;

		for (const std::vector<u64> &f : flushes) {
			if (f.empty())
				continue;
			auto it = std::upper_bound(f.begin(), f.end(), b[i].t1);

			if (it == f.end() || *it > until)
				return kNever;
			last = std::max(last, *it);
			any = true;
		}
		return any ? last : kNever;
	};
	size_t best = near.front();
	u64 bestAt = settled(best);

	for (size_t i : near) {
		u64 at = settled(i);

		if (at != kNever && (bestAt == kNever || at - b[i].t1 < bestAt - b[best].t1)) {
			best = i;
			bestAt = at;
		}
	}
	const Batch &k = b[best];
	u64 pad = std::max<u64>(k.t1 - k.t0, 100000);

	w->t0 = k.t0 > ev.front().ts + pad ? k.t0 - pad : ev.front().ts;
	w->t1 = k.t1 + pad;
	w->deferred = bestAt != kNever;
	if (w->deferred)
		w->t1 = std::max(w->t1, bestAt + pad / 4);
	w->t1 = std::min(w->t1, ev.back().ts);
	w->batch = (unsigned int)best + 1;
	w->batches = (unsigned int)b.size();

	/*
	 * The window's events, after what it needs of those before it, each
	 * moved to its start: the user and idle spans still open there, and
	 * each sender's last csd_queue_cpu for each target (what its next
	 * IPI is for).
	 */
	std::map<std::pair<int, int>, TraceEvent> open;	/* (cpu, enter type) */
	std::map<std::pair<int, int>, TraceEvent> csd;	/* (sender, target) */

	win->clear();
	for (const TraceEvent &e : ev) {
		if (e.ts >= w->t0)
			break;
		switch (e.type) {
		case TraceType::UserEnter:
		case TraceType::CtIdleEnter:
			open[{e.cpu, (int)e.type}] = e;
			break;
		case TraceType::UserExit:
			open.erase({e.cpu, (int)TraceType::UserEnter});
			break;
		case TraceType::CtIdleExit:
			open.erase({e.cpu, (int)TraceType::CtIdleEnter});
			break;
		case TraceType::CsdQueueCpu:
			csd[{e.cpu, e.target}] = e;
			break;
		default:
			break;
		}
	}
	for (auto *m : {&open, &csd})
		for (auto &[key, e] : *m) {
			e.ts = w->t0;
			win->push_back(e);
		}
	for (const TraceEvent &e : ev)
		if (e.ts >= w->t0 && e.ts <= w->t1)
			win->push_back(e);
	return true;
}

/*
 * The overview: each lane of the whole run as density (IPIs received, INT3
 * traps, deferred flushes per pixel column), to scale, the window boxed and
 * joined to the detail's edges below it. Its height (px).
 */
double drawOverview(Canvas &c, const std::vector<TraceEvent> &ev, unsigned int nr,
		    const Window &w)
{
	Canvas o;
	const double right = kWidth - kRight;

	o.t0 = ev.front().ts;
	o.t1 = std::max(ev.back().ts, o.t0 + 1);
	o.top = c.top + 14;
	o.laneH = c.lanes <= 16 ? 16 : 8;
	o.per = c.per;
	o.lanes = c.lanes;
	o.seg.push_back({o.t0, o.t1, kLeft, right, false});
	/* labelled as the lanes below: each row its CPU (or CPUs), the strip its span of time */
	c.out += fmt::format("<g class=\"overview\"><text class=\"overview-title\" x=\"{}\" "
			     "y=\"{:.1f}\" font-size=\"11\" fill=\"#444\">the whole run, +0 to +{}, "
			     "to scale: IPIs received, INT3 traps and deferred flushes per pixel "
			     "column; the box is the window drawn below (batch {} of {})</text>\n",
			     kLeft, c.top + 9, dur((double)(o.t1 - o.t0)), w.batch, w.batches);
	for (unsigned int lane = 0; lane < o.lanes; lane++) {
		unsigned int first = lane * o.per;
		double y = o.y(first), size = std::min(10.0, o.laneH - 1);

		c.out += fmt::format("<g class=\"overview-lane\" data-cpu=\"{}\" data-cpus=\"{}\">"
				     "<rect x=\"{}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\" "
				     "fill=\"{}\" stroke=\"#eee\"/><text x=\"8\" y=\"{:.1f}\" "
				     "font-size=\"{}\" fill=\"#444\">{}</text></g>\n",
				     first, std::min(nr - first, o.per), kLeft, y, right - kLeft, o.laneH,
				     lane % 2 ? "#fafafa" : "#ffffff", y + o.laneH / 2 + size * 0.35,
				     size, laneName(o, lane, nr));
	}
	drawDensity(o, ev, nr);
	double x0 = o.x(w.t0), x1 = std::max(o.x(w.t1), x0 + 3), yb = o.bottom();
	double detail = yb + 22;	/* where the detail's lanes start */

	/* the box, joined to the detail's edges; the strip's ends under it */
	o.out += fmt::format("<rect class=\"window\" data-t0=\"{}\" data-t1=\"{}\" x=\"{:.1f}\" "
			     "y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" "
			     "stroke=\"#000\" stroke-width=\"1.5\"><title>the window drawn below: "
			     "+{} to +{} of the run</title></rect>\n<path d=\"M{:.1f} {:.1f} "
			     "L{} {:.1f} M{:.1f} {:.1f} L{} {:.1f}\" stroke=\"#999\" "
			     "stroke-dasharray=\"2 2\" fill=\"none\"/>\n"
			     "<text x=\"{}\" y=\"{:.1f}\" font-size=\"9\" fill=\"#444\">+0</text>"
			     "<text x=\"{}\" y=\"{:.1f}\" font-size=\"9\" fill=\"#444\" "
			     "text-anchor=\"end\">+{}</text>\n</g>\n",
			     w.t0 - o.t0, w.t1 - o.t0, x0 - 1, o.top - 1, x1 - x0 + 2, yb - o.top + 2,
			     dur((double)(w.t0 - o.t0)), dur((double)(w.t1 - o.t0)), x0, yb + 1, kLeft,
			     detail, x1, yb + 1, right, detail, kLeft, yb + 10, right, yb + 10,
			     dur((double)(o.t1 - o.t0)));
	c.out += o.out;
	c.drawn.insert(o.drawn.begin(), o.drawn.end());
	return detail + 4 - c.top;
}

} /* namespace pokelab::timeline_svg */
