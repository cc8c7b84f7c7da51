// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench ipi: the shim's IPI round trip beside the raw primitive it is built
 * on, measured in the same run on the same CPU threads.
 *
 *	single:    smp_call_function_single(1, nop, wait=1)
 *	   raw:    pthread_kill(CPU 1, signal) + spin on the handler's acknowledgement
 *	broadcast: on_each_cpu(nop, wait=1)
 *	   raw:    pthread_kill() to CPUs 1..N-1, nop locally, spin on all acknowledgements
 *
 * Both sides spin with the same kshim::spinRelax() back-off, so on an
 * oversubscribed machine both yield the PU alike. Batches of shim and raw
 * rounds alternate within each iteration; the ratio is shim / raw.
 */
#include <atomic>
#include <csignal>
#include <cstring>
#include <pthread.h>

#include <fmt/format.h>

#include <kernel_shim/boot.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/cpu.h>
#include <linux/atomic.h>
#include <linux/smp.h>

#include "bench.h"

namespace pokelab::bench {

namespace {

/* A real-time signal of its own, not the IPI one: its handler only acknowledges. */
int rawSignal()
{
	return SIGRTMIN + 5;
}

struct alignas(64) Ack {
	std::atomic<unsigned long> n{0};
};
Ack acks[NR_CPUS];
pthread_t cpuThreads[NR_CPUS];

void rawHandler(int, siginfo_t *, void *)
{
	int cpu = raw_smp_processor_id();

	if (cpu >= 0)
		acks[cpu].n.fetch_add(1, std::memory_order_release);
}

void nop(void *)
{
}

/* One raw round trip to each CPU of [1, last]. */
void rawRound(unsigned int last)
{
	unsigned long want[NR_CPUS];
	unsigned int spin = 0;

	for (unsigned int cpu = 1; cpu <= last; cpu++) {
		want[cpu] = acks[cpu].n.load(std::memory_order_relaxed) + 1;
		pthread_kill(cpuThreads[cpu], rawSignal());
	}
	nop(nullptr);
	for (unsigned int cpu = 1; cpu <= last; cpu++)
		while (acks[cpu].n.load(std::memory_order_acquire) < want[cpu])
			kshim::spinRelax(&spin);
}

/* ns per round of @fn over @rounds rounds */
template<typename Fn>
double timeRounds(unsigned int rounds, Fn fn)
{
	u64 t0 = kshim::clockNs();

	for (unsigned int i = 0; i < rounds; i++)
		fn();
	return (double)(kshim::clockNs() - t0) / rounds;
}

void runPair(const char *what, const BenchOptions &o, std::function<void()> shim,
	     std::function<void()> raw)
{
	std::vector<double> s, r, ratio;

	/* Warm-up: page in, settle the threads. */
	timeRounds(o.rounds / 10 + 1, shim);
	timeRounds(o.rounds / 10 + 1, raw);
	for (unsigned int it = 0; it < o.iters; it++) {
		u64 t0 = kshim::clockNs();
		double ns = 0, nr = 0;

		/* Alternate halves so that drift hits both sides alike. */
		ns += timeRounds(o.rounds / 2 + 1, shim);
		nr += timeRounds(o.rounds / 2 + 1, raw);
		nr += timeRounds(o.rounds / 2 + 1, raw);
		ns += timeRounds(o.rounds / 2 + 1, shim);
		ns /= 2;
		nr /= 2;
		s.push_back(ns / 1000);
		r.push_back(nr / 1000);
		ratio.push_back(ns / nr);
		fmt::print("Iter {:3} ({:8.3f}ms): {} shim {:8.3f}us/round, raw {:8.3f}us/round, "
			   "ratio {:6.3f}\n", it, (kshim::clockNs() - t0) / 1e6, what, ns / 1000, nr / 1000,
			   ns / nr);
	}
	Stat ss = stat(s), sr = stat(r), sq = stat(ratio);
	fmt::print("Summary: {} shim {:8.3f} ± {:6.3f}us/round, raw {:8.3f} ± {:6.3f}us/round, "
		   "ratio {:6.3f} ± {:5.3f}\n", what, ss.mean, ss.stddev, sr.mean, sr.stddev,
		   sq.mean, sq.stddev);
}

int benchIpi(const BenchOptions &o)
{
	std::string cmdline, err;
	struct sigaction sa, old;

	for (const std::string &p : o.params)
		cmdline += p + " ";
	if (o.cpus)
		cmdline += fmt::format("nr_cpus={}", o.cpus);
	if (kshim::boot(cmdline, &err, true)) {
		fmt::print(stderr, "pokelab: {}\n", err);
		return 2;
	}
	if (nr_cpu_ids < 2) {
		kshim::shutdown();
		fmt::print(stderr, "pokelab: bench ipi needs at least 2 CPUs; got nr_cpus={}\n",
			   nr_cpu_ids);
		return 2;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = rawHandler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(rawSignal(), &sa, &old);
	for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++) {
		kshim::cpuRun(cpu, [cpu] { cpuThreads[cpu] = pthread_self(); });
		kshim::cpuWait(cpu);
	}

	fmt::print("{}\n", kshim::machineLine());
	fmt::print("bench ipi: {} iterations of {} rounds; raw = pthread_kill() + acknowledgement "
		   "flag on the same CPU threads\n", o.iters, o.rounds);
	runPair("single   ", o, [] { smp_call_function_single(1, nop, nullptr, 1); },
		[] { rawRound(1); });
	unsigned int last = nr_cpu_ids - 1;
	runPair("broadcast", o, [] { on_each_cpu(nop, nullptr, 1); }, [last] { rawRound(last); });

	sigaction(rawSignal(), &old, nullptr);
	kshim::shutdown();
	return 0;
}

BenchRegistrar ipiBench({"ipi", "IPI round trip, one CPU and all CPUs, vs pthread_kill", benchIpi});

} /* namespace */

} /* namespace pokelab::bench */
