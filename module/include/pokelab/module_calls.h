/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A static call and a static key pokelab exports to modules, so that a
 * module's inline static call sites and jump-label sites have keys of the
 * program's to link to (module/main.cpp defines them; static_call_mod and
 * static_key_mod are then what tie the module's sites to them).
 * pokelab_module_call_a() returns x + 1, _b() x + 2; the call starts as _a,
 * pokelab_module_call2 (a second key, for modules that need two) as _b.
 * pokelab_module_key starts off, and pokelab has no site of it itself.
 */
#pragma once

#include <linux/jump_label.h>
#include <linux/static_call.h>

DECLARE_STATIC_KEY_FALSE(pokelab_module_key);

extern "C" int pokelab_module_call_a(int x);
extern "C" int pokelab_module_call_b(int x);
DECLARE_STATIC_CALL(pokelab_module_call, pokelab_module_call_a);
DECLARE_STATIC_CALL(pokelab_module_call2, pokelab_module_call_b);
