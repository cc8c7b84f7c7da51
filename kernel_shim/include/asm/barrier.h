/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Memory barriers, x86-64.
 *
 * CUSTOM: arch/x86/include/asm/barrier.h on C++ fences.
 *
 * LKMM -> C++ mapping (the one place it is written down; docs/porting.md
 * repeats it):
 *
 *	smp_mb()		atomic_thread_fence(seq_cst)	MFENCE/LOCK-op on x86
 *	smp_rmb()		atomic_thread_fence(acquire)	compiler barrier on x86 (TSO)
 *	smp_wmb()		atomic_thread_fence(release)	compiler barrier on x86 (TSO)
 *	smp_load_acquire()	__atomic_load_n(acquire)
 *	smp_store_release()	__atomic_store_n(release)
 *	smp_mb__before_atomic()	compiler barrier, as on x86, where every RMW is
 *				LOCK-prefixed and fully ordered
 *
 * On x86 smp_rmb()/smp_wmb() only stop the compiler, exactly as in the
 * kernel; the C++ fences say the same thing to the C++ memory model so that
 * the sanitizers and the compiler see the pairing. All of these are
 * async-signal-safe and may be called from any thread.
 *
 * smp_mb() is a full fence, and the machine records it as one on the CPU
 * that executes it (kernel_shim/cpu_events.h), so that the checker can tell
 * a store→load pair with its fence from one without, whatever the host's
 * store buffer did. smp_mb__before/after_atomic() are the compiler barriers
 * they are on x86: the LOCK-prefixed RMW next to them is the fence (and is
 * counted by linux/atomic.h).
 */
#pragma once

#include <atomic>

#include <kernel_shim/cpu_events.h>
#include <linux/compiler.h>

#define smp_mb() do {							\
	std::atomic_thread_fence(std::memory_order_seq_cst);		\
	kshim::cpuFenceEvent();						\
} while (0)
#define smp_rmb() std::atomic_thread_fence(std::memory_order_acquire)
#define smp_wmb() std::atomic_thread_fence(std::memory_order_release)
#define mb() smp_mb()

/*
 * The x86 kernel's smp_mb() as an asm string, for asm code (the entry
 * stubs): a locked add of 0 below the stack pointer, and its count.
 */
#define ASM_SMP_MB "lock addl $0, -4(%rsp)\n\tincq %fs:cpu_fence_events@tpoff\n\t"

#define smp_mb__before_atomic() std::atomic_signal_fence(std::memory_order_seq_cst)
#define smp_mb__after_atomic() std::atomic_signal_fence(std::memory_order_seq_cst)
#define smp_acquire__after_ctrl_dep() smp_rmb()

#define smp_load_acquire(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define smp_store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
