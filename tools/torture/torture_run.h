/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The run's state that torture.cpp (the boot, the CPUs' loops) and
 * torture_summary.cpp (the summary and the verdict) share. Private to
 * tools/torture/.
 *
 * Written by the main thread before the CPUs start (opts, seedUsed,
 * warnsAtBoot, runT0, timeline); each CpuWork by its own CPU, read at the
 * end once its done flag is set (release/acquire) or, for a forced end, as
 * it stands (the counts of a wedged CPU are a lower bound).
 */
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <kernel_shim/trace_record.h>
#include <linux/threads.h>
#include <linux/types.h>

#include "torture_end.h"

namespace pokelab::torture {

struct Options {
	unsigned int duration = 60;
	unsigned long long seed = 0;
	bool seedSet = false;
	unsigned long ops = 0;		/* 0: run for --duration */
	unsigned int cpus = 0;		/* 0: nr_cpus= from the parameters, else max(4, PUs) */
	std::string nohzFull;
	bool nohzFullSet = false;
	std::string ctDefer;
	std::string timeline;		/* --timeline: the run's last seconds as an SVG */
	double timelineWindow = 1;	/* --timeline-window, s */
	std::string module;		/* --module: the module writer's object */
	std::string results;		/* --results: a JSON line per run (torture_results.h) */
	unsigned long shown = 3;	/* --violations: printed in full, as found (~0: all) */
	std::vector<std::string> params;
};

extern Options opts;

struct alignas(64) CpuWork {
	u64 digest = 0;
	unsigned long decisions = 0, writes = 0, reads = 0, irqs = 0, syscalls = 0, idles = 0;
	unsigned long remaps = 0;
	std::atomic<bool> done{false};
};

extern std::vector<CpuWork> work;
extern std::atomic<bool> stopAll;
extern std::atomic<unsigned long> violationsSeen;
extern unsigned long warnsAtBoot;	/* kshim::warnCount() before the boot */
extern u64 seedUsed;
extern u64 runT0;					/* when the CPUs started */
extern std::unique_ptr<kshim::TraceSink> timeline;	/* --timeline */
/* where the NMIs landed: inside an INT3 handler, inside an IPI handler (per CPU, NMI context) */
extern unsigned long nmisInInt3[NR_CPUS], nmisInIpi[NR_CPUS];

/* The counts of the status lines: writes, reads, IRQs, ... summed over the CPUs. */
std::string counters();

/*
 * The run's summary, verdict, timeline and result record
 * (torture_summary.cpp): the exit status. @modBad: the module writer's
 * complaints. Main thread, or torture_end.cpp's thread for a forced end.
 */
int finishRun(End end, int sig, const std::vector<std::string> &modBad);

/* torture_end.h's FinishFn: the summary without the wedged CPUs, the record appended. */
int finishForced(End end, int sig);

} /* namespace pokelab::torture */
