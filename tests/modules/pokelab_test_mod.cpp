// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab_test_mod: the module the loader's test and the torture module
 * writer load (docs/modules.md). It has what a module brings to the
 * patching code: its own static key with a site in its text and one in
 * its noinstr text, an alternative applied at load (X86_FEATURE_ALWAYS,
 * so the replacement must be what init_module() sees), inline static
 * calls of a static call pokelab exports (a tail call and a call), and
 * calls to a symbol pokelab exports.
 *
 * Built as a relocatable object by modules/meson.build; no this_cpu_*()
 * or preempt_disable() here (TLS, see pokelab/module_load.h).
 */
#include <asm/alternative.h>
#include <asm/cpufeatures.h>
#include <linux/compiler.h>
#include <linux/jump_label.h>
#include <linux/module.h>
#include <pokelab/module_calls.h>

/* Exported by pokelab (module/main.cpp): what the module tells its loader. */
extern "C" void pokelab_module_report(const char *mod, int event, long val);

DEFINE_STATIC_KEY_FALSE(pokelab_test_mod_key);

/* 1 with the key off, 2 with it on */
extern "C" __noinline int pokelab_test_mod_site(void)
{
	if (static_branch_unlikely(&pokelab_test_mod_key))
		return 2;
	return 1;
}

/* A site of pokelab's own exported key: the module is linked to a key it does not own */
extern "C" __noinline int pokelab_test_mod_core_site(void)
{
	if (static_branch_unlikely(&pokelab_module_key))
		return 4;
	return 3;
}

/* The same test in the module's noinstr text (MOD_NOINSTR_TEXT) */
extern "C" noinstr int pokelab_test_mod_noinstr_site(void)
{
	if (static_branch_unlikely(&pokelab_test_mod_key))
		return 20;
	return 10;
}

/*
 * Inline static calls of pokelab's exported pokelab_module_call: a tail call
 * (JMP __SCT__...) and a call (CALL __SCT__...), each recorded by
 * pokelab-objtool in the module's static_call_sites and rewritten at load.
 */
extern "C" __noinline int pokelab_test_mod_tail_call(int x)
{
	return static_call(pokelab_module_call)(x);
}

extern "C" __noinline int pokelab_test_mod_call(int x)
{
	return static_call(pokelab_module_call)(x) + 100;
}

/* 1 as compiled; 2 once apply_alternatives() took the replacement */
extern "C" __noinline int pokelab_test_mod_alt(void)
{
	int v;

	asm volatile(ALTERNATIVE("movl $1, %0", "movl $2, %0", X86_FEATURE_ALWAYS) : "=r"(v));
	return v;
}

extern "C" int pokelab_test_mod_init(void)
{
	pokelab_module_report("pokelab_test_mod", 1, pokelab_test_mod_alt());
	return 0;
}

extern "C" void pokelab_test_mod_exit(void)
{
	pokelab_module_report("pokelab_test_mod", 2, pokelab_test_mod_site());
}

module_init(pokelab_test_mod_init);
module_exit(pokelab_test_mod_exit);
