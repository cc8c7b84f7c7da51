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

} /* namespace */
