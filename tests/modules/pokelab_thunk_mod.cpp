// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab_thunk_mod: a module built as a mitigated kernel builds its
 * modules (-mindirect-branch=thunk-extern -mfunction-return=thunk-extern,
 * CONFIG_MITIGATION_RETHUNK; tests/modules/meson.build), so that its
 * indirect call goes through __x86_indirect_thunk_REG, its returns through
 * __x86_return_thunk, and its NULL static call's trampoline is a return
 * site: module_finalize() must rewrite them all as the boot's spectre_v2=
 * and retbleed= ask (tests/module/module_finalize_test.cpp).
 */
#include <linux/compiler.h>
#include <linux/module.h>
#include <linux/static_call.h>

/* 3x: a return */
extern "C" __noinline int pokelab_thunk_mod_leaf(int x)
{
	return x * 3;
}

/* an indirect call, then a return */
extern "C" __noinline int pokelab_thunk_mod_call(int (*f)(int), int x)
{
	return f(x) + 1;
}

DEFINE_STATIC_CALL_NULL(pokelab_thunk_mod_null, pokelab_thunk_mod_leaf);

extern "C" int pokelab_thunk_mod_init(void)
{
	static_call_cond(pokelab_thunk_mod_null)(1);	/* returns at once */
	return pokelab_thunk_mod_call(pokelab_thunk_mod_leaf, 2) == 7 ? 0 : -22;	/* -EINVAL */
}

extern "C" void pokelab_thunk_mod_exit(void)
{
}

module_init(pokelab_thunk_mod_init);
module_exit(pokelab_thunk_mod_exit);
