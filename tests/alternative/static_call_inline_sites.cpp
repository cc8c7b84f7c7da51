// SPDX-License-Identifier: GPL-2.0-only
/*
 * Call sites of an inline static call in the program's own text: built as
 * an object of its own so that pokelab-objtool can record them
 * (tests/meson.build), then linked into the test with its static_call_sites
 * (static_call_inline_test.cpp).
 */
#include <linux/static_call.h>

extern "C" int pokelab_sc_inline_a(int x);
DECLARE_STATIC_CALL(pokelab_sc_inline, pokelab_sc_inline_a);

/* a tail call: JMP __SCT__pokelab_sc_inline */
extern "C" __attribute__((noinline)) int pokelab_sc_inline_tail(int x)
{
	return static_call(pokelab_sc_inline)(x);
}

/* a call: CALL __SCT__pokelab_sc_inline */
extern "C" __attribute__((noinline)) int pokelab_sc_inline_call(int x)
{
	return static_call(pokelab_sc_inline)(x) + 10;
}
