/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The bpf_stats_enabled_key demo: 164 static-branch sites of one key, run
 * in hot loops on every CPU but CPU 0 while CPU 0 flips the key through a
 * kernel.bpf_stats_enabled-style sysctl, checked for stale calls.
 */
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <linux/types.h>

namespace pokelab {

/* The number of bpf_prog_run() instances, as in the seed's nr_entries=164. */
inline constexpr unsigned int kNrBpfSites = 164;

struct BpfStatsConfig {
	unsigned int flips = 20;	/* key state changes */
	/* Called on CPU 0 after each flip's batch (nr_entries, batch ns). */
	std::function<void(unsigned int flip, unsigned int nrEntries, u64 ns)> onFlip;
	/*
	 * The nohz_full= CPUs (taken from the machine) run a user-mode loop
	 * instead of the sites. Their system calls fall between flips, so
	 * that a flip always finds them in user mode; with isolatedInKernel
	 * they sit inside a long system call while each flip patches (the v5
	 * replay scenario).
	 */
	bool isolatedInKernel = false;
};

struct BpfStatsCpu {
	int cpu = 0;
	int pu = 0;
	unsigned long ipiReceived = 0;
	unsigned long ipiSent = 0;
	unsigned long int3Emulated = 0;
	unsigned long calls = 0;	/* hot-loop calls through the sites */
	double nsPerCall = 0;
	bool hotLoop = false;		/* ran a hot loop */
	bool died = false;		/* hot loop stopped making progress */
	/* isolation */
	bool isolated = false;		/* a nohz_full CPU running a user loop */
	unsigned long syncCoreRuns = 0;	/* do_sync_core() run here (IPIs, or locally on CPU 0) */
	unsigned long syncsDeferred = 0;	/* syncs deferred to this CPU's next entry */
	unsigned long deferredFlushed = 0;	/* deferred syncs run at kernel entry */
	unsigned long violations = 0;	/* checker: stale text run in the kernel */
	unsigned long syscalls = 0;
};

struct BpfStatsResult {
	unsigned int flips = 0;
	unsigned int sites = 0;		/* sites of bpf_stats_enabled_key found in __jump_table */
	unsigned long batches = 0;
	unsigned long syncRounds = 0;
	std::vector<unsigned int> syncRoundsPerBatch;
	std::vector<u64> batchNs;
	unsigned long staleCalls = 0;	/* calls that took the old branch after finish returned */
	unsigned long checkedCalls = 0;	/* calls the stale check applied to */
	unsigned int deadLoops = 0;
	std::vector<BpfStatsCpu> cpus;
	bool isolation = false;		/* some CPUs were nohz_full */
	unsigned long violations = 0;	/* checker total */
	bool ok() const
	{
		return staleCalls == 0 && deadLoops == 0 && sites == kNrBpfSites && violations == 0;
	}
};

/*
 * Run the demo on the booted machine (CPU 0 = the caller). Leaves the key
 * disabled. Returns the counters; never throws for a failed check.
 */
BpfStatsResult runBpfStats(const BpfStatsConfig &cfg);

/* Human-readable end-of-run table. */
std::string formatBpfStats(const BpfStatsResult &r);

} /* namespace pokelab */
