/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Per-CPU variables.
 *
 * CUSTOM: include/linux/percpu*.h. A per-CPU variable is an array of NR_CPUS
 * cache-line-aligned slots indexed by CPU id (the DPDK lcore-variable
 * shape), so two CPUs' copies never share a cache line.
 *
 * per_cpu_ptr() may be called from any thread; this_cpu_*() from a CPU thread
 * (and its signal handlers) only. this_cpu_*() RMWs are one instruction and
 * so atomic against the CPU's own interrupts, not against other CPUs, as in
 * the kernel. All are async-signal-safe.
 */
#pragma once

#include <linux/smp.h>
#include <linux/threads.h>

namespace kshim {
/*
 * x86's this_cpu_off, in the CPU thread's local-exec TLS: the calling CPU's
 * offset into every per-CPU array, cpu * SMP_CACHE_BYTES (a type whose slot
 * spans k lines scales it by k, a constant). this_cpu_ptr() is then one
 * %fs load and an add, as the kernel's "add %gs:this_cpu_off". A thread
 * that is not a simulated CPU holds kNoCpuOff: its this_cpu accesses fault
 * on a non-canonical address (the kernel has no context without a CPU;
 * smp_processor_id() still BUGs with file:line there). Set when a CPU
 * thread comes up and goes down (boot.cpp).
 */
extern __thread unsigned long this_cpu_off __attribute__((tls_model("local-exec")));
constexpr unsigned long kNoCpuOff = 1UL << 56;

template<typename T>
struct PerCpu {
	struct alignas(SMP_CACHE_BYTES) Slot {
		T v;
	};
	static_assert(sizeof(Slot) % SMP_CACHE_BYTES == 0);
	Slot slots_[NR_CPUS];

	T *slot(int cpu) { return &slots_[cpu].v; }
	const T *slot(int cpu) const { return &slots_[cpu].v; }
	/* this_cpu_ptr(): the calling CPU's slot, through this_cpu_off */
	T *thisSlot()
	{
		return (T *)((char *)&slots_[0].v +
			     this_cpu_off * (sizeof(Slot) / SMP_CACHE_BYTES));
	}
	const T *thisSlot() const { return const_cast<PerCpu *>(this)->thisSlot(); }
};
} /* namespace kshim */

#define DEFINE_PER_CPU(type, name) kshim::PerCpu<type> name
#define DECLARE_PER_CPU(type, name) extern kshim::PerCpu<type> name

#define per_cpu_ptr(ptr, cpu) ((ptr)->slot(cpu))
/* Port of this_cpu_ptr() with CONFIG_DEBUG_PREEMPT=n: ptr + this_cpu_off, unchecked */
#define this_cpu_ptr(ptr) ((ptr)->thisSlot())
#define raw_cpu_ptr(ptr) this_cpu_ptr(ptr)
#define per_cpu(var, cpu) (*per_cpu_ptr(&(var), (cpu)))

#define this_cpu_read(var) __atomic_load_n(this_cpu_ptr(&(var)), __ATOMIC_RELAXED)
#define this_cpu_write(var, val) __atomic_store_n(this_cpu_ptr(&(var)), (val), __ATOMIC_RELAXED)
#define this_cpu_add(var, val) \
	((void)__atomic_fetch_add(this_cpu_ptr(&(var)), (val), __ATOMIC_RELAXED))
#define this_cpu_inc(var) this_cpu_add(var, 1)
#define this_cpu_dec(var) this_cpu_add(var, -1)
#define this_cpu_inc_return(var) __atomic_add_fetch(this_cpu_ptr(&(var)), 1, __ATOMIC_SEQ_CST)
