// SPDX-License-Identifier: GPL-2.0-only
/*
 * RCU for the simulated CPUs, on liburcu QSBR.
 *
 * Only the QSBR flavour is included here: its symbols would clash with the
 * other flavours' in one translation unit. liburcu's struct rcu_head is
 * renamed while its header is read so that the kernel-named one of
 * <linux/rcupdate.h> can be used below.
 */
#define rcu_head urcu_qsbr_rcu_head
#include <urcu-qsbr.h>
#undef rcu_head
/* liburcu's name mappings, where its header leaves them defined */
#undef rcu_read_lock
#undef rcu_read_unlock
#undef synchronize_rcu
#undef call_rcu
#undef rcu_barrier
#undef rcu_quiescent_state

#include <kernel_shim/watchdog.h>
#include <linux/bug.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <kernel_shim/sched.h>
#include <linux/smp.h>

#define KSHIM_PRIVATE
#include "internal.h"

static_assert(sizeof(struct rcu_head) == sizeof(struct urcu_qsbr_rcu_head));
static_assert(offsetof(struct rcu_head, func) == offsetof(struct urcu_qsbr_rcu_head, func));

namespace {

/* True while the CPU is a registered, online QSBR reader. */
DEFINE_PER_CPU(bool, rcu_watching);
/* True while the CPU is registered at all. */
DEFINE_PER_CPU(bool, rcu_registered);

bool thisCpuWatching()
{
	int cpu = raw_smp_processor_id();

	return cpu >= 0 && __atomic_load_n(per_cpu_ptr(&rcu_watching, cpu), __ATOMIC_RELAXED);
}

void setWatching(bool on)
{
	__atomic_store_n(this_cpu_ptr(&rcu_watching), on, __ATOMIC_RELAXED);
}

/*
 * +1 to a count only this thread (and its signal handlers, which leave it
 * as they found it) writes: a plain load and store, no LOCK-prefixed RMW
 * that would order the reader's accesses as the kernel's do not. Returns
 * the old value.
 */
template <typename T>
T bump(std::atomic<T> *v)
{
	T old = v->load(std::memory_order_relaxed);

	v->store(old + 1, std::memory_order_relaxed);
	return old;
}

/* The stall detector's view of this thread: online for QSBR, and one more quiescent state. */
void watchOnline(bool on)
{
	kshim::WatchRcu *r = kshim::watchRcu();

	if (!r)
		return;
	r->online.store(on, std::memory_order_relaxed);
	bump(&r->qs);
}

/* Inside rcu_read_lock(): no quiescent state may be reported. */
bool readerHeld()
{
	kshim::WatchRcu *r = kshim::watchRcu();

	return r && r->nesting.load(std::memory_order_relaxed);
}

/* A quiescent state of this thread: liburcu's, and the stall detector's count. */
void quiescentState()
{
	kshim::WatchRcu *r = kshim::watchRcu();

	urcu_qsbr_quiescent_state();
	if (r)
		bump(&r->qs);
}

const kshim::WaitSite gpSite = {__FILE__, __LINE__, "synchronize_rcu", "a grace period", ""};

} /* namespace */

void rcu_read_lock(const std::source_location &loc)
{
	kshim::WatchRcu *r = kshim::watchRcu();

	/* As lockdep-RCU's "RCU used illegally from extended quiescent state". */
	WARN_ON_ONCE(!thisCpuWatching());
	/* userspace: the reader's depth and place, for the grace periods it holds up */
	if (r && !bump(&r->nesting)) {
		r->lockFile.store(loc.file_name(), std::memory_order_relaxed);
		r->lockFunc.store(loc.function_name(), std::memory_order_relaxed);
		r->lockLine.store(loc.line(), std::memory_order_relaxed);
	}
	urcu_qsbr_read_lock();
}

void rcu_read_unlock(void)
{
	kshim::WatchRcu *r = kshim::watchRcu();

	urcu_qsbr_read_unlock();
	if (r && !WARN_ON_ONCE(!r->nesting.load(std::memory_order_relaxed)))
		r->nesting.store(r->nesting.load(std::memory_order_relaxed) - 1,
				 std::memory_order_relaxed);
}

void synchronize_rcu(const std::source_location &loc)
{
	/* A sleep: the caller's kworker may run meanwhile (kernel_shim/sched.h). */
	int token = kshim::cpuSleepBegin(false);
	kshim::WatchRcu *r = kshim::watchRcu();
	bool online = r && r->online.load(std::memory_order_relaxed);
	int w = kshim::waitBeginAt(kshim::WaitKind::GracePeriod, loc, gpSite.expr, &gpSite);

	/* liburcu takes a registered online caller offline for the wait. */
	if (online)
		watchOnline(false);
	urcu_qsbr_synchronize_rcu();
	if (online)
		watchOnline(true);
	kshim::waitEnd(w);
	kshim::cpuSleepEnd(token);
}

void call_rcu(struct rcu_head *head, rcu_callback_t func)
{
	/* userspace: same layout and calling convention (static_asserts above) */
	urcu_qsbr_call_rcu(reinterpret_cast<struct urcu_qsbr_rcu_head *>(head),
			   reinterpret_cast<void (*)(struct urcu_qsbr_rcu_head *)>(
				   reinterpret_cast<void *>(func)));
}

void rcu_barrier(void)
{
	urcu_qsbr_barrier();
}

bool rcu_is_watching(void)
{
	return thisCpuWatching();
}

void rcu_quiescent_state(void)
{
	if (WARN_ON_ONCE(!thisCpuWatching()) || readerHeld())
		return;
	quiescentState();
}

/* CUSTOM: kernel/sched/core.c's __cond_resched(), without a scheduler to call */
int __cond_resched(void)
{
	/*
	 * userspace: the quiescent state (none inside rcu_read_lock()), the
	 * host's time slice (kernel_shim/sched.h), and this CPU's kworker if
	 * it has work (a voluntary preemption point, as the kernel's); and the
	 * soft-lockup watchdog's touch.
	 */
	kshim::watchdogTouch();
	if (thisCpuWatching() && !readerHeld())
		quiescentState();
	kshim::schedTick();
	kshim::kworkerYield();
	return 0;
}

namespace kshim {

void rcuEqsEnter() noexcept
{
	WatchRcu *r = watchRcu();

	if (WARN_ON_ONCE(!thisCpuWatching()))
		return;
	setWatching(false);
	/* userspace: a reader held into the EQS stays online: the grace period waits for it */
	if (r && r->nesting.load(std::memory_order_relaxed)) {
		r->heldOnline = true;
		return;
	}
	urcu_qsbr_thread_offline();
	watchOnline(false);
}

void rcuEqsExit() noexcept
{
	int cpu = smp_processor_id();
	WatchRcu *r = watchRcu();

	if (WARN_ON_ONCE(!per_cpu(rcu_registered, cpu) || thisCpuWatching()))
		return;
	if (r && r->heldOnline) {
		r->heldOnline = false;
		setWatching(true);
		return;
	}
	urcu_qsbr_thread_online();
	watchOnline(true);
	setWatching(true);
}

void rcuKworkerStart() noexcept
{
	/* registered and offline: a kworker is a reader only while it holds its CPU */
	urcu_qsbr_register_thread();
	urcu_qsbr_thread_offline();
	watchOnline(false);
}

void rcuKworkerOnline() noexcept
{
	urcu_qsbr_thread_online();
	watchOnline(true);
	setWatching(true);
}

void rcuKworkerOffline() noexcept
{
	setWatching(false);
	urcu_qsbr_thread_offline();
	watchOnline(false);
}

void rcuKworkerStop() noexcept
{
	urcu_qsbr_thread_online();
	urcu_qsbr_unregister_thread();
	watchOnline(false);
}

void rcuCpuStarting() noexcept
{
	urcu_qsbr_register_thread();
	this_cpu_write(rcu_registered, true);
	watchOnline(true);
	setWatching(true);
}

void rcuCpuDying() noexcept
{
	WatchRcu *r = watchRcu();

	/* urcu requires an online thread to unregister */
	if (!thisCpuWatching() && !(r && r->heldOnline))
		urcu_qsbr_thread_online();
	if (r)
		r->heldOnline = false;
	setWatching(false);
	this_cpu_write(rcu_registered, false);
	urcu_qsbr_unregister_thread();
	watchOnline(false);
}

} /* namespace kshim */
