/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A bounded spin for tests that wait on another CPU's progress: true once
 * @cond holds; after @seconds a test failure naming @what, and false, so
 * that a stuck CPU fails the test with a message instead of the suite's
 * timeout.
 */
#pragma once

#include <gtest/gtest.h>

#include <kernel_shim/clock.h>

namespace pokelab::test {

template<typename C>
bool waitFor(C cond, const char *what, unsigned int seconds = 30)
{
	u64 until = kshim::clockNs() + (u64)seconds * 1000000000ull;

	while (!cond()) {
		if (kshim::clockNs() > until) {
			ADD_FAILURE() << "waited " << seconds << " s for " << what;
			return false;
		}
	}
	return true;
}

} /* namespace pokelab::test */
