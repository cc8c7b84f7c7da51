// SPDX-License-Identifier: GPL-2.0-only
/*
 * Case 002: a bpf-bench-like trig-fentry benchmark with three recursion
 * guards (see bpf_recursion.h).
 *
 * The trampoline follows kernel/bpf/trampoline.c: __bpf_prog_enter_recur()
 * takes the recursion context (a refused one counts a miss and skips the
 * program), the program runs, __bpf_prog_exit_recur() always gives the
 * context back. The guards are bpf_prog_get_recursion_context() /
 * bpf_prog_put_recursion_context() of include/linux/bpf.h before and after
 * P. Mohan's "bpf: Optimize recursion detection on arm64" ([PM],
 * c3e34f88f999), one per variant so the three run in one binary.
 *
 * userspace: no RCU read side or migrate_disable() around the program (a
 * simulated CPU's thread is pinned and never migrates), no run_ctx, no
 * stats time (bpf_stats_enabled off, the bench's default). The traced
 * function calls the trampoline through a pointer, where the kernel patches
 * a direct CALL at the function's fentry: the cost is the same for every
 * variant.
 */
#include <atomic>
#include <ctime>

#include <fmt/format.h>

#include <kernel_shim/clock.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/sched.h>
#include <linux/compiler.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/smp.h>

#include <workloads/bpf_recursion.h>

/* include/linux/bpf.h ([PM] 1/2): normal, softirq, hardirq, NMI */
#define BPF_NR_CONTEXTS	4

/* userspace: the shim has no softirq or NMI; those bits of preempt_count() stay clear */

/* file-local: linux/filter.h's struct bpf_prog is the dispatcher's */
namespace {

/*
 * prog->active: an int counter (before [PM], and x86 after it) or, on arm64
 * after [PM], one u8 per context read as one little-endian u32.
 */
union bpf_prog_active {
	int cnt;
	u8 ctx[BPF_NR_CONTEXTS];
	u32 word;
} __attribute__((aligned(4)));

struct bpf_prog_stats {
	u64 misses;
};

struct bpf_prog {
	kshim::PerCpu<union bpf_prog_active> *active;
	kshim::PerCpu<struct bpf_prog_stats> *stats;
	unsigned int (*bpf_func)(struct bpf_prog *prog);
	unsigned long recurse_every;	/* userspace: the test's provoked recursion */
};

kshim::PerCpu<union bpf_prog_active> prog_active;
kshim::PerCpu<struct bpf_prog_stats> prog_stats;
/* The bench program's per-CPU hits (trigger_bench.c's hits[] array) */
kshim::PerCpu<unsigned long> prog_hits;
kshim::PerCpu<unsigned long> prog_runs;	/* for recurse_every */

struct bpf_prog trig_prog;

/* What the fentry CALL of the traced function reaches. */
void (*volatile fentry_tramp)(struct bpf_prog *prog);

std::atomic<bool> producersStop;

} /* namespace */

/* Port of bpf_prog_inc_misses_counter(), kernel/bpf/syscall.c */
static void bpf_prog_inc_misses_counter(struct bpf_prog *prog)
{
	/* userspace: a plain per-CPU u64 for u64_stats_inc() under u64_stats_update_begin_irqsave() */
	struct bpf_prog_stats *stats = this_cpu_ptr(prog->stats);

	WRITE_ONCE(stats->misses, stats->misses + 1);
}

/*
 * Port of bpf_prog_get_recursion_context(), include/linux/bpf.h, before
 * [PM] (every arch) as arm64 ran it: this_cpu_inc_return() is an atomic
 * RMW there (LSE LDADD), here a LOCK XADD on this CPU's slot.
 */
static __always_inline bool bpf_prog_get_recursion_context_atomic(struct bpf_prog *prog)
{
	return __atomic_add_fetch(&this_cpu_ptr(prog->active)->cnt, 1, __ATOMIC_RELAXED) == 1;
}

/* Port of bpf_prog_put_recursion_context(), include/linux/bpf.h, before [PM], arm64 */
static __always_inline void bpf_prog_put_recursion_context_atomic(struct bpf_prog *prog)
{
	__atomic_sub_fetch(&this_cpu_ptr(prog->active)->cnt, 1, __ATOMIC_RELAXED);
}

/*
 * Port of bpf_prog_get_recursion_context(), include/linux/bpf.h, CONFIG_ARM64
 * branch after [PM] 2/2 (c3e34f88f999): bump this context's byte with a
 * plain increment, then read all four bytes at once; anything but exactly
 * "1 in my byte" is recursion (own byte > 1) or cross-context nesting
 * (another byte non-zero).
 */
static __always_inline bool bpf_prog_get_recursion_context_ctx(struct bpf_prog *prog)
{
	u8 rctx = interrupt_context_level();
	u8 *active = this_cpu_ptr(prog->active)->ctx;
	u32 val;

	preempt_disable();
	active[rctx]++;
	/* userspace: x86 is little-endian, so le32_to_cpu() is the identity */
	val = READ_ONCE(this_cpu_ptr(prog->active)->word);
	preempt_enable();

	return val == (1U << (rctx * 8));
}

/* Port of bpf_prog_put_recursion_context(), include/linux/bpf.h, CONFIG_ARM64 after [PM] */
static __always_inline void bpf_prog_put_recursion_context_ctx(struct bpf_prog *prog)
{
	u8 rctx = interrupt_context_level();
	u8 *active = this_cpu_ptr(prog->active)->ctx;

	preempt_disable();
	barrier();
	active[rctx]--;
	preempt_enable();
}

/*
 * Port of bpf_prog_get_recursion_context(), include/linux/bpf.h, the
 * !CONFIG_ARM64 branch (x86): this_cpu_inc_return() is one non-locked
 * "xadd %gs:" on the per-CPU slot, atomic against this CPU's interrupts
 * only. userspace: XADD without LOCK on this CPU's slot, found through
 * smp_processor_id() instead of %gs.
 */
static __always_inline bool bpf_prog_get_recursion_context_x86(struct bpf_prog *prog)
{
	int *cnt = &this_cpu_ptr(prog->active)->cnt;
	int val = 1;

	asm volatile("xaddl %0, %1" : "+r"(val), "+m"(*cnt) : : "memory");
	return val + 1 == 1;
}

/* Port of bpf_prog_put_recursion_context(), include/linux/bpf.h, !CONFIG_ARM64 (this_cpu_dec()) */
static __always_inline void bpf_prog_put_recursion_context_x86(struct bpf_prog *prog)
{
	int *cnt = &this_cpu_ptr(prog->active)->cnt;

	asm volatile("decl %0" : "+m"(*cnt) : : "memory");
}

namespace {

using pokelab::scenario::RecursionGuard;

template<RecursionGuard G>
__always_inline bool get_recursion_context(struct bpf_prog *prog)
{
	if constexpr (G == RecursionGuard::Atomic)
		return bpf_prog_get_recursion_context_atomic(prog);
	else if constexpr (G == RecursionGuard::PerCtxU8)
		return bpf_prog_get_recursion_context_ctx(prog);
	else
		return bpf_prog_get_recursion_context_x86(prog);
}

template<RecursionGuard G>
__always_inline void put_recursion_context(struct bpf_prog *prog)
{
	if constexpr (G == RecursionGuard::Atomic)
		bpf_prog_put_recursion_context_atomic(prog);
	else if constexpr (G == RecursionGuard::PerCtxU8)
		bpf_prog_put_recursion_context_ctx(prog);
	else
		bpf_prog_put_recursion_context_x86(prog);
}

/*
 * Port of __bpf_prog_enter_recur(), kernel/bpf/trampoline.c: 0 = skip the
 * program. userspace: no RCU/migrate_disable(), no run_ctx, no start time
 * (stats off), so a run returns 1.
 */
template<RecursionGuard G>
__always_inline u64 __bpf_prog_enter_recur(struct bpf_prog *prog)
{
	if (unlikely(!get_recursion_context<G>(prog))) {
		bpf_prog_inc_misses_counter(prog);
		return 0;
	}
	return 1;
}

/* Port of __bpf_prog_exit_recur(), kernel/bpf/trampoline.c: runs after a skip too */
template<RecursionGuard G>
__always_inline void __bpf_prog_exit_recur(struct bpf_prog *prog, u64 start)
{
	(void)start;	/* userspace: no update_prog_stats() with stats off */
	put_recursion_context<G>(prog);
}

/* What arch_prepare_bpf_trampoline() emits for one fentry program: enter, prog, exit. */
template<RecursionGuard G>
__noinline void bpf_trampoline(struct bpf_prog *prog)
{
	u64 start = __bpf_prog_enter_recur<G>(prog);

	if (start)
		prog->bpf_func(prog);
	__bpf_prog_exit_recur<G>(prog, start);
}

/* The traced function: its fentry CALL goes to the attached trampoline. */
__noinline void bpf_trig_target(void)
{
	fentry_tramp(&trig_prog);
	barrier();
}

/*
 * The bench's fentry program (trigger_bench.c): count a hit in this CPU's
 * slot with an atomic add. userspace: and, when the test asks, call the
 * traced function again from inside the program.
 */
unsigned int trig_prog_func(struct bpf_prog *prog)
{
	__atomic_fetch_add(this_cpu_ptr(&prog_hits), 1, __ATOMIC_RELAXED);
	if (unlikely(prog->recurse_every)) {
		unsigned long *runs = this_cpu_ptr(&prog_runs);

		if (++*runs % prog->recurse_every == 0)
			bpf_trig_target();
	}
	return 0;
}

unsigned long sumHits()
{
	unsigned long s = 0;

	for (int cpu = 0; cpu < NR_CPUS; cpu++)
		s += __atomic_load_n(per_cpu_ptr(&prog_hits, cpu), __ATOMIC_RELAXED);
	return s;
}

void producerLoop()
{
	while (!producersStop.load(std::memory_order_relaxed)) {
		for (int i = 0; i < 256; i++)
			bpf_trig_target();
		kshim::schedTick();	/* the host's time slice (kernel_shim/sched.h) */
	}
}

} /* namespace */

namespace pokelab::scenario {

const char *recursionGuardName(RecursionGuard g)
{
	switch (g) {
	case RecursionGuard::Atomic:
		return "atomic";
	case RecursionGuard::PerCtxU8:
		return "u8[4]";
	case RecursionGuard::NonLockedInc:
		return "x86-inc";
	}
	return "?";
}

void recursionAttach(RecursionGuard g, unsigned long recurse_every)
{
	for (int cpu = 0; cpu < NR_CPUS; cpu++) {
		per_cpu_ptr(&prog_active, cpu)->word = 0;
		per_cpu_ptr(&prog_stats, cpu)->misses = 0;
		*per_cpu_ptr(&prog_hits, cpu) = 0;
		*per_cpu_ptr(&prog_runs, cpu) = 0;
	}
	trig_prog.active = &prog_active;
	trig_prog.stats = &prog_stats;
	trig_prog.bpf_func = trig_prog_func;
	trig_prog.recurse_every = recurse_every;
	recursionSwitch(g);
	std::atomic_thread_fence(std::memory_order_seq_cst);
}

void recursionSwitch(RecursionGuard g)
{
	void (*t)(struct bpf_prog *) = nullptr;

	switch (g) {
	case RecursionGuard::Atomic:
		t = bpf_trampoline<RecursionGuard::Atomic>;
		break;
	case RecursionGuard::PerCtxU8:
		t = bpf_trampoline<RecursionGuard::PerCtxU8>;
		break;
	case RecursionGuard::NonLockedInc:
		t = bpf_trampoline<RecursionGuard::NonLockedInc>;
		break;
	}
	__atomic_store_n(&fentry_tramp, t, __ATOMIC_RELAXED);
}

void recursionTrigger(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		bpf_trig_target();
}

RecursionCounts recursionCounts()
{
	RecursionCounts c{sumHits(), 0};

	for (int cpu = 0; cpu < NR_CPUS; cpu++)
		c.misses += READ_ONCE(per_cpu_ptr(&prog_stats, cpu)->misses);
	return c;
}

std::vector<double> recursionBench(RecursionGuard g, unsigned int producers, unsigned int iter_ms,
				   unsigned int warmup, unsigned int iters, std::string *lines,
				   void (*progress)(unsigned int i, unsigned int n, void *arg),
				   void *arg, const std::atomic<bool> *stop)
{
	std::vector<double> rates;
	u64 t0, t1, target;
	unsigned long h0, h1;

	recursionAttach(g);
	producersStop.store(false);
	for (unsigned int p = 1; p <= producers; p++)
		kshim::cpuRun((int)p, [] { producerLoop(); });

	t0 = kshim::clockNs();
	h0 = sumHits();
	target = t0;
	for (unsigned int i = 0; i < warmup + iters; i++) {
		double rate;

		target += (u64)iter_ms * 1000000ull;
		/* in slices of at most 50 ms, so that a stop is seen within one */
		for (u64 now = kshim::clockNs(); now < target && !(stop && stop->load());
		     now = kshim::clockNs())
			kshim::sleepUntilNs(std::min<u64>(target, now + 50000000ull));
		if (stop && stop->load())
			break;
		t1 = kshim::clockNs();
		h1 = sumHits();
		rate = (double)(h1 - h0) * 1e3 / (double)(t1 - t0);	/* M/s */
		if (lines)
			*lines += fmt::format("Iter {:3} ({:7.3f}us): hits {:8.3f}M/s ({:7.3f}M/prod)"
					      ", drops    0.000M/s, total operations {:8.3f}M/s\n",
					      i, (double)(t1 - target) / 1e3, rate, rate / producers,
					      rate);
		if (i >= warmup)
			rates.push_back(rate);
		if (progress)
			progress(i + 1, warmup + iters, arg);
		t0 = t1;
		h0 = h1;
	}
	producersStop.store(true);
	for (unsigned int p = 1; p <= producers; p++)
		kshim::cpuWait((int)p);
	return rates;
}

std::vector<RecursionRound> recursionInterleaved(unsigned int producers, unsigned int slice_ms,
						 unsigned int warmup, unsigned int rounds,
						 std::string *lines,
						 void (*progress)(unsigned int i, unsigned int n,
								  void *arg),
						 void *arg, const std::atomic<bool> *stop)
{
	const RecursionGuard order[3] = {RecursionGuard::Atomic, RecursionGuard::PerCtxU8,
					 RecursionGuard::NonLockedInc};
	std::vector<RecursionRound> out;
	bool stopped = false;

	recursionAttach(order[0]);
	producersStop.store(false);
	for (unsigned int p = 1; p <= producers; p++)
		kshim::cpuRun((int)p, [] { producerLoop(); });

	for (unsigned int r = 0; r < warmup + rounds && !stopped; r++) {
		RecursionRound rr = {};

		for (unsigned int k = 0; k < 3 && !stopped; k++) {
			RecursionGuard g = order[r % 2 ? 2 - k : k];
			u64 t0, t1, target;
			unsigned long h0, h1;

			recursionSwitch(g);
			t0 = kshim::clockNs();
			h0 = sumHits();
			target = t0 + (u64)slice_ms * 1000000ull;
			/* in slices of at most 50 ms, so that a stop is seen within one */
			for (u64 now = t0; now < target && !(stop && stop->load());
			     now = kshim::clockNs())
				kshim::sleepUntilNs(std::min<u64>(target, now + 50000000ull));
			stopped = stop && stop->load();
			t1 = kshim::clockNs();
			h1 = sumHits();
			rr.rate[(int)g] = (double)(h1 - h0) * 1e3 / (double)(t1 - t0);
		}
		if (stopped)
			break;
		if (r >= warmup) {
			out.push_back(rr);
			if (lines)
				*lines += fmt::format("Iter {:3}: hits atomic {:8.3f}M/s, u8[4] {:8.3f}M/s, "
						      "x86-inc {:8.3f}M/s ({}), u8[4]/x86-inc {:+.2f}%\n",
						      r - warmup, rr.rate[0], rr.rate[1], rr.rate[2],
						      r % 2 ? "backwards" : "forwards",
						      (rr.rate[1] / rr.rate[2] - 1) * 100);
		}
		if (progress)
			progress(r + 1, warmup + rounds, arg);
	}
	producersStop.store(true);
	for (unsigned int p = 1; p <= producers; p++)
		kshim::cpuWait((int)p);
	return out;
}

} /* namespace pokelab::scenario */
