// SPDX-License-Identifier: GPL-2.0-only
/*
 * objtool's noinstr check on the machine code: deliberately bad noinstr
 * functions (a call out of the section, a tail call out of it, an indirect
 * call) each get objtool's warning; the same call inside an
 * instrumentation_begin()/instrumentation_end() region does not; boot
 * refuses under pokelab.noinstr_check=refuse and names the first one.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <kernel_shim/boot.h>
#include <kernel_shim/noinstr_check.h>
#include <linux/compiler.h>
#include <linux/instrumentation.h>

extern "C" {

volatile int noinstrTestSink;

/* instrumentable text: it may be traced, probed, patched */
__attribute__((noinline)) void noinstr_test_helper(void)
{
	noinstrTestSink = noinstrTestSink + 1;
}

noinstr void noinstr_test_calls_out(void)
{
	noinstr_test_helper();
	noinstrTestSink = 2;
}

noinstr void noinstr_test_tail_call(void)
{
	noinstrTestSink = 3;
	noinstr_test_helper();
}

noinstr void noinstr_test_indirect(void (*fn)(void))
{
	fn();
	noinstrTestSink = 4;
}

noinstr void noinstr_test_in_region(void)
{
	noinstrTestSink = 5;
	instrumentation_begin();
	noinstr_test_helper();
	instrumentation_end();
	noinstrTestSink = 6;
}

} /* extern "C" */

namespace {

size_t count(const std::vector<std::string> &w, const std::string &needle)
{
	size_t n = 0;

	for (const std::string &s : w)
		n += s.find(needle) != std::string::npos;
	return n;
}

TEST(NoinstrCheck, EachBadFunctionGetsObjtoolsWarning)
{
	std::vector<std::string> w = kshim::noinstrCheck();

	EXPECT_EQ(count(w, "noinstr_test_calls_out+0x"), 1u);
	EXPECT_EQ(count(w, "call to noinstr_test_helper() leaves .noinstr.text section"), 2u);
	EXPECT_EQ(count(w, "noinstr_test_tail_call+0x"), 1u);
	EXPECT_EQ(count(w, "noinstr_test_indirect+0x"), 1u);
	for (const std::string &s : w) {
		if (s.find("noinstr_test_indirect+0x") != std::string::npos) {
			EXPECT_NE(s.find("indirect call found in .noinstr.text section"),
				  std::string::npos) << s;
		}
	}
	/* the call inside the region is allowed */
	EXPECT_EQ(count(w, "noinstr_test_in_region"), 0u);
}

TEST(NoinstrCheck, BootRefusesWhenAskedTo)
{
	std::string err;

	ASSERT_NE(kshim::boot("nr_cpus=2 pokelab.noinstr_check=refuse", &err, true), 0);
	EXPECT_NE(err.find("leaves .noinstr.text section"), std::string::npos) << err;
	EXPECT_NE(err.find("pokelab.noinstr_check=warn"), std::string::npos) << err;
	EXPECT_FALSE(kshim::booted());
}

} /* namespace */
