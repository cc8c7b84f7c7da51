/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CPU feature tests: boot_cpu_has() and static_cpu_has().
 *
 * PORT: written fresh after arch/x86/include/asm/cpufeature.h and
 * arch/x86/kernel/cpu/common.c (get_cpu_cap(), setup_clear_cpu_cap()),
 * v6.16. Implemented in alternative/cpufeature.cpp.
 *
 * boot_cpu_data.x86_capability is filled from the real CPUID when the
 * program starts (static initialisation, before main()), and again at every
 * boot(), where the clearcpuid= boot parameter then clears the features it
 * names (with their dependents, as the kernel's do_clear_cpu_cap() does).
 * After the early boot hooks ran, the bits are constant until the next
 * boot(): readers need no ordering.
 *
 * userspace: the kernel also clears AVX and friends when XCR0 does not
 * enable their register state; we do the same from XGETBV, so that a
 * feature reported here can really be used by this process.
 */
#pragma once

#include <string>

#include <asm/alternative.h>
#include <asm/cpufeatures.h>
#include <linux/types.h>

struct cpuinfo_x86 {
	u32 x86_capability[NCAPINTS + NBUGINTS];
};

/* The boot CPU's features (every simulated CPU runs on the same host CPU model). */
extern struct cpuinfo_x86 boot_cpu_data;

#define cpu_has(c, bit)	\
	(!!((c)->x86_capability[(bit) >> 5] & (1u << ((bit) & 31))))

/*
 * True when the boot CPU has feature @bit (X86_FEATURE_*), after clearcpuid=.
 * Any thread, any context (async-signal-safe: one load).
 */
#define boot_cpu_has(bit)	cpu_has(&boot_cpu_data, bit)

/*
 * Port of cpu_feature_enabled(), arch/x86/include/asm/cpufeature.h: feature
 * @bit is on. userspace: no build-time disabled features to fold to 0, and
 * the dynamic test rather than static_cpu_has(), whose site a later boot of
 * the same process may not have re-patched yet when this runs (the
 * alternatives pass itself asks). Any context.
 */
#define cpu_feature_enabled(bit)	boot_cpu_has(bit)

/*
 * Clear feature @bit (and every feature that depends on it) in
 * boot_cpu_data for the rest of this boot. Boot CPU, early boot only (before
 * apply_alternatives()); not async-signal-safe.
 */
void setup_clear_cpu_cap(unsigned int bit);

/*
 * Port of _static_cpu_has(), arch/x86/include/asm/cpufeature.h, v6.16: an
 * ALTERNATIVE_TERNARY site. Before apply_alternatives() the site jumps to a
 * dynamic test of the capability byte in .altinstr_aux; afterwards it is a
 * NOP (feature present) or a jump to the "no" side. @bit must be a constant.
 */
static __always_inline bool _static_cpu_has(u16 bit)
{
	asm goto(ALTERNATIVE_TERNARY("jmp 6f", %c[feature], "", "jmp %l[t_no]")
		 ".pushsection .altinstr_aux,\"ax\"\n"
		 "6:\n"
		 "	testb %[bitnum], %a[cap_byte]\n"
		 "	jnz %l[t_yes]\n"
		 "	jmp %l[t_no]\n"
		 ".popsection\n"
		 : : [feature] "i" (bit),
		     [bitnum] "i" (1 << (bit & 7)),
		     [cap_byte] "i" (&((const char *)boot_cpu_data.x86_capability)[bit >> 3])
		 : : t_yes, t_no);
t_yes:
	return true;
t_no:
	return false;
}

#define static_cpu_has(bit)						\
(									\
	__builtin_constant_p(boot_cpu_has(bit)) ?			\
		boot_cpu_has(bit) :					\
		_static_cpu_has(bit)					\
)

namespace pokelab {

/*
 * The kernel's /proc/cpuinfo name of feature @bit ("popcnt", "pni", ...), or
 * NULL if pokelab does not know it. Any thread.
 */
const char *x86FeatureName(unsigned int bit) noexcept;

/*
 * Look up a clearcpuid= token: a feature name (as x86FeatureName(), case
 * sensitive; "sse3" is also accepted for "pni") or a number word*32+bit in
 * decimal. Returns the bit, or -EINVAL. Any thread.
 */
int x86FeatureLookup(const std::string &token) noexcept;

/* Every feature pokelab can name, in bit order (for help texts). */
std::string x86FeatureNames();

/* True when the real CPUID (before clearcpuid=) reports feature @bit. */
bool x86FeatureInHardware(unsigned int bit) noexcept;

} /* namespace pokelab */
