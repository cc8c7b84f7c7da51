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

} /* namespace */

void rcu_read_lock(void)
{
	/* As lockdep-RCU's "RCU used illegally from extended quiescent state". */
	WARN_ON_ONCE(!thisCpuWatching());
	urcu_qsbr_read_lock();
}

void rcu_read_unlock(void)
{
	urcu_qsbr_read_unlock();
}

void synchronize_rcu(void)
{
	/* A sleep: the caller's kworker may run meanwhile (kernel_shim/sched.h). */
	int token = kshim::cpuSleepBegin(false);

	/* liburcu takes a registered online caller offline for the wait. */
	urcu_qsbr_synchronize_rcu();
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
	if (WARN_ON_ONCE(!thisCpuWatching()))
		return;
	urcu_qsbr_quiescent_state();
}

/* CUSTOM: kernel/sched/core.c's __cond_resched(), without a scheduler to call */
int __cond_resched(void)
{
	/*
	 * userspace: the quiescent state, the host's time slice
	 * (kernel_shim/sched.h), and this CPU's kworker if it has work
	 * (a voluntary preemption point, as the kernel's).
	 */
	if (thisCpuWatching())
		urcu_qsbr_quiescent_state();
	kshim::schedTick();
	kshim::kworkerYield();
	return 0;
}

namespace kshim {

void rcuEqsEnter() noexcept
{
	if (WARN_ON_ONCE(!thisCpuWatching()))
		return;
	setWatching(false);
	urcu_qsbr_thread_offline();
}

void rcuEqsExit() noexcept
{
	int cpu = smp_processor_id();

	if (WARN_ON_ONCE(!per_cpu(rcu_registered, cpu) || thisCpuWatching()))
		return;
	urcu_qsbr_thread_online();
	setWatching(true);
}

void rcuKworkerStart() noexcept
{
	/* registered and offline: a kworker is a reader only while it holds its CPU */
	urcu_qsbr_register_thread();
	urcu_qsbr_thread_offline();
}

void rcuKworkerOnline() noexcept
{
	urcu_qsbr_thread_online();
	setWatching(true);
}

void rcuKworkerOffline() noexcept
{
	setWatching(false);
	urcu_qsbr_thread_offline();
}

void rcuKworkerStop() noexcept
{
	urcu_qsbr_thread_online();
	urcu_qsbr_unregister_thread();
}

void rcuCpuStarting() noexcept
{
	urcu_qsbr_register_thread();
	this_cpu_write(rcu_registered, true);
	setWatching(true);
}

void rcuCpuDying() noexcept
{
	/* urcu requires an online thread to unregister */
	if (!thisCpuWatching())
		urcu_qsbr_thread_online();
	setWatching(false);
	this_cpu_write(rcu_registered, false);
	urcu_qsbr_unregister_thread();
}

} /* namespace kshim */
