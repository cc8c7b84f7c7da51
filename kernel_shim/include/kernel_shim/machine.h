/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What modules tell the machine about themselves, for the machine line.
 */
#pragma once

#include <string>

#include <linux/cpumask.h>

namespace kshim {

/*
 * Add "key value" to the machine line (e.g. "sync ipi", "refs percpu").
 * Boot hooks call it; cleared at shutdown. Task context only.
 */
void setMachineAttr(const std::string &key, const std::string &value);

/*
 * The host this process runs on, as detected (no machine is named in a
 * string constant): a hypervisor from CPUID.1:ECX[31] and the vendor
 * signature of leaf 0x40000000, the PUs this process may run on, and
 * whether the CPU has SERIALIZE. Reports build their sentences from it.
 */
struct MachineDesc {
	bool guest = false;		/* CPUID.1:ECX[31], the hypervisor-present bit */
	std::string hypervisor;		/* "KVM", "Hyper-V", ... or the raw signature; "" if none */
	unsigned int pus = 0;		/* PUs in the allowed cpuset (boot's count once booted) */
	bool serialize = false;		/* CPUID.7.0:EDX[14] */
};

/* Detect the host. Any thread, task context (CPUID, sched_getaffinity()). */
MachineDesc detectMachine();

/* "a KVM guest with 2 PUs", "bare metal with 8 PUs" (no hypervisor bit). */
std::string describeMachine(const MachineDesc &m);

/* The nohz_full= CPUs of the running machine (empty mask if none). */
const struct cpumask *nohzFullMask() noexcept;

} /* namespace kshim */
