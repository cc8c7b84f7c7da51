/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Work queues: functions run later in task context by a kworker.
 *
 * CUSTOM: the interface of include/linux/workqueue.h that pokelab's ports
 * use, written fresh over the shim's machinery (kernel_shim/kernel/
 * workqueue.cpp, docs/kernel_shim.md "Work queues"):
 *
 *  - one per-CPU ("bound") pool per CPU, as the kernel's system_wq
 *    (system_percpu_wq): schedule_work() queues on the calling CPU's pool,
 *    schedule_work_on() on the one named; each pool has one kworker
 *    thread, "kworker/N:0", that runs its items in order, one at a time;
 *  - a kworker is a host thread of its own, pinned to its CPU's PU, that
 *    runs *as that CPU* (smp_processor_id(), per-CPU data, IPIs) while it
 *    holds the CPU: the CPU's own thread lends it whenever it sleeps (in
 *    idle, cond_resched(), msleep(), cpuWait(), wait queues,
 *    synchronize_rcu(), flush_work()), as the kernel's scheduler switches
 *    to a runnable kworker when the current task sleeps. A CPU whose task
 *    never sleeps never runs its kworker (there is no preemption);
 *  - delayed work arms a timer on the calling CPU, or a housekeeping CPU
 *    if that one is nohz_full (the kernel's add_timer_on() of
 *    __queue_delayed_work()); when it expires the work is queued on that
 *    CPU's pool. Timers run in jiffies (linux/jiffies.h, HZ 1000);
 *  - a work item is non-reentrant: queued while pending it is not queued
 *    again (false); queued while running it runs again after.
 *
 * Memory ordering: everything the queuer wrote before queue_work() is
 * visible to the work function (the pool's lock). flush_work() returns
 * after the function's last run that was queued before the call, and what
 * it wrote is visible to the flusher.
 *
 * Calling context: task context on a CPU or any thread for queueing (the
 * pool's lock is a mutex: never from the IPI or INT3 handlers); the
 * cancel_*_sync() and flush_*() calls sleep and must not be called from
 * the work item itself. shutdown() runs every pending item and fires every
 * pending timer before the CPUs go down.
 */
#pragma once

#include <linux/list.h>
#include <linux/types.h>

struct work_struct;
typedef void (*work_func_t)(struct work_struct *work);

struct work_struct {
	unsigned long data;	/* WORK_STRUCT_PENDING, the pool (CPU + 1) above */
	struct list_head entry;
	work_func_t func;
};

#define WORK_STRUCT_PENDING	1UL
#define WORK_STRUCT_POOL_SHIFT	8
#define WORK_CPU_UNBOUND	(-1)

/* A timer that queues a delayed work item (the shim's, linux/timer.h's role). */
struct timer_list {
	unsigned long expires;	/* jiffies */
	bool armed;		/* on the timer thread's list */
};

struct delayed_work {
	struct work_struct work;
	struct timer_list timer;
	struct workqueue_struct *wq;
	int cpu;		/* the pool the work goes to when the timer fires */
};

/* Per-CPU (bound) or unbound; pokelab's system queues are all per-CPU. */
struct workqueue_struct {
	const char *name;
	unsigned int flags;
};

#define WQ_UNBOUND	(1 << 1)

extern struct workqueue_struct *system_wq;
extern struct workqueue_struct *system_percpu_wq;

#define __WORK_INITIALIZER(n, f) { 0, LIST_HEAD_INIT((n).entry), (f) }
#define __DELAYED_WORK_INITIALIZER(n, f) \
	{ __WORK_INITIALIZER((n).work, (f)), { 0, false }, nullptr, WORK_CPU_UNBOUND }

#define DECLARE_WORK(n, f) struct work_struct n = __WORK_INITIALIZER(n, f)
#define DECLARE_DELAYED_WORK(n, f) struct delayed_work n = __DELAYED_WORK_INITIALIZER(n, f)

static inline void INIT_WORK(struct work_struct *work, work_func_t func)
{
	work->data = 0;
	INIT_LIST_HEAD(&work->entry);
	work->func = func;
}

static inline void INIT_DELAYED_WORK(struct delayed_work *dwork, work_func_t func)
{
	INIT_WORK(&dwork->work, func);
	dwork->timer.expires = 0;
	dwork->timer.armed = false;
	dwork->wq = nullptr;
	dwork->cpu = WORK_CPU_UNBOUND;
}

static inline struct delayed_work *to_delayed_work(struct work_struct *work)
{
	return container_of(work, struct delayed_work, work);
}

/* Queued and not yet started (a relaxed read: a hint, as the kernel's). */
static inline bool work_pending(const struct work_struct *work)
{
	return __atomic_load_n(&work->data, __ATOMIC_RELAXED) & WORK_STRUCT_PENDING;
}

static inline bool delayed_work_pending(const struct delayed_work *dwork)
{
	return work_pending(&dwork->work);
}

/*
 * Queue @work on @cpu's pool (WORK_CPU_UNBOUND: the calling CPU's). False
 * if it was already pending.
 */
bool queue_work_on(int cpu, struct workqueue_struct *wq, struct work_struct *work);
/*
 * Queue @dwork after @delay jiffies (0: now) on @cpu's pool; the timer
 * goes to @cpu, or for WORK_CPU_UNBOUND to the calling CPU (a
 * housekeeping one if it is nohz_full). False if it was already pending.
 */
bool queue_delayed_work_on(int cpu, struct workqueue_struct *wq, struct delayed_work *dwork,
			   unsigned long delay);

static inline bool queue_work(struct workqueue_struct *wq, struct work_struct *work)
{
	return queue_work_on(WORK_CPU_UNBOUND, wq, work);
}

static inline bool queue_delayed_work(struct workqueue_struct *wq, struct delayed_work *dwork,
				      unsigned long delay)
{
	return queue_delayed_work_on(WORK_CPU_UNBOUND, wq, dwork, delay);
}

static inline bool schedule_work(struct work_struct *work)
{
	return queue_work(system_wq, work);
}

static inline bool schedule_work_on(int cpu, struct work_struct *work)
{
	return queue_work_on(cpu, system_wq, work);
}

static inline bool schedule_delayed_work(struct delayed_work *dwork, unsigned long delay)
{
	return queue_delayed_work(system_wq, dwork, delay);
}

static inline bool schedule_delayed_work_on(int cpu, struct delayed_work *dwork,
					    unsigned long delay)
{
	return queue_delayed_work_on(cpu, system_wq, dwork, delay);
}

/*
 * Wait until @work's runs queued before the call have finished. True if
 * it had to wait. Sleeps.
 */
bool flush_work(struct work_struct *work);
/* Fire @dwork's timer now if it is armed, then flush_work(). Sleeps. */
bool flush_delayed_work(struct delayed_work *dwork);
/*
 * Take @work off its queue (and @dwork's timer off) if pending, then wait
 * for a run in progress. True if it was pending. Sleeps.
 */
bool cancel_work_sync(struct work_struct *work);
bool cancel_delayed_work_sync(struct delayed_work *dwork);
/* The same without waiting for a run in progress. Does not sleep. */
bool cancel_delayed_work(struct delayed_work *dwork);

namespace kshim {

/* Work items CPU @cpu's kworker has run since boot. Any thread. */
unsigned long kworkerRuns(int cpu) noexcept;
/* The host thread id of CPU @cpu's kworker (0 before boot). Any thread. */
int kworkerTid(int cpu) noexcept;
/* Is the calling thread a kworker? Any context. */
bool inKworker() noexcept;

} /* namespace kshim */
