// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench batch: smp_text_poke_batch_finish() for N sites against its floor,
 * the same text writes and the same three sync rounds done alone:
 *
 *	ours:  smp_text_poke_batch_add() x N, smp_text_poke_batch_finish()
 *	floor: text_poke(INT3) x N, sync; text_poke(tail) x N, sync;
 *	       text_poke(first byte) x N, sync    (sync = smp_text_poke_sync_each_cpu())
 *
 * The sites are 5-byte slots of one execmem page, made ROX, flipping
 * between a NOP5 and a JMP to the next instruction; no CPU executes them,
 * so the cross-modifying-code model, which skips text nobody can fetch, costs
 * neither side anything (its cost shows in bench scale, where CPUs run the
 * sites). Goal: ours / floor <= 1.2 at N = 164.
 */
#include <cstring>

#include <fmt/format.h>

#include <asm/text-patching.h>
#include <kernel_shim/boot.h>
#include <kernel_shim/clock.h>
#include <linux/execmem.h>
#include <linux/mutex.h>

#include "bench.h"

namespace pokelab::bench {

namespace {

constexpr unsigned int kSlot = 5;
constexpr unsigned int kMaxSites = 256;
const u8 kNop5[kSlot] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
const u8 kJmp0[kSlot] = {0xe9, 0x00, 0x00, 0x00, 0x00};

u8 *page;
bool jmpNow;

double batchOnce(unsigned int n)
{
	const u8 *insn = jmpNow ? kNop5 : kJmp0;
	u64 t0;

	mutex_lock(&text_mutex);
	t0 = kshim::clockNs();
	for (unsigned int i = 0; i < n; i++)
		smp_text_poke_batch_add(page + i * kSlot, insn, kSlot, NULL);
	smp_text_poke_batch_finish();
	t0 = kshim::clockNs() - t0;
	mutex_unlock(&text_mutex);
	jmpNow = !jmpNow;
	return (double)t0;
}

double floorOnce(unsigned int n)
{
	const u8 *insn = jmpNow ? kNop5 : kJmp0;
	const u8 int3 = 0xcc;
	u64 t0;

	mutex_lock(&text_mutex);
	t0 = kshim::clockNs();
	for (unsigned int i = 0; i < n; i++)
		text_poke(page + i * kSlot, &int3, 1);
	smp_text_poke_sync_each_cpu();
	for (unsigned int i = 0; i < n; i++)
		text_poke(page + i * kSlot + 1, insn + 1, kSlot - 1);
	smp_text_poke_sync_each_cpu();
	for (unsigned int i = 0; i < n; i++)
		text_poke(page + i * kSlot, insn, 1);
	smp_text_poke_sync_each_cpu();
	t0 = kshim::clockNs() - t0;
	mutex_unlock(&text_mutex);
	jmpNow = !jmpNow;
	return (double)t0;
}

/* @reps operations, ns each (median would hide nothing here: they are alike). */
double timeOps(double (*fn)(unsigned int), unsigned int n, unsigned int reps)
{
	double sum = 0;

	for (unsigned int i = 0; i < reps; i++)
		sum += fn(n);
	return sum / reps;
}

int benchBatch(const BenchOptions &o)
{
	static const unsigned int sizes[] = {1, 2, 164, 256};
	unsigned int reps = roundsOr(o, 10);

	if (bootBench("batch", o, 2, 1))
		return 2;
	page = (u8 *)execmem_alloc_rw(EXECMEM_DEFAULT, 4096);
	if (!page) {
		kshim::shutdown();
		fmt::print(stderr, "pokelab: bench batch: no executable page near the text\n");
		return 1;
	}
	for (unsigned int i = 0; i < kMaxSites; i++)
		memcpy(page + i * kSlot, kNop5, kSlot);
	set_memory_rox((unsigned long)page, 1);
	jmpNow = false;

	fmt::print("bench batch: {} iterations of {} batches per variant; sites on one ROX "
		   "execmem page that no CPU runs\n", o.iters, reps);
	for (unsigned int n : sizes) {
		/* Each side flips every site twice per half, so both end where they began. */
		unsigned int r = reps + reps % 2;
		PairStat p = runPair(fmt::format("N={:<3} batch/floor", n), o.iters,
				     [n, r] { return timeOps(batchOnce, n, r); },
				     [n, r] { return timeOps(floorOnce, n, r); });

		addRow(o, fmt::format("batch: smp_text_poke_batch_finish({}) / writes + 3 rounds", n),
		       p, n == 164 ? "<= 1.2x" : "-", p.ratio.median <= 1.2);
	}
	execmem_free(page);
	page = nullptr;
	kshim::shutdown();
	return 0;
}

BenchRegistrar batchBench({"batch", "smp_text_poke_batch_finish() for 1, 2, 164, 256 sites vs "
			   "its writes and three sync rounds alone", benchBatch});

} /* namespace */

} /* namespace pokelab::bench */
