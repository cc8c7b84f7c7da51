/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cpu_relax().
 *
 * CUSTOM: arch/x86/include/asm/vdso/processor.h. PAUSE, as the kernel does.
 * Async-signal-safe; any thread.
 */
#pragma once

static inline void cpu_relax(void)
{
	__asm__ __volatile__("pause" : : : "memory");
}
