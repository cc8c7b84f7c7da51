// SPDX-License-Identifier: GPL-2.0-only
/*
 * The boot CPU's features from CPUID, and clearcpuid=.
 *
 * Port of get_cpu_cap() (arch/x86/kernel/cpu/common.c), do_clear_cpu_cap()
 * with a subset of cpuid_deps[] (arch/x86/kernel/cpu/cpuid-deps.c) and the
 * clearcpuid= parsing of cpu_parse_early_param(), v6.16.
 *
 * Deviations (marked "userspace:"):
 *  - only the words pokelab names are read (cpufeatures.h);
 *  - AVX/AVX2/AVX-512 are cleared when XCR0 does not enable their state,
 *    as the kernel's xstate setup does, so that a reported feature works;
 *  - clearcpuid= rejects an unknown name with a message (the kernel prints
 *    and goes on) and is reset at every boot.
 */
#include <cerrno>
#include <cpuid.h>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include <asm/cpufeature.h>
#include <kernel_shim/boot.h>
#include <kernel_shim/machine.h>
#include <linux/bug.h>

struct cpuinfo_x86 boot_cpu_data;

namespace {

struct cpuinfo_x86 hw_caps;	/* from CPUID, before clearcpuid= */

void cpuid_count(unsigned int leaf, unsigned int sub, unsigned int *a, unsigned int *b,
		 unsigned int *c, unsigned int *d)
{
	__cpuid_count(leaf, sub, *a, *b, *c, *d);
}

inline void set_cap(struct cpuinfo_x86 *c, unsigned int bit)
{
	c->x86_capability[bit >> 5] |= 1u << (bit & 31);
}

inline void clear_cap(struct cpuinfo_x86 *c, unsigned int bit)
{
	c->x86_capability[bit >> 5] &= ~(1u << (bit & 31));
}

/* Port of get_cpu_cap(), arch/x86/kernel/cpu/common.c (the leaves pokelab reads) */
void get_cpu_cap(struct cpuinfo_x86 *c)
{
	unsigned int eax, ebx, ecx, edx;
	unsigned int max_std = __get_cpuid_max(0, nullptr);
	unsigned int max_ext = __get_cpuid_max(0x80000000, nullptr);

	*c = {};

	if (max_std >= 0x00000001) {
		cpuid_count(0x00000001, 0, &eax, &ebx, &ecx, &edx);
		c->x86_capability[0] = edx;
		c->x86_capability[4] = ecx;
	}

	if (max_std >= 0x00000007) {
		cpuid_count(0x00000007, 0, &eax, &ebx, &ecx, &edx);
		c->x86_capability[9] = ebx;
		c->x86_capability[16] = ecx;
		c->x86_capability[18] = edx;
	}

	if (max_std >= 0x0000000d) {
		cpuid_count(0x0000000d, 1, &eax, &ebx, &ecx, &edx);
		c->x86_capability[10] = eax;
	}

	if (max_ext >= 0x80000001) {
		cpuid_count(0x80000001, 0, &eax, &ebx, &ecx, &edx);
		c->x86_capability[6] = ecx;
		c->x86_capability[1] = edx;
	}

	/* Linux-defined word 3: ALWAYS is always there. */
	set_cap(c, X86_FEATURE_ALWAYS);

	/*
	 * userspace: the synthetic mitigation bits bugs.c would set, as for a
	 * CPU that needs retpolines and the return thunk (spectre_v2=retpoline,
	 * retbleed=unret); spectre_v2=, retbleed= and clearcpuid= change them
	 * (apply_returns.cpp).
	 */
	set_cap(c, X86_FEATURE_RETPOLINE);
	set_cap(c, X86_FEATURE_RETHUNK);

	/*
	 * userspace: the register state must be enabled by the OS (XCR0) for
	 * AVX and AVX-512 to be usable; the kernel clears them in its xstate
	 * setup when it does not enable that state.
	 */
	if (cpu_has(c, X86_FEATURE_OSXSAVE)) {
		unsigned int lo, hi;

		asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
		if ((lo & 0x6) != 0x6) {		/* SSE + AVX state */
			clear_cap(c, X86_FEATURE_AVX);
			clear_cap(c, X86_FEATURE_AVX2);
			clear_cap(c, X86_FEATURE_AVX512F);
		}
		if ((lo & 0xe0) != 0xe0)		/* opmask + ZMM state */
			clear_cap(c, X86_FEATURE_AVX512F);
	} else {
		clear_cap(c, X86_FEATURE_AVX);
		clear_cap(c, X86_FEATURE_AVX2);
		clear_cap(c, X86_FEATURE_AVX512F);
	}
}

/* Filled before main(): boot_cpu_has() works before the first boot too. */
struct CapsInit {
	CapsInit()
	{
		get_cpu_cap(&hw_caps);
		boot_cpu_data = hw_caps;
	}
} capsInit;

struct cpuid_dep {
	unsigned int feature;
	unsigned int depends;
};

/* Subset of cpuid_deps[], arch/x86/kernel/cpu/cpuid-deps.c: feature needs depends. */
const struct cpuid_dep cpuid_deps[] = {
	{X86_FEATURE_XSAVEOPT, X86_FEATURE_XSAVE},
	{X86_FEATURE_XSAVEC, X86_FEATURE_XSAVE},
	{X86_FEATURE_XSAVES, X86_FEATURE_XSAVE},
	{X86_FEATURE_AVX, X86_FEATURE_XSAVE},
	{X86_FEATURE_FMA, X86_FEATURE_AVX},
	{X86_FEATURE_F16C, X86_FEATURE_XMM2},
	{X86_FEATURE_AES, X86_FEATURE_XMM2},
	{X86_FEATURE_XMM2, X86_FEATURE_XMM},
	{X86_FEATURE_XMM3, X86_FEATURE_XMM2},
	{X86_FEATURE_SSSE3, X86_FEATURE_XMM2},
	{X86_FEATURE_XMM4_1, X86_FEATURE_XMM2},
	{X86_FEATURE_XMM4_2, X86_FEATURE_XMM2},
	{X86_FEATURE_AVX2, X86_FEATURE_AVX},
	{X86_FEATURE_AVX512F, X86_FEATURE_AVX},
	{X86_FEATURE_AVX512DQ, X86_FEATURE_AVX512F},
	{X86_FEATURE_AVX512CD, X86_FEATURE_AVX512F},
	{X86_FEATURE_AVX512BW, X86_FEATURE_AVX512F},
	{X86_FEATURE_AVX512VL, X86_FEATURE_AVX512F},
	{X86_FEATURE_AVX512VBMI, X86_FEATURE_AVX512BW},
	{X86_FEATURE_AVX512_VPOPCNTDQ, X86_FEATURE_AVX512F},
	{X86_FEATURE_VAES, X86_FEATURE_AVX},
	{X86_FEATURE_VPCLMULQDQ, X86_FEATURE_AVX},
	{X86_FEATURE_GFNI, X86_FEATURE_XMM2},
};

/* Port of do_clear_cpu_cap(), arch/x86/kernel/cpu/cpuid-deps.c: @feature and its dependents */
void do_clear_cpu_cap(struct cpuinfo_x86 *c, unsigned int feature)
{
	bool changed;

	clear_cap(c, feature);
	do {
		changed = false;
		for (const struct cpuid_dep &d : cpuid_deps) {
			if (!cpu_has(c, d.feature) || cpu_has(c, d.depends))
				continue;
			clear_cap(c, d.feature);
			changed = true;
		}
	} while (changed);
}

struct FeatureName {
	unsigned int bit;
	const char *name;	/* /proc/cpuinfo spelling */
};

const FeatureName featureNames[] = {
	{X86_FEATURE_FPU, "fpu"},
	{X86_FEATURE_TSC, "tsc"},
	{X86_FEATURE_CX8, "cx8"},
	{X86_FEATURE_CMOV, "cmov"},
	{X86_FEATURE_CLFLUSH, "clflush"},
	{X86_FEATURE_FXSR, "fxsr"},
	{X86_FEATURE_XMM, "sse"},
	{X86_FEATURE_XMM2, "sse2"},
	{X86_FEATURE_SYSCALL, "syscall"},
	{X86_FEATURE_NX, "nx"},
	{X86_FEATURE_RDTSCP, "rdtscp"},
	{X86_FEATURE_LM, "lm"},
	{X86_FEATURE_XMM3, "pni"},
	{X86_FEATURE_PCLMULQDQ, "pclmulqdq"},
	{X86_FEATURE_SSSE3, "ssse3"},
	{X86_FEATURE_FMA, "fma"},
	{X86_FEATURE_CX16, "cx16"},
	{X86_FEATURE_XMM4_1, "sse4_1"},
	{X86_FEATURE_XMM4_2, "sse4_2"},
	{X86_FEATURE_MOVBE, "movbe"},
	{X86_FEATURE_POPCNT, "popcnt"},
	{X86_FEATURE_AES, "aes"},
	{X86_FEATURE_XSAVE, "xsave"},
	{X86_FEATURE_OSXSAVE, "osxsave"},
	{X86_FEATURE_AVX, "avx"},
	{X86_FEATURE_F16C, "f16c"},
	{X86_FEATURE_RDRAND, "rdrand"},
	{X86_FEATURE_HYPERVISOR, "hypervisor"},
	{X86_FEATURE_LAHF_LM, "lahf_lm"},
	{X86_FEATURE_ABM, "abm"},
	{X86_FEATURE_FSGSBASE, "fsgsbase"},
	{X86_FEATURE_BMI1, "bmi1"},
	{X86_FEATURE_AVX2, "avx2"},
	{X86_FEATURE_BMI2, "bmi2"},
	{X86_FEATURE_ERMS, "erms"},
	{X86_FEATURE_AVX512F, "avx512f"},
	{X86_FEATURE_AVX512DQ, "avx512dq"},
	{X86_FEATURE_RDSEED, "rdseed"},
	{X86_FEATURE_ADX, "adx"},
	{X86_FEATURE_CLFLUSHOPT, "clflushopt"},
	{X86_FEATURE_CLWB, "clwb"},
	{X86_FEATURE_AVX512CD, "avx512cd"},
	{X86_FEATURE_SHA_NI, "sha_ni"},
	{X86_FEATURE_AVX512BW, "avx512bw"},
	{X86_FEATURE_AVX512VL, "avx512vl"},
	{X86_FEATURE_XSAVEOPT, "xsaveopt"},
	{X86_FEATURE_XSAVEC, "xsavec"},
	{X86_FEATURE_XGETBV1, "xgetbv1"},
	{X86_FEATURE_XSAVES, "xsaves"},
	{X86_FEATURE_AVX512VBMI, "avx512vbmi"},
	{X86_FEATURE_UMIP, "umip"},
	{X86_FEATURE_GFNI, "gfni"},
	{X86_FEATURE_VAES, "vaes"},
	{X86_FEATURE_VPCLMULQDQ, "vpclmulqdq"},
	{X86_FEATURE_AVX512_VPOPCNTDQ, "avx512_vpopcntdq"},
	{X86_FEATURE_RDPID, "rdpid"},
	{X86_FEATURE_FSRM, "fsrm"},
	{X86_FEATURE_SERIALIZE, "serialize"},
	/* userspace: the kernel names no synthetic mitigation bit; these take clearcpuid= */
	{X86_FEATURE_RETPOLINE, "retpoline"},
	{X86_FEATURE_RETPOLINE_LFENCE, "retpoline_lfence"},
	{X86_FEATURE_RETHUNK, "rethunk"},
};

/* clearcpuid='s features as given (every clearcpuid=, joined), for the machine line */
std::string clearedText;

/* clearcpuid=: parsed at every boot, applied to a fresh copy of the hardware bits */
int setClearCpuid(const char *val, std::string &err)
{
	std::string s = val ? val : "";
	size_t pos = 0;

	if (s.empty()) {
		err = "clearcpuid=: empty; expected clearcpuid=FEATURE[,FEATURE...] with "
		      "names such as popcnt,avx2 or numbers word*32+bit";
		return -EINVAL;
	}
	while (pos <= s.size()) {
		size_t comma = s.find(',', pos);
		std::string tok = s.substr(pos, comma == std::string::npos ? std::string::npos
									   : comma - pos);
		int bit = pokelab::x86FeatureLookup(tok);

		if (bit < 0) {
			err = fmt::format("clearcpuid={}: unknown feature '{}'; expected names "
					  "from: {} (or a number word*32+bit below {})", s, tok,
					  pokelab::x86FeatureNames(), NCAPINTS * 32);
			return -EINVAL;
		}
		if (bit == X86_FEATURE_ALWAYS) {
			err = fmt::format("clearcpuid={}: feature {} is X86_FEATURE_ALWAYS, which "
					  "cannot be cleared", s, tok);
			return -EINVAL;
		}
		setup_clear_cpu_cap(bit);
		if (comma == std::string::npos)
			break;
		pos = comma + 1;
	}
	clearedText += (clearedText.empty() ? "" : ",") + s;
	return 0;
}

/* userspace: the machine line names the features cleared */
int clearCpuidAttr(std::string &)
{
	if (!clearedText.empty())
		kshim::setMachineAttr("clearcpuid", clearedText);
	return 0;
}

kshim::BootHookRegistrar clearCpuidHook({"clearcpuid", kshim::BootStage::Early, clearCpuidAttr});

kshim::BootParamRegistrar clearCpuidParam({
	"clearcpuid", setClearCpuid,
	[] {
		boot_cpu_data = hw_caps;
		clearedText.clear();
	},
	"clearcpuid=FEATURE[,FEATURE...]: pretend the CPU lacks these features "
	"(names as in /proc/cpuinfo, or word*32+bit numbers)",
});

} /* namespace */

/* Port of setup_clear_cpu_cap(), arch/x86/kernel/cpu/cpuid-deps.c */
void setup_clear_cpu_cap(unsigned int bit)
{
	BUG_ON(bit >= NCAPINTS * 32);
	/* userspace: the kernel also records it in cpu_caps_cleared for the APs; ours share one */
	do_clear_cpu_cap(&boot_cpu_data, bit);
}

namespace pokelab {

const char *x86FeatureName(unsigned int bit) noexcept
{
	for (const FeatureName &f : featureNames)
		if (f.bit == bit)
			return f.name;
	return nullptr;
}

int x86FeatureLookup(const std::string &token) noexcept
{
	char *end;
	long n;

	if (token.empty())
		return -EINVAL;
	if (token == "sse3")
		return X86_FEATURE_XMM3;
	if (token == "always")
		return X86_FEATURE_ALWAYS;
	for (const FeatureName &f : featureNames)
		if (token == f.name)
			return f.bit;
	errno = 0;
	n = strtol(token.c_str(), &end, 10);
	if (errno || *end || n < 0 || n >= NCAPINTS * 32)
		return -EINVAL;
	return (int)n;
}

std::string x86FeatureNames()
{
	std::string s;

	for (const FeatureName &f : featureNames)
		s += (s.empty() ? "" : ",") + std::string(f.name);
	return s;
}

bool x86FeatureInHardware(unsigned int bit) noexcept
{
	return cpu_has(&hw_caps, bit);
}

} /* namespace pokelab */
