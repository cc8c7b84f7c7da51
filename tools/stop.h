/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Orderly stop on SIGINT, SIGTERM and SIGHUP.
 *
 * main() calls stopInit() before anything starts a thread: the three
 * signals are blocked in the main thread, so in every thread created after
 * it (the CPUs among them: one may be in the INT3 handler or have IRQs
 * off), and taken in one place, a thread of their own in sigwait(). Nothing
 * runs in a signal handler but the machine's own. A command that can stop
 * in order says so (stopOrderly(), or taking stopFlag()); for the others
 * the first signal exits at once with 128 + its number, as the signal's
 * default action would. For the former, the first signal sets
 * the flag that a command's loop polls (it finishes the batch in progress,
 * stops its loops, joins the CPUs, prints what it has and exits with
 * 128 + the signal); a second one exits at once with 128 + its number
 * (outputs are written to a fresh file and renamed, so none is left
 * half-written; an unfinished temporary file may stay behind). The same
 * signal again within 500 ms is the same stop, not a second one: GNU
 * timeout(1) signals its child and then the child's process group.
 *
 * A signal always ends the run: a command that has not exited 30 s after it
 * is ended as a second signal would end it; a command that can end itself
 * without its CPUs (torture: the summary so far, its wedged CPUs left
 * behind) says so with stopForcedAfter(), and the watcher calls it that
 * long after the signal.
 */
#pragma once

#include <atomic>

namespace pokelab {

/* Block the signals and start the watcher. Main thread, once, before any other thread. */
void stopInit();

/* The running command polls stopRequested() and stops in order. Main thread. */
void stopOrderly();

/*
 * @fn(sig), on the watcher thread, @ms after the first signal if the
 * process has not exited by then; it should end the process (if it
 * returns, the 30 s bound still applies). 0, nullptr: none. Any thread.
 */
void stopForcedAfter(unsigned long ms, void (*fn)(int sig));

/* Set by the first signal (taking it also declares stopOrderly()). Any thread. */
const std::atomic<bool> *stopFlag();
bool stopRequested();

/* The signal that asked to stop (0 if none), and the exit status it asks for (128 + it). */
int stopSignal();
int stopExitStatus();

/* "SIGINT", "SIGTERM", "SIGHUP" for stopSignal(). */
const char *stopSignalName();

} /* namespace pokelab */
