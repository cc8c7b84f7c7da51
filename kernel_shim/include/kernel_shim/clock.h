/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The machine's one clock: CLOCK_MONOTONIC in nanoseconds.
 *
 * clock_gettime() goes through the vDSO (not text pokelab patches, no
 * syscall), so this is async-signal-safe and may be called from the IPI and
 * INT3 handlers and from noinstr code. Any thread.
 */
#pragma once

#include <ctime>

#include <linux/compiler.h>
#include <linux/types.h>

namespace kshim {

static __always_inline u64 clockNs() noexcept
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000ull + (u64)ts.tv_nsec;
}

} /* namespace kshim */
