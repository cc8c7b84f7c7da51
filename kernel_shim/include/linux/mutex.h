/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Sleeping locks.
 *
 * CUSTOM: include/linux/mutex.h on std::mutex, with the owner recorded so
 * that lockdep_assert_held() is a real check. Task context only; never from
 * a signal handler. Taking and releasing one is a locked RMW in the kernel
 * (the owner word's cmpxchg), and each is recorded as the full fence it is
 * (kernel_shim/cpu_events.h).
 */
#pragma once

#include <atomic>
#include <mutex>

#include <kernel_shim/cpu_events.h>
#include <linux/bug.h>

struct mutex {
	std::mutex lock;
	std::atomic<const void *> owner{nullptr};
	/*
	 * userspace: called by the owner in mutex_unlock() before it lets go
	 * (text_mutex: take down the text's writable view, text_alias.h).
	 */
	void (*on_release)(void) = nullptr;
};

#define DEFINE_MUTEX(name) struct mutex name

namespace kshim {
const void *currentTask() noexcept;
/* The calling thread's count of struct mutexes held (workqueue.cpp: a task that holds none may lend its CPU). */
void mutexHeldAdd(int n) noexcept;
} /* namespace kshim */

static inline void mutex_lock(struct mutex *m)
{
	m->lock.lock();
	kshim::cpuFenceEvent();
	m->owner.store(kshim::currentTask(), std::memory_order_relaxed);
	kshim::mutexHeldAdd(1);
}

/* userspace: no signals to interrupt the wait, so always 0 */
static inline int mutex_lock_interruptible(struct mutex *m)
{
	mutex_lock(m);
	return 0;
}

static inline void mutex_unlock(struct mutex *m)
{
	WARN_ON_ONCE(m->owner.load(std::memory_order_relaxed) != kshim::currentTask());
	if (m->on_release)
		m->on_release();
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
