/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CPU isolation: housekeeping masks.
 *
 * CUSTOM: include/linux/sched/isolation.h and kernel/sched/isolation.c,
 * v6.16. The boot parameters nohz_full=LIST and isolcpus=[FLAG,]...LIST
 * (flags nohz, domain, managed_irq; no flag means domain) take CPUs out of
 * housekeeping for the given types; housekeeping_cpumask(type) is every
 * possible CPU not isolated for @type. At least one housekeeping CPU must
 * remain for each type, or boot() fails naming the parameter.
 *
 * The masks are written by boot() before any CPU but CPU 0 runs and are
 * constant until shutdown(): any thread may read them without ordering.
 * All functions are async-signal-safe.
 */
#pragma once

#include <linux/cpumask.h>

enum hk_type {
	HK_TYPE_DOMAIN,		/* isolcpus=domain (or no flag): scheduler domains */
	HK_TYPE_MANAGED_IRQ,	/* isolcpus=managed_irq */
	HK_TYPE_KERNEL_NOISE,	/* nohz_full=, isolcpus=nohz: ticks, timers, RCU, ... */
	HK_TYPE_MAX,

	/* The pre-v6.15 names, all the kernel-noise type now. */
	HK_TYPE_TICK = HK_TYPE_KERNEL_NOISE,
	HK_TYPE_TIMER = HK_TYPE_KERNEL_NOISE,
	HK_TYPE_RCU = HK_TYPE_KERNEL_NOISE,
	HK_TYPE_MISC = HK_TYPE_KERNEL_NOISE,
	HK_TYPE_WQ = HK_TYPE_KERNEL_NOISE,
	HK_TYPE_KTHREAD = HK_TYPE_KERNEL_NOISE,
};

/* The housekeeping CPUs for @type (cpu_possible_mask if nothing is isolated for it). */
const struct cpumask *housekeeping_cpumask(enum hk_type type);
/* True if some CPU is isolated for @type. */
bool housekeeping_enabled(enum hk_type type);
/* True if @cpu does housekeeping for @type. */
bool housekeeping_test_cpu(int cpu, enum hk_type type);
/* A housekeeping CPU for @type, preferring the caller's (kernel: the nearest one). */
int housekeeping_any_cpu(enum hk_type type);

/* Port of housekeeping_cpu(), include/linux/sched/isolation.h */
static inline bool housekeeping_cpu(int cpu, enum hk_type type)
{
	if (housekeeping_enabled(type))
		return housekeeping_test_cpu(cpu, type);
	return true;
}

/* Port of cpu_is_isolated(): isolated for domains, or nohz_full. */
static inline bool cpu_is_isolated(int cpu)
{
	return !housekeeping_test_cpu(cpu, HK_TYPE_DOMAIN) ||
	       !housekeeping_test_cpu(cpu, HK_TYPE_KERNEL_NOISE);
}
