// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench int3: an INT3 hit emulated by smp_text_poke_int3_handler() against
 * the raw primitive, a SIGTRAP round trip to an empty handler, on CPU 0.
 *
 *	ours: a static-key site with the batch's INT3 armed on it (the key is
 *	      being flipped; the port's phase-1 probe holds the batch there), each
 *	      call trapping: SIGTRAP -> exc_int3() -> the handler's lookup, refs
 *	      and emulation -> the model's record of the return -> sigreturn;
 *	raw:  an int3 instruction with an empty SA_SIGINFO handler installed for
 *	      SIGTRAP, with the machine's signal mask and flags.
 *
 * Goal: ours / raw <= 1.25. The batch is held with its INT3 armed by the
 * port's phase-1 probe (pokelab::batchAfterPhase1Probe, text_poke_stats.h).
 */
#include <csignal>
#include <cstring>

#include <fmt/format.h>

#include <asm/text-patching.h>
#include <kernel_shim/boot.h>
#include <kernel_shim/clock.h>
#include <linux/jump_label.h>
#include <pokelab/text_poke_stats.h>

#include "bench.h"

DEFINE_STATIC_KEY_FALSE(bench_int3_key);

namespace pokelab::bench {

namespace {

unsigned int hitsPerTiming;
double emulatedNs;

__attribute__((noinline)) int int3Site(void)
{
	if (static_branch_unlikely(&bench_int3_key))
		return 1;
	return 0;
}

/* In the batch, INT3 armed on the site: time calls that trap on it. */
void timeEmulatedHits(void)
{
	int sum = 0;
	u64 t0 = kshim::clockNs();

	for (unsigned int i = 0; i < hitsPerTiming; i++)
		sum += int3Site();
	emulatedNs = (double)(kshim::clockNs() - t0) / hitsPerTiming;
	asm volatile("" : : "r"(sum));
}

double emulated()
{
	pokelab::batchAfterPhase1Probe = timeEmulatedHits;
	if (static_key_enabled(&bench_int3_key.key))
		static_key_disable(&bench_int3_key.key);
	else
		static_key_enable(&bench_int3_key.key);
	pokelab::batchAfterPhase1Probe = nullptr;
	return emulatedNs;
}

void emptyTrap(int, siginfo_t *, void *)
{
}

double raw()
{
	struct sigaction sa, machine;
	u64 t0;

	sigaction(SIGTRAP, nullptr, &machine);
	sa = machine;
	sa.sa_sigaction = emptyTrap;
	sigaction(SIGTRAP, &sa, nullptr);
	t0 = kshim::clockNs();
	for (unsigned int i = 0; i < hitsPerTiming; i++)
		asm volatile("int3" ::: "memory");
	double ns = (double)(kshim::clockNs() - t0) / hitsPerTiming;
	sigaction(SIGTRAP, &machine, nullptr);
	return ns;
}

int benchInt3(const BenchOptions &o)
{
	hitsPerTiming = roundsOr(o, 2000);
	if (bootBench("int3", o, 2, 1))
		return 2;
	fmt::print("bench int3: {} iterations of {} trapping calls per variant, on CPU 0\n",
		   o.iters, hitsPerTiming);
	PairStat p = runPair("emulated/raw", o.iters, emulated, raw);
	addRow(o, "int3: emulated hit / raw SIGTRAP round trip", p, "<= 1.25x",
	       p.ratio.median <= 1.25);
	if (static_key_enabled(&bench_int3_key.key))
		static_key_disable(&bench_int3_key.key);
	kshim::shutdown();
	return 0;
}

BenchRegistrar int3Bench({"int3", "an INT3 hit emulated by the batch's handler vs a raw "
			  "SIGTRAP round trip", benchInt3});

} /* namespace */

} /* namespace pokelab::bench */
