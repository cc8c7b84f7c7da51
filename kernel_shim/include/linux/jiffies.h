/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The tick count.
 *
 * CUSTOM: include/linux/jiffies.h's interface over the machine's clock:
 * HZ is 1000 (CONFIG_HZ_1000, one jiffy a millisecond) and jiffies counts
 * milliseconds of CLOCK_MONOTONIC. pokelab's CPUs have no tick, so nothing
 * increments jiffies: it is read from the clock (async-signal-safe, any
 * thread). time_after()/time_before() compare as the kernel's, modulo
 * wrap-around.
 */
#pragma once

#include <kernel_shim/clock.h>

#define HZ 1000

#define jiffies ((unsigned long)(kshim::clockNs() / (1000000000ull / HZ)))

static inline unsigned long msecs_to_jiffies(unsigned int m)
{
	return (unsigned long)m * HZ / 1000;
}

static inline unsigned int jiffies_to_msecs(unsigned long j)
{
	return (unsigned int)(j * 1000 / HZ);
}

#define time_after(a, b)	((long)((b) - (a)) < 0)
#define time_before(a, b)	time_after(b, a)
#define time_after_eq(a, b)	((long)((a) - (b)) >= 0)
