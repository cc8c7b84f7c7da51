// SPDX-License-Identifier: GPL-2.0-only
/*
 * SMP cross-calls.
 *
 * Port of kernel/smp.c, v7.3: smp_call_function_many_cond(), the single
 * call (its on-stack csd and the target's shared one), the CSD lock with
 * CONFIG_CSD_LOCK_WAIT_DEBUG built in and off unless csdlock_debug=1, the
 * per-CPU call_single_queue and its flush, and the on_each_cpu*()
 * wrappers. The watchdog the CSD lock's debug waits call is in csd_lock.cpp.
 *
 * Deviations (each marked "userspace:" below):
 *  - IPIs are real-time signals, a "mask IPI" one signal per CPU;
 *  - spin-waits yield the PU now and then, since simulated CPUs may
 *    outnumber PUs;
 *  - no irq_work and no scheduler: only ASYNC and SYNC csds are queued;
 *  - the machine's counters (csds queued and run, IPIs sent) and a torture
 *    delay point sit beside the tracepoints.
 */
#include <cerrno>
#include <memory>
#include <string>

#include <fmt/format.h>

#include <asm/barrier.h>
#include <asm/processor.h>
#include <kernel_shim/boot.h>
#include <kernel_shim/busted.h>
#include <kernel_shim/call_events.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/machine.h>
#include <kernel_shim/sigsafe.h>
#include <kernel_shim/torture.h>
#include <linux/atomic.h>
#include <linux/bug.h>
#include <linux/irqflags.h>
#include <linux/kconfig.h>
#include <linux/kernel.h>
#include <linux/llist.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/smp.h>
#include <trace/events/csd.h>
#include <trace/events/ipi.h>

#define KSHIM_PRIVATE
#include "internal.h"
#include "smp_internal.h"

/*
 * CONFIG_CSD_LOCK_WAIT_DEBUG=y with CONFIG_CSD_LOCK_WAIT_DEBUG_DEFAULT=n, as a
 * distribution kernel that builds the debugging in: off, so a cross-call
 * takes the plain csd_lock() and csd_lock_wait() of a production kernel,
 * until the boot parameter csdlock_debug=1 turns on the watchdog's waits
 * (csd_lock.cpp), the record of the csd each CPU runs and the target's
 * shared csd for asynchronous single calls.
 */
#define CONFIG_CSD_LOCK_WAIT_DEBUG 1

namespace {

/*
 * userspace: the core sits below the jump labels (alternative/), so the key
 * is a plain bool, set by the boot parameter before any CPU but 0 runs and
 * read by static_branch_unlikely(); enable and disable are stores to it.
 */
struct csd_debug_key {
	bool enabled;
};

#define static_branch_unlikely(key) unlikely((key)->enabled)
#define static_branch_enable(key) ((key)->enabled = true)
#define static_branch_disable(key) ((key)->enabled = false)

/* DEFINE_STATIC_KEY_MAYBE(CONFIG_CSD_LOCK_WAIT_DEBUG_DEFAULT, ...), the default n: off */
struct csd_debug_key csdlock_debug_enabled = {false};

/*
 * Port of csdlock_debug(), kernel/smp.c, v7.3: csdlock_debug=N turns the
 * debugging on for N != 0 and off for 0, N as get_option() reads it.
 */
int csdlock_debug(char *str)
{
	int ret;
	unsigned int val = 0;

	ret = get_option(&str, (int *)&val);	/* userspace: C++ cast, the kernel's is implicit */
	if (ret) {
		if (val)
			static_branch_enable(&csdlock_debug_enabled);
		else
			static_branch_disable(&csdlock_debug_enabled);
	}

	return 1;
}

/*
 * __setup("csdlock_debug=", csdlock_debug). userspace: a value with no
 * integer for get_option() (which the kernel ignores, leaving the default)
 * fails the boot with one line, as every bad boot parameter here does.
 */
int setCsdlockDebug(const char *val, std::string &err)
{
	std::string copy = val ? val : "";
	char *probe = copy.data();
	int v;

	if (!val || !get_option(&probe, &v)) {
		err = fmt::format("csdlock_debug{}{}: expected csdlock_debug=0 (off) or "
				  "csdlock_debug=1 (CSD-lock debugging and its watchdog)",
				  val ? "=" : "", val ? val : "");
		return -EINVAL;
	}
	copy = val;
	csdlock_debug(copy.data());
	return 0;
}

kshim::BootParamRegistrar csdlockDebugParam({
	"csdlock_debug", setCsdlockDebug, [] { static_branch_disable(&csdlock_debug_enabled); },
	"csdlock_debug=0|1: CSD-lock debugging and its watchdog (default: 0, off)",
});

/* The machine line says when cross-calls take the debug path. */
int csdlockDebugAttr(std::string &)
{
	if (static_branch_unlikely(&csdlock_debug_enabled))
		kshim::setMachineAttr("csdlock_debug", "on");
	return 0;
}

kshim::BootHookRegistrar csdlockDebugHook({"csdlock_debug", kshim::BootStage::Machine,
					   csdlockDebugAttr});

/* userspace: the machine's count of debug waits (kshim::csdLockDebugWaits()) */
unsigned long nr_csd_debug_waits;

/*
 * userspace: the shim's BUG() aborts, so no oops is ever in progress, and its
 * CPUs come up with interrupts on: printk's oops_in_progress and init/main.c's
 * early_boot_irqs_disabled are always 0 here.
 */
constexpr int oops_in_progress = 0;
constexpr bool early_boot_irqs_disabled = false;

/*
 * userspace: the shim has no task_struct. current is the running task's
 * handle (kshim::currentTask()), which smp_task_ipi_mask() is all it is for.
 */
struct task_struct;
#define current ((struct task_struct *)kshim::currentTask())

/* include/linux/topology.h's cpu_to_node(): the machine is one NUMA node. */
inline int cpu_to_node(int)
{
	return 0;
}

/*
 * include/linux/topology.h's sched_numa_find_nth_cpu() without CONFIG_NUMA:
 * the @cpu'th online CPU of @cpus.
 */
int sched_numa_find_nth_cpu(const struct cpumask *cpus, int cpu, int)
{
	struct cpumask m;

	cpumask_and(&m, cpus, cpu_online_mask);
	return cpumask_nth(cpu, &m);
}

/* include/linux/cpumask.h's: any CPU of both masks but @cpu, or >= nr_cpu_ids. */
inline unsigned int cpumask_any_and_but(const struct cpumask *mask1, const struct cpumask *mask2,
					unsigned int cpu)
{
	unsigned int i;

	i = cpumask_first_and(mask1, mask2);
	if (i != cpu)
		return i;

	return cpumask_next_and(cpu, mask1, mask2);
}

/*
 * try_cmpxchg_acquire() on a plain scalar (include/linux/atomic/), which
 * linux/atomic.h has only for atomic_t: acquire on success, *@oldp updated on
 * failure. A locked RMW on x86, so one fence on the CPU, success or not.
 */
#define try_cmpxchg_acquire(ptr, oldp, new_val) ({					\
	bool __ok = __atomic_compare_exchange_n((ptr), (oldp), (new_val), false,	\
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED);	\
	kshim::cpuFenceEvent();								\
	__ok;										\
})

/*
 * linux/cleanup.h's guard() for include/linux/preempt.h's preempt guard:
 * preemption off from here to the end of the scope.
 */
struct class_preempt_t {
	class_preempt_t() { preempt_disable(); }
	~class_preempt_t() { preempt_enable(); }
	class_preempt_t(const class_preempt_t &) = delete;
	class_preempt_t &operator=(const class_preempt_t &) = delete;
};

#define __guard_id(line) __guard_ ## line
#define __guard_var(line) __guard_id(line)
#define guard(name) class_ ## name ## _t __guard_var(__LINE__) = class_ ## name ## _t

/* Port of struct call_function_data, kernel/smp.c, v7.3 */
struct call_function_data {
	kshim::PerCpu<call_single_data_t> *csd;
	cpumask_var_t cpumask;
	cpumask_var_t cpumask_ipi;
};

DEFINE_PER_CPU(struct call_function_data, cfd_data);

DEFINE_PER_CPU(struct llist_head, call_single_queue);

/* Each CPU's cfd csds (alloc_percpu() in the kernel), one per target. */
std::unique_ptr<kshim::PerCpu<call_single_data_t>[]> cfdCsds;

void __flush_smp_call_function_queue(bool warn_cpu_offline);

/*
 * The kernel's call_function_single_prep_ipi() (kernel/sched/core.c) skips
 * the IPI to an idle CPU that polls TIF_NEED_RESCHED. userspace: a polling
 * idle CPU here waits for a wake-up that the IPI signal itself brings, so the
 * IPI is always sent.
 */
inline bool call_function_single_prep_ipi(int)
{
	return true;
}

/*
 * Port of send_call_function_single_ipi(), kernel/smp.c, v7.3. Always
 * inline, so _RET_IP_ is its caller's return address.
 */
static __always_inline void send_call_function_single_ipi(int cpu)
{
	if (call_function_single_prep_ipi(cpu)) {
		/* userspace: the tracepoint takes the callback as a void * (C++: a cast) */
		trace_ipi_send_cpu(cpu, _RET_IP_,
				   (void *)generic_smp_call_function_single_interrupt);
		/* userspace: the machine's count of ipi_send_cpu events */
		kshim::cpuState(smp_processor_id())
			.ipiSendCpu.fetch_add(1, std::memory_order_relaxed);
		arch_send_call_function_single_ipi(cpu);
	}
}

/* Port of send_call_function_ipi_mask(), kernel/smp.c, v7.3 */
static __always_inline void send_call_function_ipi_mask(struct cpumask *mask)
{
	/* userspace: the tracepoint takes the callback as a void * (C++: a cast) */
	trace_ipi_send_cpumask(mask, _RET_IP_, (void *)generic_smp_call_function_single_interrupt);
	/* userspace: the machine's count of ipi_send_cpumask events */
	kshim::cpuState(smp_processor_id()).ipiSendCpumask.fetch_add(1, std::memory_order_relaxed);
	arch_send_call_function_ipi_mask(mask);
}

/* Port of csd_do_func(), kernel/smp.c, v7.3 */
static __always_inline void csd_do_func(smp_call_func_t func, void *info, call_single_data_t *csd)
{
	trace_csd_function_entry(func, csd);
	/* userspace: the machine's record of cross-calls (kernel_shim/call_events.h) */
	kshim::callFuncBegin((unsigned long)func, csd ? (int)csd->node.src : smp_processor_id());
	func(info);
	trace_csd_function_exit(func, csd);
	kshim::callFuncEnd();	/* userspace: the machine's record of cross-calls */
}

/* Port of csd_lock_record(), kernel/smp.c, v7.3 */
static __always_inline void csd_lock_record(call_single_data_t *csd)
{
	if (static_branch_unlikely(&csdlock_debug_enabled))
		__csd_lock_record(csd);
}

/*
 * Port of __csd_lock_wait(), kernel/smp.c, v7.3: spin on the lock, with the
 * watchdog (csd_lock.cpp) checking each spin.
 */
static void __csd_lock_wait(call_single_data_t *csd)
{
	unsigned long nmessages = 0;
	int bug_id = 0;
	u64 ts0, ts1;
	unsigned int spin = 0;	/* userspace: kshim::spinRelax()'s count */

	guard(preempt)();

	__atomic_fetch_add(&nr_csd_debug_waits, 1, __ATOMIC_RELAXED);	/* userspace: the machine's count */
	ts1 = ts0 = ktime_get_mono_fast_ns();
	for (;;) {
		if (csd_lock_wait_toolong(csd, ts0, &ts1, &bug_id, &nmessages))
			break;
		/* userspace: cpu_relax() that also yields the PU now and then */
		kshim::spinRelax(&spin);
	}
	smp_acquire__after_ctrl_dep();
}

/* Port of csd_lock_wait(), kernel/smp.c, v7.3 */
static __always_inline void csd_lock_wait(call_single_data_t *csd)
{
	if (static_branch_unlikely(&csdlock_debug_enabled)) {
		__csd_lock_wait(csd);
		return;
	}

	smp_cond_load_acquire(&csd->node.u_flags, !(VAL & CSD_FLAG_LOCK));
}

/* Port of csd_lock(), kernel/smp.c, v7.3 */
static __always_inline void csd_lock(call_single_data_t *csd)
{
	if (IS_ENABLED(CONFIG_CSD_LOCK_WAIT_DEBUG) &&
	    static_branch_unlikely(&csdlock_debug_enabled)) {

		for (;;) {
			unsigned int flags;

			__csd_lock_wait(csd);
			flags = READ_ONCE(csd->node.u_flags);

			if (!(flags & CSD_FLAG_LOCK) &&
			    try_cmpxchg_acquire(&csd->node.u_flags, &flags, flags | CSD_FLAG_LOCK))
				break;
		}
	} else {
		csd_lock_wait(csd);
		csd->node.u_flags |= CSD_FLAG_LOCK;
	}

	/*
	 * The flag must be set before func/info are written: the target's
	 * csd_unlock() of a previous use must not be able to clear our LOCK.
	 * Pairs with the smp_store_release() in csd_unlock().
	 */
	smp_wmb();
}

/* Port of csd_unlock(), kernel/smp.c, v7.3 */
static __always_inline void csd_unlock(call_single_data_t *csd)
{
	WARN_ON(!(csd->node.u_flags & CSD_FLAG_LOCK));

	/* Our reads of func/info are done: hand the csd back. Pairs with csd_lock_wait(). */
	smp_store_release(&csd->node.u_flags, 0);
}

DEFINE_PER_CPU(call_single_data_t, csd_data);

/*
 * Port of get_single_csd_data(), kernel/smp.c, v7.3: with the CSD-lock
 * debugging on, an asynchronous single call uses its target's csd, so that
 * every sender to one CPU takes the same lock.
 */
static call_single_data_t *get_single_csd_data(int cpu)
{
	if (static_branch_unlikely(&csdlock_debug_enabled) &&
	    (unsigned int)cpu < nr_cpu_ids)
		return per_cpu_ptr(&csd_data, cpu);
	return this_cpu_ptr(&csd_data);
}

/*
 * Port of __smp_call_single_queue(), kernel/smp.c, v7.3.
 * userspace: __noinline (global in the kernel), so that _RET_IP_ in its
 * tracepoints names the single call that queued the csd.
 */
__noinline void __smp_call_single_queue(int cpu, struct llist_node *node)
{
	if (trace_csd_queue_cpu_enabled()) {
		call_single_data_t *csd;
		smp_call_func_t func;

		csd = container_of(node, call_single_data_t, node.llist);
		/* userspace: no scheduler, so no CSD_TYPE_TTWU for sched_ttwu_pending() */
		func = csd->func;

		trace_call__csd_queue_cpu(cpu, _RET_IP_, func, csd);
	}

	/* userspace: the machine's count of csds queued */
	kshim::cpuState(smp_processor_id()).csdQueued.fetch_add(1, std::memory_order_relaxed);

	/*
	 * A target that takes the csd off its list sees what was written to it
	 * before the push: llist_add() is a fully ordered RMW.
	 */
	if (llist_add(node, &per_cpu(call_single_queue, cpu)))
		send_call_function_single_ipi(cpu);
}

/* Port of generic_exec_single(), kernel/smp.c, v7.3 */
static int generic_exec_single(int cpu, call_single_data_t *csd)
{
	/* Preemption is off: the CPU cannot go offline between the check and the IPI. */
	if (cpu == smp_processor_id()) {
		smp_call_func_t func = csd->func;
		void *info = csd->info;
		unsigned long flags;

		/* Our own csd: unlocked before the call, even a synchronous one's. */
		csd_lock_record(csd);
		csd_unlock(csd);
		local_irq_save(flags);
		csd_do_func(func, info, NULL);
		csd_lock_record(NULL);
		local_irq_restore(flags);
		return 0;
	}

	if ((unsigned)cpu >= nr_cpu_ids || !cpu_online(cpu)) {
		csd_unlock(csd);
		return -ENXIO;
	}

	__smp_call_single_queue(cpu, &csd->node.llist);

	return 0;
}

} /* namespace */

/* Port of generic_smp_call_function_single_interrupt(), kernel/smp.c, v7.3 */
void generic_smp_call_function_single_interrupt(void)
{
	__flush_smp_call_function_queue(true);
}

namespace {

/*
 * Port of __flush_smp_call_function_queue(), kernel/smp.c, v7.3.
 * Runs in the IPI handler (IRQs masked), or as the CPU goes offline:
 * async-signal-safe.
 */
void __flush_smp_call_function_queue(bool warn_cpu_offline)
{
	call_single_data_t *csd, *csd_next;
	struct llist_node *entry, *prev;
	struct llist_head *head;
	static bool warned;
	atomic_t *tbt;

	lockdep_assert_irqs_disabled();

	/* A waiter stuck on this CPU may dump its state again from here on. */
	tbt = this_cpu_ptr(&trigger_backtrace);
	atomic_set_release(tbt, 1);

	head = this_cpu_ptr(&call_single_queue);
	entry = llist_del_all(head);
	entry = llist_reverse_order(entry);

	/* An offline CPU should have nothing queued. */
	if (unlikely(warn_cpu_offline && !cpu_online(smp_processor_id()) &&
		     !warned && entry != NULL)) {
		warned = true;
		/* userspace: signal context: WARN() takes no arguments, the CPU is printed below */
		WARN_ON(1);

		llist_for_each_entry(csd, entry, node.llist) {
			switch (CSD_TYPE(csd)) {
			case CSD_TYPE_ASYNC:
			case CSD_TYPE_SYNC:
			case CSD_TYPE_IRQ_WORK:
				/*
				 * userspace: signal context: SigSafeBuf for pr_warn(),
				 * the address for %pS
				 */
				kshim::SigSafeBuf().str("IPI callback ")
					.hex((unsigned long)csd->func)
					.str(" sent to offline CPU ").dec(smp_processor_id())
					.str("\n").emit();
				break;

			case CSD_TYPE_TTWU:
				/* userspace: signal context: SigSafeBuf for pr_warn() */
				kshim::SigSafeBuf().str("IPI task-wakeup sent to offline CPU\n")
					.emit();
				break;

			default:
				/* userspace: signal context: SigSafeBuf for pr_warn() */
				kshim::SigSafeBuf().str("IPI callback, unknown type ")
					.dec(CSD_TYPE(csd)).str(", sent to offline CPU\n").emit();
				break;
			}
		}
	}

	/* First the SYNC csds, whose senders are spinning on them. */
	prev = NULL;
	llist_for_each_entry_safe(csd, csd_next, entry, node.llist) {
		/* A SYNC csd stays locked until its function has returned. */
		if (CSD_TYPE(csd) == CSD_TYPE_SYNC) {
			smp_call_func_t func = csd->func;
			void *info = csd->info;

			/* userspace: the list's end is NULL, not &NULL->node.llist (UB in C++) */
			if (prev) {
				prev->next = csd_next ? &csd_next->node.llist : NULL;
			} else {
				entry = csd_next ? &csd_next->node.llist : NULL;
			}

			csd_lock_record(csd);
			torture_delay(kshim::TortureDelay::BeforeIpiFunc);	/* userspace */
			csd_do_func(func, info, csd);
			csd_unlock(csd);
			csd_lock_record(NULL);
			/* userspace: the machine's count of csds run */
			kshim::cpuState(smp_processor_id())
				.csdRun.fetch_add(1, std::memory_order_relaxed);
		} else {
			prev = &csd->node.llist;
		}
	}

	if (!entry)
		return;

	/* Then the rest: an ASYNC csd is unlocked first, its sender is not waiting. */
	prev = NULL;
	llist_for_each_entry_safe(csd, csd_next, entry, node.llist) {
		int type = CSD_TYPE(csd);

		if (type != CSD_TYPE_TTWU) {
			/* userspace: the list's end is NULL, not &NULL->node.llist (UB in C++) */
			if (prev) {
				prev->next = csd_next ? &csd_next->node.llist : NULL;
			} else {
				entry = csd_next ? &csd_next->node.llist : NULL;
			}

			if (type == CSD_TYPE_ASYNC) {
				smp_call_func_t func = csd->func;
				void *info = csd->info;

				csd_lock_record(csd);
				csd_unlock(csd);
				csd_do_func(func, info, csd);
				csd_lock_record(NULL);
				/* userspace: the machine's count of csds run */
				kshim::cpuState(smp_processor_id())
					.csdRun.fetch_add(1, std::memory_order_relaxed);
			}
			/* userspace: no irq_work in the shim, so no CSD_TYPE_IRQ_WORK csds */

		} else {
			prev = &csd->node.llist;
		}
	}

	/* What is left are wake-ups (CSD_TYPE_TTWU) for the scheduler. */
	if (entry) {
		/*
		 * userspace: the shim has no scheduler and queues no CSD_TYPE_TTWU
		 * csd, so there is no sched_ttwu_pending() to hand them to
		 */
		WARN_ON_ONCE(1);
	}
}

/* Port of __smp_call_function_single(), kernel/smp.c, v7.3 */
static int __smp_call_function_single(int cpu, smp_call_func_t func,
				      void *info, const struct cpumask *mask,
				      bool wait)
{
	call_single_data_t *csd;
	call_single_data_t csd_stack = {
		.node = { .u_flags = CSD_FLAG_LOCK | CSD_TYPE_SYNC, },
	};
	int this_cpu;
	int err;

	/* Preemption off: the CPU cannot go offline between the online check and the IPI. */
	this_cpu = get_cpu();

	if (mask) {
		/* This CPU if it is in @mask, the cheapest */
		if (!cpumask_test_cpu(this_cpu, mask))
			cpu = sched_numa_find_nth_cpu(mask, 0, cpu_to_node(this_cpu));
		else
			cpu = this_cpu;
	}
	/* userspace: the machine's record of cross-calls (kernel_shim/call_events.h) */
	kshim::callBegin("smp_call_function_single", NULL, cpu, (unsigned long)func, wait, _RET_IP_);

	/*
	 * Waiting with IRQs off can deadlock against a CPU that cross-calls us;
	 * a CPU not yet online cannot be called, so it may.
	 */
	WARN_ON_ONCE(cpu_online(this_cpu) && irqs_disabled()
		     && !oops_in_progress);

	/* Never from an interrupt handler: it may hold the csd we would wait for. */
	WARN_ON_ONCE(!in_task());

	csd = &csd_stack;
	if (!wait) {
		csd = get_single_csd_data(cpu);
		csd_lock(csd);
	}

	csd->func = func;
	csd->info = info;
#ifdef CONFIG_CSD_LOCK_WAIT_DEBUG
	csd->node.src = this_cpu;
	csd->node.dst = cpu;
#endif

	err = generic_exec_single(cpu, csd);

	/* Only the target touches the on-stack csd now: the wait may be preemptible. */
	put_cpu();

	if (wait)
		csd_lock_wait(csd);
	kshim::callEnd();	/* userspace: the machine's record of cross-calls */

	return err;
}

} /* namespace */

/* Port of smp_call_function_single(), kernel/smp.c, v7.3 */
int smp_call_function_single(int cpu, smp_call_func_t func, void *info, bool wait)
{
	return __smp_call_function_single(cpu, func, info, NULL, wait);
}

namespace {

/*
 * Port of smp_task_ipi_mask(), kernel/smp.c, v7.3, without
 * CONFIG_PREEMPTION: the shim runs no other task on a CPU while one waits
 * (preempt_disable() pins nothing; nothing preempts), so the per-CPU mask is
 * the wait mask.
 */
static cpumask_t *smp_task_ipi_mask(struct task_struct *cur __maybe_unused)
{
	return NULL;
}

} /* namespace */

/*
 * Port of smp_call_function_many_cond(), kernel/smp.c, v7.3.
 * userspace: __noinline, so that _RET_IP_ in its tracepoints names its caller
 * (on_each_cpu_cond_mask+0x..) as in the kernel, where it is not inlined.
 */
__noinline void smp_call_function_many_cond(const struct cpumask *mask, smp_call_func_t func,
					    void *info, unsigned int scf_flags,
					    smp_cond_func_t cond_func)
{
	struct cpumask *cpumask, *task_mask;
	bool wait = scf_flags & SCF_WAIT;
	struct call_function_data *cfd;
	int cpu, last_cpu, this_cpu;
	bool run_remote = false;
	int nr_cpus = 0;

	this_cpu = get_cpu();
	/* userspace: the machine's record of cross-calls (kernel_shim/call_events.h) */
	kshim::callBegin("smp_call_function_many_cond", mask, -1, (unsigned long)func, wait, _RET_IP_);
	cfd = this_cpu_ptr(&cfd_data);
	task_mask = smp_task_ipi_mask(current);
	if (task_mask)
		cpumask = task_mask;
	else
		cpumask = cfd->cpumask;

	/*
	 * With IRQs off this can deadlock against a CPU that cross-calls us,
	 * waiting or not (the CSD lock); a CPU not yet online cannot be called.
	 */
	if (cpu_online(this_cpu) && !oops_in_progress &&
	    !early_boot_irqs_disabled)
		lockdep_assert_irqs_enabled();

	/* Cross-calls are made from task context, never from an interrupt handler. */
	WARN_ON_ONCE(!in_task());

	/* Remote work: some online CPU of @mask other than this one. */
	if (cpumask_any_and_but(mask, cpu_online_mask, this_cpu) < nr_cpu_ids) {
		cpumask_and(cpumask, mask, cpu_online_mask);
		__cpumask_clear_cpu(this_cpu, cpumask);

		cpumask_clear(cfd->cpumask_ipi);
		for_each_cpu(cpu, cpumask) {
			call_single_data_t *csd = per_cpu_ptr(cfd->csd, cpu);

			if (cond_func && !cond_func(cpu, info)) {
				kshim::callSkipped(cpu);	/* userspace: the machine's record */
				__cpumask_clear_cpu(cpu, cpumask);
				continue;
			}

			/* Something is queued: there is something to wait for. */
			run_remote = true;

			csd_lock(csd);
			if (wait)
				csd->node.u_flags |= CSD_TYPE_SYNC;
			csd->func = func;
			csd->info = info;
#ifdef CONFIG_CSD_LOCK_WAIT_DEBUG
			csd->node.src = this_cpu;
			csd->node.dst = cpu;
#endif
			/* userspace: the machine's count of csds queued */
			kshim::cpuState(this_cpu).csdQueued.fetch_add(1, std::memory_order_relaxed);
			trace_csd_queue_cpu(cpu, _RET_IP_, func, csd);

			/* Only the csd that finds the queue empty needs an IPI. */
			if (llist_add(&csd->node.llist, &per_cpu(call_single_queue, cpu))) {
				__cpumask_set_cpu(cpu, cfd->cpumask_ipi);
				nr_cpus++;
				last_cpu = cpu;
			}
		}

		/* One target: a single IPI; several: a mask IPI; none if every queue was busy. */
		if (nr_cpus == 1)
			send_call_function_single_ipi(last_cpu);
		else if (likely(nr_cpus > 1))
			send_call_function_ipi_mask(cfd->cpumask_ipi);
	}

	/* Then this CPU, while the others already run theirs. */
	if ((scf_flags & SCF_RUN_LOCAL) && cpumask_test_cpu(this_cpu, mask) &&
	    (!cond_func || cond_func(this_cpu, info))) {
		unsigned long flags;

		local_irq_save(flags);
		csd_do_func(func, info, NULL);
		local_irq_restore(flags);
	}

	/*
	 * Everything is queued and sent. The wait reads the per-CPU mask with
	 * preemption on again: without CONFIG_PREEMPTION no other task can run
	 * here and overwrite it.
	 */
	put_cpu();

	if (run_remote && wait) {
		for_each_cpu(cpu, cpumask) {
			call_single_data_t *csd;

			/* userspace: BUSTED, a wait for the CPUs that got an IPI only */
			if (BUSTED(WAIT_IPI_ONLY) && !cpumask_test_cpu(cpu, cfd->cpumask_ipi))
				continue;
			csd = per_cpu_ptr(cfd->csd, cpu);
			csd_lock_wait(csd);
		}
	}
	kshim::callEnd();	/* userspace: the machine's record of cross-calls */
}

/* Port of on_each_cpu_cond_mask(), kernel/smp.c, v7.3 */
void on_each_cpu_cond_mask(smp_cond_func_t cond_func, smp_call_func_t func, void *info, bool wait,
			   const struct cpumask *mask)
{
	unsigned int scf_flags = SCF_RUN_LOCAL;

	if (wait)
		scf_flags |= SCF_WAIT;

	smp_call_function_many_cond(mask, func, info, scf_flags, cond_func);
	/*
	 * userspace: keeps the call out of tail position, so that _RET_IP_ in the
	 * tracepoints is on_each_cpu_cond_mask+0x.., as in the traces the
	 * isolation census is read against (v6.14's, where the call is followed by
	 * preempt_enable())
	 */
	barrier();
}

/* Port of smp_call_function_many(), kernel/smp.c, v7.3 */
void smp_call_function_many(const struct cpumask *mask,
			    smp_call_func_t func, void *info, bool wait)
{
	smp_call_function_many_cond(mask, func, info, wait * SCF_WAIT, NULL);
}

/* Port of smp_call_function(), kernel/smp.c, v7.3 */
void smp_call_function(smp_call_func_t func, void *info, int wait)
{
	smp_call_function_many_cond(cpu_online_mask, func, info,
				    wait ? SCF_WAIT : 0, NULL);
}

/* Port of do_nothing(), kernel/smp.c, v7.3 */
static void do_nothing(void *unused __maybe_unused)
{
}

/*
 * Port of kick_all_cpus_sync(), kernel/smp.c, v7.3: returns once every other
 * online CPU has taken an IPI, so once each has left any section it ran
 * with IRQs off (the INT3 handler, here the SIGTRAP handler).
 */
void kick_all_cpus_sync(void)
{
	/* The caller's stores are visible before the CPUs are kicked. */
	smp_mb();
	smp_call_function(do_nothing, NULL, !BUSTED(KICK_NO_WAIT));	/* userspace: BUSTED */
}

DEFINE_PER_CPU(atomic_t, trigger_backtrace);

/* arch/x86/include/asm/smp.h's: the IPI is a signal to the CPU's thread. */
void arch_send_call_function_single_ipi(int cpu) noexcept
{
	kshim::sendIpiSignal(cpu);
}

/* arch/x86/include/asm/smp.h's: no broadcast signal exists; one signal per CPU of the mask. */
void arch_send_call_function_ipi_mask(const struct cpumask *mask) noexcept
{
	unsigned int cpu;

	for_each_cpu(cpu, mask)
		kshim::sendIpiSignal(cpu);
}

namespace kshim {

unsigned long csdLockDebugWaits() noexcept
{
	return __atomic_load_n(&nr_csd_debug_waits, __ATOMIC_RELAXED);
}

void smpInit()
{
	unsigned int n = nr_cpu_ids;

	cfdCsds.reset(new PerCpu<call_single_data_t>[n]());
	for (unsigned int cpu = 0; cpu < n; cpu++) {
		struct call_function_data *cfd = per_cpu_ptr(&cfd_data, cpu);

		cfd->csd = &cfdCsds[cpu];
		cpumask_clear(cfd->cpumask);
		cpumask_clear(cfd->cpumask_ipi);
		init_llist_head(per_cpu_ptr(&call_single_queue, cpu));
		*per_cpu_ptr(&csd_data, cpu) = {};
		atomic_set(per_cpu_ptr(&trigger_backtrace, cpu), 1);
	}
	callReset();
}

void flushSmpCallFunctionQueueDying() noexcept
{
	unsigned long flags;

	local_irq_save(flags);
	__flush_smp_call_function_queue(false);
	local_irq_restore(flags);
}

} /* namespace kshim */
