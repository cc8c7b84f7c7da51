// SPDX-License-Identifier: GPL-2.0-only
/*
 * apply_retpolines() and apply_returns() (alternative/apply_returns.cpp) on
 * thunk_sites.cpp's recorded sites, one boot per mitigation choice: with
 * the defaults (retpoline, return thunk) the sites stay calls and jumps of
 * the thunks; spectre_v2=off makes each an indirect CALL/JMP *%reg,
 * spectre_v2=retpoline,lfence an LFENCE and the branch, retbleed=off (or
 * clearcpuid=rethunk) each return a RET and INT3s; the next boot starts from
 * the compiler's bytes again. The functions compute the same throughout.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include <asm/alternative.h>
#include <kernel_shim/boot.h>
#include <linux/bug.h>
#include <linux/static_call.h>
#include <linux/types.h>

#include "booted.h"
#include "branch_target.h"

extern "C" int pokelab_thunk_call(int (*f)(int), int x);
extern "C" int pokelab_thunk_tail(int (*f)(int), int x);
extern "C" int pokelab_thunk_leaf(int x);
extern "C" const u8 __x86_indirect_thunk_array[];
extern "C" void __x86_return_thunk(void);
extern "C" s32 __start_retpoline_sites[], __stop_retpoline_sites[];
extern "C" s32 __start_return_sites[], __stop_return_sites[];
DECLARE_STATIC_CALL(pokelab_thunk_null, pokelab_thunk_leaf);

namespace {

int twice(int x)
{
	return 2 * x;
}

const u8 *siteOf(s32 *s)
{
	return (const u8 *)s + *s;
}

/*
 * The @len bytes at @p as v7.3's emit_indirect() writes them: CALL *%reg
 * (ModRM reg 2) after CS prefixes that fill the slot, or JMP *%reg (reg 4)
 * followed by INT3s; a REX.B for r8-r15. 2 or 4, or -1 for anything else.
 */
int indirectForm(const u8 *p, int len)
{
	int i = 0, cs = 0, op;

	while (i < len && p[i] == 0x2e)
		i++, cs++;
	if (i < len && p[i] == 0x41)
		i++;
	if (i + 2 > len || p[i] != 0xff || (p[i + 1] & 0xc0) != 0xc0)
		return -1;
	op = (p[i + 1] >> 3) & 7;
	i += 2;
	if (op == 2)
		return i == len ? 2 : -1;
	if (op != 4 || cs)
		return -1;
	for (; i < len; i++)
		if (p[i] != 0xcc)
			return -1;
	return 4;
}

void checkFunctions()
{
	EXPECT_EQ(pokelab_thunk_call(twice, 5), 11);
	EXPECT_EQ(pokelab_thunk_tail(twice, 5), 10);
	EXPECT_EQ(pokelab_thunk_leaf(5), 15);
}

class ThunkSites : public pokelab::test::Booted
{
};

TEST_F(ThunkSites, TheObjectHasBothKinds)
{
	/* pokelab_thunk_call: a CALL; _tail: a JMP; three functions, three returns at least */
	EXPECT_GE(__stop_retpoline_sites - __start_retpoline_sites, 2);
	EXPECT_GE(__stop_return_sites - __start_return_sites, 2);
}

TEST_F(ThunkSites, DefaultsKeepTheThunks)
{
	for (s32 *s = __start_retpoline_sites; s < __stop_retpoline_sites; s++) {
		const u8 *p = siteOf(s);
		unsigned long t = pokelab::test::branchTarget(p, p[0]);

		EXPECT_TRUE(p[0] == 0xe8 || p[0] == 0xe9);
		EXPECT_EQ((t - (unsigned long)__x86_indirect_thunk_array) % 32, 0u);
	}
	for (s32 *s = __start_return_sites; s < __stop_return_sites; s++)
		EXPECT_EQ(pokelab::test::branchTarget(siteOf(s), 0xe9),
			  (unsigned long)__x86_return_thunk);
	checkFunctions();
}

/*
 * The NULL static call's trampoline, "JMP __x86_return_thunk" as built, is
 * one of the return sites: apply_returns() gives it to __static_call_fixup(),
 * which keeps its signature and puts the RET form there that the return
 * thunk's setting asks for; updates keep to that form. Boot ran no warning
 * (apply_returns()'s static_call_force_reinit() wants static_call_init()
 * done first, as setup_arch() does it).
 */
void nullTrampoline(bool rethunk)
{
	const u8 *t = (const u8 *)STATIC_CALL_TRAMP_ADDR(pokelab_thunk_null);
	bool listed = false;

	EXPECT_EQ(kshim::warnCount(), 0u);
	for (s32 *s = __start_return_sites; s < __stop_return_sites; s++)
		listed |= siteOf(s) == t;
	EXPECT_TRUE(listed) << "the trampoline is not a return site";
	EXPECT_EQ(memcmp(t + 5, "\x0f\xb9\xcc", 3), 0);
	for (int round = 0; round < 2; round++) {
		if (rethunk)
			EXPECT_EQ(pokelab::test::branchTarget(t, 0xe9),
				  (unsigned long)__x86_return_thunk);
		else
			EXPECT_EQ(memcmp(t, "\xc3\xcc\xcc\xcc\xcc", 5), 0);
		static_call_cond(pokelab_thunk_null)(1);
		static_call_update(pokelab_thunk_null, &pokelab_thunk_leaf);
		EXPECT_EQ(static_call(pokelab_thunk_null)(2), 6);
		static_call_update(pokelab_thunk_null, (int (*)(int))nullptr);
	}
	EXPECT_EQ(memcmp(t + 5, "\x0f\xb9\xcc", 3), 0);
}

TEST_F(ThunkSites, NullTrampolineThroughTheThunk)
{
	nullTrampoline(true);
}

class ThunkSitesOff : public ThunkSites
{
protected:
	std::string extraParams() const override { return "spectre_v2=off retbleed=off"; }
};

TEST_F(ThunkSitesOff, IndirectBranchesAndPlainReturns)
{
	for (s32 *s = __start_retpoline_sites; s < __stop_retpoline_sites; s++) {
		const u8 *p = siteOf(s);

		EXPECT_NE(indirectForm(p, 5), -1) << std::hex << (int)p[0] << " " << (int)p[1]
						  << " " << (int)p[2] << " " << (int)p[3] << " "
						  << (int)p[4];
	}
	for (s32 *s = __start_return_sites; s < __stop_return_sites; s++) {
		const u8 *p = siteOf(s);

		EXPECT_EQ(memcmp(p, "\xc3\xcc\xcc\xcc\xcc", 5), 0);
	}
	checkFunctions();
}

class ThunkSitesLfence : public ThunkSites
{
protected:
	std::string extraParams() const override { return "spectre_v2=retpoline,lfence"; }
};

TEST_F(ThunkSitesOff, NullTrampolineReturns)
{
	nullTrampoline(false);
}

TEST_F(ThunkSitesLfence, AnLfenceBeforeEachBranch)
{
	for (s32 *s = __start_retpoline_sites; s < __stop_retpoline_sites; s++) {
		const u8 *p = siteOf(s);

		EXPECT_EQ(memcmp(p, "\x0f\xae\xe8", 3), 0);
		EXPECT_NE(indirectForm(p + 3, 2 + (p[3] == 0x41)), -1);
	}
	/* the return thunk stays */
	for (s32 *s = __start_return_sites; s < __stop_return_sites; s++)
		EXPECT_EQ(siteOf(s)[0], 0xe9);
	checkFunctions();
}

class ThunkSitesClearcpuid : public ThunkSites
{
protected:
	std::string extraParams() const override { return "clearcpuid=rethunk"; }
};

TEST_F(ThunkSitesClearcpuid, ClearcpuidTakesTheReturnThunkAway)
{
	for (s32 *s = __start_return_sites; s < __stop_return_sites; s++)
		EXPECT_EQ(siteOf(s)[0], 0xc3);
	for (s32 *s = __start_retpoline_sites; s < __stop_retpoline_sites; s++)
		EXPECT_TRUE(siteOf(s)[0] == 0xe8 || siteOf(s)[0] == 0xe9);
	checkFunctions();
}

} /* namespace */
