// SPDX-License-Identifier: GPL-2.0-only
/*
 * SMP cross-calls.
 *
 * Port of kernel/smp.c, v6.16: smp_call_function_many_cond(), the CSD lock,
 * the per-CPU call_single_queue and its flush, and the on_each_cpu*()
 * wrappers.
 *
 * Deviations (each marked "userspace:" below):
 *  - the llist call_single_queue is a liburcu lock-free stack (cds_lfs);
 *  - IPIs are real-time signals, a "mask IPI" one signal per CPU;
 *  - spin-waits yield the PU now and then, since simulated CPUs may
 *    outnumber PUs;
 *  - csd carries its target CPU for reports.
 */
#include <cstdlib>
#include <memory>
#include <vector>

#include <urcu/compiler.h>
#include <urcu/lfstack.h>

#include <asm/barrier.h>
#include <linux/atomic.h>
#include <linux/bug.h>
#include <linux/irqflags.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/smp.h>
#include <kernel_shim/torture.h>
#include <trace/events/csd.h>
#include <trace/events/ipi.h>

#define KSHIM_PRIVATE
#include "internal.h"

namespace {

struct call_function_data {
	call_single_data_t *csd;	/* userspace: one csd per target, indexed by CPU */
	cpumask_var_t cpumask;
	cpumask_var_t cpumask_ipi;
};

DEFINE_PER_CPU(struct call_function_data, cfd_data);
/* userspace: __cds_lfs_stack (no mutex) as the kernel's llist_head */
DEFINE_PER_CPU(struct __cds_lfs_stack, call_single_queue);

std::unique_ptr<call_single_data_t[]> csdStorage;

/*
 * userspace: C++ has no transparent unions, so liburcu's stack pointer union
 * is built by hand.
 */
static inline cds_lfs_stack_ptr_t lfs(struct __cds_lfs_stack *head)
{
	cds_lfs_stack_ptr_t u;

	u._s = head;
	return u;
}

/* Port of llist_add(): true if the list was empty. */
static inline bool llist_add(struct cds_lfs_node *node, struct __cds_lfs_stack *head)
{
	/* cds_lfs_push() returns false when the stack was empty before the push */
	bool was_empty = !cds_lfs_push(lfs(head), node);

	kshim::cpuFenceEvent();	/* its cmpxchg, a locked RMW as llist_add()'s try_cmpxchg() */
	return was_empty;
}

/*
 * Port of __csd_lock_wait(), kernel/smp.c, v6.16 (CONFIG_CSD_LOCK_WAIT_DEBUG
 * always on): spin on the lock, with the watchdog in csd_lock.cpp.
 */
static __always_inline void csd_lock_wait(call_single_data_t *csd)
{
	unsigned long nmessages = 0;
	unsigned int spin = 0;
	int bug_id = 0;
	u64 ts0, ts1;

	ts1 = ts0 = csd_lock_wait_now_ns();
	for (;;) {
		if (csd_lock_wait_toolong(csd, ts0, &ts1, &bug_id, &nmessages))
			break;
		/* userspace: cpu_relax() that also yields the PU now and then */
		kshim::spinRelax(&spin);
	}
	smp_acquire__after_ctrl_dep();
}

/* Port of csd_lock(), kernel/smp.c */
static __always_inline void csd_lock(call_single_data_t *csd)
{
	csd_lock_wait(csd);
	csd->u_flags |= CSD_FLAG_LOCK;

	/*
	 * The flag must be set before func/info are written: the target's
	 * csd_unlock() of a previous use must not be able to clear our LOCK.
	 * Pairs with the smp_store_release() in csd_unlock().
	 */
	smp_wmb();
}

/* Port of csd_unlock(), kernel/smp.c */
static __always_inline void csd_unlock(call_single_data_t *csd)
{
	WARN_ON(!(csd->u_flags & CSD_FLAG_LOCK));

	/* Our reads of func/info are done: hand the csd back. Pairs with csd_lock_wait(). */
	smp_store_release(&csd->u_flags, 0U);
}

/* Port of csd_do_func(), kernel/smp.c, v6.16 */
static __always_inline void csd_do_func(smp_call_func_t func, void *info, call_single_data_t *csd)
{
	trace_csd_function_entry(func, csd);
	func(info);
	trace_csd_function_exit(func, csd);
}

/*
 * Port of send_call_function_single_ipi(), kernel/smp.c, v6.16. Always
 * inline, so _RET_IP_ is smp_call_function_many_cond()'s return address.
 */
static __always_inline void send_call_function_single_ipi(int cpu)
{
	/* userspace: no idle polling, so call_function_single_prep_ipi() is always true */
	trace_ipi_send_cpu(cpu, _RET_IP_, (void *)generic_smp_call_function_single_interrupt);
	kshim::cpuState(smp_processor_id()).ipiSendCpu.fetch_add(1, std::memory_order_relaxed);
	/* userspace: the IPI is a signal to the CPU's thread */
	kshim::sendIpiSignal(cpu);
}

/* Port of send_call_function_ipi_mask(), kernel/smp.c + arch/x86/kernel/smp.c, v6.16 */
static __always_inline void send_call_function_ipi_mask(struct cpumask *mask)
{
	unsigned int cpu;

	trace_ipi_send_cpumask(mask, _RET_IP_, (void *)generic_smp_call_function_single_interrupt);
	kshim::cpuState(smp_processor_id()).ipiSendCpumask.fetch_add(1, std::memory_order_relaxed);
	/* userspace: no broadcast signal exists; one signal per CPU of the mask */
	for_each_cpu(cpu, mask)
		kshim::sendIpiSignal(cpu);
}

/*
 * Port of __flush_smp_call_function_queue(), kernel/smp.c.
 * Runs in the IPI handler (IRQs masked), or as the CPU goes offline.
 */
void __flush_smp_call_function_queue(bool)
{
	struct __cds_lfs_stack *head = this_cpu_ptr(&call_single_queue);
	struct cds_lfs_head *list;
	struct cds_lfs_node *node, *next;
	call_single_data_t *entries[NR_CPUS];
	int nr = 0;

	list = __cds_lfs_pop_all(lfs(head));
	if (!list)
		return;

	/*
	 * The stack gives newest first; reverse into arrival order (llist_reverse_order()).
	 * userspace: into an array on the stack; each sender has at most one
	 * csd queued per target, so there are at most NR_CPUS entries.
	 */
	for (node = &list->node; node; node = next) {
		next = node->next;
		entries[nr++] = caa_container_of(node, call_single_data_t, node);
	}

	kshim::CpuState &c = kshim::cpuState(smp_processor_id());

	/* First the SYNC csds, whose senders are spinning on them. */
	for (int i = nr - 1; i >= 0; i--) {
		call_single_data_t *csd = entries[i];

		if ((csd->u_flags & CSD_FLAG_TYPE_MASK) != CSD_TYPE_SYNC)
			continue;
		smp_call_func_t func = csd->func;
		void *info = csd->info;

		torture_delay(kshim::TortureDelay::BeforeIpiFunc);	/* userspace */
		csd_do_func(func, info, csd);
		csd_unlock(csd);
		c.csdRun.fetch_add(1, std::memory_order_relaxed);
		entries[i] = nullptr;
	}

	/* Then the async ones: unlock first, the sender is not waiting. */
	for (int i = nr - 1; i >= 0; i--) {
		call_single_data_t *csd = entries[i];

		if (!csd)
			continue;
		smp_call_func_t func = csd->func;
		void *info = csd->info;

		csd_unlock(csd);
		csd_do_func(func, info, csd);
		c.csdRun.fetch_add(1, std::memory_order_relaxed);
	}
}

} /* namespace */

/* Port of generic_smp_call_function_single_interrupt(), kernel/smp.c */
void generic_smp_call_function_single_interrupt(void)
{
	__flush_smp_call_function_queue(true);
}

/*
 * Port of smp_call_function_many_cond(), kernel/smp.c, v6.16.
 * userspace: __noinline, so that _RET_IP_ in its tracepoints names its caller
 * (on_each_cpu_cond_mask+0x..) as in the kernel, where it is not inlined.
 */
__noinline void smp_call_function_many_cond(const struct cpumask *mask, smp_call_func_t func,
					    void *info, unsigned int scf_flags,
					    smp_cond_func_t cond_func)
{
	int cpu, last_cpu = -1, this_cpu = smp_processor_id();
	struct call_function_data *cfd;
	bool wait = scf_flags & SCF_WAIT;
	int nr_cpus = 0;
	bool run_remote = false;
	bool run_local = false;

	lockdep_assert_preemption_disabled();

	/*
	 * With IRQs off this can deadlock against a CPU that cross-calls us,
	 * waiting or not (the CSD lock); a CPU not yet online cannot be called.
	 * userspace: no oops_in_progress or early_boot_irqs_disabled to except.
	 */
	if (cpu_online(this_cpu))
		lockdep_assert_irqs_enabled();

	/* Cross-calls are made from task context, never from an interrupt handler. */
	WARN_ON_ONCE(!in_task());

	if ((scf_flags & SCF_RUN_LOCAL) && cpumask_test_cpu(this_cpu, mask) &&
	    (!cond_func || cond_func(this_cpu, info)))
		run_local = true;

	cpu = cpumask_first_and(mask, cpu_online_mask);
	if (cpu == this_cpu)
		cpu = cpumask_next_and(cpu, mask, cpu_online_mask);
	if ((unsigned int)cpu < nr_cpu_ids)
		run_remote = true;

	if (run_remote) {
		cfd = this_cpu_ptr(&cfd_data);
		cpumask_and(cfd->cpumask, mask, cpu_online_mask);
		__cpumask_clear_cpu(this_cpu, cfd->cpumask);

		cpumask_clear(cfd->cpumask_ipi);
		for_each_cpu(cpu, cfd->cpumask) {
			call_single_data_t *csd = &cfd->csd[cpu];

			if (cond_func && !cond_func(cpu, info)) {
				__cpumask_clear_cpu(cpu, cfd->cpumask);
				continue;
			}

			csd_lock(csd);
			if (wait)
				csd->u_flags |= CSD_TYPE_SYNC;
			csd->func = func;
			csd->info = info;
			csd->dst = cpu;
			kshim::cpuState(this_cpu).csdQueued.fetch_add(1, std::memory_order_relaxed);
			trace_csd_queue_cpu(cpu, _RET_IP_, func, csd);
			if (llist_add(&csd->node, per_cpu_ptr(&call_single_queue, cpu))) {
				__cpumask_set_cpu(cpu, cfd->cpumask_ipi);
				nr_cpus++;
				last_cpu = cpu;
			}
		}

		/* One target gets a single IPI, several a mask IPI; none if all queues were busy. */
		if (nr_cpus == 1)
			send_call_function_single_ipi(last_cpu);
		else if (likely(nr_cpus > 1))
			send_call_function_ipi_mask(cfd->cpumask_ipi);
	}

	if (run_local) {
		unsigned long flags;

		local_irq_save(flags);
		csd_do_func(func, info, NULL);
		local_irq_restore(flags);
	}

	if (run_remote && wait) {
		for_each_cpu(cpu, cfd->cpumask) {
			call_single_data_t *csd = &cfd->csd[cpu];

			csd_lock_wait(csd);
		}
	}
}

/* Port of smp_call_function_single(), kernel/smp.c (synchronous form) */
int smp_call_function_single(int cpu, smp_call_func_t func, void *info, int wait)
{
	struct cpumask mask;

	if ((unsigned int)cpu >= nr_cpu_ids || !cpu_online(cpu))
		return -ENXIO;

	/* userspace: goes through the many_cond path with a one-CPU mask */
	cpumask_clear(&mask);
	__cpumask_set_cpu(cpu, &mask);
	preempt_disable();	/* get_cpu() */
	smp_call_function_many_cond(&mask, func, info, SCF_RUN_LOCAL | (wait ? SCF_WAIT : 0), NULL);
	preempt_enable();	/* put_cpu() */
	return 0;
}

/* Port of on_each_cpu_cond_mask(), kernel/smp.c */
void on_each_cpu_cond_mask(smp_cond_func_t cond_func, smp_call_func_t func, void *info, bool wait,
			   const struct cpumask *mask)
{
	unsigned int scf_flags = SCF_RUN_LOCAL;

	if (wait)
		scf_flags |= SCF_WAIT;

	/*
	 * userspace: a CPU thread never migrates, so this pins nothing; it keeps
	 * the count, and the call out of tail position, so that _RET_IP_ in the
	 * tracepoints is on_each_cpu_cond_mask+0x.. as in the kernel.
	 */
	preempt_disable();
	smp_call_function_many_cond(mask, func, info, scf_flags, cond_func);
	preempt_enable();
}

namespace kshim {

void smpInit()
{
	unsigned int n = nr_cpu_ids;

	csdStorage.reset(new call_single_data_t[(size_t)n * n]());
	for (unsigned int cpu = 0; cpu < n; cpu++) {
		struct call_function_data *cfd = per_cpu_ptr(&cfd_data, cpu);

		cfd->csd = &csdStorage[(size_t)cpu * n];
		cpumask_clear(cfd->cpumask);
		cpumask_clear(cfd->cpumask_ipi);
		__cds_lfs_init(per_cpu_ptr(&call_single_queue, cpu));
		for (unsigned int t = 0; t < n; t++)
			cds_lfs_node_init(&cfd->csd[t].node);
	}
}

void flushSmpCallFunctionQueueDying() noexcept
{
	unsigned long flags;

	local_irq_save(flags);
	__flush_smp_call_function_queue(false);
	local_irq_restore(flags);
}

} /* namespace kshim */
