// SPDX-License-Identifier: GPL-2.0-only
/*
 * The watchdog's detectors and their reports (watchdog.cpp keeps the
 * records they read and runs them): a soft lockup, a recorded spin whose
 * both sides ran, or a CPU in the kernel with no cond_resched(); a hung
 * task, a mutex waiter whose owner ran; an RCU stall, a grace period the
 * readers hold up. Each report names the wait, its holder and where the
 * stuck thread is.
 *
 * CUSTOM: the reports of kernel/watchdog.c, kernel/hung_task.c and
 * kernel/rcu/tree_stall.h in their words (see watchdog.cpp).
 */
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <execinfo.h>
#include <fcntl.h>
#include <string>
#include <unistd.h>

#include <fmt/format.h>

#include <kernel_shim/clock.h>
#include <kernel_shim/port_map.h>
#include <kernel_shim/symbols.h>
#include <kernel_shim/watchdog.h>
#include <linux/mutex.h>
#include <linux/threads.h>

#define KSHIM_PRIVATE
#include "internal.h"
#include "watchdog_internal.h"

namespace kshim {

using namespace wd;

namespace {

/* "(!VAL)" as "!VAL": the macros parenthesise their arguments */
std::string unparen(const char *c)
{
	std::string s = c ? c : "?";

	if (s.size() > 2 && s.front() == '(' && s.back() == ')')
		s = s.substr(1, s.size() - 2);
	return s;
}

u64 wordValue(const volatile void *addr, unsigned int size)
{
	switch (size) {
	case 1:
		return __atomic_load_n((const volatile u8 *)addr, __ATOMIC_RELAXED);
	case 2:
		return __atomic_load_n((const volatile u16 *)addr, __ATOMIC_RELAXED);
	case 4:
		return __atomic_load_n((const volatile u32 *)addr, __ATOMIC_RELAXED);
	default:
		return __atomic_load_n((const volatile u64 *)addr, __ATOMIC_RELAXED);
	}
}

/* @now - @t, 0 for a @t after @now (a wait that began after the scan's clock read) */
u64 ago(u64 now, u64 t)
{
	return now > t ? now - t : 0;
}

std::string secs(u64 ns)
{
	return fmt::format("{:.1f} s", ns / 1e9);
}

/* The CPU time of CPU @cpu's threads (its own and its kworker's). */
u64 cpuRanNs(int cpu)
{
	if (cpu < 0 || cpu >= NR_CPUS)
		return 0;
	return cpuTimeNs(watched[2 * cpu]) + cpuTimeNs(watched[2 * cpu + 1]);
}

/* The host's state of @w's thread: 'R' runnable, 'S'/'D' asleep, 0 unknown. */
char hostState(const Watched &w)
{
	char path[64], buf[256];
	int fd;
	ssize_t n;

	if (!w.on.load(std::memory_order_acquire) || !w.tid)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)w.tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* "tid (comm) S ...": the state follows the last ')' */
	char *p = strrchr(buf, ')');

	return p && p[1] == ' ' ? p[2] : 0;
}

/*
 * Whether CPU @cpu, the side a wait waits for, had its chance: it ran
 * kRanNs since @base, or none of its threads is runnable (asleep or
 * blocked: it will not let go by itself). A runnable thread the host does
 * not schedule (many CPUs on few PUs) has not had its chance.
 */
bool hadItsChance(int cpu, u64 base)
{
	if (cpu < 0 || cpu >= NR_CPUS)
		return false;
	if (cpuRanNs(cpu) - base >= kRanNs)
		return true;
	for (int k = 0; k < 2; k++) {
		const Watched &w = watched[2 * cpu + k];

		if (w.on.load(std::memory_order_acquire) && hostState(w) == 'R')
			return false;
	}
	return watched[2 * cpu].on.load(std::memory_order_acquire);
}

/* Ask @w where it is; the frames, symbolised, or "" if it did not answer within 100 ms. */
std::string whereIs(Watched &w)
{
	u32 s = w.sampleSeq.load(std::memory_order_acquire);
	std::string out;

	if (pthread_kill(w.thread, sampleSignal()))
		return "";
	for (int i = 0; i < 100 && w.sampleSeq.load(std::memory_order_acquire) == s; i++)
		sleepForNs(1000000);
	if (w.sampleSeq.load(std::memory_order_acquire) == s)
		return "";
	int n = w.nframes, k = 0;

	/* the frames below the interrupted one are the handler's and the trampoline's */
	while (k < n && (unsigned long)w.frames[k] != w.samplePc)
		k++;
	if (k == n)
		k = 0;
	out = fmt::format("watchdog:   RIP: {}\n", traceSymbol(w.samplePc, true));
	for (int i = k + 1, shown = 0; i < n && shown < 6; i++, shown++)
		out += fmt::format("watchdog:    {}\n", traceSymbol((unsigned long)w.frames[i] - 1,
								 false));
	return out;
}

/* The first frame of @w's last sample that the port map knows: "name(), the port's F:L". */
std::string portFrame(const Watched &w)
{
	for (int i = 0; i < w.nframes; i++) {
		std::string name = traceSymbol((unsigned long)w.frames[i] - 1, false);
		const char *at = portWhere(name.c_str());

		if (at)
			return fmt::format("{}(), the port's {}", name, at);
	}
	return "";
}

/* What @r waits on and who holds it up: the report's lines, and the holder. */
std::string describeWait(const WaitRec &r, WaitHolder *h)
{
	const WaitSite &s = *r.site;
	std::string out;

	switch (r.kind) {
	case WaitKind::Mutex: {
		const struct mutex *m = (const struct mutex *)r.addr;
		int owner = m->owner_cpu.load(std::memory_order_relaxed);
		u64 ts = m->owner_ts.load(std::memory_order_relaxed);

		out = fmt::format("watchdog:   blocked in {} at {}:{} on {}\n",
				  portFunction(bareName(s.func).c_str()), shortFile(s.file), s.line,
				  m->name ? m->name : "a mutex");
		if (m->owner.load(std::memory_order_relaxed)) {
			h->cpu = owner;
			out += fmt::format("watchdog:   {} is held by {}, taken at {}:{} in {}() "
					   "{} ago\n", m->name ? m->name : "it",
					   owner >= 0 ? fmt::format("CPU#{}", owner)
						      : "a non-CPU thread",
					   shortFile(m->owner_file.load(std::memory_order_relaxed)),
					   m->owner_line.load(std::memory_order_relaxed),
					   bareName(m->owner_func.load(std::memory_order_relaxed)),
					   secs(ago(clockNs(), ts)));
		}
		return out;
	}
	case WaitKind::GracePeriod:
		return fmt::format("watchdog:   waiting for a grace period in synchronize_rcu(), "
				   "called at {}:{} in {}\n", shortFile(s.file), s.line,
				   portFunction(bareName(s.func).c_str()));
	case WaitKind::Spin:
	case WaitKind::Csd:
		break;
	}
	for (WaitNamer n : namers())
		if (n(s.func, r.addr, h))
			break;
	out = s.line ? fmt::format("watchdog:   spinning in {} at {}:{}\n",
				   portFunction(bareName(s.func).c_str()), shortFile(s.file),
				   s.line)
		     : fmt::format("watchdog:   spinning in {}\n",
				   portFunction(bareName(s.func).c_str()));
	out += fmt::format("watchdog:   waiting on {}{} until {}: it is {:#x}\n",
			   h->what.empty() ? s.expr : h->what,
			   h->what.empty() ? fmt::format(" [{}]", (const void *)r.addr) : "",
			   unparen(s.cond), wordValue(r.addr, r.size));
	if (!h->detail.empty())
		out += "watchdog:   " + h->detail + "\n";
	return out;
}

/* The watchdog's own memory of each thread and each wait it saw. */
struct SeenWait {
	u64 t0 = 0;
	const volatile void *addr = nullptr;
	u64 waiterBase = 0;	/* its CPU time when first seen */
	u64 holderBase = 0;
	int holder = -2;	/* -2: not named yet */
	u64 waiterAtHolderRan = 0;	/* 0: the holder has not run kRanNs yet */
	bool reported = false;
};

struct Seen {
	unsigned long touch = 0;
	u64 touchAt = 0;	/* when @touch last moved, or the thread left the kernel */
	u64 cpuAtTouch = 0;
	bool reported = false;
	/* samples since @touchAt, and those that found it runnable */
	unsigned int samples = 0;
	unsigned int runnable = 0;
	unsigned long qs = 0;
	/* when @qs last moved (1: not since the watchdog first saw it) */
	u64 qsAt = 0;
	bool qsSeen = false;
	SeenWait w[kMaxDepth];
};

Seen seen[2 * NR_CPUS];
/* Each thread's CPU time when the watchdog first saw the grace period it checks. */
u64 gpCpuBase[2 * NR_CPUS];

std::string threadName(const Watched &w)
{
	return w.kworker ? fmt::format("CPU#{}'s kworker", w.cpu) : fmt::format("CPU#{}", w.cpu);
}

void report(const std::string &text)
{
	lockupReport(text);
}

/* A recorded spin whose both sides ran: a soft lockup, reported once. */
void checkSpin(Watched &w, Seen &sn, unsigned int d, const WaitRec &r, u64 now)
{
	SeenWait &sw = sn.w[d];
	u64 mine = cpuTimeNs(w);

	if (sw.t0 != r.t0 || sw.addr != r.addr) {
		sw = SeenWait{};
		sw.t0 = r.t0;
		sw.addr = r.addr;
		sw.waiterBase = mine;
	}
	if (sw.reported)
		return;
	if (sw.holder == -2) {
		WaitHolder h;

		(void)describeWait(r, &h);
		sw.holder = h.cpu;
		sw.holderBase = cpuRanNs(h.cpu);
	}
	if (!sw.waiterAtHolderRan && (sw.holder < 0 || hadItsChance(sw.holder, sw.holderBase)))
		sw.waiterAtHolderRan = std::max<u64>(mine, 1);
	/* both ran: the holder, then the waiter after it, and the word did not let it go */
	if (ago(now, r.t0) < 2ull * threshNow * NSEC_PER_SEC || !sw.waiterAtHolderRan ||
	    mine - sw.waiterAtHolderRan < kRanNs)
		return;

	WaitHolder h;
	std::string what = describeWait(r, &h);
	std::string text = fmt::format("watchdog: BUG: soft lockup - CPU#{} stuck for {}s! [{}]\n",
				       r.cpu, (ago(now, r.t0)) / NSEC_PER_SEC, threadName(w));

	text += what;
	if (h.cpu >= 0)
		text += fmt::format("watchdog:   CPU#{} {} and did not let go; CPU#{} spun {} "
				    "of CPU time\n", h.cpu,
				    cpuRanNs(h.cpu) - sw.holderBase >= kRanNs
					    ? "ran " + secs(cpuRanNs(h.cpu) - sw.holderBase) +
						      " of CPU time since"
					    : "is not running (asleep, blocked or idle)",
				    r.cpu, secs(mine - sw.waiterBase));
	else
		text += fmt::format("watchdog:   CPU#{} spun {} of CPU time in the wait\n", r.cpu,
				    secs(mine - sw.waiterBase));
	text += whereIs(w);
	sw.reported = true;
	report(text);
}

/* A mutex waiter blocked 2 x thresh while its owner ran (or waits itself): a hung task. */
void checkMutex(Watched &w, Seen &sn, unsigned int d, const WaitRec &r, u64 now)
{
	SeenWait &sw = sn.w[d];
	const struct mutex *m = (const struct mutex *)r.addr;
	int owner = m->owner_cpu.load(std::memory_order_relaxed);

	if (sw.t0 != r.t0 || sw.addr != r.addr) {
		sw = SeenWait{};
		sw.t0 = r.t0;
		sw.addr = r.addr;
		sw.holder = owner;
		sw.holderBase = cpuRanNs(owner);
	}
	/* blocked that long, on one hold that long: a contended lock changes hands */
	if (sw.reported || ago(now, r.t0) < 2ull * threshNow * NSEC_PER_SEC ||
	    ago(now, m->owner_ts.load(std::memory_order_relaxed)) < 2ull * threshNow * NSEC_PER_SEC)
		return;
	if (owner != sw.holder) {
		/* it changed hands: the lock moves, this waiter is only unlucky */
		sw.holder = owner;
		sw.holderBase = cpuRanNs(owner);
		return;
	}
	bool ownerWaits = owner >= 0 && owner < NR_CPUS &&
			  (watched[2 * owner].depth.load(std::memory_order_relaxed) > 0 ||
			   watched[2 * owner + 1].depth.load(std::memory_order_relaxed) > 0);

	if (!ownerWaits && !hadItsChance(owner, sw.holderBase))
		return;

	WaitHolder h;
	std::string text = fmt::format("INFO: task {} blocked for more than {} seconds.\n",
				       threadName(w), 2 * threshNow);

	text += describeWait(r, &h);
	text += ownerWaits ? fmt::format("watchdog:   CPU#{}, its owner, is waiting:\n", owner)
			   : fmt::format("watchdog:   CPU#{}, its owner, {} and did not release "
					 "it\n", owner,
					 cpuRanNs(owner) - sw.holderBase >= kRanNs
						 ? "ran " + secs(cpuRanNs(owner) - sw.holderBase) +
							   " of CPU time since"
						 : "is not running (asleep or idle)");
	for (int k = 0; ownerWaits && k < 2; k++) {
		Watched &o = watched[2 * owner + k];

		for (int i = 0; i < std::min<int>(o.depth.load(), kMaxDepth); i++) {
			WaitRec orr;
			WaitHolder oh;

			if (readWait(o, i, &orr))
				text += describeWait(orr, &oh);
		}
	}
	sw.reported = true;
	report(text);
}

/* A grace period that has waited 2 x thresh: the readers holding it up. */
void checkGracePeriod(Watched &w, Seen &sn, unsigned int d, const WaitRec &r, u64 now)
{
	SeenWait &sw = sn.w[d];
	std::string cpus, lines;
	unsigned int n = 0;

	if (sw.t0 != r.t0 || sw.addr != r.addr) {
		sw = SeenWait{};
		sw.t0 = r.t0;
		sw.addr = r.addr;
		for (unsigned int i = 0; i < 2 * NR_CPUS; i++)
			gpCpuBase[i] = cpuTimeNs(watched[i]);
	}
	if (sw.reported || ago(now, r.t0) < 2ull * threshNow * NSEC_PER_SEC)
		return;
	for (unsigned int i = 0; i < 2 * NR_CPUS; i++) {
		Watched &o = watched[i];
		Seen &os = seen[i];

		if (&o == &w || !o.on.load(std::memory_order_acquire) ||
		    !o.rcu.online.load(std::memory_order_relaxed) || os.qsAt > r.t0)
			continue;
		bool waits = o.depth.load(std::memory_order_relaxed) > 0;

		/* a reader the host did not run is not holding it up yet */
		if (!waits && cpuTimeNs(o) - gpCpuBase[i] < kRanNs)
			continue;
		int nest = o.rcu.nesting.load(std::memory_order_relaxed);

		cpus += fmt::format("{}{}", n++ ? "," : "", o.cpu);
		lines += fmt::format("rcu: \t{}-...: no quiescent state in the {} of this grace "
				     "period{}{}\n", o.cpu, secs(ago(now, r.t0)),
				     o.kworker ? " (its kworker)" : "",
				     nest ? fmt::format("; in an RCU read-side critical section "
							"(nesting {}) entered at {}:{} in {}()",
							nest,
							shortFile(o.rcu.lockFile.load()),
							o.rcu.lockLine.load(),
							bareName(o.rcu.lockFunc.load()))
					  : waits ? "; it waits:" : "");
		if (!nest && waits) {
			for (int k = 0; k < std::min<int>(o.depth.load(), kMaxDepth); k++) {
				WaitRec orr;
				WaitHolder oh;

				if (readWait(o, k, &orr))
					lines += "\n" + describeWait(orr, &oh);
			}
		}
	}
	if (!n)
		return;
	WaitHolder h;
	std::string text = fmt::format("rcu: INFO: rcu_sched detected stalls on CPUs/tasks: "
				       "{{ {} }} (detected by {}, t={} ms)\n", cpus, w.cpu,
				       (ago(now, r.t0)) / 1000000);

	text += lines;
	text += describeWait(r, &h);
	sw.reported = true;
	report(text);
}

/* No wait recorded, in the kernel, running, and no cond_resched() for 2 x thresh. */
void checkUntouched(Watched &w, Seen &sn, u64 now)
{
	unsigned long t = w.touch.load(std::memory_order_relaxed);
	bool inKernel = w.rcu.online.load(std::memory_order_relaxed) &&
			!w.depth.load(std::memory_order_relaxed);
	u64 mine = cpuTimeNs(w);

	if (t != sn.touch || !inKernel || !sn.touchAt) {
		sn.touch = t;
		sn.touchAt = now;
		sn.cpuAtTouch = mine;
		sn.reported = false;
		sn.samples = sn.runnable = 0;
		return;
	}
	if (sn.reported || !handler.load())
		return;
	/* spinning, not blocked on some host lock: runnable at every sample */
	sn.samples++;
	sn.runnable += hostState(w) == 'R';
	if (ago(now, sn.touchAt) < 2ull * threshNow * NSEC_PER_SEC ||
	    mine - sn.cpuAtTouch < kRanNs || sn.samples < 3 || sn.runnable != sn.samples)
		return;

	std::string where = whereIs(w);
	std::string port = portFrame(w);
	std::string text = fmt::format("watchdog: BUG: soft lockup - CPU#{} stuck for {}s! [{}]\n",
				       w.cpu, (ago(now, sn.touchAt)) / NSEC_PER_SEC, threadName(w));

	text += fmt::format("watchdog:   in the kernel with no cond_resched() and no recorded "
			    "wait{}; it ran {} of CPU time\n",
			    port.empty() ? "" : ", in " + port, secs(mine - sn.cpuAtTouch));
	text += where;
	sn.reported = true;
	report(text);
}

} /* namespace */

namespace wd {

void forgetSeen()
{
	for (Seen &s : seen)
		s = Seen{};
}

/* Soft lockups first, then RCU stalls, then hung tasks: the root of a chain is named first. */
void scan()
{
	u64 now = clockNs();

	for (unsigned int i = 0; i < 2 * NR_CPUS; i++) {
		Watched &w = watched[i];
		Seen &sn = seen[i];
		unsigned long qs;

		if (!w.on.load(std::memory_order_acquire))
			continue;
		/* a count first seen is no news: its last quiescent state may be long past */
		qs = w.rcu.qs.load(std::memory_order_relaxed);
		if (!sn.qsSeen) {
			sn.qs = qs;
			sn.qsAt = 1;
			sn.qsSeen = true;
		} else if (qs != sn.qs) {
			sn.qs = qs;
			sn.qsAt = now;
		}
	}
	for (WaitKind pass : {WaitKind::Spin, WaitKind::GracePeriod, WaitKind::Mutex}) {
		for (unsigned int i = 0; i < 2 * NR_CPUS; i++) {
			Watched &w = watched[i];
			Seen &sn = seen[i];

			if (!w.on.load(std::memory_order_acquire))
				continue;
			if (pass == WaitKind::Spin)
				checkUntouched(w, sn, now);
			int depth = std::min<int>(w.depth.load(std::memory_order_acquire),
						  kMaxDepth);

			for (int d = 0; d < depth; d++) {
				WaitRec r;

				if (!readWait(w, d, &r))
					continue;
				if (pass == WaitKind::Spin &&
				    (r.kind == WaitKind::Spin || r.kind == WaitKind::Csd))
					checkSpin(w, sn, d, r, now);
				else if (pass == WaitKind::GracePeriod && r.kind == pass)
					checkGracePeriod(w, sn, d, r, now);
				else if (pass == WaitKind::Mutex && r.kind == pass)
					checkMutex(w, sn, d, r, now);
			}
		}
	}
}

} /* namespace wd */

std::string portFunction(const char *func)
{
	const char *at = portWhere(func);

	return at ? fmt::format("{}(), the port's {}", func, at) : fmt::format("{}()", func);
}

std::string watchdogCpuStates(u64 minNs)
{
	u64 now = clockNs();
	std::string out;

	for (unsigned int i = 0; i < 2 * NR_CPUS; i++) {
		Watched &w = watched[i];
		int depth = std::min<int>(w.depth.load(std::memory_order_acquire), kMaxDepth);
		bool any = false;

		if (!w.on.load(std::memory_order_acquire))
			continue;
		for (int d = 0; d < depth; d++) {
			WaitRec r;
			WaitHolder h;

			if (!readWait(w, d, &r) || ago(now, r.t0) < minNs)
				continue;
			out += fmt::format("watchdog: {} has waited {}:\n", threadName(w),
					   secs(ago(now, r.t0)));
			out += describeWait(r, &h);
			any = true;
		}
		if (!any && w.rcu.online.load(std::memory_order_relaxed) && seen[i].touchAt &&
		    ago(now, seen[i].touchAt) >= std::max<u64>(minNs, NSEC_PER_SEC) &&
		    w.touch.load(std::memory_order_relaxed) == seen[i].touch)
			out += fmt::format("watchdog: {} has passed no cond_resched() for {}, "
					   "and no wait is recorded; {}\n{}", threadName(w),
					   secs(ago(now, seen[i].touchAt)),
					   hostState(w) == 'R' ? "it runs" : "it is blocked",
					   whereIs(w));
	}
	return out;
}

} /* namespace kshim */
