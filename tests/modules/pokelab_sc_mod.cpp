// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab_sc_mod: inline static calls of three keys, for the static-call
 * module notifier's tests (tests/module/module_static_call_test.cpp): two
 * keys pokelab exports (pokelab_module_call, pokelab_module_call2) and one
 * the module defines itself (pokelab_sc_mod_call), each called from a
 * function of its own, so that the module's sorted sites name three keys
 * and __static_call_init() makes a static_call_mod for each.
 */
#include <linux/compiler.h>
#include <linux/module.h>
#include <linux/static_call.h>
#include <pokelab/module_calls.h>

extern "C" __noinline int pokelab_sc_mod_a(int x)
{
	return x + 10;
}

extern "C" __noinline int pokelab_sc_mod_b(int x)
{
	return x + 20;
}

DEFINE_STATIC_CALL(pokelab_sc_mod_call, pokelab_sc_mod_a);

/* 11 or 21 (its own key), 2 or 3 (pokelab_module_call), 3 or 4 (_call2, which starts at _b) */
extern "C" __noinline int pokelab_sc_mod_own(int x)
{
	return static_call(pokelab_sc_mod_call)(x);
}

extern "C" __noinline int pokelab_sc_mod_core(int x)
{
	return static_call(pokelab_module_call)(x);
}

extern "C" __noinline int pokelab_sc_mod_core2(int x)
{
	return static_call(pokelab_module_call2)(x);
}

extern "C" int pokelab_sc_mod_init(void)
{
	return pokelab_sc_mod_own(1) == 11 ? 0 : -22;	/* -EINVAL */
}

extern "C" void pokelab_sc_mod_exit(void)
{
}

module_init(pokelab_sc_mod_init);
module_exit(pokelab_sc_mod_exit);
