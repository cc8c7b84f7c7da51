/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What each simulated CPU's instruction stream has been serialised
 * against: the hardware's side of the cross-modifying-code rules, kept by
 * the machine and read by the checker (kernel_shim/xmc/).
 *
 * The machine records, on the CPU that executes it, every serialising
 * instruction (SERIALIZE, IRET-to-self, CPUID in asm/sync_core.h; the
 * return from an IPI or INT3 handler under pokelab.eret=serialising) as
 * the number of text writes it covers: textWriteSeq, read (acquire) before
 * the instruction, becomes the CPU's @serial after it. textWriteSeq itself
 * is advanced by whoever records text writes (the checker's text-write
 * feed), once each write is in memory. Nothing here calls up: the one
 * call out, a check the checker owes a CPU at its next IRQ enable, goes
 * through irqsOnHook, which the checker installs.
 *
 * All inline functions here are call-free (but cpuIrqsOn()'s hook),
 * async-signal-safe and usable from noinstr code; they act on the calling
 * thread's CPU, and do nothing on a thread that is not a CPU.
 */
#pragma once

#include <linux/compiler.h>
#include <linux/threads.h>
#include <linux/types.h>

namespace kshim {

/* The simulated CPU this thread is, or -1 (linux/smp.h). */
extern __thread int tlsCpu __attribute__((tls_model("local-exec")));

struct alignas(SMP_CACHE_BYTES) CpuEvents {
	/*
	 * Write sequence number at this CPU's last serialisation: every text
	 * write numbered <= serial is visible to its instruction fetch.
	 * Raised with a CAS max (the CPU itself, membarrier's caller for the
	 * others, and the checker when it forgives a reported CPU).
	 */
	u64 serial;
	u64 serialCount;	/* serialising instructions executed on this CPU */
	/* The checker owes this CPU a check at its next IRQ enable (irqsOnHook). */
	u8 irqsOnCall;
};

extern CpuEvents cpuEvents[NR_CPUS];
/* Text writes in memory so far; published (release) after each write is in memory. */
extern u64 textWriteSeq;
/* pokelab.eret=serialising: the return from an IPI or INT3 handler serialises. */
extern bool eretSerialises;
/* Called by cpuIrqsOn() when irqsOnCall is set: installed by the checker. Task context. */
extern void (*irqsOnHook)(int cpu) noexcept;

/*
 * Serialising instruction, first half: the write sequence the instruction
 * will cover, read (acquire) before it executes.
 */
static __always_inline u64 cpuSerialiseBegin(void)
{
	return __atomic_load_n(&textWriteSeq, __ATOMIC_ACQUIRE);
}

static __always_inline void cpuRaiseSerial(CpuEvents *c, u64 seq)
{
	u64 cur = __atomic_load_n(&c->serial, __ATOMIC_RELAXED);

	while (cur < seq && !__atomic_compare_exchange_n(&c->serial, &cur, seq, true,
							 __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

/*
 * Serialising instruction, second half: record on the calling CPU that it
 * has serialised against every write up to @seq.
 */
static __always_inline void cpuSerialised(u64 seq)
{
	int cpu = tlsCpu;

	if (cpu >= 0) {
		cpuRaiseSerial(&cpuEvents[cpu], seq);
		__atomic_fetch_add(&cpuEvents[cpu].serialCount, 1, __ATOMIC_RELAXED);
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
