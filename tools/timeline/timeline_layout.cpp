// SPDX-License-Identifier: GPL-2.0-only
/*
 * The timeline's time axis (timeline_draw.h): to scale, but for the
 * longest quiet stretches, each drawn as a labelled break, so that the
 * picture follows the batches (--timeline-gap, docs/timeline.md).
 */
#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "timeline/timeline_draw.h"

namespace pokelab::timeline_svg {

/*
 * The time axis: to scale, but for the longest stretches with no event
 * (longer than timelineGapNs), each drawn kGapPx wide as a break, as many
 * as leave half the width to scale, and only those that would otherwise be
 * wider than two breaks. No break falls inside a batch.
 */
void layout(Canvas &c, const std::vector<TraceEvent> &ev)
{
	const double w = kWidth - kLeft - kRight;
	const size_t maxGaps = (size_t)(w / 2 / kGapPx);
	std::vector<std::pair<u64, u64>> quiet, chosen;
	u64 kept = c.t1 - c.t0;

	/*
	 * A stretch inside a batch (from its begin to its done on the patching
	 * CPU) is never a break: the phase bar it would cut is the batch's own
	 * time, which the picture is there to show to scale.
	 */
	std::set<int> inBatch;	/* CPUs between a batch's begin and its done */

	for (size_t i = 1; timelineGapNs && i < ev.size(); i++) {
		const TraceEvent &p = ev[i - 1];

		if (p.type == TraceType::TextPokeBatch) {
			if (p.target == kshim::TRACE_BATCH_DONE)
				inBatch.erase(p.cpu);
			else
				inBatch.insert(p.cpu);
		}
		if (inBatch.empty() && ev[i].ts > p.ts && ev[i].ts - p.ts > timelineGapNs)
			quiet.push_back({p.ts, ev[i].ts});
	}
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

			zz[side] = fmt::format("M{:.1f} {:.1f}", x, c.top);
			for (double y = c.top + 4, k = 1; y <= c.bottom(); y += 4, k = -k)
				zz[side] += fmt::format(" L{:.1f} {:.1f}", x + 2.5 * k, y);
		}
		c.out += fmt::format("<g class=\"gap\" data-ns=\"{}\"><title>{} with no event on any "
				     "CPU, drawn {:.0f} px wide, not to scale</title><rect x=\"{:.1f}\" "
				     "y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#fff\" "
				     "fill-opacity=\"0.85\"/><path d=\"{}\" stroke=\"#666\" "
				     "fill=\"none\"/><path d=\"{}\" stroke=\"#666\" fill=\"none\"/>"
				     "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"9\" "
				     "text-anchor=\"middle\" fill=\"#444\">\u2026 {} \u2026</text></g>\n",
				     s.t1 - s.t0, dur((double)(s.t1 - s.t0)), kGapPx, s.x0 + 5, c.top,
				     s.x1 - s.x0 - 10, c.bottom() - c.top, zz[0], zz[1],
				     (s.x0 + s.x1) / 2, c.top - 5, dur((double)(s.t1 - s.t0)));
		c.drawn.insert("gap");
	}
}

} /* namespace pokelab::timeline_svg */
