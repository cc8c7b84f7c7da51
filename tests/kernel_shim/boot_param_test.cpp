// SPDX-License-Identifier: GPL-2.0-only
/*
 * Boot parameters: good ones take effect, bad ones are reported (not
 * crashed on) with a message naming the parameter.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <kernel_shim/boot.h>
#include <kernel_shim/cpu.h>
#include <linux/cpumask.h>

#include "booted.h"

namespace {

std::string bootError(const std::string &cmdline)
{
	std::string err;

	if (kshim::boot(cmdline, &err, true) == 0) {
		kshim::shutdown();
		return "";
	}
	EXPECT_FALSE(kshim::booted());
	return err;
}

TEST(BootParamTest, RejectsBadValuesWithAMessageNamingThem)
{
	struct {
		const char *cmdline;
		const char *mentions;
	} cases[] = {
		{"nr_cpus=0", "nr_cpus=0"},
		{"nr_cpus=abc", "nr_cpus=abc"},
		{"nr_cpus=", "nr_cpus"},
		{"nr_cpus=513", "nr_cpus=513"},
		{"nohz_full=abc", "nohz_full=abc"},
		{"nohz_full=", "nohz_full"},
		{"nohz_full=9-3", "nohz_full=9-3"},
		{"nr_cpus=4 nohz_full=1-7", "beyond nr_cpus=4"},
		{"nr_cpus=4 nohz_full=0-3", "housekeeping"},
		{"nr_cpus=4 nohz_full=0", "boot CPU"},
		{"nohz_full=1,,2", "nohz_full=1,,2"},
		{"bogus", "unknown boot parameter 'bogus'"},
	};

	for (const auto &c : cases) {
		std::string err = bootError(c.cmdline);

		EXPECT_NE(err.find(c.mentions), std::string::npos)
			<< "cmdline '" << c.cmdline << "' gave: '" << err << "'";
		EXPECT_EQ(err.find('\n'), std::string::npos) << "one line: " << err;
	}
}

TEST(BootParamTest, NrCpusAndNohzFullTakeEffect)
{
	std::string err;

	ASSERT_EQ(kshim::boot("nr_cpus=5 nohz_full=2-3", &err, true), 0) << err;
	EXPECT_EQ(nr_cpu_ids, 5u);
	EXPECT_EQ(num_online_cpus(), 5u);
	EXPECT_EQ(kshim::cpumaskPrintList(&kshim::bootInfo().nohzFull), "2-3");
	kshim::shutdown();
}

TEST(BootParamTest, DefaultIsTheAllowedPusAtLeastTwo)
{
	std::string err;

	ASSERT_EQ(kshim::boot("", &err, true), 0) << err;
	EXPECT_EQ(nr_cpu_ids, std::max(2u, kshim::bootInfo().nrPus));
	kshim::shutdown();
}

TEST(BootParamTest, CpusBeyondThePusArePinnedRoundRobin)
{
	std::string err;

	ASSERT_EQ(kshim::boot("nr_cpus=7", &err, true), 0) << err;
	unsigned int pus = kshim::bootInfo().nrPus;
	for (unsigned int cpu = pus; cpu < nr_cpu_ids; cpu++)
		EXPECT_EQ(kshim::cpuPu(cpu), kshim::cpuPu(cpu % pus));
	kshim::shutdown();
}

} /* namespace */
