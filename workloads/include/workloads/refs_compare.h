/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The bpf-stats scenario's measurement (cases 000/001, E. Dumazet's per-CPU
 * INT3 refs): the bpf_stats_enabled_key flip plus a two-site key flip while
 * the other CPUs run the sites, under refs=global and refs=percpu
 * interleaved flip by flip on one machine (text_poke_set_refs_mode()
 * between flips), in pairs of one flip per mode whose order swaps each
 * pair: global, percpu, percpu, global, ..., so that drift on the host
 * hits both modes alike.
 *
 * The key alternates, so the two flips of a pair patch opposite ways and
 * leave the hot loops in opposite states (stats on costs each call more):
 * a ratio is taken over a quad, two pairs of one machine (global, percpu,
 * percpu, global), in which each mode patches once each way and both
 * modes' flips are centred on the same instant. Rounds boot a fresh
 * machine each, the quads split over them.
 */
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include <kernel_shim/xmc_verdict.h>
#include <linux/types.h>

namespace pokelab {

struct RefsCompareConfig {
	unsigned int cpus = 4;		/* simulated CPUs per machine (nr_cpus=) */
	unsigned int flips = 8;		/* flips per mode (= pairs; 2 pairs a quad) */
	/* machines booted in turn, each interleaving both modes: refsMachines() */
	unsigned int rounds = 2;
	bool quiet = true;		/* boot lines on stderr */
	/* Progress: stage text, flip i of n within the stage. Task context, CPU 0. */
	std::function<void(const std::string &stage)> onStage;
	/*
	 * Called while each machine is booted, before it runs, with the mode
	 * it booted in (pokelab.refs=, its first flip's). Task context, CPU 0.
	 */
	std::function<void(const std::string &mode)> onBooted;
	/* Before each machine shuts down, its flips done, with its last mode. CPU 0. */
	std::function<void(const std::string &mode)> onShutdown;
	/*
	 * After each flip's batches, outside them (a host-load sample goes
	 * here): flip @i of the machine's @n. Task context, CPU 0.
	 */
	std::function<void(unsigned int i, unsigned int n)> onFlip;
	/* When set (any thread), the flip in progress completes and no more machines run. */
	const std::atomic<bool> *stop = nullptr;
	/* Out: the run was stopped by @stop before all its flips. */
	bool *interrupted = nullptr;
};

/*
 * One mode's share of the run. Its flip k and the other mode's flip k are
 * pair k: adjacent flips of one machine (refsPairs()); its flips 2q and
 * 2q + 1 and the other mode's are quad q (refsQuads()). The census figures
 * are sums over this mode's flip windows (BpfStatsFlip); what belongs to a
 * machine rather than a flip (dead loops, model violations outside every
 * window, such as at boot) counts against both modes.
 */
struct RefsModeResult {
	std::string mode;			/* "global" or "percpu" */
	std::string machineLine;		/* the last machine's, in this mode */
	unsigned int sites = 0;			/* bpf_stats_enabled_key sites */
	unsigned int smallSites = 0;		/* pokelab_small_key sites */
	std::vector<u64> batchNs;		/* 164-entry batches, one per flip */
	std::vector<unsigned int> nrEntries;
	std::vector<unsigned int> syncRounds;
	std::vector<u64> smallBatchNs;		/* two-entry batches, one per flip */
	std::vector<unsigned int> smallEntries;
	std::vector<unsigned int> smallSyncRounds;
	std::vector<u64> flipLoopNs;		/* per flip: hot-loop wall time, all CPUs */
	std::vector<unsigned long> flipCalls;	/* per flip: hot-loop calls */
	unsigned long int3Hits = 0;		/* INT3 traps emulated, all CPUs */
	u64 int3Ns = 0;				/* time in the SIGTRAP handler, hot-loop CPUs */
	u64 loopNs = 0;				/* hot-loop wall time, summed over CPUs */
	unsigned long calls = 0;		/* hot-loop calls */
	unsigned long refsXcpu = 0;		/* cross-CPU writes to a refs line */
	unsigned long refsPatcherWrites = 0;	/* the patcher's publish/drain writes */
	unsigned long staleCalls = 0;
	unsigned long checkedCalls = 0;
	unsigned int deadLoops = 0;
	unsigned long violations = 0;		/* the cross-modifying-code model's */
	kshim::XmcStats xmc{};			/* its counters, over this mode's machines */
	unsigned int flips = 0;

	double int3Share() const { return loopNs ? (double)int3Ns / loopNs : 0; }
	double nsPerCall() const { return calls ? (double)loopNs / calls : 0; }
	/* no stale calls, no dead loops, all sites found, no model violation */
	bool ok() const;
};

/*
 * Boot, run and shut down refsMachines() machines in turn (the caller must
 * not be booted), each running its share of the quads, the last machine
 * also the lone pair of an odd @cfg.flips; @out[0] is refs=global, @out[1]
 * refs=percpu. Returns 0, or the boot error (-errno) with @err set. Task
 * context, main thread.
 */
int runRefsCompare(const RefsCompareConfig &cfg, RefsModeResult out[2], std::string *err);

/*
 * The mode (0 = global, 1 = percpu) of flip @flip, counted from 0 over the
 * whole run, both modes and every machine: pair @flip / 2 runs global then
 * percpu when even, percpu then global when odd (g, p, p, g, g, p, ...).
 * Any thread.
 */
int refsModeOfFlip(unsigned int flip);

/* Complete pairs in @m: the flips both modes made (fewer for one only when interrupted). */
unsigned int refsPairs(const RefsModeResult m[2]);

/* Complete quads in @m: two pairs each, each mode's flips 2q and 2q + 1. */
unsigned int refsQuads(const RefsModeResult m[2]);

/* Machines a run of @flips flips per mode over @rounds rounds boots: one per quad at most. */
unsigned int refsMachines(unsigned int flips, unsigned int rounds);

/*
 * The claim, as counts: both modes ok(); every flip made a 164-entry and a
 * 2-entry batch with 3 sync rounds each; cross-CPU refs-line writes are
 * higher with refs=global (@m[0]) than with refs=percpu (@m[1]); and
 * percpu's do not exceed the patcher's own publish/drain writes. False
 * names the first check that fails in @why. Any thread.
 */
bool refsClaimHolds(const RefsModeResult m[2], std::string *why);

/* Median and max of @v (0 for an empty one). */
u64 medianOf(std::vector<u64> v);
u64 maxOf(const std::vector<u64> &v);

} /* namespace pokelab */
