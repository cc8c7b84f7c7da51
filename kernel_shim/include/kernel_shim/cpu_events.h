/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What each simulated CPU executed that matters to cross-modifying code and
 * to memory ordering: the hardware's side of the checker's rules, kept by
 * the machine and read by the checker (kernel_shim/xmc/).
 *
 * Two records, both made by the CPU that executes the instruction:
 *
 *  - Serialisations. Every serialising instruction (SERIALIZE, IRET-to-self,
 *    CPUID in asm/sync_core.h; the return from an IPI or INT3 handler under
 *    pokelab.eret=serialising; the stand-ins for MOV to CR3) records how
 *    many text writes it covers: textWriteSeq, read (acquire) before the
 *    instruction, becomes the CPU's @serial after it. textWriteSeq itself
 *    is advanced by the checker's text-write feed once each write is in
 *    memory.
 *  - Full fences. Every instruction x86-TSO lets no later load pass an
 *    earlier store across (smp_mb()'s MFENCE or locked add, every locked
 *    read-modify-write of the kernel's atomics, a serialising instruction)
 *    adds one to the CPU's fence count, cpu_fence_events. A protocol's store
 *    that a later load must not pass records the count (cpuFenceStore());
 *    the load's check (the checker's xmcFenceCheck()) finds whether a fence
 *    came between, on that CPU, whatever the host's store buffer did.
 *
 * Neither record adds ordering of its own: the fence count is a thread-local
 * counter bumped by one unlocked instruction, the serialisation record is
 * written by its CPU with an unlocked compare-and-exchange (one instruction,
 * so a signal handler that interrupts it cannot be lost; no LOCK prefix, so
 * it is not a fence). Only the kernel's own fences count: the machine's and
 * pokelab's instrumentation (statistics, the checker, torture) use atomics of
 * their own that do not. Module objects are built without the counting
 * (POKELAB_MODULE_BUILD: their relocations cannot reach TLS).
 *
 * Nothing here calls up: the one call out, a check the checker owes a CPU at
 * its next IRQ enable, goes through irqsOnHook, which the checker installs.
 * All inline functions here are call-free (but cpuIrqsOn()'s hook),
 * async-signal-safe and usable from noinstr code; they act on the calling
 * thread's CPU.
 */
#pragma once

#include <linux/compiler.h>
#include <linux/threads.h>
#include <linux/types.h>

/*
 * The calling thread's count of full fences (local-exec TLS, so that the
 * asm entry stub can bump it with one %fs-relative instruction).
 */
extern "C" __thread unsigned long cpu_fence_events __attribute__((tls_model("local-exec")));

namespace kshim {

/* The simulated CPU this thread is, or -1 (linux/smp.h). */
extern __thread int tlsCpu __attribute__((tls_model("local-exec")));

struct alignas(SMP_CACHE_BYTES) CpuEvents {
	/*
	 * Write sequence number at this CPU's last serialisation: every text
	 * write numbered <= serial is visible to its instruction fetch. Written
	 * by the CPU only (cpuSerialised()); the checker keeps what it forgives
	 * and what membarrier covers in records of its own.
	 */
	u64 serial;
	u64 serialCount;	/* serialising instructions executed on this CPU */
	/* The checker owes this CPU a check at its next IRQ enable (irqsOnHook). */
	u8 irqsOnCall;
};

extern CpuEvents cpuEvents[NR_CPUS];

/*
 * A CPU's last few events that matter to why it did or did not serialise,
 * for the checker's reports ("CPU 2's last events: ..."): its
 * serialisations, its EQS entries and first instrumentable fetches after
 * them, the cross-call functions it began and ended, the INT3 refs its
 * handler took from zero or put to zero. A ring of 8 per CPU, filled by the CPU itself in
 * any context: the slot is claimed with one unlocked XADD (whole under a
 * signal handler on the same CPU, not a fence), and stamped last, so a
 * reader on another thread skips a slot being filled. Diagnostics only:
 * no rule reads it.
 */
enum CpuRecentKind : u8 {
	CPU_EV_NONE,
	CPU_EV_SERIALISE,	/* arg: the write sequence it covers */
	CPU_EV_EQS_ENTER,	/* left the kernel for user mode or idle */
	CPU_EV_KERNEL_ENTRY,	/* arg: where it first fetched instrumentable text after an EQS */
	CPU_EV_FUNC_BEGIN,	/* arg: a cross-call's function; arg2: its sender */
	CPU_EV_FUNC_END,	/* arg: that function; arg2: its sender */
	CPU_EV_REF_GET,		/* arg: the INT3 refs count after a take from zero (1) */
	CPU_EV_REF_PUT,		/* arg: the count after a put that left it at 0 or less */
};

struct CpuRecentEvent {
	u64 stamp;		/* index + 1 once filled; 0 while being filled */
	u64 seq;		/* textWriteSeq when it happened */
	unsigned long arg;
	u32 arg2;
	u8 kind;
};

constexpr unsigned int kCpuRecent = 8;

struct alignas(SMP_CACHE_BYTES) CpuRecent {
	u64 head;
	CpuRecentEvent ev[kCpuRecent];
};

extern CpuRecent cpuRecent[NR_CPUS];
/* Text writes in memory so far; published (release) after each write is in memory. */
extern u64 textWriteSeq;
/* pokelab.eret=serialising: the return from an IPI or INT3 handler serialises. */
extern bool eretSerialises;
/* Called by cpuIrqsOn() when irqsOnCall is set: installed by the checker. Task context. */
extern void (*irqsOnHook)(int cpu) noexcept;

/*
 * One full fence executed on the calling CPU (the kernel's). One unlocked
 * increment of thread-local memory: not itself a fence, and whole even
 * under a signal handler that does the same.
 */
static __always_inline void cpuFenceEvent(void)
{
#ifndef POKELAB_MODULE_BUILD
	asm volatile("incq %%fs:cpu_fence_events@tpoff" : : : "memory");
#endif
}

/*
 * The store→load pairs the checker watches (xmcFenceCheck()): the store a
 * protocol makes, and, by its check, the load that must not pass it.
 */
enum CpuFencePair {
	/* entry stub: kernel_cr3_loaded = 1 -> the kernel TLB flush's page-table reads */
	FENCE_PAIR_CR3_LOADED,
	/* a kernel range's page tables changed -> the flusher's read of kernel_cr3_loaded */
	FENCE_PAIR_PT_CHANGE,
	/* a text write -> the patcher's read of a CPU's kernel_cr3_loaded (v8) */
	FENCE_PAIR_TEXT_WRITE,
	FENCE_PAIR_NR,
};

/* Per pair: cpu_fence_events + 1 at the pair's last store on this thread (0: none yet). */
extern "C" __thread unsigned long cpu_fence_mark[FENCE_PAIR_NR]
	__attribute__((tls_model("local-exec")));

/* The calling CPU made @pair's store. Plain thread-local stores; not a fence. */
static __always_inline void cpuFenceStore(enum CpuFencePair pair)
{
#ifndef POKELAB_MODULE_BUILD
	cpu_fence_mark[pair] = cpu_fence_events + 1;
#endif
}

/* Has a full fence come on this CPU since @pair's last store (or was there none)? */
static __always_inline bool cpuFencedSince(enum CpuFencePair pair)
{
#ifndef POKELAB_MODULE_BUILD
	unsigned long m = cpu_fence_mark[pair];

	return !m || cpu_fence_events >= m;
#else
	return true;
#endif
}

/*
 * Serialising instruction, first half: the write sequence the instruction
 * will cover, read (acquire) before it executes.
 */
static __always_inline u64 cpuSerialiseBegin(void)
{
	return __atomic_load_n(&textWriteSeq, __ATOMIC_ACQUIRE);
}

/*
 * *@p = max(*@p, @v) for a word only the calling thread writes (and its
 * signal handlers): CMPXCHG without LOCK, one instruction, so a handler
 * that raises the word in between makes it fail and retry; not a fence.
 */
static __always_inline void cpuRaiseOwn(u64 *p, u64 v)
{
	u64 cur = __atomic_load_n(p, __ATOMIC_RELAXED);

	while (cur < v) {
		u64 seen = cur;

		asm volatile("cmpxchgq %2, %1"
			     : "+a"(seen), "+m"(*p)
			     : "r"(v)
			     : "cc", "memory");
		if (seen == cur)
			break;
		cur = seen;
	}
}

/* ++*@p for a word only the calling thread writes: one unlocked instruction. */
static __always_inline void cpuCountOwn(u64 *p)
{
	asm volatile("incq %0" : "+m"(*p) : : "cc");
}

/* Record @kind on the calling CPU's ring of recent events. Call-free, any context. */
static __always_inline void cpuRecentEvent(u8 kind, unsigned long arg, u32 arg2)
{
	int cpu = tlsCpu;
	CpuRecentEvent *e;
	u64 idx = 1;

	if (cpu < 0)
		return;
	asm volatile("xaddq %0, %1" : "+r"(idx), "+m"(cpuRecent[cpu].head) : : "cc", "memory");
	e = &cpuRecent[cpu].ev[idx % kCpuRecent];
	__atomic_store_n(&e->stamp, 0, __ATOMIC_RELAXED);
	e->seq = __atomic_load_n(&textWriteSeq, __ATOMIC_RELAXED);
	e->arg = arg;
	e->arg2 = arg2;
	e->kind = kind;
	__atomic_store_n(&e->stamp, idx + 1, __ATOMIC_RELEASE);
}

/*
 * Serialising instruction, second half: record on the calling CPU that it
 * has serialised against every write up to @seq. A serialising instruction
 * is a full fence too.
 */
static __always_inline void cpuSerialised(u64 seq)
{
	int cpu = tlsCpu;

	cpuFenceEvent();
	if (cpu >= 0) {
		cpuRaiseOwn(&cpuEvents[cpu].serial, seq);
		cpuCountOwn(&cpuEvents[cpu].serialCount);
		cpuRecentEvent(CPU_EV_SERIALISE, seq, 0);
	}
}

/* The return from an IPI or INT3 handler (IRET): serialises under pokelab.eret=serialising. */
static __always_inline void cpuEret(void)
{
	if (eretSerialises)
		cpuSerialised(cpuSerialiseBegin());
}

/* local_irq_restore() that enables IRQs: the checker's owed check. Inline test, then a call. */
static __always_inline void cpuIrqsOn(int cpu)
{
	if (unlikely(__atomic_load_n(&cpuEvents[cpu].irqsOnCall, __ATOMIC_RELAXED)))
		irqsOnHook(cpu);
}

} /* namespace kshim */
