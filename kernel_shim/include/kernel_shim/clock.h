/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The machine's one clock: CLOCK_MONOTONIC in nanoseconds.
 *
 * clock_gettime() goes through the vDSO (not text pokelab patches, no
 * syscall), so this is async-signal-safe and may be called from the IPI and
 * INT3 handlers and from noinstr code. Any thread.
 */
#pragma once

#include <cerrno>
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

/*
 * Sleep until @deadline (ns of CLOCK_MONOTONIC): clock_nanosleep() to the
 * absolute time, resumed after a signal (an IPI) cuts it short, so neither
 * the IPIs a CPU takes nor a long sleep (a relative timespec's tv_nsec must
 * stay below 1e9) change how long it sleeps. Async-signal-safe; any thread.
 */
static inline void sleepUntilNs(u64 deadline) noexcept
{
	struct timespec ts = {(time_t)(deadline / 1000000000ull), (long)(deadline % 1000000000ull)};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR)
		;
}

/* Sleep @ns from now, as sleepUntilNs(). */
static inline void sleepForNs(u64 ns) noexcept
{
	sleepUntilNs(clockNs() + ns);
}

} /* namespace kshim */
