/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the watchdog's two halves share (watchdog.cpp: the records the CPU
 * threads keep and the watchdog thread; watchdog_checks.cpp: the detectors
 * that read them and the reports they write). Private to kernel_shim.
 */
#pragma once

#ifndef KSHIM_PRIVATE
#error "kernel_shim/kernel/watchdog_internal.h is private to kernel_shim"
#endif

#include <atomic>
#include <csignal>
#include <ctime>
#include <pthread.h>
#include <sys/types.h>
#include <vector>

#include <kernel_shim/watchdog.h>
#include <linux/threads.h>
#include <linux/types.h>

namespace kshim::wd {

inline constexpr unsigned int kMaxDepth = 4;		/* waits nested in signal handlers */
inline constexpr unsigned int kFrames = 12;
/* "it ran": CPU time a side must have had in the window before it is blamed */
inline constexpr u64 kRanNs = 20 * 1000000ull;
inline constexpr u64 NSEC_PER_SEC = 1000000000ull;

/* The running machine's watchdog_thresh, in s (0: off). */
extern unsigned int threshNow;

struct WaitRec {
	std::atomic<u32> seq{0};	/* odd while written */
	WaitKind kind = WaitKind::Spin;
	const WaitSite *site = nullptr;
	WaitSite own{};			/* waitBeginAt()'s place */
	const volatile void *addr = nullptr;
	unsigned int size = 0;
	u64 t0 = 0;
	int cpu = -1;
};

/* A watched thread: what it records, what the watchdog reads. */
struct alignas(64) Watched {
	std::atomic<bool> on{false};
	int cpu = -1;
	bool kworker = false;
	clockid_t clock{};
	pthread_t thread{};
	pid_t tid = 0;
	std::atomic<unsigned long> touch{0};
	std::atomic<int> depth{0};
	WaitRec waits[kMaxDepth];
	WatchRcu rcu;
	/* the watchdog's request for where the thread is (SIGRTMIN + 3) */
	std::atomic<u32> sampleSeq{0};
	unsigned long samplePc = 0;
	void *frames[kFrames] = {};
	int nframes = 0;
};

/* Two per CPU: its own thread (2 * cpu) and its kworker's (2 * cpu + 1). */
extern Watched watched[2 * NR_CPUS];
extern std::atomic<LockupHandler> handler;

/* The registered namers of spin waits (registerWaitNamer()). */
std::vector<WaitNamer> &namers();
/* The signal the watchdog asks a thread where it is with (SIGRTMIN + 3). */
int sampleSignal() noexcept;
/* @w's thread's CPU time, 0 when it is not on. */
u64 cpuTimeNs(const Watched &w) noexcept;
/* A consistent copy of @w's record at @d; false if none or it changed meanwhile. */
bool readWait(const Watched &w, unsigned int d, WaitRec *out);
/* The watchdog thread's sample: forget what it saw (a new machine), or scan once. */
void forgetSeen();
void scan();

} /* namespace kshim::wd */
