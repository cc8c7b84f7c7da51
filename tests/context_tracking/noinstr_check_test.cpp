// SPDX-License-Identifier: GPL-2.0-only
/*
 * objtool's noinstr check on the machine code: deliberately bad noinstr
 * functions (a call out of the section, a tail call out of it, an indirect
 * call) each get objtool's warning; the same call inside an
 * instrumentation_begin()/instrumentation_end() region does not; a static
 * call is allowed only through DEFINE_STATIC_CALL_RO(); boot refuses under
 * pokelab.noinstr_check=refuse (the default) and names the first one; the
 * rest of the tree has no finding.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <kernel_shim/boot.h>
#include <kernel_shim/noinstr_check.h>
#include <linux/compiler.h>
#include <linux/instrumentation.h>
#include <linux/jump_label.h>
#include <linux/static_call.h>

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

int noinstr_test_target(int x)
{
	return x + 1;
}

int noinstr_test_target2(int x)
{
	return x + 2;
}

} /* extern "C" */

DEFINE_STATIC_CALL(noinstr_test_sc, noinstr_test_target);
DEFINE_STATIC_KEY_FALSE_RO(noinstr_test_key_ro);
DEFINE_STATIC_CALL_RO(noinstr_test_sc_ro, noinstr_test_target);

extern "C" {

noinstr void noinstr_test_static_call(void)
{
	noinstrTestSink = static_call(noinstr_test_sc)(7);
}

noinstr void noinstr_test_static_call_ro(void)
{
	noinstrTestSink = static_call(noinstr_test_sc_ro)(8);
}

/* an _RO key in noinstr code: a JMP/NOP inside the function, nothing to report */
noinstr void noinstr_test_key_ro_user(void)
{
	if (static_branch_unlikely(&noinstr_test_key_ro))
		noinstrTestSink = 9;
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
	/* a static call: only through an _RO one (its trampoline is not "leaving") */
	EXPECT_EQ(count(w, "noinstr_test_static_call+0x"), 1u);
	EXPECT_EQ(count(w, "noinstr_test_sc: non-RO static call usage in noinstr"), 1u);
	EXPECT_EQ(count(w, "noinstr_test_static_call_ro"), 0u);
	EXPECT_EQ(count(w, "__SCT__"), 0u);
	EXPECT_EQ(count(w, "noinstr_test_key_ro_user"), 0u);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

TEST(NoinstrCheck, TheTreeItselfIsClean)
{
	if (kSanitized)
		GTEST_SKIP() << "a sanitizer build calls out of noinstr code "
				"(docs/context_tracking.md)";
	/* everything but this file's deliberately bad functions */
	for (const std::string &s : kshim::noinstrCheck())
		EXPECT_EQ(s.rfind("noinstr_test_", 0), 0u) << s;
}

TEST(NoinstrCheck, BootRefusesByDefault)
{
	std::string err;

	if (kSanitized)
		GTEST_SKIP() << "the check is off by default in a sanitizer build";
	ASSERT_NE(kshim::boot("nr_cpus=2", &err, true), 0);
	EXPECT_EQ(err.rfind("noinstr: noinstr_test_", 0), 0u) << err;
	EXPECT_FALSE(kshim::booted());
}

TEST(NoinstrCheck, AnRoStaticCallCannotChangeOnceRunning)
{
	std::string err;

	ASSERT_EQ(kshim::boot("nr_cpus=2 pokelab.noinstr_check=off", &err, true), 0) << err;
	/* the non-RO one may change; an update to the function it has is no change at all */
	static_call_update(noinstr_test_sc, &noinstr_test_target2);
	static_call_update(noinstr_test_sc_ro, &noinstr_test_target);
	EXPECT_DEATH(static_call_update(noinstr_test_sc_ro, &noinstr_test_target2),
		     "BUG_ON\\(.*static_call_tramp_is_ro");
	kshim::shutdown();
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
