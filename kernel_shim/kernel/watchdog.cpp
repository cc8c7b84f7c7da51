// SPDX-License-Identifier: GPL-2.0-only
/*
 * The soft-lockup detector, the hung-task detector and RCU's CPU stall
 * warnings, for CPUs that are host threads (kernel_shim/watchdog.h).
 *
 * CUSTOM: kernel/watchdog.c, kernel/hung_task.c and kernel/rcu/tree_stall.h
 * in their reports' words, on a watchdog thread instead of per-CPU hrtimers
 * and kthreads:
 *
 *	CPU1 (patcher, waits)			CPU3 (its INT3 handler took a ref)
 *	text_poke_array_refs_drain()		handler returns, the put lost
 *	  atomic_cond_read_acquire(refs)	runs on: its thread's CPU time grows
 *	  spins: its CPU time grows
 *			watchdog thread: CPU1 in a recorded wait for 2 x thresh,
 *			both sides ran, the word unchanged: a soft lockup, named
 *
 * With 64 CPUs on 2 PUs a waiter may wait long for a holder the host has
 * not scheduled: its CPU time does not grow, so the wait is only slow, and
 * the clock of the report starts again when it does run.
 *
 * The detectors that read the records kept here, and their reports, are
 * watchdog_checks.cpp's.
 *
 * userspace: one thread for all CPUs, sampling every thresh / 10 s (at most
 * 1 s); the thread CPU clocks (pthread_getcpuclockid()) stand for "it ran";
 * the stuck CPU's stack comes from a signal of the watchdog's (SIGRTMIN +
 * 3), not from its own hrtimer interrupt.
 */
#include <algorithm>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <execinfo.h>
#include <mutex>
#include <pthread.h>
#include <sys/syscall.h>
#include <thread>
#include <ucontext.h>
#include <unistd.h>
#include <vector>

#include <fmt/format.h>

#include <kernel_shim/boot.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/watchdog.h>
#include <linux/mutex.h>
#include <linux/smp.h>
#include <linux/threads.h>

#define KSHIM_PRIVATE
#include "internal.h"
#include "watchdog_internal.h"

namespace kshim {

using namespace wd;

namespace wd {

unsigned int threshNow;
Watched watched[2 * NR_CPUS];
std::atomic<LockupHandler> handler{nullptr};

std::vector<WaitNamer> &namers()
{
	static std::vector<WaitNamer> v;

	return v;
}

int sampleSignal() noexcept
{
	return SIGRTMIN + 3;
}

u64 cpuTimeNs(const Watched &w) noexcept
{
	struct timespec ts;

	if (!w.on.load(std::memory_order_acquire) || clock_gettime(w.clock, &ts))
		return 0;
	return (u64)ts.tv_sec * 1000000000ull + (u64)ts.tv_nsec;
}

/* A consistent copy of @w's record at @d; false if none or it changed meanwhile. */
bool readWait(const Watched &w, unsigned int d, WaitRec *out)
{
	const WaitRec &r = w.waits[d];
	u32 s = r.seq.load(std::memory_order_acquire);

	if (s & 1 || !r.site)
		return false;
	out->kind = r.kind;
	out->site = r.site == &r.own ? &out->own : r.site;
	out->own = r.own;
	out->addr = r.addr;
	out->size = r.size;
	out->t0 = r.t0;
	out->cpu = r.cpu;
	std::atomic_thread_fence(std::memory_order_acquire);
	return r.seq.load(std::memory_order_relaxed) == s && out->t0;
}

} /* namespace wd */

namespace {

constexpr unsigned int kDefaultThresh = 5;	/* s; the kernel's is 10 */
constexpr unsigned int kMaxThresh = 60;

unsigned int thresh = kDefaultThresh;

int setThresh(const char *val, std::string &err)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = val && *val && val[0] != '-' && val[0] != '+' ? strtoul(val, &end, 10) : ULONG_MAX;
	if (v == ULONG_MAX || errno || *end || v > kMaxThresh) {
		err = fmt::format("watchdog_thresh={}: expected watchdog_thresh=SECONDS, a whole "
				  "number 0 (off) to {} (default {}: a soft lockup after 2 x that)",
				  val ? val : "", kMaxThresh, kDefaultThresh);
		return -EINVAL;
	}
	thresh = (unsigned int)v;
	return 0;
}

int setNoWatchdog(const char *val, std::string &err)
{
	if (val) {
		err = fmt::format("nowatchdog={}: expected nowatchdog, with no value", val);
		return -EINVAL;
	}
	thresh = 0;
	return 0;
}

BootParamRegistrar threshParam({
	"watchdog_thresh", setThresh, [] { thresh = kDefaultThresh; },
	"watchdog_thresh=SECONDS: report a soft lockup, a hung task or an RCU stall after 2 x "
	"SECONDS (default: 5; 0 = off)",
});

BootParamRegistrar noWatchdogParam({
	"nowatchdog", setNoWatchdog, [] { thresh = kDefaultThresh; },
	"nowatchdog: no lockup detectors (as watchdog_thresh=0)",
});

__thread Watched *tlsWatched __attribute__((tls_model("local-exec")));
std::atomic<unsigned long> nReports{0};

/* The watchdog thread. */
std::thread wdThread;
std::mutex wdLock;
std::condition_variable wdCv;
bool wdStop;

void sampleHandler(int, siginfo_t *, void *ctx)
{
	Watched *w = tlsWatched;
	int saved = errno;

	if (!w)
		return;
	w->samplePc = (unsigned long)((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RIP];
	/* libgcc was loaded at the watchdog's start (below): no allocation here */
	w->nframes = backtrace(w->frames, kFrames);
	w->sampleSeq.fetch_add(1, std::memory_order_release);
	errno = saved;
}

void watchdogMain()
{
	u64 period = std::min<u64>(threshNow * 100000000ull, NSEC_PER_SEC);
	std::unique_lock<std::mutex> lk(wdLock);

	pthread_setname_np(pthread_self(), "watchdog");
	while (!wdStop) {
		wdCv.wait_for(lk, std::chrono::nanoseconds(period));
		if (wdStop)
			break;
		lk.unlock();
		scan();
		lk.lock();
	}
}

int watchdogStart(std::string &)
{
	static bool installed;

	threshNow = thresh;
	forgetSeen();
	if (!threshNow)
		return 0;
	if (!installed) {
		struct sigaction sa;
		void *f[1];

		(void)backtrace(f, 1);	/* libgcc loaded now, not in the handler */
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = sampleHandler;
		sa.sa_flags = SA_SIGINFO | SA_RESTART;
		sigemptyset(&sa.sa_mask);
		sigaction(sampleSignal(), &sa, nullptr);
		installed = true;
	}
	wdStop = false;
	wdThread = std::thread(watchdogMain);
	return 0;
}

int watchdogShutdown(std::string &)
{
	if (!wdThread.joinable())
		return 0;
	{
		std::lock_guard<std::mutex> lk(wdLock);

		wdStop = true;
	}
	wdCv.notify_all();
	wdThread.join();
	return 0;
}

BootHookRegistrar watchdogBootHook({"watchdog", BootStage::Late, watchdogStart});
BootHookRegistrar watchdogShutdownHook({"watchdog", BootStage::Shutdown, watchdogShutdown});

} /* namespace */

namespace {

int beginWait(WaitKind kind, const WaitSite *site, const WaitSite *own, const volatile void *addr,
	      unsigned int size) noexcept
{
	Watched *w = tlsWatched;

	if (!w)
		return -1;
	/* the depth first: a signal handler's wait from here on nests above this one */
	int d = w->depth.fetch_add(1, std::memory_order_relaxed);

	if (d >= (int)kMaxDepth)
		return d;
	WaitRec &r = w->waits[d];
	u32 s = r.seq.load(std::memory_order_relaxed);

	r.seq.store(s + 1, std::memory_order_relaxed);
	std::atomic_thread_fence(std::memory_order_release);
	r.kind = kind;
	if (own) {
		r.own = *own;
		r.site = &r.own;
	} else {
		r.site = site;
	}
	r.addr = addr;
	r.size = size;
	r.t0 = clockNs();
	r.cpu = tlsCpu;
	r.seq.store(s + 2, std::memory_order_release);
	return d;
}

} /* namespace */

int waitBegin(WaitKind kind, const WaitSite *site, const volatile void *addr,
	      unsigned int size) noexcept
{
	return beginWait(kind, site, nullptr, addr, size);
}

int waitBeginAt(WaitKind kind, const std::source_location &loc, const char *expr,
		const volatile void *addr) noexcept
{
	WaitSite own{loc.file_name(), (unsigned int)loc.line(), loc.function_name(), expr, ""};

	return beginWait(kind, nullptr, &own, addr, 0);
}

void waitEnd(int d) noexcept
{
	Watched *w = tlsWatched;

	if (d < 0 || !w)
		return;
	if (d < (int)kMaxDepth) {
		WaitRec &r = w->waits[d];
		u32 s = r.seq.load(std::memory_order_relaxed);

		r.seq.store(s + 1, std::memory_order_relaxed);
		std::atomic_thread_fence(std::memory_order_release);
		r.site = nullptr;
		r.t0 = 0;
		r.seq.store(s + 2, std::memory_order_release);
	}
	/* no touch: a loop of short waits that never gets anywhere is no progress */
	w->depth.fetch_sub(1, std::memory_order_release);
}

void watchdogTouch() noexcept
{
	Watched *w = tlsWatched;

	if (w)
		w->touch.store(w->touch.load(std::memory_order_relaxed) + 1,
			       std::memory_order_relaxed);
}

WatchRcu *watchRcu() noexcept
{
	Watched *w = tlsWatched;

	return w ? &w->rcu : nullptr;
}

void watchdogThreadStart(int cpu, bool kworker) noexcept
{
	Watched &w = watched[2 * cpu + kworker];

	w.cpu = cpu;
	w.kworker = kworker;
	w.thread = pthread_self();
	w.tid = (pid_t)syscall(SYS_gettid);
	if (pthread_getcpuclockid(w.thread, &w.clock))
		w.clock = CLOCK_THREAD_CPUTIME_ID;
	w.depth.store(0, std::memory_order_relaxed);
	for (WaitRec &r : w.waits) {
		r.site = nullptr;
		r.t0 = 0;
	}
	w.rcu.online.store(false, std::memory_order_relaxed);
	w.rcu.nesting.store(0, std::memory_order_relaxed);
	w.rcu.heldOnline = false;
	tlsWatched = &w;
	w.on.store(true, std::memory_order_release);
}

void watchdogThreadStop() noexcept
{
	Watched *w = tlsWatched;

	if (!w)
		return;
	w->on.store(false, std::memory_order_release);
	tlsWatched = nullptr;
}

void mutexOwnerSet(struct mutex *m, const std::source_location &loc) noexcept
{
	m->owner_file.store(loc.file_name(), std::memory_order_relaxed);
	m->owner_func.store(loc.function_name(), std::memory_order_relaxed);
	m->owner_line.store((unsigned int)loc.line(), std::memory_order_relaxed);
	m->owner_ts.store(clockNs(), std::memory_order_relaxed);
	m->owner_cpu.store(raw_smp_processor_id(), std::memory_order_relaxed);
}

void registerWaitNamer(WaitNamer namer)
{
	namers().push_back(namer);
}

void setLockupHandler(LockupHandler fn) noexcept
{
	handler.store(fn);
}

void lockupReport(const std::string &text)
{
	LockupHandler fn = handler.load();

	nReports.fetch_add(1);
	if (fn)
		fn(text);
	else
		fmt::print(stderr, "{}", text);
}

void lockupReportFatal(const std::string &text)
{
	LockupHandler fn = handler.load();

	if (!fn)
		return;
	nReports.fetch_add(1);
	fn(text);
}

unsigned long lockupReports() noexcept
{
	return nReports.load();
}

unsigned int watchdogThresh() noexcept
{
	return booted() ? threshNow : thresh;
}

} /* namespace kshim */
