/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The nohz_full mask a torture run isolates when it asks for a deferral
 * policy without naming the CPUs (torture_mask.cpp).
 */
#pragma once

#include <string>
#include <vector>

#include <linux/types.h>

namespace pokelab::torture {

/*
 * The CPU list to isolate among @nrCpus CPUs for @seed: about half of the
 * CPUs but the boot CPU, placed right after CPU 0 (seed % 3 == 0), at the
 * end of the mask (1) or in its middle (2), so that across seeds a round's
 * walk over the mask meets an isolated CPU first, last and between
 * housekeeping ones. "" when @nrCpus < 2.
 */
std::string seededNohzFull(u64 seed, unsigned int nrCpus);

/* The CPU count the boot will get: --cpus, else the last nr_cpus= of @params, else @dflt. */
unsigned int cpusWanted(unsigned int cpus, const std::vector<std::string> &params,
			unsigned int dflt);

} /* namespace pokelab::torture */
