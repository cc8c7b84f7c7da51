/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pokelab's own alternative sites (alternative/alt_sites.cpp), patched at
 * boot like the kernel's: each function runs one site, and the counters
 * tell which side ran. Any CPU thread or the boot thread; not from signal
 * handlers (they run patchable code).
 */
#pragma once

#include <linux/types.h>

extern "C" {
/* ALTERNATIVE("call __sw_hweight32", "popcnt", X86_FEATURE_POPCNT), as arch/x86 hweight */
unsigned int pokelab_hweight32(unsigned int w);
/* ALTERNATIVE("rep movsb", "call pokelab_copy_alternative", ALT_NOT(X86_FEATURE_FSRM)) */
void pokelab_copy(void *dst, const void *src, size_t len);
/* ALTERNATIVE_2: 0 by default, 1 with SSE2, 2 with AVX2 (the later entry wins) */
int pokelab_alt_level(void);
/* RIP-relative load: pokelab_alt_old_val, or pokelab_alt_new_val with SSE2 */
int pokelab_alt_rip_load(void);
/* ALT_CALL_ALWAYS: "call *pokelab_alt_op(%rip)" becomes a direct call at boot */
int pokelab_alt_direct_call(void);
/* static_cpu_has(X86_FEATURE_POPCNT) */
bool pokelab_static_has_popcnt(void);

/* Calls that took the software side of the sites above (since the last reset). */
extern unsigned long pokelab_sw_hweight_calls;
extern unsigned long pokelab_copy_alternative_calls;

extern int pokelab_alt_old_val;
extern int pokelab_alt_new_val;
/* The pointer the DIRECT_CALL site reads at boot; starts as pokelab_alt_op_a. */
extern int (*pokelab_alt_op)(void);
int pokelab_alt_op_a(void);	/* returns 0xa */
int pokelab_alt_op_b(void);	/* returns 0xb */

/* The site addresses (labels at each site's first byte). */
extern const u8 pokelab_site_hweight[], pokelab_site_copy[], pokelab_site_level[],
	pokelab_site_rip[], pokelab_site_direct_call[];
}
