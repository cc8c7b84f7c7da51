/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The explanatory sentences of the scenario reports, built from what was
 * detected about the host (kernel_shim/machine.h) and what was measured,
 * never written for one machine. Shared by the command and the tests (which
 * build them for hosts this one is not). Task context; any thread.
 */
#pragma once

#include <string>

#include <kernel_shim/machine.h>

namespace pokelab {

/*
 * Case 004: why the CPUID and the fast flavour's savings compare with the
 * case's guest and bare-metal figures. @cpuidAloneNs: one CPUID measured
 * alone (ns); @fastFlavour: "serialize" or "iret_to_self"; @writer: the text
 * writer of the machine line ("alias" or "procmem").
 */
std::string alternativesMachineNote(const kshim::MachineDesc &m, double cpuidAloneNs,
				    const std::string &fastFlavour, const std::string &writer);

/* Cases 000/001: what carries over to @cpus simulated CPUs on this host. */
std::string bpfStatsMachineNote(const kshim::MachineDesc &m, unsigned int cpus);

/*
 * Case 002: what the rows measure on this machine and how the x86 row
 * compares with the mail's -30%. @atomicToU8Pct, @x86ToU8Pct: the measured
 * changes from the atomic and the x86 guard to u8[4], in percent (printed as
 * measured; the text follows their signs and the x86 row's size).
 */
std::string recursionMachineNote(const kshim::MachineDesc &m, double atomicToU8Pct,
				 double x86ToU8Pct);

} /* namespace pokelab */
