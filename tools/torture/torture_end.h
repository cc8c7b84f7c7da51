/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * How a torture run ends when it cannot end in order (torture_end.cpp):
 * a lockup report (kernel_shim/watchdog.h), a signal the CPUs do not stop
 * for, or a run that outlives its --duration.
 *
 * Each of them stops the CPUs' loops and gives the run kGraceNs to end in
 * order (the CPUs return, the main thread prints the summary); a run that
 * does not (a CPU is wedged, so cpuWait() would never return) is ended by
 * the thread that saw it: the summary, the verdict and the timeline, then
 * _exit() with the wedged CPU threads left behind, never joined.
 */
#pragma once

#include <atomic>
#include <string>

#include <linux/types.h>

namespace pokelab::torture {

enum class End {
	InOrder,	/* the main thread: every CPU returned */
	Lockup,		/* a lockup report, and the CPUs did not stop */
	Interrupted,	/* SIGINT/SIGTERM/SIGHUP, and the CPUs did not stop */
	Overrun,	/* past --duration + the bound, and the CPUs did not stop */
};

/* What the run does on the way out: prints, writes, returns the exit status. */
using FinishFn = int (*)(End end, int sig);

/* Time a run gets to end in order after a lockup or a signal. */
inline constexpr u64 kGraceNs = 1000000000ull;

/*
 * Arm the ends: lockups go to the run's stdout and set *@stopAll; signals
 * and lockups that the CPUs do not stop for call @finish (from the stop
 * watcher or the end's own thread), which must not return. Main thread,
 * after boot, before the CPUs start.
 */
void endArm(std::atomic<bool> *stopAll, FinishFn finish);

/* The latest time the run may end at (clockNs(); 0: none, --ops). */
void endSetDeadline(u64 deadlineNs);

/* The bound past --duration: 2 x watchdog_thresh + 3 s. */
u64 endBoundNs();

/*
 * The forced ends and the in-order one race for the summary: true for
 * the first caller. The main thread that loses waits for the winner's exit.
 */
bool endClaim();

/* The in-order end's status, once its outputs are flushed (the bound then exits with it). */
void endDone(int status);

/* A lockup was reported, and the first report's first line. */
bool endLockedUp();
std::string endLockupTitle();

/* Lockup reports go to stderr again; the end's thread stops. Main thread, at the end. */
void endDisarm();

} /* namespace pokelab::torture */
