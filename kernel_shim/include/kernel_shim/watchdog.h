/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The lockup detectors (kernel_shim/kernel/watchdog.cpp and watchdog_checks.cpp, lockdep.cpp and
 * rcu.cpp; docs/testing.md, "Lockup detectors").
 *
 * CUSTOM: kernel/watchdog.c's soft-lockup detector, kernel/hung_task.c,
 * RCU's CPU stall warnings and lockdep's two order rules, in the kernel's
 * words, for a machine whose CPUs are host threads. A watchdog thread (not
 * a CPU, not a signal handler) samples every CPU thread and kworker twice
 * a second. What it trusts:
 *
 *  - progress, not time alone: a CPU counts as stuck in a wait only when it
 *    spun (its thread's CPU time grew) and the side it waits for ran too
 *    (the holder's CPU time grew) and still did not let go; a CPU whose
 *    holder is not scheduled (many CPUs on few PUs) is only slow;
 *  - the waits say what they wait on: smp_cond_load_*() and
 *    atomic_cond_read_*() record their call site, the word and the condition
 *    (a WaitSite) while they spin; mutex_lock() its lock; synchronize_rcu()
 *    its grace period; the CSD-lock watchdog's spin its csd. The report
 *    names the wait's holder through the namers the rooms register (the INT3
 *    refs: the CPU whose count is up and where its handler took it);
 *  - a CPU in kernel code that passes no cond_resched() for the threshold
 *    while its thread runs is stuck even with no wait recorded: the watchdog
 *    asks it (SIGRTMIN + 3) where it is.
 *
 * watchdog_thresh=SECONDS (the kernel's parameter; default 5, half the
 * kernel's 10, for runs of tens of seconds; 0 turns the detectors off, as
 * nowatchdog does): a soft lockup, a hung task and an RCU stall are each
 * reported after 2 x watchdog_thresh. A report goes to the handler set with
 * setLockupHandler() (torture: a FAILURE of the run) or, with none, to
 * stderr, as printk.
 */
#pragma once

#include <atomic>
#include <source_location>
#include <string>

#include <linux/types.h>

namespace kshim {

/* Where a wait is, and what it waits for: constant data at the wait's call site. */
struct WaitSite {
	const char *file;	/* __FILE__ */
	unsigned int line;
	const char *func;	/* __func__: the port function */
	const char *expr;	/* the word waited on, as written ("refs") */
	const char *cond;	/* the condition that ends the wait ("!VAL") */
};

enum class WaitKind : unsigned char {
	Spin,		/* smp_cond_load_*(): spins on a word */
	Mutex,		/* mutex_lock(): blocked on a struct mutex */
	GracePeriod,	/* synchronize_rcu(): blocked until a grace period ends */
	Csd,		/* the CSD-lock watchdog's spin on a csd (csdlock_debug) */
};

/*
 * Record a wait of the calling thread: @addr (its word, @size bytes) at
 * @site, from now on. Returns the record's depth (for waitEnd()), or -1 on a
 * thread the watchdog does not watch. Async-signal-safe: a wait in a signal
 * handler nests above the one it interrupted. waitBeginAt() copies @loc's
 * place (a mutex_lock()'s caller).
 */
int waitBegin(WaitKind kind, const WaitSite *site, const volatile void *addr,
	      unsigned int size) noexcept;
int waitBeginAt(WaitKind kind, const std::source_location &loc, const char *expr,
		const volatile void *addr) noexcept;
void waitEnd(int depth) noexcept;

/* The RAII form the spin macros use (linux/atomic.h). */
class SpinWait
{
public:
	SpinWait(const WaitSite *site, const volatile void *addr, unsigned int size) noexcept
		: depth_(waitBegin(WaitKind::Spin, site, addr, size))
	{
	}
	~SpinWait() { waitEnd(depth_); }
	SpinWait(const SpinWait &) = delete;
	SpinWait &operator=(const SpinWait &) = delete;

private:
	int depth_;
};

/*
 * A point of progress of the calling CPU thread, as the kernel's scheduler
 * touching the watchdog: cond_resched(), the idle loop, a finished task.
 * Async-signal-safe; nothing on a thread that is not watched.
 */
void watchdogTouch() noexcept;

/*
 * The watched threads: a CPU's own thread (@kworker false; the boot thread
 * for CPU 0) and its kworker. Called by the thread itself as it starts and
 * stops being that CPU's (boot.cpp, workqueue.cpp).
 */
void watchdogThreadStart(int cpu, bool kworker) noexcept;
void watchdogThreadStop() noexcept;

/*
 * What a wait's word is, and who holds it up: a namer a room registers
 * (the INT3 refs, the csd lock). It fills @holder with the CPU that must
 * let go (-1: unknown) and returns a description of the word (empty: not
 * its word). Called on the watchdog thread; may allocate. @func is the
 * waiting function (WaitSite::func), @addr the word.
 */
struct WaitHolder {
	int cpu = -1;
	std::string what;	/* "text_poke_array_refs of CPU#3" */
	std::string detail;	/* "its INT3 handler took it at ..." */
};
using WaitNamer = bool (*)(const char *func, const volatile void *addr, WaitHolder *holder);
void registerWaitNamer(WaitNamer namer);

struct WaitNamerRegistrar {
	explicit WaitNamerRegistrar(WaitNamer namer) { registerWaitNamer(namer); }
};

/*
 * Where a report goes: @fn (called on the watchdog thread or the thread
 * that found it, task context) gets the whole report, one or more lines
 * with a "watchdog:", "INFO:", "rcu:", "lockdep:" or "csd:" prefix. nullptr:
 * stderr. Set before boot or while the machine runs.
 */
using LockupHandler = void (*)(const std::string &report);
void setLockupHandler(LockupHandler fn) noexcept;

/* Hand a report over (lockdep, the detectors): to the handler, or stderr. */
void lockupReport(const std::string &report);
/* Only to the handler, for a report already printed its own way (the CSD-lock watchdog's). */
void lockupReportFatal(const std::string &report);

/* Reports made since boot. Any thread. */
unsigned long lockupReports() noexcept;

/* watchdog_thresh, in seconds (0: off). */
unsigned int watchdogThresh() noexcept;

/*
 * One line per CPU that is waiting or has not touched the watchdog for
 * @minNs: what it does now and what it waits on (the reports' words). For a
 * run that is stopped or overran its time. Task context, not a CPU's.
 */
std::string watchdogCpuStates(u64 minNs);

/* Name a kernel function's port definition: "name() at FILE:LINE" or "name()". */
std::string portFunction(const char *func);

} /* namespace kshim */
