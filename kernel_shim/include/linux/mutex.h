/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Sleeping locks.
 *
 * CUSTOM: include/linux/mutex.h on std::mutex, with the owner recorded so
 * that lockdep_assert_held() is a real check. Task context only; never from
 * a signal handler. Taking and releasing one is a locked RMW in the kernel
 * (the owner word's cmpxchg), and each is recorded as the full fence it is
 * (kernel_shim/cpu_events.h).
 *
 * userspace: lockdep and the hung-task detector (kernel_shim/watchdog.h)
 * see each lock: DEFINE_MUTEX() names a lock class (a mutex in some other
 * object has none: lockdep does not follow it); mutex_lock() checks the
 * two order rules before it waits, records its wait while blocked, and the
 * owner's CPU and place (its caller's, std::source_location) once it has it.
 */
#pragma once

#include <atomic>
#include <mutex>
#include <source_location>

#include <kernel_shim/cpu_events.h>
#include <kernel_shim/watchdog.h>
#include <linux/bug.h>

struct mutex {
	std::mutex lock{};
	std::atomic<const void *> owner{nullptr};
	/*
	 * userspace: called by the owner in mutex_unlock() before it lets go
	 * (text_mutex: take down the text's writable view, text_alias.h).
	 */
	void (*on_release)(void) = nullptr;
	/* userspace: lockdep's class (DEFINE_MUTEX()'s name) and the reports' owner */
	const char *name = nullptr;
	std::atomic<int> lockdep_class{0};
	std::atomic<int> owner_cpu{-1};
	std::atomic<const char *> owner_file{nullptr};
	std::atomic<const char *> owner_func{nullptr};
	std::atomic<unsigned int> owner_line{0};
	std::atomic<u64> owner_ts{0};
};

#define DEFINE_MUTEX(mutexname) struct mutex mutexname = {.name = #mutexname}

namespace kshim {
const void *currentTask() noexcept;
/* The calling thread's count of struct mutexes held (workqueue.cpp: a task that holds none may lend its CPU). */
void mutexHeldAdd(int n) noexcept;
/* lockdep (kernel_shim/kernel/lockdep.cpp): before the wait, and at the release */
void lockdepAcquire(struct mutex *m, const std::source_location &loc) noexcept;
void lockdepRelease(struct mutex *m) noexcept;
/* The owner's CPU and place, for the reports. */
void mutexOwnerSet(struct mutex *m, const std::source_location &loc) noexcept;
} /* namespace kshim */

static inline void mutex_lock(struct mutex *m,
			      const std::source_location &loc = std::source_location::current())
{
	kshim::lockdepAcquire(m, loc);
	if (!m->lock.try_lock()) {
		int w = kshim::waitBeginAt(kshim::WaitKind::Mutex, loc, m->name, m);

		m->lock.lock();
		kshim::waitEnd(w);
	}
	kshim::cpuFenceEvent();
	m->owner.store(kshim::currentTask(), std::memory_order_relaxed);
	kshim::mutexOwnerSet(m, loc);
	kshim::mutexHeldAdd(1);
}

/* userspace: no signals to interrupt the wait, so always 0 */
static inline int mutex_lock_interruptible(struct mutex *m, const std::source_location &loc =
							       std::source_location::current())
{
	mutex_lock(m, loc);
	return 0;
}

static inline void mutex_unlock(struct mutex *m)
{
	WARN_ON_ONCE(m->owner.load(std::memory_order_relaxed) != kshim::currentTask());
	if (m->on_release)
		m->on_release();
	kshim::lockdepRelease(m);
	m->owner_cpu.store(-1, std::memory_order_relaxed);
	m->owner.store(nullptr, std::memory_order_relaxed);
	kshim::cpuFenceEvent();
	kshim::mutexHeldAdd(-1);
	m->lock.unlock();
}

static inline bool mutex_is_locked(struct mutex *m)
{
	return m->owner.load(std::memory_order_relaxed) != nullptr;
}

#define lockdep_assert_held(m) \
	WARN_ON_ONCE((m)->owner.load(std::memory_order_relaxed) != kshim::currentTask())
