// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab_alt_mod: three alternatives (X86_FEATURE_ALWAYS), applied by
 * module_finalize() while the module is still MODULE_STATE_UNFORMED, each
 * with a text_poke_early() of its own (tests/module/module_finalize_test.cpp
 * counts the serialisations around them). pokelab_alt_mod_sum() is 3 as
 * compiled and 6 with the replacements.
 */
#include <asm/alternative.h>
#include <asm/cpufeatures.h>
#include <linux/compiler.h>
#include <linux/module.h>

extern "C" __noinline int pokelab_alt_mod_sum(void)
{
	int a, b, c;

	asm volatile(ALTERNATIVE("movl $1, %0", "movl $2, %0", X86_FEATURE_ALWAYS) : "=r"(a));
	asm volatile(ALTERNATIVE("movl $1, %0", "movl $2, %0", X86_FEATURE_ALWAYS) : "=r"(b));
	asm volatile(ALTERNATIVE("movl $1, %0", "movl $2, %0", X86_FEATURE_ALWAYS) : "=r"(c));
	return a + b + c;
}

extern "C" int pokelab_alt_mod_init(void)
{
	return pokelab_alt_mod_sum() == 6 ? 0 : -22;	/* -EINVAL */
}

extern "C" void pokelab_alt_mod_exit(void)
{
}

module_init(pokelab_alt_mod_init);
module_exit(pokelab_alt_mod_exit);
