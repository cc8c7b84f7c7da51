// SPDX-License-Identifier: GPL-2.0-only
/*
 * The seed's nohz_full mask (torture_mask.h). A flusher's or a round's walk
 * over the CPUs meets them in mask order: a bug that shows only when an
 * isolated CPU comes first (or last) is reached only if some seeds put one
 * there. CPU 0 is the boot CPU and never isolated (kernel_shim/boot.cpp).
 */
#include <cstdlib>

#include <fmt/format.h>

#include "torture_mask.h"

namespace pokelab::torture {

std::string seededNohzFull(u64 seed, unsigned int nrCpus)
{
	unsigned int m = nrCpus - 1, k, first;

	if (nrCpus < 2)
		return "";
	k = m > 2 ? m / 2 : 1;		/* 4 CPUs: 1 isolated, 8: 3, 2: CPU 1 */
	switch (seed % 3) {
	case 0:
		first = 1;			/* right after the boot CPU */
		break;
	case 1:
		first = nrCpus - k;		/* the last CPUs */
		break;
	default:
		first = 1 + (m - k + 1) / 2;	/* housekeeping CPUs on both sides */
		break;
	}
	return k == 1 ? fmt::format("{}", first) : fmt::format("{}-{}", first, first + k - 1);
}

unsigned int cpusWanted(unsigned int cpus, const std::vector<std::string> &params,
			unsigned int dflt)
{
	unsigned int n = dflt;

	if (cpus)
		return cpus;
	for (const std::string &p : params)
		if (p.rfind("nr_cpus=", 0) == 0)
			n = (unsigned int)strtoul(p.c_str() + 8, nullptr, 10);
	return n;
}

} /* namespace pokelab::torture */
