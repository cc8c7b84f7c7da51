/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * NR_CPUS.
 *
 * CUSTOM: include/linux/threads.h. pokelab's machine simulates up to 512
 * CPUs; nr_cpu_ids (linux/cpumask.h) is the number booted.
 */
#pragma once

#define NR_CPUS 512
#define L1_CACHE_BYTES 64
#define SMP_CACHE_BYTES L1_CACHE_BYTES
#define ____cacheline_aligned __attribute__((__aligned__(SMP_CACHE_BYTES)))
