// SPDX-License-Identifier: GPL-2.0-only
/*
 * The host-load meter of hostload.h: /proc/stat and /proc/self, read at
 * the start, at each iteration boundary and at the end of a measurement.
 */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>

#include <fmt/format.h>

#include "hostload.h"

namespace pokelab {

namespace {

struct ProcStat {
	unsigned long long nonIdle = 0, total = 0, steal = 0;
	unsigned int running = 0, pus = 0;
	bool ok = false;
};

ProcStat readProcStat()
{
	ProcStat s;
	FILE *f = fopen("/proc/stat", "re");
	char line[512];

	if (!f)
		return s;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v[8] = {};

		if (!strncmp(line, "cpu ", 4)) {
			if (sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
				   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) < 8)
				continue;
			/* user nice system idle iowait irq softirq steal (guest is in user) */
			s.nonIdle = v[0] + v[1] + v[2] + v[5] + v[6];
			s.steal = v[7];
			s.total = s.nonIdle + v[3] + v[4] + v[7];
			s.ok = true;
		} else if (!strncmp(line, "cpu", 3)) {
			s.pus++;
		} else if (!strncmp(line, "procs_running ", 14)) {
			s.running = (unsigned int)strtoul(line + 14, nullptr, 10);
		}
	}
	fclose(f);
	return s;
}

/* utime + stime of this process, in the clock ticks /proc/stat counts in. */
unsigned long long ownTicks()
{
	FILE *f = fopen("/proc/self/stat", "re");
	char buf[1024];
	size_t n;
	unsigned long long ut = 0, st = 0;
	const char *p;

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* past "pid (comm)": the comm may hold spaces and parentheses */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
			 &st) != 2)
		return 0;
	return ut + st;
}

/* This process's threads in state R. */
unsigned int ownRunning()
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	unsigned int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char path[320], buf[256];
		FILE *f;
		size_t len;
		const char *p;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
		if (!(f = fopen(path, "re")))
			continue;
		len = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[len] = 0;
		p = strrchr(buf, ')');
		if (p && p[1] == ' ' && p[2] == 'R')
			n++;
	}
	closedir(d);
	return n;
}

} /* namespace */

std::string HostLoad::line() const
{
	if (!known)
		return "host load unknown (/proc/stat unreadable)";
	return fmt::format("host {}: steal {:.1f}%, other processes {:.1f}% of the CPU time{}, run "
			   "queue at least {:.0f} besides ours ({} PUs, {} samples)",
			   busy ? "BUSY" : "quiet", stealPct, othersPct,
			   weighed ? "" : " (too short a run to weigh)", runQueue, pus, samples);
}

std::string unjudgedWhy(const HostLoad &h, double median, double mad)
{
	double spread = median > 0 ? mad / median : 0;

	if (h.busy)
		return "host busy";
	if (spread > kSpreadBound)
		return fmt::format("spread {:.0f}% > {:.0f}%", spread * 100, kSpreadBound * 100);
	return "";
}

HostLoadMeter::HostLoadMeter()
{
	ProcStat s = readProcStat();

	ok_ = s.ok;
	nonIdle0_ = s.nonIdle;
	total0_ = s.total;
	steal0_ = s.steal;
	own0_ = ownTicks();
	sample();
}

void HostLoadMeter::sample()
{
	ProcStat s = readProcStat();
	unsigned int own = ownRunning();

	if (!s.ok)
		return;
	/*
	 * The reading thread is one of ours, and procs_running counts it. Our
	 * threads change state while their stat files are read (a machine of
	 * 512 CPUs takes milliseconds to walk), which can only make a sample
	 * too high: the least of the samples is the figure.
	 */
	double rq = s.running > own ? s.running - own : 0;

	rqMin_ = rqSamples_ ? std::min(rqMin_, rq) : rq;
	rqSamples_++;
}

HostLoad HostLoadMeter::finish()
{
	HostLoad h;
	ProcStat s;
	unsigned long long total, others, own;

	sample();
	s = readProcStat();
	if (!ok_ || !s.ok)
		return h;
	h.known = true;
	h.pus = s.pus;
	h.samples = rqSamples_;
	total = s.total - total0_;
	own = ownTicks() - own0_;
	others = s.nonIdle - nonIdle0_;
	others = others > own ? others - own : 0;
	if (total) {
		h.stealPct = 100.0 * (s.steal - steal0_) / total;
		h.othersPct = 100.0 * others / total;
	}
	h.runQueue = rqSamples_ ? rqMin_ : 0;
	/* shares of fewer than 100 ticks (a run of under 0.5 s on 2 PUs) are noise: not weighed */
	h.weighed = total >= 100;
	h.busy = (h.weighed && (h.stealPct > 5 || h.othersPct > 25)) ||
		 h.runQueue >= std::max(1.0, h.pus / 2.0);
	return h;
}

} /* namespace pokelab */
