/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pokelab run isolation's load (isolation_load.cpp), as runVariant()
 * (isolation.cpp) starts it: the loops of the isolated and the
 * housekeeping CPUs, each on its CPU through kshim::cpuRun(); CPU 0's
 * patching operations and their windows; the probes, after the load
 * stopped. Task context; CPU 0 (the main thread) but for the loops.
 */
#pragma once

#include <atomic>
#include <vector>

#include <linux/types.h>

#include "isolation.h"

struct bpf_binary_header;
struct cpumask;

namespace pokelab::scenario::isolation {

/* Set to stop the loops; each CPU's counts are in its state once it returned. */
extern std::atomic<bool> stopLoad;
extern unsigned int windowSeq;		/* odd while a deferrable-sync window is open */

struct alignas(64) IsoState {
	std::atomic<unsigned int> ack{0};
	std::atomic<unsigned long> syscalls{0};
	std::atomic<unsigned long> iterations{0};
};

struct alignas(64) HkState {
	std::atomic<unsigned long> messages{0};
	std::atomic<unsigned long> received{0};
};

/* An isolated CPU: user-mode work, a system call every @periodNs, none inside a window. */
void isolatedLoop(IsoState *st, u64 periodNs);
/* A housekeeping CPU: synchronous messages to @peer until stopLoad. */
void hackbenchLoop(int self, int peer, std::vector<HkState> *hk);

/* CPU 0's operations, counted in @c; the patching ones inside a window of @iso's CPUs. */
void opFlip(const struct cpumask *nohz, std::vector<IsoState> &iso, IsolationOps &c);
void opModuleLoad(const struct cpumask *nohz, std::vector<IsoState> &iso, IsolationOps &c);
void opJit(struct bpf_binary_header **prev, IsolationOps &c);
void opExit(const struct cpumask *nohz, std::vector<IsoState> &iso, IsolationOps &c);

/* After the load: isolated @cpu inside a system call, then idle, while CPU 0 patches. */
void runProbe(int cpu, VariantResult *r);
void runIdleProbe(int cpu, VariantResult *r);

} /* namespace pokelab::scenario::isolation */
