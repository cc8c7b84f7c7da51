// SPDX-License-Identifier: GPL-2.0-only
/*
 * cpulist_parse() and the cpumask helpers, against the kernel's syntax.
 */

/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <linux/cpumask.h>

namespace {

std::string parsed(const char *list, int *ret = nullptr)
{
	struct cpumask m;
	int r = cpulist_parse(list, &m);

	if (ret)
		*ret = r;
	return r ? "error" : kshim::cpumaskPrintList(&m);
}

TEST(CpulistTest, ParsesTheKernelSyntax)
{
	EXPECT_EQ(parsed("0-3,5,7-9"), "0-3,5,7-9");
	EXPECT_EQ(parsed("3"), "3");
	EXPECT_EQ(parsed("5,1,3"), "1,3,5");
	EXPECT_EQ(parsed("0-9:2/5"), "0-1,5-6");
	EXPECT_EQ(parsed("511"), "511");
	EXPECT_EQ(parsed(""), "");
}

TEST(CpulistTest, RejectsMalformedLists)
{
	int ret;

	EXPECT_EQ(parsed("9-3", &ret), "error");
	EXPECT_EQ(ret, -EINVAL);
	EXPECT_EQ(parsed("abc", &ret), "error");
	EXPECT_EQ(ret, -EINVAL);
	EXPECT_EQ(parsed("1,", &ret), "error");
	EXPECT_EQ(parsed("1-", &ret), "error");
	EXPECT_EQ(parsed("0-9:6/5", &ret), "error");
	EXPECT_EQ(parsed("512", &ret), "error");
	EXPECT_EQ(ret, -ERANGE);
}

TEST(CpumaskTest, SetOperations)
{
	struct cpumask a, b, d;

	ASSERT_EQ(cpulist_parse("0-7", &a), 0);
	ASSERT_EQ(cpulist_parse("4-11", &b), 0);
	EXPECT_TRUE(cpumask_and(&d, &a, &b));
	EXPECT_EQ(kshim::cpumaskPrintList(&d), "4-7");
	EXPECT_EQ(cpumask_weight(&d), 4u);
	cpumask_or(&d, &a, &b);
	EXPECT_EQ(kshim::cpumaskPrintList(&d), "0-11");
	EXPECT_TRUE(cpumask_andnot(&d, &a, &b));
	EXPECT_EQ(kshim::cpumaskPrintList(&d), "0-3");
	EXPECT_TRUE(cpumask_intersects(&a, &b));
	EXPECT_TRUE(cpumask_subset(&d, &a));
	EXPECT_FALSE(cpumask_subset(&a, &d));
	cpumask_clear(&d);
	EXPECT_TRUE(cpumask_empty(&d));
}

/* The helpers added for the rest of include/linux/cpumask.h, on 16 CPUs. */
TEST(CpumaskTest, TheRestOfTheKernelHelpers)
{
	unsigned int saved = nr_cpu_ids;
	struct cpumask a, b, d;
	unsigned int cpu;
	std::string seen;

	nr_cpu_ids = 16;
	ASSERT_EQ(cpulist_parse("1,3-5,9", &a), 0);
	ASSERT_EQ(cpulist_parse("4-12", &b), 0);
	EXPECT_EQ(cpumask_last(&a), 9u);
	EXPECT_EQ(cpumask_first_zero(&a), 0u);
	EXPECT_EQ(cpumask_next_zero(3, &a), 6u);
	EXPECT_EQ(cpumask_next_wrap(9, &a), 1u);
	EXPECT_EQ(cpumask_next_wrap(4, &a), 5u);
	EXPECT_EQ(cpumask_nth(2, &a), 4u);
	EXPECT_GE(cpumask_nth(5, &a), nr_cpu_ids);
	EXPECT_EQ(cpumask_any_but(&a, 1), 3u);
	EXPECT_EQ(cpumask_any_but(&a, 3), 1u);
	EXPECT_EQ(cpumask_any_and(&a, &b), 4u);
	EXPECT_EQ(cpumask_weight_and(&a, &b), 3u);
	cpumask_xor(&d, &a, &b);
	EXPECT_EQ(kshim::cpumaskPrintList(&d), "1,3,6-8,10-12");
	EXPECT_FALSE(cpumask_full(&a));
	cpumask_setall(&d);
	EXPECT_TRUE(cpumask_full(&d));
	EXPECT_EQ(kshim::cpumaskPrintList(cpumask_of(7)), "7");
	EXPECT_FALSE(cpumask_test_and_set_cpu(2, &a));
	EXPECT_TRUE(cpumask_test_and_set_cpu(2, &a));
	EXPECT_TRUE(cpumask_test_and_clear_cpu(2, &a));
	EXPECT_FALSE(cpumask_test_cpu(2, &a));

	for_each_cpu_and(cpu, &a, &b)
		seen += std::to_string(cpu) + " ";
	EXPECT_EQ(seen, "4 5 9 ");
	seen.clear();
	for_each_cpu_andnot(cpu, &a, &b)
		seen += std::to_string(cpu) + " ";
	EXPECT_EQ(seen, "1 3 ");
	seen.clear();
	for_each_cpu_wrap(cpu, &a, 5)
		seen += std::to_string(cpu) + " ";
	EXPECT_EQ(seen, "5 9 1 3 4 ");
	seen.clear();
	ASSERT_EQ(cpulist_parse("0-13", &d), 0);
	for_each_cpu_not(cpu, &d)
		seen += std::to_string(cpu) + " ";
	EXPECT_EQ(seen, "14 15 ");

	cpumask_var_t v;
	ASSERT_TRUE(zalloc_cpumask_var(v, 0));
	EXPECT_TRUE(cpumask_empty(v));
	free_cpumask_var(v);
	nr_cpu_ids = saved;
}

} /* namespace */
