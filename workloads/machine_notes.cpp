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
				 "guest size of the case's ~3 ms (KVM); ", cpuidAloneNs / 1000.0);
	else
		s += fmt::format("CPUID does not exit to a hypervisor here ({:.1f} us a call alone "
				 "in this run), so no row shows the case's guest size (~3 ms, "
				 "KVM); ", cpuidAloneNs / 1000.0);
	s += fmt::format("{} does not exit, so its saving is of the bare-metal kind (the "
			 "case's 63 us). The kernel's own sync_core() never uses CPUID. ",
			 fastFlavour);
	s += writer == "alias"
		     ? "Each write here is a copy through the text's memfd view (tens of ns), "
		       "close to the kernel's; "
		     : "Each write here is a pwrite() to /proc/self/mem (microseconds), so the "
		       "pass times are larger than the kernel's; ";
	s += "the saving is the difference of the two variants and carries over, the absolute "
	     "pass time does not. The case's site count is not in the mail; compare the "
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
		"ratio here is not the case's\n3782x{}.\n",
		where, cores == 1 ? std::string("1 PU") : fmt::format("{} PUs", cores),
		cpus > m.pus ? ", and the ns-per-call and INT3-share figures include the time a "
			       "CPU\nthread waits for a PU"
			     : "");
}

std::string recursionMachineNote(const kshim::MachineDesc &m, double atomicToU8Pct,
				 double x86ToU8Pct)
{
	/* the mail's x86 figure, and the band issue 14 set around it */
	constexpr double kMailPct = -30.0, kNear = 15.0, kFar = 45.0;
	double size = -x86ToU8Pct;
	std::string x86;

	if (x86ToU8Pct >= 0)
		x86 = fmt::format("is not a slowdown here ({:+.2f}%): the mail's direction is not "
				  "reproduced", x86ToU8Pct);
	else if (size < kNear)
		x86 = fmt::format("({:+.2f}%) is slower, as the mail says, but by less than its "
				  "{:.0f}%", x86ToU8Pct, kMailPct);
	else if (size <= kFar)
		x86 = fmt::format("({:+.2f}%) is slower by the mail's order ({:.0f}%)", x86ToU8Pct,
				  kMailPct);
	else
		x86 = fmt::format("({:+.2f}%) is slower by more than the mail's {:.0f}%",
				  x86ToU8Pct, kMailPct);
	return fmt::format(
		"\nThis machine is x86-64 ({}): there are no LSE atomics to compare, so the arm64 "
		"+25% cannot be reproduced here; the atomic row measures a LOCK XADD instead, and "
		"the atomic -> u8[4] row ({:+.2f}%) {}. What carries over is the x86 row: the "
		"u8[4] scheme (interrupt_context_level(), preempt_disable(), a byte increment, a "
		"32-bit read, preempt_enable()) against x86's one non-locked per-CPU XADD. The "
		"guards are the kernel's instructions: preempt_count() is one %fs load, "
		"preempt_disable() one %fs increment, preempt_enable() a decrement and a branch "
		"(the kernel: %gs; disassembly in docs/reproduction.md), and this_cpu_ptr() loads "
		"%fs:this_cpu_off and adds it, as the kernel adds %gs:this_cpu_off. What is not: "
		"x86's XADD and DEC address %gs:(ptr) directly, while here each first loads the "
		"offset and adds it to the pointer, four instructions per pass that make the x86 "
		"guard relatively dearer. Measured, x86 inc -> u8[4] {}.\n",
		kshim::describeMachine(m), atomicToU8Pct,
		atomicToU8Pct < 0 ? "is negative: the LOCK XADD costs less than the u8[4] "
				    "guard's extra instructions here"
				  : "is positive: one LOCK XADD costs more than the u8[4] guard's "
				    "plain instructions here, as an LSE atomic does on Neoverse-V2 (the mail's +25%)",
		x86);
}

} /* namespace pokelab */
