// SPDX-License-Identifier: GPL-2.0-only
/*
 * What the host is, detected: kernel_shim/machine.h.
 */
#include <cpuid.h>
#include <cstring>
#include <sched.h>

#include <fmt/format.h>

#include <kernel_shim/boot.h>
#include <kernel_shim/machine.h>
#include <kernel_shim/plural.h>

namespace kshim {

namespace {

/* Vendor signatures of CPUID leaf 0x40000000 (EBX, ECX, EDX). */
const struct {
	const char *sig;
	const char *name;
} hypervisors[] = {
	{"KVMKVMKVM", "KVM"},	   {"Microsoft Hv", "Hyper-V"}, {"VMwareVMware", "VMware"},
	{"XenVMMXenVMM", "Xen"},   {"TCGTCGTCGTCG", "QEMU TCG"}, {"bhyve bhyve ", "bhyve"},
	{"ACRNACRNACRN", "ACRN"},  {" lrpepyh  vr", "Parallels"}, {"VBoxVBoxVBox", "VirtualBox"},
	{"QNXQVMBSQG", "QNX"},
};

} /* namespace */

MachineDesc detectMachine()
{
	MachineDesc m;
	unsigned int a, b, c, d;
	cpu_set_t set;

	if (__get_cpuid(1, &a, &b, &c, &d))
		m.guest = c & (1u << 31);
	if (__get_cpuid_max(0, nullptr) >= 7) {
		__cpuid_count(7, 0, a, b, c, d);
		m.serialize = d & (1u << 14);
	}
	if (m.guest) {
		char sig[13] = {};

		__cpuid(0x40000000, a, b, c, d);
		memcpy(sig, &b, 4);
		memcpy(sig + 4, &c, 4);
		memcpy(sig + 8, &d, 4);
		m.hypervisor = sig;
		for (const auto &h : hypervisors)
			if (!strncmp(sig, h.sig, strlen(h.sig)))
				m.hypervisor = h.name;
	}
	/* Booted, CPU 0 is pinned to one PU: the machine's PUs are what boot found. */
	if (booted())
		m.pus = bootInfo().nrPus;
	else if (!sched_getaffinity(0, sizeof(set), &set))
		m.pus = CPU_COUNT(&set);
	return m;
}

std::string describeMachine(const MachineDesc &m)
{
	std::string pus = nOf(m.pus, "PU");

	if (!m.guest)
		return fmt::format("bare metal with {} (CPUID reports no hypervisor)", pus);
	return fmt::format("a {} guest with {}", m.hypervisor.empty() ? "virtual machine"
								      : m.hypervisor, pus);
}

} /* namespace kshim */
