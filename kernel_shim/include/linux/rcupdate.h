/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * RCU on liburcu's QSBR flavour.
 *
 * CUSTOM: include/linux/rcupdate.h, v6.16, on urcu-qsbr. Every CPU thread is
 * a registered QSBR reader from the moment it comes up until it goes
 * offline; a CPU waiting for work (idle) is QSBR-offline, as an idle CPU is
 * an extended quiescent state for the kernel's RCU. A CPU running a task
 * passes a quiescent state only when it says so: rcu_quiescent_state() or
 * cond_resched(), the way a kernel CPU does at a context switch.
 *
 * userspace:
 *  - rcu_read_lock()/rcu_read_unlock() cost a per-thread count (QSBR readers
 *    pay nothing else); they check, as lockdep-RCU does, that the CPU is
 *    watching. A thread inside one passes no quiescent state at
 *    cond_resched() or rcu_quiescent_state(), and one that enters an
 *    extended quiescent state inside one stays online for the grace period
 *    (PREEMPT_RCU's blocked reader), so a leaked rcu_read_lock() holds up
 *    grace periods as in the kernel, and the stall report names where the
 *    reader began (kernel_shim/watchdog.h);
 *  - synchronize_rcu() from a CPU goes QSBR-offline while it waits (urcu
 *    does it), so CPUs may call it from task context;
 *  - call_rcu() callbacks run on liburcu's call_rcu thread, not in softirq
 *    on the CPU that queued them.
 *
 * Async-signal-safety: rcu_read_lock()/unlock(), rcu_dereference(),
 * rcu_assign_pointer() and rcu_is_watching() are; synchronize_rcu(),
 * call_rcu(), rcu_barrier() and the EQS hooks are not (futex waits, the
 * call_rcu queue) and must be called from task context on a CPU thread.
 */
#pragma once

#include <source_location>

#include <urcu/pointer.h>

#include <linux/compiler.h>
#include <linux/kernel.h>

/*
 * userspace: laid out as liburcu's struct rcu_head (a queue link, then the
 * callback), which call_rcu() hands over as is.
 */
struct rcu_head {
	struct rcu_head *next;
	void (*func)(struct rcu_head *head);
};
typedef void (*rcu_callback_t)(struct rcu_head *head);

/* rcu_dereference()/rcu_assign_pointer() are liburcu's (urcu/pointer.h): same semantics. */
#define rcu_dereference_raw(p) rcu_dereference(p)
#define RCU_INIT_POINTER(p, v) CMM_STORE_SHARED(p, v)

/* userspace: @loc, the caller's place, for the stall report */
void rcu_read_lock(const std::source_location &loc = std::source_location::current());
void rcu_read_unlock(void);
/* Wait until every CPU online for RCU has passed a quiescent state. */
void synchronize_rcu(const std::source_location &loc = std::source_location::current());
/* Run @func(@head) after a grace period, on liburcu's call_rcu thread. */
void call_rcu(struct rcu_head *head, rcu_callback_t func);
/* Wait until every callback queued by call_rcu() so far has run. */
void rcu_barrier(void);
/* False while the calling CPU is in an extended quiescent state (RCU offline). */
bool rcu_is_watching(void);

/*
 * The calling CPU passes a quiescent state (it holds no RCU reference).
 * userspace: the kernel's rcu_qs(); exported for loops in CPU tasks.
 */
void rcu_quiescent_state(void);
/*
 * A CPU task's voluntary preemption point: reports a quiescent state.
 * userspace: kernel/sched/core.c's, declared here (the shim has no
 * linux/sched.h); what it does is kernel_shim/kernel/rcu.cpp's.
 */
int __cond_resched(void);

/*
 * Port of cond_resched(), include/linux/sched.h, v7.3 (!CONFIG_PREEMPTION,
 * CONFIG_DEBUG_ATOMIC_SLEEP=y): the might-sleep check, then the preemption
 * point. userspace: no livepatch task switch (klp_sched_try_switch()), so
 * _cond_resched() is __cond_resched().
 */
#define cond_resched() ({					\
	__might_resched(__FILE__, __LINE__, 0);			\
	__cond_resched();					\
})

namespace kshim {
/*
 * Put the calling CPU in / take it out of an RCU extended quiescent state
 * (QSBR offline/online). Context tracking calls them on user/idle entry and
 * exit. Not nestable; a CPU already in the requested state WARNs. Task
 * context on a CPU thread only.
 */
void rcuEqsEnter() noexcept;
void rcuEqsExit() noexcept;
} /* namespace kshim */
