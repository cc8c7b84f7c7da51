// SPDX-License-Identifier: GPL-2.0-only
/*
 * The scenario reports' explanatory sentences come from the detected host:
 * built for a bare-metal 8-core host they claim no guest and no vCPUs; for
 * a KVM guest they say so; a measured sign is printed as measured.
 */
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <workloads/machine_notes.h>

namespace {

kshim::MachineDesc bareMetal8()
{
	kshim::MachineDesc m;

	m.guest = false;
	m.pus = 8;
	m.serialize = true;
	return m;
}

kshim::MachineDesc kvm2()
{
	kshim::MachineDesc m;

	m.guest = true;
	m.hypervisor = "KVM";
	m.pus = 2;
	return m;
}

std::vector<std::string> notesFor(const kshim::MachineDesc &m, double atomicToU8Pct)
{
	return {
		pokelab::alternativesMachineNote(m, 60.0, "serialize", "alias"),
		pokelab::bpfStatsMachineNote(m, 8),
		pokelab::bpfStatsMachineNote(m, 16),
		pokelab::recursionMachineNote(m, atomicToU8Pct, -30.0),
	};
}

TEST(MachineNotes, BareMetalHostIsNotCalledAGuest)
{
	for (const std::string &n : notesFor(bareMetal8(), -20.0)) {
		EXPECT_EQ(n.find("KVM guest"), std::string::npos) << n;
		EXPECT_EQ(n.find("vCPU"), std::string::npos) << n;
		EXPECT_EQ(n.find("exits to the hypervisor"), std::string::npos) << n;
		EXPECT_EQ(n.find("2 PUs"), std::string::npos) << n;
		EXPECT_NE(n.find("bare metal"), std::string::npos) << n;
	}
	/* 8 CPUs on 8 PUs: not time-shared. */
	EXPECT_NE(pokelab::bpfStatsMachineNote(bareMetal8(), 8).find("one per PU"),
		  std::string::npos);
	EXPECT_NE(pokelab::bpfStatsMachineNote(bareMetal8(), 16).find("time-shared on 8 PUs"),
		  std::string::npos);
}

TEST(MachineNotes, GuestIsNamedFromItsSignature)
{
	std::string n = pokelab::alternativesMachineNote(kvm2(), 4500.0, "iret_to_self", "procmem");

	EXPECT_NE(n.find("a KVM guest with 2 PUs"), std::string::npos) << n;
	EXPECT_NE(n.find("exits to the hypervisor (4.5 us"), std::string::npos) << n;
	EXPECT_NE(n.find("pwrite()"), std::string::npos) << n;
}

TEST(MachineNotes, SignIsPrintedAsMeasured)
{
	EXPECT_NE(pokelab::recursionMachineNote(bareMetal8(), -12.5, -30.0)
			  .find("(-12.50%) is negative"),
		  std::string::npos);
	EXPECT_NE(pokelab::recursionMachineNote(bareMetal8(), 3.0, -30.0).find("(+3.00%) is positive"),
		  std::string::npos);
}

/* The x86 row's sentence follows the figure: not slower, less, the mail's order, more. */
TEST(MachineNotes, X86RowIsComparedWithTheMail)
{
	auto note = [](double x86) { return pokelab::recursionMachineNote(bareMetal8(), 10, x86); };

	EXPECT_NE(note(2.0).find("is not a slowdown here (+2.00%)"), std::string::npos);
	EXPECT_NE(note(-10.0).find("(-10.00%) is slower, as the mail says, but by less"),
		  std::string::npos);
	EXPECT_NE(note(-29.0).find("(-29.00%) is slower by the mail's order (-30%)"),
		  std::string::npos);
	EXPECT_NE(note(-60.0).find("(-60.00%) is slower by more than the mail's -30%"),
		  std::string::npos);
}

} /* namespace */
