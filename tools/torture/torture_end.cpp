// SPDX-License-Identifier: GPL-2.0-only
/*
 * The ends of a torture run that cannot end in order: torture_end.h.
 *
 *	CPU1 (wedged)			end thread / stop watcher	main (CPU0)
 *	spins in a drain		lockup report: stopAll		loop stops
 *					  ... kGraceNs ...		cpuWait(1): never
 *					endClaim(): summary,
 *					timeline, _exit(1)
 */
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>

#include <kernel_shim/clock.h>
#include <kernel_shim/watchdog.h>

#include "stop.h"
#include "torture_end.h"

namespace pokelab::torture {

namespace {

std::atomic<bool> *stopAllFlag;
FinishFn finishFn;
std::atomic<bool> claimed{false};
std::atomic<int> doneStatus{-1};
std::atomic<u64> deadline{0};
std::atomic<bool> lockedUp{false};
std::atomic<u64> lockupAt{0};
std::mutex printLock;
std::string lockupTitle;

std::mutex endLock;
std::condition_variable endCv;
bool endStop;
std::thread endThread;

[[noreturn]] void finishNow(End end, int sig)
{
	_exit(finishFn(end, sig));
}

/* The report's first line that is not a rule ("lockdep: =====") */
std::string titleOf(const std::string &report)
{
	size_t at = 0;

	while (at < report.size()) {
		size_t nl = report.find('\n', at);
		std::string line = report.substr(at, nl == std::string::npos ? nl : nl - at);
		size_t colon = line.find(": ");

		if (colon == std::string::npos ||
		    line.find_first_not_of("=- ", colon + 2) != std::string::npos)
			return line;
		if (nl == std::string::npos)
			break;
		at = nl + 1;
	}
	return report.substr(0, report.find('\n'));
}

/* A lockup report: printed with the model's violations; the CPUs are told to stop. */
void onLockup(const std::string &report)
{
	std::lock_guard<std::mutex> lk(printLock);

	if (claimed.load())
		return;
	if (!lockedUp.exchange(true)) {
		lockupTitle = titleOf(report);
		lockupAt.store(kshim::clockNs());
	}
	fmt::print("{}", report);
	std::fflush(stdout);
	stopAllFlag->store(true);
	endCv.notify_all();
}

/* The stop watcher's call, kGraceNs after the signal: the CPUs did not stop. */
void onStuckSignal(int sig)
{
	if (!endClaim())
		return;
	finishNow(End::Interrupted, sig);
}

void endMain()
{
	std::unique_lock<std::mutex> lk(endLock);

	while (!endStop) {
		endCv.wait_for(lk, std::chrono::milliseconds(100));
		if (endStop)
			break;
		u64 now = kshim::clockNs(), at = lockupAt.load(), by = deadline.load();

		if (at && now - at >= kGraceNs && endClaim()) {
			lk.unlock();
			finishNow(End::Lockup, 0);
		}
		if (by && now >= by) {
			lk.unlock();
			if (endClaim())
				finishNow(End::Overrun, 0);
			/* the in-order end has the summary and did not exit: its status, now */
			fmt::print(stderr, "torture: the run's end did not complete within {:.0f} "
					   "s of its --duration; exiting\n", endBoundNs() / 1e9);
			std::fflush(stdout);
			_exit(doneStatus.load() >= 0 ? doneStatus.load() : 1);
		}
	}
}

} /* namespace */

void endArm(std::atomic<bool> *stopAll, FinishFn finish)
{
	stopAllFlag = stopAll;
	finishFn = finish;
	claimed.store(false);
	doneStatus.store(-1);
	deadline.store(0);
	lockedUp.store(false);
	lockupAt.store(0);
	lockupTitle.clear();
	kshim::setLockupHandler(onLockup);
	pokelab::stopForcedAfter(kGraceNs / 1000000, onStuckSignal);
	endStop = false;
	endThread = std::thread(endMain);
}

void endSetDeadline(u64 deadlineNs)
{
	deadline.store(deadlineNs);
}

u64 endBoundNs()
{
	return 2ull * kshim::watchdogThresh() * 1000000000ull + 3000000000ull;
}

bool endClaim()
{
	std::lock_guard<std::mutex> lk(printLock);

	return !claimed.exchange(true);
}

void endDone(int status)
{
	doneStatus.store(status);
}

bool endLockedUp()
{
	return lockedUp.load();
}

std::string endLockupTitle()
{
	std::lock_guard<std::mutex> lk(printLock);

	return lockupTitle;
}

void endDisarm()
{
	kshim::setLockupHandler(nullptr);
	pokelab::stopForcedAfter(0, nullptr);
	{
		std::lock_guard<std::mutex> lk(endLock);

		endStop = true;
	}
	endCv.notify_all();
	if (endThread.joinable())
		endThread.join();
}

} /* namespace pokelab::torture */
