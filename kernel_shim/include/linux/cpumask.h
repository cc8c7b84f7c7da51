/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CPU masks.
 *
 * PORT: written fresh after include/linux/cpumask.h and lib/bitmap.c; kernel
 * names and semantics kept. A mask has NR_CPUS (512) bits; the iterators and
 * cpumask_setall() stop at nr_cpu_ids, the number of CPUs booted.
 *
 * The set/clear/test helpers without a leading "__" are atomic bit
 * operations (as set_bit()), the "__" ones plain. Everything here is
 * async-signal-safe; a mask written by one thread and read by another needs
 * the caller's own ordering, as in the kernel.
 */
#pragma once

#include <string>

#include <linux/compiler.h>
#include <linux/threads.h>
#include <linux/types.h>

#define BITS_PER_LONG 64
#define BITS_TO_LONGS(n) (((n) + BITS_PER_LONG - 1) / BITS_PER_LONG)

struct cpumask {
	unsigned long bits[BITS_TO_LONGS(NR_CPUS)];
};
typedef struct cpumask cpumask_t;
typedef struct cpumask cpumask_var_t[1];

/* The number of CPUs booted (kernel: nr_cpu_ids). Written only by boot. */
extern unsigned int nr_cpu_ids;

extern struct cpumask __cpu_possible_mask;
extern struct cpumask __cpu_online_mask;
#define cpu_possible_mask ((const struct cpumask *)&__cpu_possible_mask)
#define cpu_online_mask ((const struct cpumask *)&__cpu_online_mask)

#define cpumask_bits(maskp) ((maskp)->bits)

static inline void cpumask_set_cpu(unsigned int cpu, struct cpumask *dstp)
{
	__atomic_fetch_or(&dstp->bits[cpu / BITS_PER_LONG], 1UL << (cpu % BITS_PER_LONG),
			  __ATOMIC_RELAXED);
}

static inline void __cpumask_set_cpu(unsigned int cpu, struct cpumask *dstp)
{
	dstp->bits[cpu / BITS_PER_LONG] |= 1UL << (cpu % BITS_PER_LONG);
}

static inline void cpumask_clear_cpu(unsigned int cpu, struct cpumask *dstp)
{
	__atomic_fetch_and(&dstp->bits[cpu / BITS_PER_LONG], ~(1UL << (cpu % BITS_PER_LONG)),
			   __ATOMIC_RELAXED);
}

static inline void __cpumask_clear_cpu(unsigned int cpu, struct cpumask *dstp)
{
	dstp->bits[cpu / BITS_PER_LONG] &= ~(1UL << (cpu % BITS_PER_LONG));
}

static inline bool cpumask_test_cpu(unsigned int cpu, const struct cpumask *srcp)
{
	if (cpu >= NR_CPUS)
		return false;
	return (__atomic_load_n(&srcp->bits[cpu / BITS_PER_LONG], __ATOMIC_RELAXED) >>
		(cpu % BITS_PER_LONG)) & 1;
}

static inline void cpumask_clear(struct cpumask *dstp)
{
	for (unsigned long &w : dstp->bits)
		w = 0;
}

void cpumask_setall(struct cpumask *dstp);
void cpumask_copy(struct cpumask *dstp, const struct cpumask *srcp);
bool cpumask_and(struct cpumask *dstp, const struct cpumask *a, const struct cpumask *b);
void cpumask_or(struct cpumask *dstp, const struct cpumask *a, const struct cpumask *b);
bool cpumask_andnot(struct cpumask *dstp, const struct cpumask *a, const struct cpumask *b);
void cpumask_complement(struct cpumask *dstp, const struct cpumask *srcp);
bool cpumask_equal(const struct cpumask *a, const struct cpumask *b);
bool cpumask_intersects(const struct cpumask *a, const struct cpumask *b);
bool cpumask_subset(const struct cpumask *a, const struct cpumask *b);
bool cpumask_empty(const struct cpumask *srcp);
unsigned int cpumask_weight(const struct cpumask *srcp);

/* First set bit, or >= nr_cpu_ids if none. */
unsigned int cpumask_first(const struct cpumask *srcp);
/* Next set bit after @n (n = -1 starts at 0), or >= nr_cpu_ids. */
unsigned int cpumask_next(int n, const struct cpumask *srcp);
unsigned int cpumask_first_and(const struct cpumask *a, const struct cpumask *b);
unsigned int cpumask_next_and(int n, const struct cpumask *a, const struct cpumask *b);

#define for_each_cpu(cpu, mask)						\
	for ((cpu) = cpumask_first(mask); (unsigned int)(cpu) < nr_cpu_ids;	\
	     (cpu) = cpumask_next((cpu), (mask)))

/* The helpers below complete the set of include/linux/cpumask.h, v6.16. */

/* Last set bit, or >= nr_cpu_ids if none. */
unsigned int cpumask_last(const struct cpumask *srcp);
/* Next clear bit after @n (n = -1 starts at 0), or >= nr_cpu_ids. */
unsigned int cpumask_next_zero(int n, const struct cpumask *srcp);
unsigned int cpumask_first_zero(const struct cpumask *srcp);
/* Next set bit after @n, wrapping around to the start once; >= nr_cpu_ids if none. */
unsigned int cpumask_next_wrap(int n, const struct cpumask *srcp);
/* The @n-th (0-based) set bit, or >= nr_cpu_ids. */
unsigned int cpumask_nth(unsigned int n, const struct cpumask *srcp);
/* Any set CPU but @cpu, or >= nr_cpu_ids. */
unsigned int cpumask_any_but(const struct cpumask *mask, unsigned int cpu);
unsigned int cpumask_weight_and(const struct cpumask *a, const struct cpumask *b);
void cpumask_xor(struct cpumask *dstp, const struct cpumask *a, const struct cpumask *b);
/* All of the first nr_cpu_ids bits set. */
bool cpumask_full(const struct cpumask *srcp);
/* The mask with only @cpu set (a constant table, as the kernel's). */
const struct cpumask *cpumask_of(unsigned int cpu);

#define cpumask_any(srcp) cpumask_first(srcp)
#define cpumask_any_and(a, b) cpumask_first_and((a), (b))

/* Atomic test-and-set/clear, as test_and_set_bit(): fully ordered. */
static inline bool cpumask_test_and_set_cpu(unsigned int cpu, struct cpumask *dstp)
{
	unsigned long bit = 1UL << (cpu % BITS_PER_LONG);

	return __atomic_fetch_or(&dstp->bits[cpu / BITS_PER_LONG], bit, __ATOMIC_SEQ_CST) & bit;
}

static inline bool cpumask_test_and_clear_cpu(unsigned int cpu, struct cpumask *dstp)
{
	unsigned long bit = 1UL << (cpu % BITS_PER_LONG);

	return __atomic_fetch_and(&dstp->bits[cpu / BITS_PER_LONG], ~bit, __ATOMIC_SEQ_CST) & bit;
}

static inline unsigned int cpumask_size(void)
{
	return sizeof(struct cpumask);
}

/* cpumask_var_t is an array here (CONFIG_CPUMASK_OFFSTACK=n): nothing to allocate. */
static inline bool alloc_cpumask_var(cpumask_var_t, int)
{
	return true;
}

static inline bool zalloc_cpumask_var(cpumask_var_t mask, int)
{
	cpumask_clear(mask);
	return true;
}

static inline void free_cpumask_var(cpumask_var_t)
{
}

#define for_each_cpu_and(cpu, mask1, mask2)					\
	for ((cpu) = cpumask_first_and((mask1), (mask2)); (unsigned int)(cpu) < nr_cpu_ids; \
	     (cpu) = cpumask_next_and((cpu), (mask1), (mask2)))

#define for_each_cpu_andnot(cpu, mask1, mask2)					\
	for ((cpu) = cpumask_first(mask1); (unsigned int)(cpu) < nr_cpu_ids;	\
	     (cpu) = cpumask_next((cpu), (mask1)))				\
		if (cpumask_test_cpu((cpu), (mask2))) {} else

#define for_each_cpu_not(cpu, mask)						\
	for ((cpu) = cpumask_first_zero(mask); (unsigned int)(cpu) < nr_cpu_ids;	\
	     (cpu) = cpumask_next_zero((cpu), (mask)))

/* Every CPU of @mask once, starting at @start and wrapping around. */
#define for_each_cpu_wrap(cpu, mask, start)					\
	for (unsigned int __wrap_n = 0, __wrap_w = cpumask_weight(mask),		\
	     __wrap_c = (cpu) = cpumask_next_wrap((int)(start) - 1, (mask));		\
	     __wrap_n < __wrap_w && ((void)__wrap_c, 1);				\
	     __wrap_n++, (cpu) = cpumask_next_wrap((cpu), (mask)))

#define for_each_possible_cpu(cpu) for_each_cpu((cpu), cpu_possible_mask)
#define for_each_online_cpu(cpu) for_each_cpu((cpu), cpu_online_mask)

static inline bool cpu_online(unsigned int cpu)
{
	return cpumask_test_cpu(cpu, cpu_online_mask);
}

static inline bool cpu_possible(unsigned int cpu)
{
	return cpumask_test_cpu(cpu, cpu_possible_mask);
}

static inline unsigned int num_online_cpus(void)
{
	return cpumask_weight(cpu_online_mask);
}

static inline unsigned int num_possible_cpus(void)
{
	return cpumask_weight(cpu_possible_mask);
}

/*
 * Parse a CPU list in the kernel's syntax ("0-3,5,7-9", "0-15:2/4" for two
 * of every four, "N" for the last CPU) into @dstp, against NR_CPUS bits.
 * Returns 0, -EINVAL for a malformed list (including a reversed range such
 * as "9-3"), or -ERANGE for a CPU beyond NR_CPUS. An empty string gives an
 * empty mask, as in the kernel. Task context; not async-signal-safe.
 */
int cpulist_parse(const char *buf, struct cpumask *dstp);

namespace kshim {
/* "%*pbl": the mask as a CPU list ("0-3,5"); empty mask -> "". */
std::string cpumaskPrintList(const struct cpumask *mask);
/* "%*pb": the mask as comma-separated 32-bit hex words, as trace output prints it. */
std::string cpumaskPrintHex(const struct cpumask *mask);
} /* namespace kshim */
