/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CPU identity and SMP cross-calls.
 *
 * CUSTOM: include/linux/smp.h and include/linux/smp_types.h, for
 * kernel/smp.c ported on threads and real-time signals
 * (kernel_shim/kernel/smp.cpp, v7.3). Names, argument order and semantics
 * are the kernel's.
 *
 * A simulated CPU is a thread that boot() made one (CPU 0 is the thread that
 * called boot()); an IPI is a real-time signal to that thread, whose handler
 * is the interrupt entry and flushes the CPU's call_single_queue.
 */
#pragma once

#include <linux/compiler.h>
#include <linux/cpumask.h>
#include <linux/llist.h>
#include <linux/types.h>

namespace kshim {
/*
 * The simulated CPU this thread is, or -1: x86's %gs:cpu_number, one %fs
 * load here. Local-exec TLS (pokelab's code is linked into executables, its
 * libraries static): no TLS wrapper, no GOT load; signal-safe.
 */
extern __thread int tlsCpu __attribute__((tls_model("local-exec")));
[[noreturn]] void notOnCpu(const char *file, int line) noexcept;
} /* namespace kshim */

/*
 * The id of the calling CPU. Async-signal-safe. Calling it from a thread that
 * is not a simulated CPU is a bug: it BUGs with file:line, as the kernel's
 * CONFIG_DEBUG_PREEMPT check would for a context without a CPU.
 */
#define smp_processor_id() ({						\
	int __cpu = kshim::tlsCpu;					\
	if (unlikely(__cpu < 0))					\
		kshim::notOnCpu(__FILE__, __LINE__);			\
	__cpu;								\
})

/* As smp_processor_id(), but returns -1 on a thread that is not a CPU. */
static inline int raw_smp_processor_id(void)
{
	return kshim::tlsCpu;
}

/*
 * Preemption off, and the calling CPU's id; put_cpu() turns it back on.
 * Macros, as the kernel's: linux/preempt.h is expanded where they are used.
 */
#define get_cpu() ({ preempt_disable(); smp_processor_id(); })
#define put_cpu() preempt_enable()

typedef void (*smp_call_func_t)(void *info);
typedef bool (*smp_cond_func_t)(int cpu, void *info);

/* scf_flags of smp_call_function_many_cond() */
/* Port of SCF_WAIT(), kernel/smp.c, v7.3 */
#define SCF_WAIT	(1U << 0)
/* Port of SCF_RUN_LOCAL(), kernel/smp.c, v7.3 */
#define SCF_RUN_LOCAL	(1U << 1)

/*
 * csd flags (include/linux/smp_types.h). The shim queues only ASYNC and
 * SYNC csds: it has no irq_work and no scheduler to queue wake-ups (TTWU).
 */
enum {
	CSD_FLAG_LOCK		= 0x01,
	CSD_TYPE_ASYNC		= 0x00,
	CSD_TYPE_SYNC		= 0x10,
	CSD_TYPE_IRQ_WORK	= 0x20,
	CSD_TYPE_TTWU		= 0x30,
	CSD_FLAG_TYPE_MASK	= 0xF0,
};

/*
 * A call-single-data: one queued cross-call. The layout of
 * include/linux/smp_types.h on x86-64: the list node, the flags, and the
 * sending and target CPUs (CONFIG_64BIT), read by the CSD-lock watchdog.
 * userspace: every member starts at 0 (C++ default member initialisers), so
 * that an initialiser naming some of them, as the kernel's on-stack csd's
 * does, leaves the others 0 without -Wmissing-field-initializers.
 */
struct __call_single_node {
	struct llist_node llist = {};
	unsigned int u_flags = 0;
	u16 src = 0, dst = 0;
};

struct __call_single_data {
	struct __call_single_node node = {};
	smp_call_func_t func = nullptr;
	void *info = nullptr;
};
typedef struct __call_single_data call_single_data_t;

/*
 * Run @func(@info) on the online CPUs of @mask for which @cond_func(cpu,
 * @info) is true (NULL = all), including the calling CPU when SCF_RUN_LOCAL
 * is set; with SCF_WAIT, return only after every remote target has run it.
 * Models kernel/smp.c. Task context on a CPU thread only (WARNs otherwise),
 * with IRQs enabled if it waits; not async-signal-safe.
 * Memory ordering: everything the caller wrote before the call is visible to
 * @func (csd_lock()'s smp_wmb() pairs with the target's llist pop); with
 * SCF_WAIT, everything @func wrote is visible after return (csd_unlock()'s
 * release pairs with csd_lock_wait()'s acquire).
 */
void smp_call_function_many_cond(const struct cpumask *mask, smp_call_func_t func, void *info,
				 unsigned int scf_flags, smp_cond_func_t cond_func);

/*
 * Run @func(@info) on @cpu (locally, IRQs off, if it is the caller); with
 * @wait, return once it has run. 0, or -ENXIO if @cpu is not online. Task
 * context on a CPU thread, IRQs on. A synchronous call uses a csd on the
 * caller's stack; an asynchronous one the target's own csd, which every
 * sender to that target takes in turn (the CSD lock, a compare-and-exchange).
 */
int smp_call_function_single(int cpu, smp_call_func_t func, void *info, bool wait);

void on_each_cpu_cond_mask(smp_cond_func_t cond_func, smp_call_func_t func, void *info, bool wait,
			   const struct cpumask *mask);

/* Run @func(@info) on the online CPUs of @mask but this one; with @wait, once all have. */
void smp_call_function_many(const struct cpumask *mask, smp_call_func_t func, void *info,
			    bool wait);
/* Run @func(@info) on every other online CPU; with @wait, return once all have. */
void smp_call_function(smp_call_func_t func, void *info, int wait);
/*
 * Return once every other online CPU has taken an (empty) IPI: each has
 * left whatever it ran with IRQs off. Task context, IRQs on.
 */
void kick_all_cpus_sync(void);

static inline void on_each_cpu(smp_call_func_t func, void *info, int wait)
{
	on_each_cpu_cond_mask(NULL, func, info, wait, cpu_online_mask);
}

static inline void on_each_cpu_mask(const struct cpumask *mask, smp_call_func_t func, void *info,
				    bool wait)
{
	on_each_cpu_cond_mask(NULL, func, info, wait, mask);
}

static inline void on_each_cpu_cond(smp_cond_func_t cond_func, smp_call_func_t func, void *info,
				    bool wait)
{
	on_each_cpu_cond_mask(cond_func, func, info, wait, cpu_online_mask);
}

/*
 * The IPI handler body: run every CSD queued to this CPU, SYNC ones first.
 * Called from the IPI signal handler with IRQs (soft-)disabled;
 * async-signal-safe as long as the queued functions are.
 */
void generic_smp_call_function_single_interrupt(void);

/*
 * Whether some CSD lock has been held long enough for the watchdog to have
 * reported it, and is still held. Any context; async-signal-safe.
 */
bool csd_lock_is_stuck(void);
