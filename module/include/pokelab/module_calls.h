/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A static call pokelab exports to modules (EXPORT_STATIC_CALL()), so that a
 * module's inline static call sites have a key of the program's to link to
 * (module/main.cpp defines it). pokelab_module_call_a() returns x + 1,
 * _b() x + 2; the call starts as _a. Any context.
 */
#pragma once

#include <linux/static_call.h>

extern "C" int pokelab_module_call_a(int x);
extern "C" int pokelab_module_call_b(int x);
DECLARE_STATIC_CALL(pokelab_module_call, pokelab_module_call_a);
