/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Sleeping delays.
 *
 * CUSTOM: include/linux/delay.h's msleep(): the calling thread sleeps at
 * least @msecs milliseconds of CLOCK_MONOTONIC (IPIs taken meanwhile do
 * not cut it short), and a CPU's own thread lends the CPU to its kworker
 * for the sleep (kshim::cpuSleepBegin()). Task context; not
 * async-signal-safe.
 */
#pragma once

#include <kernel_shim/clock.h>
#include <kernel_shim/sched.h>

static inline void msleep(unsigned int msecs)
{
	int token = kshim::cpuSleepBegin(false);

	kshim::sleepForNs((u64)msecs * 1000000ull);
	kshim::cpuSleepEnd(token);
}
