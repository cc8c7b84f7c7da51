/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * sync_core(): serialise this CPU's instruction stream.
 *
 * PORT: written fresh after arch/x86/include/asm/sync_core.h. SERIALIZE when
 * CPUID says the CPU has it, else IRET-to-self, the kernel's order of
 * preference. CPUID is read once at start-up, never on this path (a CPUID
 * exits to the hypervisor in a guest: ~4.5 us against ~43 ns for
 * IRET-to-self on our KVM guests).
 *
 * userspace: IRET-to-self runs at CPL 3, where IRETQ to the same privilege
 * level is allowed; the frame is built below the 128-byte red zone, which
 * kernel code does not have.
 *
 * All functions here are async-signal-safe, callable from any thread, and act
 * on the calling thread's CPU only. They are also compiler barriers.
 *
 * Each serialising instruction records, from inside its own wrapper, which
 * text writes it covers: the write sequence read (acquire) before the
 * instruction, recorded for this CPU after it (kernel_shim/cpu_events.h,
 * which the cross-modifying-code model reads). The record is inline and
 * call-free, so noinstr code may serialise.
 */
#pragma once

#include <linux/compiler.h>
#include <kernel_shim/cpu_events.h>

namespace kshim {
enum class SyncCoreFlavor {
	Serialize,	/* SERIALIZE (0f 01 e8) */
	IretToSelf,	/* IRETQ to the next instruction */
	Cpuid,		/* CPUID leaf 0: rejected by the kernel, kept for benchmarks */
};

/* True when CPUID.(EAX=7,ECX=0):EDX[14] (SERIALIZE) is set; read once. */
extern const bool cpuHasSerialize;

const char *syncCoreFlavorName(SyncCoreFlavor f) noexcept;
/* The flavor sync_core() uses on this machine. */
SyncCoreFlavor syncCoreFlavor() noexcept;
} /* namespace kshim */

static __always_inline void serialize(void)
{
	u64 seq = kshim::cpuSerialiseBegin();

	/* SERIALIZE, spelled as bytes for assemblers that predate it. */
	__asm__ __volatile__(".byte 0x0f, 0x01, 0xe8" : : : "memory");
	kshim::cpuSerialised(seq);
}

/* Port of iret_to_self(), arch/x86/include/asm/sync_core.h, v7.3 */
static __always_inline void iret_to_self(void)
{
	u64 seq = kshim::cpuSerialiseBegin();
	unsigned long tmp;

	__asm__ __volatile__(
		"sub $128, %%rsp\n\t"		/* step over the red zone */
		"mov %%ss, %k0\n\t"
		"pushq %q0\n\t"			/* SS */
		"leaq 8(%%rsp), %q0\n\t"
		"pushq %q0\n\t"			/* RSP to resume with */
		"pushfq\n\t"			/* RFLAGS */
		"mov %%cs, %k0\n\t"
		"pushq %q0\n\t"			/* CS */
		"leaq 1f(%%rip), %q0\n\t"
		"pushq %q0\n\t"			/* RIP */
		"iretq\n\t"
		"1:\n\t"
		"add $128, %%rsp\n\t"
		: "=&r"(tmp)
		:
		: "cc", "memory");
	kshim::cpuSerialised(seq);
}

static __always_inline void cpuid_serialize(void)
{
	u64 seq = kshim::cpuSerialiseBegin();
	unsigned int a = 0, b, c = 0, d;

	__asm__ __volatile__("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d) : : "memory");
	kshim::cpuSerialised(seq);
}

/*
 * Port of sync_core(), arch/x86/include/asm/sync_core.h, v7.3. The feature
 * test is CPUID's bit itself: the shim sits below alternative/'s
 * boot_cpu_data, so clearcpuid=serialize does not reach sync_core().
 */
static __always_inline void sync_core(void)
{
	if (kshim::cpuHasSerialize) {	/* userspace: CPUID's bit: no boot_cpu_data here */
		serialize();
		return;
	}
	iret_to_self();
}
