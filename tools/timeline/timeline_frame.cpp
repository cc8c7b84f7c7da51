// SPDX-License-Identifier: GPL-2.0-only
/*
 * What frames a timeline section (timeline_draw.h): its title and note, a
 * lane per CPU (or group of CPUs), the time axis with its ticks, and the
 * legend of the kinds of mark drawn.
 */
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <cairo.h>
#include <fmt/format.h>
#include <fontconfig/fontconfig.h>

#include "timeline/timeline_draw.h"

namespace pokelab::timeline_svg {

namespace {

/* 1, 2 or 5 times a power of ten: the smallest such step of at least @ns. */
double niceStep(double ns)
{
	double p = std::pow(10, std::floor(std::log10(std::max(ns, 1.0))));

	for (double m : {1.0, 2.0, 5.0, 10.0})
		if (m * p >= ns)
			return m * p;
	return 10 * p;
}

/*
 * A tick's time in @unit (the picture's one unit), with as many decimals
 * as tell it from its neighbour @step ns away.
 */
std::string tickLabel(double ns, double step, double unit)
{
	const char *name = unit == 1e9 ? "s" : unit == 1e6 ? "ms" : unit == 1e3 ? "us" : "ns";
	int decimals = (int)std::ceil(-std::log10(step / unit) - 1e-9);

	return fmt::format("{:.{}f} {}", ns / unit, std::clamp(decimals, 0, 6), name);
}

/*
 * How wide a renderer lays out a line of the SVG's sans-serif: cairo's
 * toy font API picks the font through fontconfig, as rsvg-convert and
 * browsers on Linux do. Where no font can be loaded, an estimate wider
 * than most sans-serif fonts' average glyph (0.6 em).
 */
class TextWidth
{
public:
	TextWidth()
	{
		surface_ = cairo_image_surface_create(CAIRO_FORMAT_A8, 1, 1);
		cr_ = cairo_create(surface_);
		cairo_select_font_face(cr_, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
				       CAIRO_FONT_WEIGHT_NORMAL);
		/* the glyphs' own advances: hinted, a 16 px digit is 10, not 10.2, px wide */
		cairo_font_options_t *fo = cairo_font_options_create();

		cairo_font_options_set_hint_metrics(fo, CAIRO_HINT_METRICS_OFF);
		cairo_font_options_set_hint_style(fo, CAIRO_HINT_STYLE_NONE);
		cairo_set_font_options(cr_, fo);
		cairo_font_options_destroy(fo);
	}
	~TextWidth()
	{
		cairo_destroy(cr_);
		cairo_surface_destroy(surface_);
		/* cairo's and fontconfig's caches, which a leak checker would report at exit */
		cairo_debug_reset_static_data();
		FcFini();
	}
	TextWidth(const TextWidth &) = delete;
	TextWidth &operator=(const TextWidth &) = delete;

	double operator()(const std::string &s, double size)
	{
		cairo_text_extents_t e;

		cairo_set_font_size(cr_, size);
		cairo_text_extents(cr_, s.c_str(), &e);
		if (cairo_status(cr_) != CAIRO_STATUS_SUCCESS || (e.x_advance <= 0 && !s.empty()))
			return 0.6 * size * (double)s.size();
		return e.x_advance;
	}

private:
	cairo_surface_t *surface_;
	cairo_t *cr_;
};

/*
 * @s in lines no wider than @width at @size px: broken after a "; " where
 * the line is at least half full, else at the last space that fits; a
 * word wider than the picture (a long CPU list) after its last comma
 * that fits, else at its last character that fits.
 */
std::vector<std::string> wrap(TextWidth &tw, const std::string &s, double size, double width)
{
	std::vector<std::string> lines;
	size_t pos = 0;

	while (pos < s.size()) {
		std::string rest = s.substr(pos);
		size_t cut = std::string::npos, next = 0;

		if (tw(rest, size) <= width) {
			lines.push_back(rest);
			break;
		}
		for (const char *sep : {"; ", " ", ","}) {
			size_t keep = sep[0] != ' ';	/* the ';' or ',' ends the line */

			for (size_t at = rest.find(sep); at != std::string::npos;
			     at = rest.find(sep, at + 1)) {
				double w = tw(rest.substr(0, at + keep), size);

				if (w > width)
					break;
				if (sep[0] == ';' && w < width / 2)
					continue;
				cut = at + keep;
				next = at + std::strlen(sep);
			}
			if (cut != std::string::npos && cut > 0)
				break;
			cut = std::string::npos;
		}
		if (cut == std::string::npos) {
			/* whole UTF-8 characters, at least one */
			cut = rest.size();
			while (cut > 1 && tw(rest.substr(0, cut), size) > width)
				for (cut--; cut > 1 && ((unsigned char)rest[cut] & 0xc0) == 0x80;)
					cut--;
			next = cut;
		}
		lines.push_back(rest.substr(0, cut));
		pos += next;
	}
	return lines;
}

} /* namespace */

std::string laneName(const Canvas &c, unsigned int lane, unsigned int nr)
{
	unsigned int first = lane * c.per, last = std::min(nr, first + c.per) - 1;

	return first == last ? fmt::format("CPU {}", first) : fmt::format("CPUs {}-{}", first, last);
}

Header layoutHeader(const std::string &title, const std::string &note)
{
	const double width = kWidth - kLeft - kRight;
	/* one for the program: its end resets cairo's and fontconfig's caches, once */
	static TextWidth tw;
	Header h;

	h.title = wrap(tw, title, 16, width);
	if (h.title.empty())
		h.title.push_back("");
	h.note = wrap(tw, note, 12, width);
	h.noteSize = 12;
	if (h.note.size() > 1) {
		h.note = wrap(tw, note, 11, width);
		h.noteSize = 11;
	}
	/* the title's baselines 20 px apart, the note's 14 (one line: 20 under the title) */
	double y = 24 + 20 * (double)(h.title.size() - 1);

	if (h.note.size() == 1)
		y += 20;
	else if (!h.note.empty())
		y += 16 + 14 * (double)(h.note.size() - 1);
	h.top = std::max(kTop, y + 16);
	return h;
}

void drawFrame(Canvas &c, unsigned int nr, const Header &h)
{
	double y = 24;

	for (const std::string &l : h.title) {
		c.out += fmt::format("<text class=\"title\" x=\"{}\" y=\"{}\" font-size=\"16\">{}"
				     "</text>\n", kLeft, y, esc(l));
		y += 20;
	}
	y += h.note.size() == 1 ? 0 : -4;
	for (const std::string &l : h.note) {
		c.out += fmt::format("<text class=\"note\" x=\"{}\" y=\"{}\" font-size=\"{}\" "
				     "fill=\"#444\">{}</text>\n", kLeft, y, h.noteSize, esc(l));
		y += 14;
	}
	for (unsigned int lane = 0; lane < c.lanes; lane++) {
		unsigned int first = lane * c.per, last = std::min(nr, first + c.per) - 1;
		std::string name = laneName(c, lane, nr);

		c.out += fmt::format("<g class=\"lane\" data-cpu=\"{0}\" data-cpus=\"{1}\">"
				     "<rect x=\"{2}\" y=\"{3:.1f}\" width=\"{4}\" height=\"{5:.1f}\" "
				     "fill=\"{6}\" stroke=\"#eee\"/><text x=\"8\" y=\"{7:.1f}\" "
				     "font-size=\"12\">{8}</text></g>\n",
				     first, last - first + 1, kLeft, c.y(first), kWidth - kLeft - kRight,
				     c.laneH, lane % 2 ? "#fafafa" : "#ffffff",
				     c.y(first) + c.laneH / 2 + 4, name);
	}
	/*
	 * The time axis: ticks every 1, 2 or 5 times a power of ten of time,
	 * about ten to the width drawn to scale, each at the time it stands
	 * for, labelled in one unit (that of the picture's length); none
	 * inside a break, none on top of the one before it (after a break).
	 */
	double ya = c.bottom() + 14, scalePx = 0, scaleNs = 0, lastX = -1e9;

	for (const Segment &s : c.seg) {
		if (!s.gap) {
			scalePx += s.x1 - s.x0;
			scaleNs += (double)(s.t1 - s.t0);
		}
	}
	if (scalePx <= 0 || scaleNs <= 0)
		return;
	double step = niceStep(scaleNs / scalePx * (kWidth - kLeft - kRight) / 10);
	double len = (double)(c.t1 - c.t0);
	double unit = len >= 1e9 ? 1e9 : len >= 1e6 ? 1e6 : len >= 1e3 ? 1e3 : 1;

	for (const Segment &s : c.seg) {
		if (s.gap)
			continue;
		for (double k = std::ceil((double)(s.t0 - c.t0) / step);
		     k * step <= (double)(s.t1 - c.t0); k++) {
			double x = c.x(c.t0 + (u64)(k * step));

			if (x - lastX < 40)
				continue;
			lastX = x;
			c.out += fmt::format("<g class=\"tick\"><line x1=\"{0:.1f}\" y1=\"{1:.1f}\" "
					     "x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#999\" "
					     "stroke-width=\"0.5\"/><text x=\"{0:.1f}\" y=\"{3:.1f}\" "
					     "font-size=\"10\" text-anchor=\"middle\">+{4}</text></g>\n",
					     x, c.top, c.bottom(), ya, tickLabel(k * step, step, unit));
		}
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
		std::string sw = swatch;

		/* the next row; the swatch, drawn where the item was to go, moves with it */
		if (x > kLeft && x + w > kWidth - kRight) {
			sw = fmt::format("<g transform=\"translate({:.1f} 20)\">{}</g>", kLeft - x, sw);
			x = kLeft;
			y += 20;
		}
		c.out += fmt::format("<g class=\"legend\" data-kind=\"{}\">{}<text x=\"{:.1f}\" "
				     "y=\"{:.1f}\" font-size=\"11\">{}</text></g>\n",
				     kind, sw, x + 16, y + 10, esc(label));
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
	for (const IpiStyle &st : kIpiStyles)
		item((std::string("ipi-") + st.name).c_str(),
		     fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" "
				 "y2=\"{2:.1f}\" stroke=\"{3}\" stroke-width=\"1.5\" "
				 "stroke-dasharray=\"{4}\"/>", x + 6, y, y + 12, st.colour, st.dash),
		     st.label);
	item("int3", fmt::format("<path d=\"M{:.1f} {:.1f} l-3 -6 l6 0 z\" fill=\"#cb181d\"/>",
				 x + 6, y + 10), "INT3 trap");
	item("flush", fmt::format("<path d=\"M{:.1f} {:.1f} l4 4 l-4 4 l-4 -4 z\" "
				  "fill=\"#08519c\"/>", x + 6, y + 2),
	     "deferred: the IPI's work run at the CPU's next kernel entry");
	item("density-ipi", bar("#6a51a3"), "IPIs received per pixel column (any kind)");
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

} /* namespace pokelab::timeline_svg */
