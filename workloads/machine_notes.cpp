// SPDX-License-Identifier: GPL-2.0-only
/*
 * Report sentences from the detected host: workloads/machine_notes.h.
 */
#include <algorithm>

#include <fmt/format.h>

#include <workloads/machine_notes.h>

namespace pokelab {

std::string alternativesMachineNote(const kshim::MachineDesc &m, double cpuidAloneNs,
				    const std::string &fastFlavour, const std::string &writer)
{
	std::string s = fmt::format("\nThis machine is {}. ", kshim::describeMachine(m));

	if (m.guest)
		s += fmt::format("CPUID exits to the hypervisor ({:.1f} us a call alone in this "
				 "run), so the CPUID flavour is the one whose saving has the "
				 "guest size of the seed's ~3 ms (KVM); ", cpuidAloneNs / 1000.0);
	else
		s += fmt::format("CPUID does not exit to a hypervisor here ({:.1f} us a call alone "
				 "in this run), so no row shows the seed's guest size (~3 ms, "
				 "KVM); ", cpuidAloneNs / 1000.0);
	s += fmt::format("{} does not exit, so its saving is of the bare-metal kind (the "
			 "seed's 63 us). The kernel's own sync_core() never uses CPUID. ",
			 fastFlavour);
	s += writer == "alias"
		     ? "Each write here is a copy through the text's memfd view (tens of ns), "
		       "close to the kernel's; "
		     : "Each write here is a pwrite() to /proc/self/mem (microseconds), so the "
		       "pass times are larger than the kernel's; ";
	s += "the saving is the difference of the two variants and carries over, the absolute "
	     "pass time does not. The seed's site count is not in the mail; compare the "
	     "per-site column. The saving is the median of paired differences (± half their "
	     "interquartile range); where it is smaller than that spread, this run's noise "
	     "hides it, and 'alone x sites' is the better estimate.\n";
	return s;
}

std::string bpfStatsMachineNote(const kshim::MachineDesc &m, unsigned int cpus)
{
	unsigned int cores = std::min(cpus, std::max(m.pus, 1u));
	std::string where = cpus > m.pus
				    ? fmt::format("{} simulated CPUs time-shared on {} PUs ({})", cpus,
						  m.pus, kshim::describeMachine(m))
				    : fmt::format("{} simulated CPUs, one per PU ({})", cpus,
						  kshim::describeMachine(m));

	return fmt::format(
		"\nWhat carries over: the count of writes to a refs cache line whose previous "
		"writer was\nanother CPU. With refs=global every CPU that hits an INT3 writes the "
		"one line; with\nrefs=percpu only the patcher's publish/drain touches another CPU's "
		"line. What does not:\nthe latency. False sharing between 240 cores cannot be shown "
		"on this machine's {}:\na contended line moves between {} at most, so the latency "
		"ratio here is not the seed's\n3782x{}.\n",
		where, cores == 1 ? std::string("1 PU") : fmt::format("{} PUs", cores),
		cpus > m.pus ? ", and the ns-per-call and INT3-share figures include the time a "
			       "CPU\nthread waits for a PU"
			     : "");
}

std::string recursionMachineNote(const kshim::MachineDesc &m, double atomicToU8Pct)
{
	return fmt::format(
		"\nThis machine is x86-64 ({}): there are no LSE atomics to compare, so the arm64 "
		"+25% cannot be reproduced here; the atomic row measures a LOCK XADD instead. What "
		"carries over is the x86 direction: the u8[4] scheme (preempt_disable(), context "
		"lookup, byte increment, 32-bit read) against x86's single non-locked per-CPU "
		"increment. The size does not carry over: in the kernel preempt_count() is one %gs "
		"load and preempt_disable() one %gs increment, while the shim's are out-of-line "
		"calls (smp_processor_id() through TLS, the CONFIG_DEBUG_PREEMPT check, the "
		"hard-IRQ flag), six per trampoline pass in the u8[4] guard and none in the "
		"others, so that guard's cost is inflated well beyond the mail's 30%; the atomic "
		"-> u8[4] row ({:+.2f}%) {}. Only the sign of the x86 row compares.\n",
		kshim::describeMachine(m), atomicToU8Pct,
		atomicToU8Pct < 0 ? "is negative for the same reason"
				  : "is positive here all the same");
}

} /* namespace pokelab */
