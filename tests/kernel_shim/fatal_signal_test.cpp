// SPDX-License-Identifier: GPL-2.0-only
/*
 * The way down: a fatal signal runs the death hooks (the model's note,
 * torture's FAILURE line) once, SIGABRT included, which libc raises when
 * a CPU's torn code has corrupted its heap ("munmap_chunk(): invalid
 * pointer"); BUG()'s own abort() does not run them twice.
 */
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <unistd.h>

#include <kernel_shim/sigsafe.h>
#include <linux/bug.h>

namespace {

void sayHook() noexcept
{
	kshim::SigSafeBuf().str("death hook ran\n").emit();
}

TEST(FatalSignalDeathTest, LibcAbortRunsTheDeathHooks)
{
	GTEST_FLAG_SET(death_test_style, "threadsafe");
	EXPECT_DEATH(
		{
			kshim::installFatalSignalHandlers();
			kshim::addDeathHook(sayHook);
			abort();
		},
		"fatal signal 6 \\(SIGABRT\\)[^\n]*\ndeath hook ran");
}

TEST(FatalSignalDeathTest, BugRunsTheHooksOnce)
{
	GTEST_FLAG_SET(death_test_style, "threadsafe");
	EXPECT_DEATH(
		{
			kshim::installFatalSignalHandlers();
			kshim::addDeathHook(sayHook);
			BUG();
		},
		"death hook ran\n$");
}

} /* namespace */
