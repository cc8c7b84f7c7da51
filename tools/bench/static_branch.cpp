// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench static_branch: what a disabled static-key site costs in a loop,
 * against the same loop with no branch at all (the floor) and with a
 * READ_ONCE() flag test in its place (what a static key replaces).
 *
 *	site:  if (static_branch_unlikely(&key)) hits++;	a 5-byte NOP
 *	empty: nothing					the loop alone
 *	flag:  if (READ_ONCE(flag)) hits++;		a load, a test, a branch
 *
 * Goals: site / empty <= 1.02, and the site not slower than the flag at 95%
 * confidence (one-sided, on the paired per-iteration differences). Runs on
 * the calling thread; boots nothing (the site is the compiler's NOP).
 */
#include <cmath>

#include <fmt/format.h>

#include <asm/barrier.h>
#include <kernel_shim/clock.h>
#include <linux/jump_label.h>

#include "bench.h"

DEFINE_STATIC_KEY_FALSE(bench_branch_key);

namespace pokelab::bench {

namespace {

int benchFlag;

/* Each loop: @n iterations, the result kept in a register the compiler cannot drop. */
__attribute__((noinline)) unsigned long loopSite(unsigned long n)
{
	unsigned long hits = 0;

	for (unsigned long i = 0; i < n; i++) {
		if (static_branch_unlikely(&bench_branch_key))
			hits++;
		asm volatile("" : "+r"(hits));
	}
	return hits;
}

__attribute__((noinline)) unsigned long loopEmpty(unsigned long n)
{
	unsigned long hits = 0;

	for (unsigned long i = 0; i < n; i++)
		asm volatile("" : "+r"(hits));
	return hits;
}

__attribute__((noinline)) unsigned long loopFlag(unsigned long n)
{
	unsigned long hits = 0;

	for (unsigned long i = 0; i < n; i++) {
		if (READ_ONCE(benchFlag))
			hits++;
		asm volatile("" : "+r"(hits));
	}
	return hits;
}

double nsPerIter(unsigned long (*fn)(unsigned long), unsigned long n)
{
	u64 t0 = kshim::clockNs();

	if (fn(n))
		fmt::print(stderr, "pokelab: bench static_branch: a disabled branch was taken\n");
	return (double)(kshim::clockNs() - t0) / n;
}

int benchStaticBranch(const BenchOptions &o)
{
	unsigned long n = roundsOr(o, 20000000);

	if (refuseMachineOptions("static_branch", o))
		return 2;
	fmt::print("bench static_branch: {} iterations of {} loop turns per variant\n", o.iters, n);
	PairStat site = runPair("site/empty", o.iters, [n] { return nsPerIter(loopSite, n); },
				[n] { return nsPerIter(loopEmpty, n); });
	addRow(o, "static_branch: disabled site / empty loop", site, "<= 1.02x",
	       site.ratio.median <= 1.02);
	PairStat flag = runPair("site/flag ", o.iters, [n] { return nsPerIter(loopSite, n); },
				[n] { return nsPerIter(loopFlag, n); });

	/* One-sided 95%: slower only if the mean difference minus 1.645 standard errors is > 0. */
	std::vector<double> d;
	for (size_t i = 0; i < flag.oursNs.size(); i++)
		d.push_back(flag.oursNs[i] - flag.rawNs[i]);
	Stat ds = stat(d);
	double lo = ds.mean - 1.645 * ds.stddev / std::sqrt((double)std::max<size_t>(d.size(), 1));
	bool slower = lo > 0;

	fmt::print("Summary: site - flag {:+.3f} ± {:.3f} ns per turn (mean ± sd, {} pairs); "
		   "one-sided 95% lower bound {:+.3f} ns: the site is {}slower than the flag\n",
		   ds.mean, ds.stddev, d.size(), lo, slower ? "" : "not ");
	addRow(o, "static_branch: disabled site / READ_ONCE() flag", flag,
	       "not slower (95%)", !slower);
	return 0;
}

BenchRegistrar staticBranchBench({"static_branch", "a disabled static-key site vs an empty "
				  "loop and a READ_ONCE() flag", benchStaticBranch});

} /* namespace */

} /* namespace pokelab::bench */
