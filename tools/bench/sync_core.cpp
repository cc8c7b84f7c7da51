// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench sync_core: the cost of each way to serialise the instruction
 * stream, in ns per call: SERIALIZE (when the CPU has it), IRET-to-self
 * and CPUID leaf 0. Runs on the calling thread; boots nothing.
 */
#include <fmt/format.h>

#include <asm/sync_core.h>
#include <kernel_shim/clock.h>

#include "bench.h"

namespace pokelab::bench {

namespace {

template<typename Fn>
double nsPerCall(unsigned int rounds, Fn fn)
{
	u64 t0 = kshim::clockNs();

	for (unsigned int i = 0; i < rounds; i++)
		fn();
	return (double)(kshim::clockNs() - t0) / rounds;
}

int benchSyncCore(const BenchOptions &o)
{
	unsigned int rounds = roundsOr(o, 2000);

	if (refuseMachineOptions("sync_core", o))
		return 2;

	struct Variant {
		const char *name;
		bool present;
		void (*fn)();
		std::vector<double> ns;
	} v[] = {
		{"serialize", kshim::cpuHasSerialize, [] { serialize(); }, {}},
		{"iret_to_self", true, [] { iret_to_self(); }, {}},
		{"cpuid", true, [] { cpuid_serialize(); }, {}},
	};

	fmt::print("bench sync_core: {} iterations of {} calls; sync_core() uses {}\n", o.iters,
		   rounds, kshim::syncCoreFlavorName(kshim::syncCoreFlavor()));
	for (Variant &x : v)
		if (x.present)
			nsPerCall(rounds / 10 + 1, x.fn);
	for (unsigned int it = 0; it < o.iters; it++) {
		std::string line;

		for (Variant &x : v) {
			if (!x.present) {
				line += fmt::format(", {} n/a", x.name);
				continue;
			}
			double ns = nsPerCall(rounds, x.fn);
			x.ns.push_back(ns);
			line += fmt::format(", {} {:9.1f}ns", x.name, ns);
		}
		fmt::print("Iter {:3}:{}\n", it, line.substr(1));
	}
	for (Variant &x : v) {
		if (!x.present) {
			fmt::print("Summary: {} not present on this CPU (CPUID.7.0:EDX[14] clear)\n",
				   x.name);
			continue;
		}
		Stat s = stat(x.ns);
		fmt::print("Summary: {} {:9.1f} ± {:7.1f}ns/call (median ± MAD; mean {:.1f} ± {:.1f})\n",
			   x.name, s.median, s.mad, s.mean, s.stddev);
	}
	/* bench all's table: each fallback against the first present, iteration by iteration */
	const Variant *base = v[0].present ? &v[0] : &v[1];

	for (const Variant &x : v) {
		PairStat p;
		std::vector<double> ratio;

		if (!x.present || &x == base)
			continue;
		for (size_t i = 0; i < x.ns.size() && i < base->ns.size(); i++)
			ratio.push_back(x.ns[i] / base->ns[i]);
		p.ours = stat(x.ns);
		p.raw = stat(base->ns);
		p.ratio = stat(ratio);
		addRow(o, fmt::format("sync_core: {} / {}", x.name, base->name), p, "-", true);
	}
	return 0;
}

BenchRegistrar syncCoreBench({"sync_core", "SERIALIZE, IRET-to-self and CPUID, ns per call",
			      benchSyncCore});

} /* namespace */

} /* namespace pokelab::bench */
