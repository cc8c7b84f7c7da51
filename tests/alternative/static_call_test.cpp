// SPDX-License-Identifier: GPL-2.0-only
/*
 * Static calls: the kernel's self-test table (kernel/static_call_selftest.c)
 * on a real trampoline, every form of __static_call_transform() on the
 * trampolines and on scratch call sites, and an update while other CPUs
 * keep calling.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>

#include <asm/alternative.h>
#include <asm/nops.h>
#include <asm/text-patching.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/xmc.h>
#include <linux/static_call.h>
#include <pokelab/bug_switches.h>
#include <pokelab/text_poke_stats.h>

#include "booted.h"
#include "scratch_text.h"

extern "C" int func_a(int x);
extern "C" int func_b(int x);
extern "C" long sc_long_fn(void);

extern "C" __noinline int func_a(int x)
{
	return x + 1;
}

extern "C" __noinline int func_b(int x)
{
	return x + 2;
}

extern "C" __noinline long sc_long_fn(void)
{
	return 42;
}

DEFINE_STATIC_CALL(sc_selftest, func_a);
DEFINE_STATIC_CALL_NULL(sc_null, func_a);
DEFINE_STATIC_CALL_RET0(sc_ret0, sc_long_fn);

using namespace pltest;

namespace {

class StaticCall : public ScratchBooted
{
protected:
	void SetUp() override
	{
		ScratchBooted::SetUp();
		static_call_update(sc_selftest, &func_a);
	}

	void TearDown() override
	{
		static_call_update(sc_selftest, &func_a);
		ScratchBooted::TearDown();
	}
};

TEST_F(StaticCall, SelfTestTable)
{
	static const struct {
		int (*func)(int);
		int val;
		int expect;
	} static_call_data[] = {
		{ nullptr, 2, 3 },
		{ func_b, 2, 4 },
		{ func_a, 2, 3 },
	};

	for (const auto &scd : static_call_data) {
		if (scd.func)
			static_call_update(sc_selftest, scd.func);
		EXPECT_EQ(static_call(sc_selftest)(scd.val), scd.expect);
		EXPECT_EQ(static_call_query(sc_selftest), (void *)(scd.func ? scd.func : func_a));
	}
}

TEST_F(StaticCall, TrampolineIsAJmp32ThenTheSignature)
{
	const unsigned char *t = (const unsigned char *)STATIC_CALL_TRAMP_ADDR(sc_selftest);
	pokelab::TextPokeStats before = pokelab::textPokeStats();

	static_call_update(sc_selftest, &func_b);
	EXPECT_EQ(t[0], JMP32_INSN_OPCODE);
	int32_t rel;

	memcpy(&rel, t + 1, sizeof(rel));	/* unaligned in the instruction stream */
	EXPECT_EQ((long)(t + 5) + rel, (long)&func_b);
	EXPECT_EQ(t[5], 0x0f);
	EXPECT_EQ(t[6], 0xb9);
	EXPECT_EQ(t[7], 0xcc);
	EXPECT_EQ(pokelab::textPokeStats().batches - before.batches, 1u);
	/* the same target again writes nothing */
	static_call_update(sc_selftest, &func_b);
	EXPECT_EQ(pokelab::textPokeStats().batches - before.batches, 1u);
}

/*
 * The RET form (a NULL call's trampoline, a NULL conditional tail call)
 * follows cpu_wants_rethunk_at(): with the return thunk wanted (pokelab's
 * default, X86_FEATURE_RETHUNK) a JMP to x86_return_thunk, else
 * "ret; int3 x4" (retbleed=off). Before, it was always the latter.
 */
void expectRetForm(const unsigned char *p, bool rethunk)
{
	static const unsigned char ret[5] = {0xc3, 0xcc, 0xcc, 0xcc, 0xcc};

	if (!rethunk) {
		EXPECT_EQ(memcmp(p, ret, 5), 0);
		return;
	}
	EXPECT_EQ(p[0], JMP32_INSN_OPCODE);
	int32_t rel;

	memcpy(&rel, p + 1, sizeof(rel));
	EXPECT_EQ((unsigned long)(p + 5) + rel, (unsigned long)x86_return_thunk);
	EXPECT_EQ((unsigned long)x86_return_thunk, (unsigned long)&__x86_return_thunk);
}

void nullTrampolineReturnsUntilUpdated(bool rethunk)
{
	const unsigned char *t = (const unsigned char *)STATIC_CALL_TRAMP_ADDR(sc_null);

	EXPECT_EQ(cpu_wants_rethunk(), rethunk);
	/*
	 * As compiled, "ret; int3" (pokelab's own text is not built with the
	 * return thunk); an earlier boot of this process may have left the RET
	 * form of its own setting.
	 */
	EXPECT_TRUE(t[0] == RET_INSN_OPCODE || t[0] == JMP32_INSN_OPCODE);
	static_call_cond(sc_null)(1);	/* does nothing, returns */
	static_call_update(sc_null, &func_b);
	EXPECT_EQ(static_call(sc_null)(1), 3);
	static_call_update(sc_null, (int (*)(int))nullptr);
	expectRetForm(t, rethunk);
	EXPECT_EQ(memcmp(t + 5, "\x0f\xb9\xcc", 3), 0) << "the trampoline's signature";
	static_call_cond(sc_null)(1);
}

TEST_F(StaticCall, NullTrampolineReturnsThroughTheThunk)
{
	nullTrampolineReturnsUntilUpdated(true);
}

class StaticCallNoRethunk : public StaticCall
{
protected:
	std::string extraParams() const override { return "retbleed=off"; }
};

TEST_F(StaticCallNoRethunk, NullTrampolineReturns)
{
	nullTrampolineReturnsUntilUpdated(false);
}

/*
 * arch_static_call_transform() with a site rewrites the site alone (v7.3:
 * "tramp && !site"): __static_call_update() passes the trampoline with
 * each site, and the trampoline was already done.
 */
TEST_F(StaticCall, ASiteTransformLeavesTheTrampoline)
{
	const unsigned char *t = (const unsigned char *)STATIC_CALL_TRAMP_ADDR(sc_selftest);
	int32_t rel;

	arch_static_call_transform(site(1), STATIC_CALL_TRAMP_ADDR(sc_selftest), (void *)pl_add100,
				   false);
	EXPECT_EQ(*(unsigned char *)site(1), CALL_INSN_OPCODE);
	EXPECT_EQ(call_slot(1, 5), 106);
	memcpy(&rel, t + 1, sizeof(rel));
	EXPECT_EQ((unsigned long)(t + 5) + rel, (unsigned long)&func_a)
		<< "the trampoline must keep the key's function";
	EXPECT_EQ(static_call(sc_selftest)(1), 2);
}

TEST_F(StaticCall, Ret0TrampolineJumpsToReturn0)
{
	EXPECT_EQ(static_call(sc_ret0)(), 0);
	static_call_update(sc_ret0, &sc_long_fn);
	EXPECT_EQ(static_call(sc_ret0)(), 42);
	static_call_update(sc_ret0, &__static_call_return0);
	EXPECT_EQ(static_call(sc_ret0)(), 0);
}

TEST_F(StaticCall, SiteFormsCallNopXorJmpRet)
{
	static const unsigned char xor5rax[] = {0x2e, 0x2e, 0x2e, 0x31, 0xc0};

	/* CALL site: NOP5 -> CALL pl_add100 -> NOP (NULL) -> xor form (return0) */
	arch_static_call_transform(site(1), NULL, (void *)pl_add100, false);
	EXPECT_EQ(*(unsigned char *)site(1), CALL_INSN_OPCODE);
	EXPECT_EQ(call_slot(1, 5), 106);
	arch_static_call_transform(site(1), NULL, NULL, false);
	EXPECT_EQ(memcmp(site(1), x86_nops[5], 5), 0);
	EXPECT_EQ(call_slot(1, 5), 6);
	arch_static_call_transform(site(1), NULL, (void *)&__static_call_return0, false);
	EXPECT_EQ(memcmp(site(1), xor5rax, 5), 0);
	EXPECT_EQ(call_slot(1, 5), 1);	/* xor %eax,%eax; add $1 */
	/* and from the xor form back to a CALL: validate accepts it */
	arch_static_call_transform(site(1), NULL, (void *)pl_add100, false);
	EXPECT_EQ(call_slot(1, 5), 106);

	/* tail site: a JMP32, then RET for NULL */
	unsigned char jmp[5];

	gen_rel32(jmp, JMP32_INSN_OPCODE, site(2), pl_add100);
	mutex_lock(&text_mutex);
	smp_text_poke_single(site(2), jmp, 5, NULL);
	mutex_unlock(&text_mutex);
	arch_static_call_transform(site(2), NULL, (void *)pl_ret_neg, true);
	EXPECT_EQ(*(unsigned char *)site(2), JMP32_INSN_OPCODE);
	EXPECT_EQ(call_slot(2, 5), -1);
	arch_static_call_transform(site(2), NULL, NULL, true);
	expectRetForm((const unsigned char *)site(2), cpu_wants_rethunk());
	EXPECT_EQ(call_slot(2, 5), 5);
}

TEST_F(StaticCall, JccTailSiteKeepsItsCondition)
{
	unsigned char jz[6] = {0x0f, 0x84};
	int32_t disp = (int32_t)(pl_ret_neg - (jcc_site() + 6));

	memcpy(jz + 2, &disp, 4);
	mutex_lock(&text_mutex);
	/* a Jcc.d32 tail site, before anyone runs it: only CPU 0 may, meanwhile */
	kshim::xmcTextPrivate(jcc_site(), 6, 0);
	text_poke(jcc_site(), jz, 6);
	kshim::xmcQuiesce();
	kshim::xmcTextPublish(jcc_site(), 6);
	mutex_unlock(&text_mutex);
	EXPECT_EQ(call_jcc_slot(0), -1);

	/* NULL: the Jcc now reaches __static_call_return, so jz returns x */
	arch_static_call_transform(jcc_site(), NULL, NULL, true);
	EXPECT_EQ(jcc_site()[0], 0x0f);
	EXPECT_EQ((unsigned char)jcc_site()[1], 0x84);
	EXPECT_EQ(call_jcc_slot(0), 0);
	EXPECT_EQ(call_jcc_slot(3), 4);
	arch_static_call_transform(jcc_site(), NULL, (void *)pl_ret_neg, true);
	EXPECT_EQ(call_jcc_slot(0), -1);
}

TEST_F(StaticCall, BadSiteIsABug)
{
	/* site(3) + 1 is inside the NOP5: neither CALL, NOP5 nor the xor form */
	EXPECT_DEATH(arch_static_call_transform(site(3) + 1, NULL, (void *)pl_add100, false),
		     "unexpected static_call insn opcode 0x1f");
}

TEST_F(StaticCall, UpdateWhileOtherCpusCall)
{
	std::atomic<bool> stop{false};
	std::atomic<unsigned long> bad{0}, calls{0};
	unsigned int nr = pokelab::test::testCpus();

	for (unsigned int cpu = 1; cpu < nr; cpu++) {
		kshim::cpuRun(cpu, [&] {
			while (!stop.load(std::memory_order_relaxed)) {
				int r = static_call(sc_selftest)(2);

				if (r != 3 && r != 4)
					bad++;
				calls++;
			}
		});
	}
	while (calls.load() < 1000)
		;
	for (int i = 0; i < 20; i++) {
		static_call_update(sc_selftest, (i & 1) ? &func_a : &func_b);
		EXPECT_EQ(static_call(sc_selftest)(2), (i & 1) ? 3 : 4);
	}
	stop = true;
	for (unsigned int cpu = 1; cpu < nr; cpu++)
		kshim::cpuWait(cpu);
	EXPECT_EQ(bad.load(), 0u);
}

} /* namespace */
