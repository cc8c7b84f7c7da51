// SPDX-License-Identifier: GPL-2.0-only
/*
 * CPU feature probe for sync_core(), and the spin-wait back-off.
 */
#include <cpuid.h>
#include <sched.h>

#include <asm/processor.h>
#include <asm/sync_core.h>
#include <linux/atomic.h>

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
