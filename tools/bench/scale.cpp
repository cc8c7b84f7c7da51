// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench scale: the demo's batch, smp_text_poke_batch_finish(nr_entries=164)
 * on bpf_stats_enabled_key while every other CPU runs the 164 sites, for
 * --cpus 2, 4, 8, ... 512 on this machine's PUs: the median batch, the stale
 * calls (must be 0), the model's verdict and the process's peak RSS per row
 * (VmHWM, reset before each row through /proc/self/clear_refs). The raw
 * column is the same batch at 2 CPUs, so the ratio is the cost of the extra
 * simulated CPUs. --plot FILE writes the table as an SVG plot (cairo).
 */
#include <cairo-svg.h>
#include <fontconfig/fontconfig.h>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <kernel_shim/boot.h>
#include <kernel_shim/trace_output.h>
#include <kernel_shim/xmc.h>
#include <linux/smp.h>
#include <workloads/bpf_stats.h>

#include "../stop.h"
#include "bench.h"
#include "wrote.h"

namespace pokelab::bench {

namespace {

struct ScaleRow {
	unsigned int cpus;
	double medianNs;
	unsigned long stale, checked, violations;
	long hwmKb;
	HostLoad host;
};

/* The process's peak RSS in kB since the last reset (VmHWM), or -1. */
long peakRssKb(bool reset)
{
	if (reset) {
		int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);

		if (fd >= 0) {
			(void)!write(fd, "5", 1);
			close(fd);
		}
		return 0;
	}
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmHWM:", 6))
			kb = strtol(line + 6, nullptr, 10);
	fclose(f);
	return kb;
}

int runRow(const BenchOptions &o, unsigned int cpus, unsigned int flips, ScaleRow *row)
{
	BenchOptions b = o;
	BpfStatsConfig cfg;
	std::vector<double> ns;
	HostLoadMeter meter;

	b.cpus = cpus;
	peakRssKb(true);
	if (bootBench("scale", b, cpus, 2))
		return 2;
	cfg.flips = flips;
	cfg.stop = stopFlag();
	BpfStatsResult r = runBpfStats(cfg);
	for (u64 x : r.batchNs)
		ns.push_back((double)x);
	*row = ScaleRow{cpus, stat(ns).median, r.staleCalls, r.checkedCalls, r.violations,
			peakRssKb(false), meter.finish()};
	kshim::shutdown();
	return 0;
}

cairo_status_t appendSvg(void *closure, const unsigned char *data, unsigned int len)
{
	((std::string *)closure)->append((const char *)data, len);
	return CAIRO_STATUS_SUCCESS;
}

/* Log-log plot of the median batch against the CPU count. */
int plot(const std::string &path, const std::vector<ScaleRow> &rows)
{
	const double w = 640, h = 400, l = 70, r = 20, t = 40, b = 50;
	std::string svg, err;
	double xmax = std::log2(rows.back().cpus), xmin = std::log2(rows.front().cpus);
	double ymin = 1e18, ymax = 0;

	for (const ScaleRow &x : rows) {
		ymin = std::min(ymin, x.medianNs / 1e6);
		ymax = std::max(ymax, x.medianNs / 1e6);
	}
	double ly0 = std::floor(std::log10(ymin)), ly1 = std::ceil(std::log10(ymax));
	if (ly1 <= ly0)
		ly1 = ly0 + 1;
	if (xmax <= xmin)
		xmax = xmin + 1;
	auto X = [&](double cpus) { return l + (std::log2(cpus) - xmin) / (xmax - xmin) * (w - l - r); };
	auto Y = [&](double ms) { return h - b - (std::log10(ms) - ly0) / (ly1 - ly0) * (h - t - b); };

	cairo_surface_t *s = cairo_svg_surface_create_for_stream(appendSvg, &svg, w, h);
	cairo_t *cr = cairo_create(s);

	cairo_set_source_rgb(cr, 1, 1, 1);
	cairo_paint(cr);
	cairo_set_source_rgb(cr, 0, 0, 0);
	cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
	cairo_set_font_size(cr, 14);
	cairo_move_to(cr, l, 24);
	cairo_show_text(cr, "smp_text_poke_batch_finish(nr_entries=164), median, by --cpus");
	cairo_set_font_size(cr, 11);
	cairo_set_line_width(cr, 1);
	for (const ScaleRow &x : rows) {
		std::string label = std::to_string(x.cpus);

		cairo_move_to(cr, X(x.cpus) - 8, h - b + 16);
		cairo_show_text(cr, label.c_str());
	}
	for (double e = ly0; e <= ly1; e++) {
		std::string label = fmt::format("{:g} ms", std::pow(10, e));

		cairo_set_source_rgb(cr, 0.85, 0.85, 0.85);
		cairo_move_to(cr, l, Y(std::pow(10, e)));
		cairo_line_to(cr, w - r, Y(std::pow(10, e)));
		cairo_stroke(cr);
		cairo_set_source_rgb(cr, 0, 0, 0);
		cairo_move_to(cr, 8, Y(std::pow(10, e)) + 4);
		cairo_show_text(cr, label.c_str());
	}
	cairo_move_to(cr, l + (w - l - r) / 2 - 40, h - 12);
	cairo_show_text(cr, "simulated CPUs (log2)");
	cairo_set_source_rgb(cr, 0.1, 0.3, 0.8);
	cairo_set_line_width(cr, 2);
	for (size_t i = 0; i < rows.size(); i++) {
		double x = X(rows[i].cpus), y = Y(rows[i].medianNs / 1e6);

		if (i)
			cairo_line_to(cr, x, y);
		else
			cairo_move_to(cr, x, y);
	}
	cairo_stroke(cr);
	for (const ScaleRow &x : rows) {
		cairo_arc(cr, X(x.cpus), Y(x.medianNs / 1e6), 3.5, 0, 2 * M_PI);
		cairo_fill(cr);
	}
	cairo_destroy(cr);
	cairo_surface_finish(s);
	cairo_status_t st = cairo_surface_status(s);
	cairo_surface_destroy(s);
	/* cairo's and fontconfig's caches, which a leak checker would report at exit */
	cairo_debug_reset_static_data();
	FcFini();
	/* Rendered in memory, then written to PATH.tmp and renamed: never half-written. */
	if (st != CAIRO_STATUS_SUCCESS || !kshim::writeFileAtomic(path, svg, &err)) {
		fmt::print(stderr, "pokelab: bench scale: cannot write {}: {}\n", path,
			   st != CAIRO_STATUS_SUCCESS ? cairo_status_to_string(st) : err);
		return 1;
	}
	sayWrote(path, "--plot");
	return 0;
}

int benchScale(const BenchOptions &o)
{
	std::vector<unsigned int> counts;
	std::vector<ScaleRow> rows;
	unsigned int flips = roundsOr(o, 10);
	int ret = 0;

	if (o.itersGiven) {
		fmt::print(stderr, "pokelab: bench scale runs each CPU count once, with --rounds flips "
			   "(default 10); it takes no --iters (got --iters {})\n", o.iters);
		return 2;
	}
	if (o.cpus) {
		fmt::print(stderr, "pokelab: bench scale runs every CPU count itself (2, 4, ... "
			   "512); it takes no --cpus (got --cpus {})\n", o.cpus);
		return 2;
	}
	/* --plot's name, FILE.svg and not empty, was checked as it was parsed (pokelab.cpp) */
	std::string err;
	if (!o.plot.empty() && !kshim::checkWritable(o.plot, &err)) {
		fmt::print(stderr, "pokelab: bench scale --plot: {}\n", err);
		return 2;
	}
	for (unsigned int n = 2; n <= 512; n *= 2)
		counts.push_back(n);
	fmt::print("bench scale: {} flips per row (batch = smp_text_poke_batch_finish("
		   "nr_entries=164), every CPU but 0 running the sites)\n", flips);
	for (unsigned int n : counts) {
		ScaleRow row;

		if (stopRequested())
			break;
		if ((ret = runRow(o, n, flips, &row)))
			return ret;
		rows.push_back(row);
		fmt::print("Row --cpus {:3}: batch(164) median {:>11}, stale calls {} of {}, model "
			   "violations {}, peak RSS {} MB\n", n, fmtNs(row.medianNs), row.stale,
			   row.checked, row.violations, row.hwmKb < 0 ? -1 : row.hwmKb / 1024);
		if (row.host.busy)
			fmt::print("Row --cpus {:3}: {}\n", n, row.host.line());
		fflush(stdout);
		if (row.stale || row.violations)
			ret = 1;
	}
	fmt::print("\n| --cpus | batch(164) median | stale calls | model violations | peak RSS |\n"
		   "|---|---|---|---|---|\n");
	for (const ScaleRow &r : rows)
		fmt::print("| {} | {} | {} | {} | {} MB |\n", r.cpus, fmtNs(r.medianNs), r.stale,
			   r.violations, r.hwmKb / 1024);
	for (const ScaleRow &r : rows) {
		PairStat p;

		if (r.cpus == 2)
			continue;
		p.ours.median = r.medianNs;
		p.raw.median = rows.front().medianNs;
		p.ratio.median = r.medianNs / rows.front().medianNs;
		/* either row taken beside other work: neither is held to a goal */
		p.host = r.host.busy ? r.host : rows.front().host;
		double goalMs = r.cpus <= 8 ? 3 : r.cpus <= 64 ? 10 : r.cpus <= 256 ? 40 : 0;
		addRow(o, fmt::format("scale: batch(164) at --cpus {} / at --cpus 2", r.cpus), p,
		       goalMs ? fmt::format("batch <= {:g} ms", goalMs) : "-",
		       goalMs && r.medianNs <= goalMs * 1e6);
	}
	/* an interrupted run plots nothing: a partial plot would pass for a whole one */
	if (!o.plot.empty() && !stopRequested() && plot(o.plot, rows))
		return 1;
	return ret;
}

BenchRegistrar scaleBench({"scale", "the demo's 164-site batch for --cpus 2, 4, ... 512, with "
			   "peak RSS (--plot FILE.svg)", benchScale});

} /* namespace */

} /* namespace pokelab::bench */
