// SPDX-License-Identifier: GPL-2.0-only
/*
 * CPU mask helpers and cpulist_parse().
 *
 * Port of the cpumask operations of include/linux/cpumask.h and of
 * bitmap_parselist(), lib/bitmap-str.c, v6.16 (syntax: "a", "a-b",
 * "a-b:used/group", "N" for the last bit; ranges separated by commas).
 */
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>

#include <fmt/format.h>

#include <linux/cpumask.h>

unsigned int nr_cpu_ids = 1;
struct cpumask __cpu_possible_mask;
struct cpumask __cpu_online_mask;

void cpumask_setall(struct cpumask *dstp)
{
	cpumask_clear(dstp);
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++)
		__cpumask_set_cpu(cpu, dstp);
}

void cpumask_copy(struct cpumask *dstp, const struct cpumask *srcp)
{
	*dstp = *srcp;
}

bool cpumask_and(struct cpumask *dstp, const struct cpumask *a, const struct cpumask *b)
{
	unsigned long any = 0;

	for (size_t i = 0; i < ARRAY_SIZE(dstp->bits); i++)
		any |= (dstp->bits[i] = a->bits[i] & b->bits[i]);
	return any != 0;
}

void cpumask_or(struct cpumask *dstp, const struct cpumask *a, const struct cpumask *b)
{
	for (size_t i = 0; i < ARRAY_SIZE(dstp->bits); i++)
		dstp->bits[i] = a->bits[i] | b->bits[i];
}

bool cpumask_andnot(struct cpumask *dstp, const struct cpumask *a, const struct cpumask *b)
{
	unsigned long any = 0;

	for (size_t i = 0; i < ARRAY_SIZE(dstp->bits); i++)
		any |= (dstp->bits[i] = a->bits[i] & ~b->bits[i]);
	return any != 0;
}

void cpumask_complement(struct cpumask *dstp, const struct cpumask *srcp)
{
	struct cpumask all;

	cpumask_setall(&all);
	cpumask_andnot(dstp, &all, srcp);
}

bool cpumask_equal(const struct cpumask *a, const struct cpumask *b)
{
	for (size_t i = 0; i < ARRAY_SIZE(a->bits); i++)
		if (a->bits[i] != b->bits[i])
			return false;
	return true;
}

bool cpumask_intersects(const struct cpumask *a, const struct cpumask *b)
{
	for (size_t i = 0; i < ARRAY_SIZE(a->bits); i++)
		if (a->bits[i] & b->bits[i])
			return true;
	return false;
}

bool cpumask_subset(const struct cpumask *a, const struct cpumask *b)
{
	for (size_t i = 0; i < ARRAY_SIZE(a->bits); i++)
		if (a->bits[i] & ~b->bits[i])
			return false;
	return true;
}

bool cpumask_empty(const struct cpumask *srcp)
{
	for (unsigned long w : srcp->bits)
		if (w)
			return false;
	return true;
}

unsigned int cpumask_weight(const struct cpumask *srcp)
{
	unsigned int n = 0;

	for (unsigned long w : srcp->bits)
		n += __builtin_popcountl(w);
	return n;
}

unsigned int cpumask_next(int n, const struct cpumask *srcp)
{
	for (unsigned int cpu = n + 1; cpu < NR_CPUS; cpu++) {
		unsigned long w = __atomic_load_n(&srcp->bits[cpu / BITS_PER_LONG], __ATOMIC_RELAXED);

		w >>= cpu % BITS_PER_LONG;
		if (!w) {
			/* skip to the next word */
			cpu = (cpu / BITS_PER_LONG + 1) * BITS_PER_LONG - 1;
			continue;
		}
		cpu += __builtin_ctzl(w);
		return cpu < nr_cpu_ids ? cpu : nr_cpu_ids;
	}
	return nr_cpu_ids;
}

unsigned int cpumask_first(const struct cpumask *srcp)
{
	return cpumask_next(-1, srcp);
}

unsigned int cpumask_next_and(int n, const struct cpumask *a, const struct cpumask *b)
{
	unsigned int cpu = n;

	for (;;) {
		cpu = cpumask_next(cpu, a);
		if (cpu >= nr_cpu_ids || cpumask_test_cpu(cpu, b))
			return cpu;
	}
}

unsigned int cpumask_first_and(const struct cpumask *a, const struct cpumask *b)
{
	return cpumask_next_and(-1, a, b);
}

unsigned int cpumask_last(const struct cpumask *srcp)
{
	for (int cpu = (int)nr_cpu_ids - 1; cpu >= 0; cpu--)
		if (cpumask_test_cpu(cpu, srcp))
			return cpu;
	return nr_cpu_ids;
}

unsigned int cpumask_next_zero(int n, const struct cpumask *srcp)
{
	for (unsigned int cpu = n + 1; cpu < nr_cpu_ids; cpu++)
		if (!cpumask_test_cpu(cpu, srcp))
			return cpu;
	return nr_cpu_ids;
}

unsigned int cpumask_first_zero(const struct cpumask *srcp)
{
	return cpumask_next_zero(-1, srcp);
}

unsigned int cpumask_next_wrap(int n, const struct cpumask *srcp)
{
	unsigned int cpu = cpumask_next(n, srcp);

	if (cpu < nr_cpu_ids)
		return cpu;
	return cpumask_first(srcp);
}

unsigned int cpumask_nth(unsigned int n, const struct cpumask *srcp)
{
	unsigned int cpu;

	for_each_cpu(cpu, srcp)
		if (n-- == 0)
			return cpu;
	return nr_cpu_ids;
}

unsigned int cpumask_any_but(const struct cpumask *mask, unsigned int cpu)
{
	unsigned int i = cpumask_first(mask);

	if (i != cpu)
		return i;
	return cpumask_next(cpu, mask);
}

unsigned int cpumask_weight_and(const struct cpumask *a, const struct cpumask *b)
{
	unsigned int n = 0;

	for (size_t i = 0; i < ARRAY_SIZE(a->bits); i++)
		n += __builtin_popcountl(a->bits[i] & b->bits[i]);
	return n;
}

void cpumask_xor(struct cpumask *dstp, const struct cpumask *a, const struct cpumask *b)
{
	for (size_t i = 0; i < ARRAY_SIZE(dstp->bits); i++)
		dstp->bits[i] = a->bits[i] ^ b->bits[i];
}

bool cpumask_full(const struct cpumask *srcp)
{
	return cpumask_first_zero(srcp) >= nr_cpu_ids;
}

namespace {
/* Port of cpu_bit_bitmap's purpose: one constant single-CPU mask per CPU. */
struct cpumask singleCpuMasks[NR_CPUS];
[[maybe_unused]] const bool singleCpuMasksInit = [] {
	for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++)
		__cpumask_set_cpu(cpu, &singleCpuMasks[cpu]);
	return true;
}();
} /* namespace */

const struct cpumask *cpumask_of(unsigned int cpu)
{
	return &singleCpuMasks[cpu];
}

namespace {

/* One number of a region, or "N" (the last bit). Returns the end, or NULL. */
const char *parseNumber(const char *p, unsigned int *out)
{
	if (*p == 'N') {
		*out = NR_CPUS - 1;
		return p + 1;
	}
	if (!isdigit((unsigned char)*p))
		return nullptr;

	unsigned long v = 0;
	while (isdigit((unsigned char)*p)) {
		v = v * 10 + (*p - '0');
		if (v > UINT_MAX)
			return nullptr;
		p++;
	}
	*out = v;
	return p;
}

} /* namespace */

/* Port of bitmap_parselist(), lib/bitmap-str.c, v6.16 */
int cpulist_parse(const char *buf, struct cpumask *dstp)
{
	const char *p = buf;

	cpumask_clear(dstp);
	while (*p) {
		unsigned int start, end, off, group_len;

		/* userspace: the kernel accepts surrounding whitespace; so do we */
		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		if (!*p)
			break;

		p = parseNumber(p, &start);
		if (!p)
			return -EINVAL;
		end = start;
		off = group_len = 0;
		if (*p == '-') {
			p = parseNumber(p + 1, &end);
			if (!p)
				return -EINVAL;
			if (*p == ':') {
				p = parseNumber(p + 1, &off);
				if (!p || *p != '/')
					return -EINVAL;
				p = parseNumber(p + 1, &group_len);
				if (!p)
					return -EINVAL;
			}
		}
		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		if (*p && *p != ',')
			return -EINVAL;
		if (*p == ',') {
			p++;
			if (!*p)
				return -EINVAL;	/* trailing comma */
		}

		if (start > end)
			return -EINVAL;
		if (group_len == 0)
			off = group_len = end - start + 1;
		if (off > group_len || group_len == 0)
			return -EINVAL;
		if (end >= NR_CPUS)
			return -ERANGE;

		for (unsigned int cpu = start; cpu <= end; cpu += group_len)
			for (unsigned int i = 0; i < off && cpu + i <= end; i++)
				__cpumask_set_cpu(cpu + i, dstp);
	}
	return 0;
}

namespace kshim {

std::string cpumaskPrintList(const struct cpumask *mask)
{
	std::string out;
	int runStart = -1, prev = -2;

	auto flush = [&](int last) {
		if (runStart < 0)
			return;
		if (!out.empty())
			out += ',';
		if (runStart == last)
			out += fmt::format("{}", runStart);
		else
			out += fmt::format("{}-{}", runStart, last);
	};

	for (int cpu = 0; cpu < NR_CPUS; cpu++) {
		if (!((mask->bits[cpu / BITS_PER_LONG] >> (cpu % BITS_PER_LONG)) & 1))
			continue;
		if (cpu != prev + 1) {
			flush(prev);
			runStart = cpu;
		}
		prev = cpu;
	}
	flush(prev);
	return out;
}

std::string cpumaskPrintHex(const struct cpumask *mask)
{
	/* As bitmap_print_to_pagebuf(false, ...): 32-bit words, most significant first. */
	unsigned int nbits = nr_cpu_ids;
	int words = (nbits + 31) / 32;
	std::string out;

	for (int w = words - 1; w >= 0; w--) {
		unsigned int v = (mask->bits[w / 2] >> ((w % 2) * 32)) & 0xffffffffu;

		if (!out.empty())
			out += ',';
		if (w == words - 1 && nbits % 32)
			out += fmt::format("{:0{}x}", v, ((nbits % 32) + 3) / 4);
		else
			out += fmt::format("{:08x}", v);
	}
	return out;
}

} /* namespace kshim */
