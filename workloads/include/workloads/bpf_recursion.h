/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Case 002 (P. Mohan, "bpf: Optimize recursion detection on arm64", [PM]):
 * a bpf-bench-like trig-fentry benchmark. Producer CPUs call a traced
 * function whose fentry "trampoline" brackets a tiny program with one of
 * three recursion guards:
 *
 *  - Atomic:       this_cpu_inc_return() as a locked RMW (what arm64 did
 *                  before the series: an LSE atomic on the per-CPU counter);
 *  - PerCtxU8:     the series' scheme: per-CPU u8[4] indexed by context,
 *                  plain increment under preempt_disable(), one 32-bit read;
 *  - NonLockedInc: x86's this_cpu_inc_return(), a non-locked RMW on the
 *                  per-CPU slot (xadd without LOCK, as "xadd %gs:" is).
 *
 * Used by `pokelab run recursion` and its test.
 */
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include <linux/types.h>

namespace pokelab::scenario {

enum class RecursionGuard {
	Atomic,
	PerCtxU8,
	NonLockedInc,
};
const char *recursionGuardName(RecursionGuard g);

/* Per-program counters, summed over CPUs. */
struct RecursionCounts {
	unsigned long hits;	/* program runs */
	unsigned long misses;	/* entries refused by the guard (bpf_prog_inc_misses_counter()) */
};

/*
 * Attach a fresh program with guard @g (counters and guard state zeroed).
 * @recurse_every: 0, or the program calls the traced function itself on
 * every @recurse_every-th run, from the same context (a recursion the
 * guard must refuse). Task context of CPU 0, with no producer running.
 */
void recursionAttach(RecursionGuard g, unsigned long recurse_every = 0);

/* Call the traced function @n times on the calling (simulated) CPU. */
void recursionTrigger(unsigned long n);

/* The attached program's counters, summed over CPUs. Any thread. */
RecursionCounts recursionCounts();

/*
 * The benchmark: CPUs 1..@producers loop on the traced function; CPU 0 (the
 * caller) samples the hits every @iter_ms for @warmup + @iters iterations.
 * Prints bench's "Iter N (...): hits X M/s (Y M/prod)" lines to @lines
 * (when not NULL) and returns the hits rate of each measured iteration, in
 * M/s. Machine booted with at least @producers + 1 CPUs.
 */
std::vector<double> recursionBench(RecursionGuard g, unsigned int producers, unsigned int iter_ms,
				   unsigned int warmup, unsigned int iters, std::string *lines,
				   void (*progress)(unsigned int i, unsigned int n, void *arg),
				   void *arg, const std::atomic<bool> *stop = nullptr);

/* One round of recursionInterleaved(): each guard's hits rate in its slice, in M/s. */
struct RecursionRound {
	double rate[3];		/* indexed by RecursionGuard */
};

/*
 * The three guards measured interleaved, so that a drifting host hits all
 * alike: CPUs 1..@producers loop on the traced function without pause while
 * CPU 0 (the caller) switches the attached trampoline (recursionSwitch())
 * every @slice_ms, every guard once per round, in the order atomic, u8[4],
 * x86-inc on even rounds and backwards on odd ones. @warmup rounds first,
 * not returned. Prints an "Iter N: ..." line per measured round to @lines
 * (when not NULL); @progress after each round. Stops early, with the rounds
 * so far, when @stop is set. Counters are zeroed at the start, not between
 * slices (the hits of a slice are counted as a difference). Machine booted
 * with at least @producers + 1 CPUs; task context of CPU 0.
 */
std::vector<RecursionRound> recursionInterleaved(unsigned int producers, unsigned int slice_ms,
						 unsigned int warmup, unsigned int rounds,
						 std::string *lines,
						 void (*progress)(unsigned int i, unsigned int n,
								  void *arg),
						 void *arg, const std::atomic<bool> *stop = nullptr);

/*
 * Point the traced function's fentry call at guard @g's trampoline, with
 * producers running: a call in flight finishes with the guard it entered
 * with, so the per-CPU guard state is back to zero between calls whatever
 * the switch. A relaxed store (the producers' indirect call loads it).
 */
void recursionSwitch(RecursionGuard g);

} /* namespace pokelab::scenario */
