/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * system_state: how far the machine has booted.
 *
 * CUSTOM: include/linux/kernel.h's enum system_states and system_state,
 * kept by boot() (kernel_shim/boot.h): SYSTEM_BOOTING while only the boot
 * CPU runs (the machine and early hooks: the kernel's setup_arch() and
 * early start_kernel()), SYSTEM_SCHEDULING once the other CPUs are up and
 * the late hooks run (the kernel's early initcalls come just before its
 * smp_init(); pokelab's CPUs start before its late hooks), SYSTEM_RUNNING
 * after them (kshim::systemRunning()), SYSTEM_HALT from shutdown() until
 * the next boot(). Written by boot()/shutdown() on CPU 0; read anywhere
 * (a relaxed load: any context, async-signal-safe).
 */
#pragma once

enum system_states {
	SYSTEM_BOOTING,
	SYSTEM_SCHEDULING,
	SYSTEM_FREEING_INITMEM,
	SYSTEM_RUNNING,
	SYSTEM_HALT,
	SYSTEM_POWER_OFF,
	SYSTEM_RESTART,
	SYSTEM_SUSPEND,
};

extern enum system_states system_state;

/*
 * include/linux/kernel.h's might-sleep check, with CONFIG_DEBUG_ATOMIC_SLEEP=y
 * as a debug kernel has it (kernel_shim/kernel/sched.cpp): @offsets is the
 * preempt count the caller is allowed to hold (0 for cond_resched()).
 */
#define MIGHT_RESCHED_RCU_SHIFT		8
#define MIGHT_RESCHED_PREEMPT_MASK	((1U << MIGHT_RESCHED_RCU_SHIFT) - 1)

void __might_resched(const char *file, int line, unsigned int offsets);

/* lib/cmdline.c: an integer option of the command line (kernel_shim/kernel/boot.cpp) */
int get_option(char **str, int *pint);
