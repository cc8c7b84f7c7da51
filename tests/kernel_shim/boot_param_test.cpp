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
#include <linux/sched/isolation.h>

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
		{"bogus", "bogus: unknown boot parameter; see '"},
		{"nr_cpu=4", "nr_cpu=4: unknown boot parameter; did you mean nr_cpus=?"},
		{"nohz_full=9-3", "reversed range 9-3"},
		{"isolcpus=", "isolcpus=: empty CPU list"},
		{"isolcpus", "isolcpus=: empty CPU list"},
		{"isolcpus=nohz,", "isolcpus=nohz,: empty CPU list"},
		{"isolcpus=9-3", "isolcpus=9-3: reversed range 9-3"},
		{"isolcpus=domain,1,7-5", "reversed range 7-5"},
		{"isolcpus=bogus,1-2", "isolcpus=bogus,1-2: unknown flag 'bogus'"},
		{"isolcpus=nohz,tick,1", "unknown flag 'tick'"},
		{"isolcpus=1-x", "isolcpus=1-x: not a CPU list"},
		{"isolcpus=600", "isolcpus=600: CPU beyond"},
		{"nr_cpus=4 isolcpus=1-7", "isolcpus=1-7: CPU 7 is beyond nr_cpus=4"},
		{"nr_cpus=4 isolcpus=0-3", "isolcpus=0-3: isolates all 4 CPUs"},
		{"nr_cpus=4 isolcpus=managed_irq,0-3", "housekeeping CPU must remain"},
		{"nr_cpus=4 nohz_full=1-2 isolcpus=nohz,3,0", "housekeeping CPU must remain"},
		{"csd_lock_timeout=0", "csd_lock_timeout=0"},
		{"csd_lock_timeout=-5", "csd_lock_timeout=-5"},
		{"csd_lock_timeout=5s", "csd_lock_timeout=5s"},
		{"csd_lock_timeout=", "csd_lock_timeout: missing value"},
		{"csd_lock_timeout", "csd_lock_timeout: missing value"},
		{"panic_on_ipistall=0", "panic_on_ipistall=0"},
		{"panic_on_ipistall=x", "panic_on_ipistall=x"},
		{"panic_on_warn=2", "panic_on_warn=2"},
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

TEST(BootParamTest, IsolcpusAndNohzFullMakeTheHousekeepingMasks)
{
	std::string err;

	ASSERT_EQ(kshim::boot("nr_cpus=6 nohz_full=4 isolcpus=nohz,managed_irq,2-3", &err, true), 0)
		<< err;
	EXPECT_EQ(kshim::cpumaskPrintList(housekeeping_cpumask(HK_TYPE_KERNEL_NOISE)), "0-1,5");
	EXPECT_EQ(kshim::cpumaskPrintList(housekeeping_cpumask(HK_TYPE_TICK)), "0-1,5");
	EXPECT_EQ(kshim::cpumaskPrintList(housekeeping_cpumask(HK_TYPE_MANAGED_IRQ)), "0-1,4-5");
	/* Flags given, domain not among them: domains untouched. */
	EXPECT_EQ(kshim::cpumaskPrintList(housekeeping_cpumask(HK_TYPE_DOMAIN)), "0-5");
	EXPECT_FALSE(housekeeping_enabled(HK_TYPE_DOMAIN));
	EXPECT_TRUE(housekeeping_enabled(HK_TYPE_KERNEL_NOISE));
	EXPECT_TRUE(cpu_is_isolated(4));
	EXPECT_FALSE(cpu_is_isolated(5));
	EXPECT_EQ(housekeeping_any_cpu(HK_TYPE_KERNEL_NOISE), 0);
	kshim::shutdown();

	/* No flag: domain isolation only; a later boot forgets the earlier masks. */
	ASSERT_EQ(kshim::boot("nr_cpus=4 isolcpus=3", &err, true), 0) << err;
	EXPECT_EQ(kshim::cpumaskPrintList(housekeeping_cpumask(HK_TYPE_DOMAIN)), "0-2");
	EXPECT_EQ(kshim::cpumaskPrintList(housekeeping_cpumask(HK_TYPE_KERNEL_NOISE)), "0-3");
	EXPECT_FALSE(housekeeping_enabled(HK_TYPE_KERNEL_NOISE));
	kshim::shutdown();
}

TEST(BootParamTest, NInACpuListIsTheLastCpu)
{
	std::string err;

	ASSERT_EQ(kshim::boot("nohz_full=2-N nr_cpus=5", &err, true), 0) << err;
	EXPECT_EQ(kshim::cpumaskPrintList(&kshim::bootInfo().nohzFull), "2-4");
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
