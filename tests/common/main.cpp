// SPDX-License-Identifier: GPL-2.0-only
/*
 * GoogleTest main shared by pokelab's test binaries.
 *
 * Death tests re-execute the binary ("threadsafe" style): a forked copy of
 * a process with CPU threads would inherit only the forking thread.
 */
#include <gtest/gtest.h>

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	GTEST_FLAG_SET(death_test_style, "threadsafe");
	return RUN_ALL_TESTS();
}
