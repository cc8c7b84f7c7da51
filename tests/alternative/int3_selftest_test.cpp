// SPDX-License-Identifier: GPL-2.0-only
/*
 * The kernel's INT3 self-test, int3_selftest() (alternative/apply_alternatives.cpp,
 * run first by every boot's alternative_instructions()): run again on a
 * booted machine it passes; with its notifier stepping over the slot
 * instead of emulating the CALL it BUGs; and an INT3 nobody claims is an
 * oops.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <pokelab/alt_test.h>

#include "booted.h"

namespace {

class Int3SelfTest : public pokelab::test::Booted
{
protected:
	void TearDown() override
	{
		pokelab::altTestReset();
		pokelab::test::Booted::TearDown();
	}
};

TEST_F(Int3SelfTest, EmulatedCallStoresTheMagic)
{
	pokelab::int3SelftestRun();	/* BUG_ON(val != 0x1234) inside */
}

TEST_F(Int3SelfTest, ForgottenCallIsCaught)
{
	EXPECT_DEATH(
		{
			pokelab_alt_bugs.int3_selftest_no_call = true;
			pokelab::int3SelftestRun();
		},
		"val != 0x1234");
}

TEST_F(Int3SelfTest, UnclaimedInt3IsAnOops)
{
	/* The death-test child boots through the fixture too. */
	EXPECT_DEATH(asm volatile("int3"), "Oops: int3");
}

} /* namespace */
