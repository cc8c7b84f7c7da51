// SPDX-License-Identifier: GPL-2.0-only
/*
 * Orderly stop: tools/stop.h.
 */
#include <csignal>
#include <cstring>
#include <pthread.h>
#include <thread>
#include <unistd.h>

#include "stop.h"

namespace pokelab {

namespace {

std::atomic<bool> stopping{false};
std::atomic<bool> orderly{false};
std::atomic<int> signalTaken{0};

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

void watcher()
{
	sigset_t set = stopSet();

	for (;;) {
		int sig = 0;

		if (sigwait(&set, &sig))
			continue;
		/* A command that cannot stop in order ends as the signal's default would. */
		if (!orderly.load())
			_exit(128 + sig);
		if (!stopping.load()) {
			signalTaken.store(sig);
			stopping.store(true);
			say("pokelab: stopping after the operation in progress (a second signal exits "
			    "at once)\n");
			continue;
		}
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
	switch (signalTaken.load()) {
	case SIGINT:
		return "SIGINT";
	case SIGTERM:
		return "SIGTERM";
	case SIGHUP:
		return "SIGHUP";
	}
	return "no signal";
}

} /* namespace pokelab */
