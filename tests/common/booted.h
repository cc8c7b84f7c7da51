/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Test fixtures that boot the simulated machine.
 */
#pragma once

#include <cstdlib>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <kernel_shim/boot.h>

namespace pokelab::test {

/* CPUs the tests simulate: meson option test_cpus, via POKELAB_TEST_CPUS. */
inline unsigned int testCpus()
{
	const char *s = getenv("POKELAB_TEST_CPUS");
	int n = s ? atoi(s) : 4;

	return n >= 2 ? n : 4;
}

/*
 * Boots nr_cpus=testCpus() (plus extraParams()) before each test, on the
 * test's thread, which becomes CPU 0; shuts down after it.
 */
class Booted : public ::testing::Test
{
protected:
	virtual std::string extraParams() const { return ""; }

	void SetUp() override
	{
		std::string err;
		std::string cmdline = fmt::format("nr_cpus={} {}", testCpus(), extraParams());

		ASSERT_EQ(kshim::boot(cmdline, &err, true), 0) << err;
	}

	void TearDown() override { kshim::shutdown(); }
};

} /* namespace pokelab::test */
