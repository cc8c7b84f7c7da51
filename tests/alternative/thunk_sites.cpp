// SPDX-License-Identifier: GPL-2.0-only
/*
 * Code built as a mitigated kernel is: -mindirect-branch=thunk-extern
 * -mfunction-return=thunk-extern (tests/meson.build), so that its indirect
 * calls go through __x86_indirect_thunk_REG and its returns through
 * __x86_return_thunk; pokelab-objtool records both (thunk-sites), and
 * apply_retpolines() / apply_returns() rewrite them at boot
 * (thunk_sites_test.cpp). The build defines CONFIG_MITIGATION_RETHUNK for it,
 * so its NULL static call's trampoline is "JMP __x86_return_thunk", a return
 * site too, which apply_returns() hands to __static_call_fixup().
 */
#include <linux/static_call.h>

extern "C" int pokelab_thunk_leaf(int x);
DEFINE_STATIC_CALL_NULL(pokelab_thunk_null, pokelab_thunk_leaf);

extern "C" __attribute__((noinline)) int pokelab_thunk_call(int (*f)(int), int x)
{
	return f(x) + 1;
}

extern "C" __attribute__((noinline)) int pokelab_thunk_tail(int (*f)(int), int x)
{
	return f(x);
}

extern "C" __attribute__((noinline)) int pokelab_thunk_leaf(int x)
{
	return x * 3;
}
