/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What kernel/smp.c shares between its cross-calls and its CSD-lock
 * debugging, which the shim keeps in two files: smp.cpp (the lock, the
 * queues, the flush) and csd_lock.cpp (the watchdog and its parameters).
 * Private to those two.
 */
#pragma once

#ifndef KSHIM_PRIVATE
#error "kernel_shim/kernel/smp_internal.h is private to kernel_shim"
#endif

#include <kernel_shim/clock.h>
#include <linux/atomic.h>
#include <linux/percpu.h>
#include <linux/smp.h>
#include <linux/types.h>

/* Port of CSD_TYPE(), kernel/smp.c, v7.3 */
#define CSD_TYPE(_csd)	((_csd)->node.u_flags & CSD_FLAG_TYPE_MASK)

/* include/vdso/time64.h */
#define NSEC_PER_MSEC	1000000L

/*
 * include/linux/timekeeping.h's ktime_get_mono_fast_ns(): the machine's one
 * clock, CLOCK_MONOTONIC through the vDSO. Async-signal-safe; any thread.
 */
static inline u64 ktime_get_mono_fast_ns(void)
{
	return kshim::clockNs();
}

/*
 * Per CPU: 1 once the CPU has flushed its queue, until a waiter stuck on it
 * claims it (1 -> 0) to dump the CPU's state, once per flush. smp.cpp.
 */
DECLARE_PER_CPU(atomic_t, trigger_backtrace);

/*
 * arch/x86/include/asm/smp.h's IPI senders (smp.cpp). userspace: an IPI is
 * a real-time signal to the CPU's thread, a mask IPI one signal per CPU.
 * Async-signal-safe; no tracepoint, as the kernel's have none.
 */
void arch_send_call_function_single_ipi(int cpu) noexcept;
void arch_send_call_function_ipi_mask(const struct cpumask *mask) noexcept;

/*
 * The csd this CPU is running now, or NULL, for the watchdog's report
 * (csd_lock.cpp). Called by smp.cpp around each callback, in the IPI
 * handler too: async-signal-safe.
 */
void __csd_lock_record(call_single_data_t *csd) noexcept;

/*
 * The watchdog's check, one per spin of a CSD-lock wait (csd_lock.cpp):
 * true once @csd is unlocked; reports a lock held too long. Task context
 * of the waiting CPU (it prints).
 */
bool csd_lock_wait_toolong(call_single_data_t *csd, u64 ts0, u64 *ts1, int *bug_id,
			   unsigned long *nmessages);
