// SPDX-License-Identifier: GPL-2.0-only
/*
 * CPU feature probe for sync_core(), what each CPU's serialisations cover
 * (kernel_shim/cpu_events.h), pokelab.eret=, and the spin-wait back-off.
 */
#include <cpuid.h>
#include <cstring>
#include <sched.h>
#include <string>

#include <asm/processor.h>
#include <asm/sync_core.h>
#include <kernel_shim/boot.h>
#include <kernel_shim/cpu_events.h>
#include <linux/atomic.h>

__thread unsigned long cpu_fence_events __attribute__((tls_model("local-exec")));
__thread unsigned long cpu_fence_mark[kshim::FENCE_PAIR_NR] __attribute__((tls_model("local-exec")));

namespace kshim {

namespace {
bool probeSerialize()
{
	unsigned int a, b, c, d;

	if (__get_cpuid_max(0, nullptr) < 7)
		return false;
	__cpuid_count(7, 0, a, b, c, d);
	return d & (1u << 14);
}
} /* namespace */

const bool cpuHasSerialize = probeSerialize();

CpuEvents cpuEvents[NR_CPUS];
CpuRecent cpuRecent[NR_CPUS];
u64 textWriteSeq;
bool eretSerialises;

namespace {

void noIrqsOnHook(int) noexcept
{
}

int setEret(const char *val, std::string &err)
{
	if (val && !strcmp(val, "serialising")) {
		eretSerialises = true;
		return 0;
	}
	if (val && !strcmp(val, "plain")) {
		eretSerialises = false;
		return 0;
	}
	err = std::string("pokelab.eret=") + (val ? val : "") +
	      ": expected pokelab.eret=plain (the default) or pokelab.eret=serialising";
	return -EINVAL;
}

BootParamRegistrar eretParam({
	"pokelab.eret", setEret, [] { eretSerialises = false; },
	"pokelab.eret=plain|serialising: whether the return from an IPI or INT3 handler "
	"serialises (IRET does; SYSRET and FRED's ERETS/ERETU are not assumed to)",
});

} /* namespace */

void (*irqsOnHook)(int cpu) noexcept = noIrqsOnHook;

const char *syncCoreFlavorName(SyncCoreFlavor f) noexcept
{
	switch (f) {
	case SyncCoreFlavor::Serialize:
		return "SERIALIZE";
	case SyncCoreFlavor::IretToSelf:
		return "IRET-to-self";
	case SyncCoreFlavor::Cpuid:
		return "CPUID";
	}
	return "?";
}

SyncCoreFlavor syncCoreFlavor() noexcept
{
	return cpuHasSerialize ? SyncCoreFlavor::Serialize : SyncCoreFlavor::IretToSelf;
}

void spinRelax(unsigned int *iter) noexcept
{
	if (++*iter % 256)
		cpu_relax();
	else
		sched_yield();
}

} /* namespace kshim */
