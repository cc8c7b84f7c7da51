/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The bpf_stats_enabled_key demo: 164 static-branch sites of one key, run
 * in hot loops on every CPU but CPU 0 while CPU 0 flips the key through a
 * kernel.bpf_stats_enabled-style sysctl, checked for stale calls.
 */
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include <kernel_shim/xmc_verdict.h>
#include <linux/types.h>

namespace pokelab {

/* The number of bpf_prog_run() instances, as in the case's nr_entries=164. */
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
	/*
	 * Each flip also flips the two-site pokelab_small_key (a second,
	 * two-entry batch, after the 164-entry one), and the hot loops run its
	 * two sites too (tools/demo/small_key.h).
	 */
	bool smallKey = false;
	/* Polled before each flip: set, the run stops there (the key is left disabled). */
	const std::atomic<bool> *stop = nullptr;
	/*
	 * Called on CPU 0 before flip @flip (1-based), in task context, with
	 * no batch in flight and the hot loops running, inside that flip's
	 * census window: where the refs comparison switches the refs mode
	 * (text_poke_set_refs_mode()) flip by flip.
	 */
	std::function<void(unsigned int flip)> beforeFlip;
};

/*
 * One flip's share of the census: from just before cfg.beforeFlip of this
 * flip to the same point of the next one (the last, to the end of its
 * waits). Windows follow each other without a gap, so their sums are the
 * run's own, less the hot loops' start and any batch that turned the key
 * back off after the last flip. Deltas over every CPU unless noted.
 */
struct BpfStatsFlip {
	unsigned long refsXcpu = 0;		/* refsCrossCpuWrites() */
	unsigned long refsPatcherWrites = 0;	/* publish/drain writes */
	unsigned long int3Emulated = 0;
	u64 int3Ns = 0;				/* in the SIGTRAP handler, hot-loop CPUs */
	u64 loopNs = 0;				/* the window's wall time x the hot loops */
	unsigned long calls = 0;		/* hot-loop calls, as published after each pass */
	unsigned long staleCalls = 0;
	unsigned long checkedCalls = 0;
	kshim::XmcStats xmc{};			/* the model's counters */
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
	unsigned long violations = 0;	/* cross-modifying-code model violations on this CPU */
	unsigned long syscalls = 0;
	/* census (deltas over the run) */
	u64 loopNs = 0;			/* hot-loop wall time */
	u64 int3Ns = 0;			/* time inside the SIGTRAP handler */
	unsigned long refsXcpu = 0;	/* cross-CPU writes to a refs line by this CPU */
};

struct BpfStatsResult {
	unsigned int flips = 0;		/* flips made (fewer than asked if stopped) */
	bool interrupted = false;	/* cfg.stop ended the run early */
	unsigned int sites = 0;		/* sites of bpf_stats_enabled_key found in __jump_table */
	unsigned long batches = 0;
	unsigned long syncRounds = 0;
	std::vector<unsigned int> syncRoundsPerBatch;
	std::vector<u64> batchNs;
	/* with smallKey: the two-entry batches */
	unsigned int smallSites = 0;
	std::vector<unsigned int> smallEntries;	/* nr_entries of each small batch */
	std::vector<unsigned int> smallSyncRoundsPerBatch;
	std::vector<u64> smallBatchNs;
	std::vector<unsigned int> nrEntries;	/* nr_entries of each 164-site batch */
	std::vector<BpfStatsFlip> flipCensus;	/* one per flip made */
	unsigned long refsXcpu = 0;		/* refsCrossCpuWrites() over the run, all CPUs */
	unsigned long refsPatcherWrites = 0;	/* publish/drain writes over the run */
	unsigned long staleCalls = 0;	/* calls that took the old branch after finish returned */
	unsigned long checkedCalls = 0;	/* calls the stale check applied to */
	unsigned int deadLoops = 0;
	std::vector<BpfStatsCpu> cpus;
	bool isolation = false;		/* some CPUs were nohz_full */
	unsigned long violations = 0;	/* cross-modifying-code model, over the run */
	kshim::XmcStats xmc{};		/* the model's counters over the run */
	std::vector<std::string> violationLines;	/* the first few, formatted */

	/* Every flip batch (164 sites with tails) took exactly 3 sync rounds. */
	bool syncRoundsOk() const
	{
		for (unsigned int rounds : syncRoundsPerBatch)
			if (rounds != 3)
				return false;
		return !syncRoundsPerBatch.empty();
	}
	/* The stale-call check had calls to check (some CPU ran the sites). */
	bool staleChecked() const { return checkedCalls > 0; }
	bool ok() const
	{
		return staleCalls == 0 && deadLoops == 0 && sites == kNrBpfSites && violations == 0 &&
		       (smallBatchNs.empty() || smallSites == 2) && syncRoundsOk() &&
		       staleChecked() && xmc.writes > 0;
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
