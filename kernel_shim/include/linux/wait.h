/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Wait queues.
 *
 * CUSTOM: include/linux/wait.h's wait_queue_head_t with
 * wait_event_interruptible(), wait_event_interruptible_timeout() and
 * wake_up_all(), on a condition variable and a wake-up count: a waiter
 * reads the count, tests its condition (with no lock of the queue held, as
 * the kernel's prepare_to_wait() loop does), and sleeps only until the
 * count changes, so a wake_up_all() after the condition became true is
 * never missed. A waiting CPU lends itself to its kworker
 * (kshim::cpuSleepBegin(), kernel_shim/sched.h), as a task sleeping in a
 * wait queue lets the kernel's scheduler run one. Nothing
 * interrupts a wait (no signals), so the _interruptible forms never return
 * -ERESTARTSYS. Task context; not async-signal-safe.
 */
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include <kernel_shim/sched.h>
#include <linux/jiffies.h>

struct wait_queue_head {
	std::mutex lock;
	std::condition_variable cv;
	unsigned long wakeups = 0;

	/* Sleep until the next wake_up_all() after @seen, or @ns (0: no limit); false on timeout. */
	bool sleepSince(unsigned long seen, unsigned long long ns)
	{
		int token = kshim::cpuSleepBegin(false);
		bool woken = true;

		{
			std::unique_lock<std::mutex> l(lock);

			if (!ns)
				cv.wait(l, [&] { return wakeups != seen; });
			else
				woken = cv.wait_for(l, std::chrono::nanoseconds(ns),
						    [&] { return wakeups != seen; });
		}
		kshim::cpuSleepEnd(token);
		return woken;
	}

	unsigned long seen()
	{
		std::lock_guard<std::mutex> l(lock);

		return wakeups;
	}
};
typedef struct wait_queue_head wait_queue_head_t;

#define DECLARE_WAIT_QUEUE_HEAD(name) struct wait_queue_head name

static inline void wake_up_all(struct wait_queue_head *wq)
{
	std::lock_guard<std::mutex> l(wq->lock);

	wq->wakeups++;
	wq->cv.notify_all();
}

/* 0 once @cond holds (it is re-tested after every wake-up). */
#define wait_event_interruptible(wq, cond) ({				\
	for (;;) {							\
		unsigned long __seen = (wq).seen();			\
		if (cond)						\
			break;						\
		(wq).sleepSince(__seen, 0);				\
	}								\
	0;								\
})

/*
 * The jiffies left (at least 1) once @cond holds, or 0 if @timeout jiffies
 * passed first with @cond still false.
 */
#define wait_event_interruptible_timeout(wq, cond, timeout) ({		\
	unsigned long __end = jiffies + (timeout);			\
	long __ret = 0;							\
	for (;;) {							\
		unsigned long __seen = (wq).seen();			\
		long __left = (long)(__end - jiffies);			\
		if (cond) {						\
			__ret = __left > 0 ? __left : 1;		\
			break;						\
		}							\
		if (__left <= 0)					\
			break;						\
		(wq).sleepSince(__seen, (unsigned long long)__left * (1000000000ull / HZ));	\
	}								\
	__ret;								\
})
