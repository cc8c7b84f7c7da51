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
#include <kernel_shim/xmc.h>
#include <kernel_shim/xmc_verdict.h>

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
 * test's thread, which becomes CPU 0; shuts down after it. Every test is
 * also checked by the cross-modifying-code model: whatever text it patched,
 * the model must have found no violation, and every table's site must hold
 * what its state demands at its end, unless the test says it expects some
 * (a BUSTED variant, a bug replay).
 */
class Booted : public ::testing::Test
{
protected:
	virtual std::string extraParams() const { return ""; }
	virtual unsigned int cpus() const { return testCpus(); }
	/* A fixture that runs a BUSTED variant or a bug replay: violations are its point. */
	virtual bool xmcViolationsExpected() const { return false; }
	/* One test that shows a violation on purpose (it checks the report itself). */
	void expectXmcViolations() { xmcExpected_ = true; }

	void checkXmc()
	{
		kshim::xmcQuiesce();
		if (xmcViolationsExpected() || xmcExpected_)
			return;
		/* every site of every table as its state demands, at the test's end (R7) */
		kshim::xmcTablesCheck("the test's end");
		EXPECT_EQ(kshim::xmcStats().violations, 0u)
			<< (kshim::xmcViolations().empty()
				    ? std::string()
				    : kshim::xmcFormat(kshim::xmcViolations()[0]));
	}

	void SetUp() override
	{
		std::string err;
		std::string cmdline = fmt::format("nr_cpus={} {}", cpus(), extraParams());

		ASSERT_EQ(kshim::boot(cmdline, &err, true), 0) << err;
	}

	void TearDown() override
	{
		if (kshim::booted()) {
			checkXmc();
			kshim::shutdown();
		}
	}

private:
	bool xmcExpected_ = false;
};

} /* namespace pokelab::test */
