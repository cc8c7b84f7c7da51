// SPDX-License-Identifier: GPL-2.0-only
/*
 * Housekeeping masks and the isolcpus= boot parameter.
 *
 * Port of the parsing and mask logic of kernel/sched/isolation.c, v6.16
 * (housekeeping_setup(), housekeeping_isolcpus_setup()), written fresh.
 *
 * userspace: the kernel rejects a bad isolcpus= with a pr_warn() and boots
 * on; here boot() fails with the message, as for every other parameter.
 */
#include <cctype>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include <kernel_shim/boot.h>
#include <kernel_shim/machine.h>
#include <linux/sched/isolation.h>
#include <linux/smp.h>

#define KSHIM_PRIVATE
#include "internal.h"

namespace {

struct cpumask isolated[HK_TYPE_MAX];		/* CPUs isolated per type */
struct cpumask housekeeping_mask[HK_TYPE_MAX];	/* possible & ~isolated */
unsigned int isolcpusFlags;			/* BIT(hk_type) given by isolcpus= */
struct cpumask isolcpusMask;
std::string isolcpusText;

int setIsolcpus(const char *val, std::string &err)
{
	const char *p = val ? val : "";
	unsigned int flags = 0;

	/* Flags come first, each ending in a comma: "nohz,domain,1-3". */
	for (;;) {
		const char *q = p;

		while (isalpha((unsigned char)*q) || *q == '_')
			q++;
		if (q == p || *q != ',' || (q - p == 1 && *p == 'N'))
			break;
		std::string flag(p, q - p);
		if (flag == "nohz")
			flags |= 1U << HK_TYPE_KERNEL_NOISE;
		else if (flag == "domain")
			flags |= 1U << HK_TYPE_DOMAIN;
		else if (flag == "managed_irq")
			flags |= 1U << HK_TYPE_MANAGED_IRQ;
		else {
			err = fmt::format("isolcpus={}: unknown flag '{}'; accepted flags: nohz, "
					  "domain, managed_irq (each followed by a comma)",
				  val, flag);
			return -EINVAL;
		}
		p = q + 1;
	}
	if (kshim::parseCpulistParam("isolcpus", val ? val : "", p, &isolcpusMask, err))
		return -EINVAL;
	/* No flag at all: isolate from scheduler domains, as the kernel's default. */
	isolcpusFlags = flags ? flags : 1U << HK_TYPE_DOMAIN;
	isolcpusText = val;
	return 0;
}

void resetIsolcpus()
{
	isolcpusFlags = 0;
	cpumask_clear(&isolcpusMask);
	isolcpusText.clear();
}

} /* namespace */

namespace kshim {

const std::string &isolcpusGiven() noexcept
{
	return isolcpusText;
}

} /* namespace kshim */

namespace {

kshim::BootParamRegistrar isolcpusParam({
	"isolcpus", setIsolcpus, resetIsolcpus,
	"isolcpus=[nohz,][domain,][managed_irq,]LIST: CPUs to isolate (cpulist syntax)",
});

const char *typeName(int type)
{
	switch (type) {
	case HK_TYPE_DOMAIN:
		return "domain";
	case HK_TYPE_MANAGED_IRQ:
		return "managed_irq";
	default:
		return "kernel noise (nohz)";
	}
}

/* Port of housekeeping_setup()'s checks, run once nr_cpu_ids is known. */
int housekeeping_init(std::string &err)
{
	unsigned int last = 0;

	if (isolcpusFlags) {
		for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++)
			if (cpumask_test_cpu(cpu, &isolcpusMask))
				last = cpu;
		if (last >= nr_cpu_ids) {
			err = fmt::format("isolcpus={}: CPU {} is beyond nr_cpus={} (CPUs are 0-{})",
					  isolcpusText, last, nr_cpu_ids, nr_cpu_ids - 1);
			return -EINVAL;
		}
	}

	for (int type = 0; type < HK_TYPE_MAX; type++) {
		cpumask_clear(&isolated[type]);
		if (isolcpusFlags & (1U << type))
			cpumask_copy(&isolated[type], &isolcpusMask);
	}
	cpumask_or(&isolated[HK_TYPE_KERNEL_NOISE], &isolated[HK_TYPE_KERNEL_NOISE],
		   kshim::nohzFullMask());

	for (int type = 0; type < HK_TYPE_MAX; type++) {
		cpumask_andnot(&housekeeping_mask[type], cpu_possible_mask, &isolated[type]);
		if (cpumask_empty(&housekeeping_mask[type])) {
			err = fmt::format("isolcpus={}: isolates all {} CPUs from {}; at least one "
					  "housekeeping CPU must remain", isolcpusText, nr_cpu_ids,
					  typeName(type));
			return -EINVAL;
		}
	}
	return 0;
}

kshim::BootHookRegistrar housekeepingHook({"housekeeping_init", kshim::BootStage::Early,
					   housekeeping_init});

/* Finds "a-b" with a > b in @s; fills @range. */
bool findReversedRange(const char *s, std::string *range)
{
	const char *p = s;

	while (*p) {
		char *end;
		unsigned long a, b;

		if (!isdigit((unsigned char)*p)) {
			p++;
			continue;
		}
		a = strtoul(p, &end, 10);
		if (*end == '-' && isdigit((unsigned char)end[1])) {
			char *end2;

			b = strtoul(end + 1, &end2, 10);
			if (a > b) {
				*range = std::string(p, end2 - p);
				return true;
			}
			p = end2;
		} else {
			p = end;
		}
	}
	return false;
}

} /* namespace */

const struct cpumask *housekeeping_cpumask(enum hk_type type)
{
	if ((unsigned int)type >= HK_TYPE_MAX)
		return cpu_possible_mask;
	return &housekeeping_mask[type];
}

bool housekeeping_enabled(enum hk_type type)
{
	return (unsigned int)type < HK_TYPE_MAX && !cpumask_empty(&isolated[type]);
}

bool housekeeping_test_cpu(int cpu, enum hk_type type)
{
	return cpumask_test_cpu(cpu, housekeeping_cpumask(type));
}

int housekeeping_any_cpu(enum hk_type type)
{
	int cpu = raw_smp_processor_id();

	if (cpu >= 0 && housekeeping_test_cpu(cpu, type))
		return cpu;
	return cpumask_first_and(housekeeping_cpumask(type), cpu_online_mask);
}

namespace kshim {

int parseCpulistParam(const char *name, const char *val, const char *list, struct cpumask *mask,
		      std::string &err)
{
	std::string range;
	int ret;

	if (!list || !*list) {
		err = fmt::format("{}={}: empty CPU list; expected e.g. {}=1-3,5", name, val, name);
		return -EINVAL;
	}
	if (findReversedRange(list, &range)) {
		err = fmt::format("{}={}: reversed range {}; write ranges low-high", name, val,
				  range);
		return -EINVAL;
	}
	ret = cpulist_parse(list, mask);
	if (ret == -ERANGE) {
		err = fmt::format("{}={}: CPU beyond the {} CPUs pokelab can simulate", name, val,
				  NR_CPUS);
		return ret;
	}
	if (ret || cpumask_empty(mask)) {
		err = fmt::format("{}={}: not a CPU list; expected e.g. {}=1-3,5 (ranges "
				  "low-high, comma separated)", name, val, name);
		return -EINVAL;
	}
	return 0;
}

} /* namespace kshim */
