/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pokelab run isolation (case 003): what one variant measured, and the
 * report that compares ct_defer=off with the other policy
 * (isolation_report.cpp). Task context, main thread.
 */
#pragma once

#include <map>
#include <string>
#include <vector>

namespace pokelab::scenario {

/* What the housekeeping CPUs did (the "kernel build" of the cover letter). */
struct IsolationOps {
	unsigned long flips = 0, moduleLoads = 0, jits = 0, exits = 0, badRuns = 0, allocFail = 0;
	/* vmap purges over the load, and those drain_vmap_work ran on a kworker */
	unsigned long purges = 0, drains = 0;
};

struct IsoCpu {
	int cpu = 0;
	unsigned long ipis = 0, ipiNs = 0, ipiMaxNs = 0;
	unsigned long flushes = 0, flushNs = 0, flushMaxNs = 0;
	unsigned long syscalls = 0, iterations = 0;
};

struct VariantResult {
	std::string policy;
	bool ok = false;		/* booted and ran */
	std::string machine;
	std::map<std::string, unsigned long> csd;	/* func -> count, from the pipeline */
	std::map<std::string, unsigned long> ipi;	/* callback -> count, from the pipeline */
	std::string csdRaw, ipiRaw;
	unsigned long csdEvents = 0, ipiEvents = 0;	/* counted in the snapshot, same filter */
	unsigned long dropped = 0, violations = 0;
	std::string xmcVerdict;		/* the cross-modifying-code model's, over the load */
	unsigned long syncRounds = 0;	/* text-patching sync rounds over the load */
	std::vector<std::string> violationLines;
	IsolationOps ops;
	unsigned long messages = 0;
	/* the kernel-side probe: an isolated CPU inside a system call while flips patch */
	int probeCpu = -1;
	unsigned long probeFlips = 0, probeIpis = 0, probeViolations = 0;
	/* the idle probe: the same CPU idle (kernel CR3 loaded) during a flip and a range flush */
	unsigned long idleIpis = 0, idleSyncIpis = 0, idleTlbIpis = 0, idleViolations = 0;
	std::vector<IsoCpu> iso;
};

/* The run's size, for the report's header. */
struct IsolationRun {
	unsigned int cpus;
	double seconds;
	unsigned int syscallMs;
	bool interrupted = false;	/* stopped by a signal: the report claims nothing */
	std::string traceDir;		/* --trace-dir, where the traces are kept; "": not kept */
};

/*
 * Print the census of @off and @v7 beside the cover letter's and the
 * verdicts; returns 0 when the claim is reproduced (do_sync_core CSDs > 0 ->
 * 0, TLB flushes in both, the model clean, the pipelines consistent), else 1.
 */
int isolationReport(const VariantResult &off, const VariantResult &v7, const IsolationRun &run);

} /* namespace pokelab::scenario */
