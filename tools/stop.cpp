// SPDX-License-Identifier: GPL-2.0-only
/*
 * Orderly stop: tools/stop.h.
 */
#include <csignal>
#include <cstring>
#include <ctime>
#include <pthread.h>
#include <thread>
#include <unistd.h>

#include "stop.h"

namespace pokelab {

namespace {

/*
 * Two identical signals this close count as one: GNU timeout(1) signals its
 * child, then the child's process group, so a script's stop arrives twice.
 */
constexpr long kSameStopMs = 500;
/* An orderly command that has not exited this long after the signal is ended. */
constexpr long kOrderlyBoundMs = 30000;

std::atomic<bool> stopping{false};
std::atomic<bool> orderly{false};
std::atomic<int> signalTaken{0};
std::atomic<long> forcedMs{0};
std::atomic<void (*)(int)> forcedFn{nullptr};

sigset_t stopSet()
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	return set;
}

void say(const char *s)
{
	(void)!write(STDERR_FILENO, s, strlen(s));
}

/* The name of a stop signal (stopSet()'s), or "no signal". */
const char *signalName(int sig)
{
	switch (sig) {
	case SIGINT:
		return "SIGINT";
	case SIGTERM:
		return "SIGTERM";
	case SIGHUP:
		return "SIGHUP";
	}
	return "no signal";
}

long msSince(const struct timespec &t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
}

void watcher()
{
	sigset_t set = stopSet();
	struct timespec first = {};
	bool forced = false;

	for (;;) {
		int sig = 0;

		if (!stopping.load()) {
			if (sigwait(&set, &sig))
				continue;
		} else {
			/* stopping: every 50 ms, see whether the command has ended in time */
			struct timespec tick = {0, 50 * 1000000};
			long bound = forcedFn.load() && !forced ? forcedMs.load() : kOrderlyBoundMs;

			sig = sigtimedwait(&set, nullptr, &tick);
			if (sig < 0 && msSince(first) >= bound) {
				void (*fn)(int) = forcedFn.load();

				if (fn && !forced) {
					/* the command's own end (torture: the summary so far) */
					forced = true;
					fn(signalTaken.load());
					clock_gettime(CLOCK_MONOTONIC, &first);
					continue;
				}
				say("pokelab: the run did not stop within 30 s of the signal: "
				    "exiting now; an output not yet complete is not written\n");
				_exit(128 + signalTaken.load());
			}
			if (sig < 0)
				continue;
		}
		/*
		 * A command that cannot stop in order ends as the signal's default
		 * would, saying so: its outputs are written whole or not at all
		 * (an unnamed file linked in at the end), so none is.
		 */
		if (!orderly.load()) {
			say("pokelab: interrupted (");
			say(signalName(sig));
			say("): exiting; an output not yet complete is not written\n");
			_exit(128 + sig);
		}
		if (!stopping.load()) {
			signalTaken.store(sig);
			clock_gettime(CLOCK_MONOTONIC, &first);
			stopping.store(true);
			/* the same signal within kSameStopMs is this stop again: say so */
			say(sig == SIGINT ? "pokelab: stopping after the operation in progress "
					    "(another Ctrl-C after 0.5 s exits at once)\n"
					  : "pokelab: stopping after the operation in progress "
					    "(another signal after 0.5 s exits at once)\n");
			continue;
		}
		if (sig == signalTaken.load() && msSince(first) < kSameStopMs)
			continue;	/* the same stop, delivered twice (timeout(1)) */
		say("pokelab: second signal: exiting now; an output not yet complete is not written "
		    "(the file keeps its old contents, or stays absent)\n");
		_exit(128 + sig);
	}
}

} /* namespace */

void stopInit()
{
	sigset_t set = stopSet();

	pthread_sigmask(SIG_BLOCK, &set, nullptr);
	std::thread(watcher).detach();
}

const std::atomic<bool> *stopFlag()
{
	orderly.store(true);
	return &stopping;
}

void stopOrderly()
{
	orderly.store(true);
}

void stopForcedAfter(unsigned long ms, void (*fn)(int sig))
{
	forcedMs.store((long)ms);
	forcedFn.store(fn);
}

bool stopRequested()
{
	return stopping.load(std::memory_order_relaxed);
}

int stopSignal()
{
	return signalTaken.load();
}

int stopExitStatus()
{
	return 128 + signalTaken.load();
}

const char *stopSignalName()
{
	return signalName(signalTaken.load());
}

} /* namespace pokelab */
