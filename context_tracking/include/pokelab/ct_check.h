/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The deferred-sync checker's results.
 */
#pragma once

namespace pokelab {

struct CtViolation {
	int cpu;
	unsigned long cpuGen;	/* generation the CPU last serialised against */
	unsigned long roundGen;	/* generation the last returned sync round covered */
	unsigned long ip;	/* instrumentation_begin() call site */
};

/* Is the checker on (pokelab.ct_check=1)? */
bool ctCheckEnabled() noexcept;
void ctCheckEnable(bool on) noexcept;

/* Violations on @cpu since boot, and the first one seen there (if any). */
unsigned long ctViolations(int cpu) noexcept;
bool ctFirstViolation(int cpu, CtViolation *v) noexcept;

} /* namespace pokelab */
