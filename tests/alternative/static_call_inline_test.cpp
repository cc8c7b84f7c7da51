// SPDX-License-Identifier: GPL-2.0-only
/*
 * Inline static calls in the program's own text (static_call_inline.cpp):
 * pokelab-objtool recorded a tail call and a call of pokelab_sc_inline
 * (static_call_inline_sites.cpp); static_call_init() at boot made both
 * direct; static_call_update() rewrites them, through the batch, while
 * CPU 1 runs them, in every form the kernel uses: CALL/JMP to the new
 * function, and for __static_call_return0 the "xor %eax,%eax" form at the
 * call and a JMP at the tail call. Then the kernel's static-call self-test
 * (kernel/static_call_selftest.c) through the inline sites.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>

#include <kernel_shim/cpu.h>
#include <kernel_shim/sched.h>
#include <linux/static_call.h>

#include "booted.h"
#include "wait_for.h"
#include "branch_target.h"

extern "C" __noinline int pokelab_sc_inline_a(int x)
{
	return x + 1;
}

extern "C" __noinline int pokelab_sc_inline_b(int x)
{
	return x + 2;
}

DEFINE_STATIC_CALL(pokelab_sc_inline, pokelab_sc_inline_a);

extern "C" int pokelab_sc_inline_tail(int x);
extern "C" int pokelab_sc_inline_call(int x);

namespace {

class StaticCallInline : public pokelab::test::Booted
{
protected:
	void TearDown() override
	{
		if (kshim::booted())
			static_call_update(pokelab_sc_inline, &pokelab_sc_inline_a);
		pokelab::test::Booted::TearDown();
	}
};


/* The CALL in pokelab_sc_inline_call(): the first E8 the function holds. */
const u8 *callSite()
{
	const u8 *p = (const u8 *)pokelab_sc_inline_call;

	for (int i = 0; i < 16; i++)
		if (p[i] == 0xe8 || !memcmp(p + i, "\x2e\x2e\x2e\x31\xc0", 5))
			return p + i;
	return nullptr;
}

TEST_F(StaticCallInline, BootMadeTheSitesDirect)
{
	const u8 *tail = (const u8 *)pokelab_sc_inline_tail, *call = callSite();

	ASSERT_NE(call, nullptr);
	EXPECT_EQ(pokelab::test::branchTarget(tail, 0xe9), (unsigned long)pokelab_sc_inline_a);
	EXPECT_EQ(pokelab::test::branchTarget(call, 0xe8), (unsigned long)pokelab_sc_inline_a);
	EXPECT_EQ(static_call_text_reserved((void *)tail, (void *)tail), 1);
	EXPECT_EQ(static_call_text_reserved((void *)call, (void *)(call + 4)), 1);
	EXPECT_EQ(pokelab_sc_inline_tail(1), 2);
	EXPECT_EQ(pokelab_sc_inline_call(1), 12);
}

TEST_F(StaticCallInline, UpdateRewritesTheSitesWhileCpu1RunsThem)
{
	const u8 *tail = (const u8 *)pokelab_sc_inline_tail, *call = callSite();
	std::atomic<bool> stop{false};
	std::atomic<unsigned long> runs{0}, bad{0};

	kshim::cpuRun(1, [&] {
		while (!stop.load(std::memory_order_relaxed)) {
			int a = pokelab_sc_inline_tail(1), b = pokelab_sc_inline_call(1);

			/* a, b or return0, never anything else */
			if ((a != 2 && a != 3 && a != 0) || (b != 12 && b != 13 && b != 10))
				bad.fetch_add(1);
			runs.fetch_add(1, std::memory_order_relaxed);
			kshim::schedTick();
		}
	});
	EXPECT_TRUE(pokelab::test::waitFor([&] { return !(runs.load() < 1000); },
					"CPU 1's runs (runs)"));
	static_call_update(pokelab_sc_inline, &pokelab_sc_inline_b);
	EXPECT_EQ(pokelab::test::branchTarget(tail, 0xe9), (unsigned long)pokelab_sc_inline_b);
	EXPECT_EQ(pokelab::test::branchTarget(call, 0xe8), (unsigned long)pokelab_sc_inline_b);
	EXPECT_EQ(pokelab_sc_inline_call(1), 13);

	/* __static_call_return0: "cs cs cs xor %eax,%eax" at the call, a JMP at the tail */
	static_call_update(pokelab_sc_inline, (int (*)(int))(void *)&__static_call_return0);
	EXPECT_EQ(memcmp(call, "\x2e\x2e\x2e\x31\xc0", 5), 0);
	EXPECT_EQ(pokelab::test::branchTarget(tail, 0xe9), (unsigned long)&__static_call_return0);
	EXPECT_EQ(pokelab_sc_inline_call(1), 10);
	EXPECT_EQ(pokelab_sc_inline_tail(1), 0);

	static_call_update(pokelab_sc_inline, &pokelab_sc_inline_a);
	EXPECT_EQ(pokelab::test::branchTarget(call, 0xe8), (unsigned long)pokelab_sc_inline_a);
	unsigned long r0 = runs.load();

	EXPECT_TRUE(pokelab::test::waitFor([&] { return !(runs.load() < r0 + 1000); },
					"CPU 1's runs (runs)"));
	stop.store(true);
	kshim::cpuWait(1);
	EXPECT_EQ(bad.load(), 0u);
}

/* kernel/static_call_selftest.c's table, through the inline sites */
TEST_F(StaticCallInline, KernelSelftestTable)
{
	static const struct {
		int (*func)(int);
		int val, expect;
	} tests[] = {
		{NULL, 2, 3},
		{pokelab_sc_inline_b, 2, 4},
		{pokelab_sc_inline_a, 2, 3},
	};

	for (const auto &t : tests) {
		if (t.func)
			static_call_update(pokelab_sc_inline, t.func);
		EXPECT_EQ(pokelab_sc_inline_tail(t.val), t.expect);
		EXPECT_EQ(pokelab_sc_inline_call(t.val), t.expect + 10);
	}
}

} /* namespace */
