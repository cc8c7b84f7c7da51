// SPDX-License-Identifier: GPL-2.0-only
/*
 * The INT3 (SIGTRAP) path runs with interrupts off: its handler blocks the
 * IPI signal while it runs.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <csignal>

#include <kernel_shim/cpu.h>

#include "booted.h"

namespace {

class Int3IpiMaskTest : public pokelab::test::Booted
{
};

TEST_F(Int3IpiMaskTest, SigtrapHandlerBlocksTheIpiSignal)
{
	struct sigaction sa;

	ASSERT_EQ(sigaction(SIGTRAP, nullptr, &sa), 0);
	ASSERT_NE(sa.sa_handler, SIG_DFL) << "the trap_init boot hook installs the handler";
	EXPECT_TRUE(sigismember(&sa.sa_mask, kshim::ipiSignal()));
	/* Nothing else is masked that the kernel would take: SIGTRAP nests (SA_NODEFER). */
	EXPECT_FALSE(sigismember(&sa.sa_mask, SIGTRAP));
}

} /* namespace */
