/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Bug replays that a test calls directly, beside the fixed code (the others
 * are chosen at their call sites by the switches of pokelab/bug_switches.h).
 * Test-only; no kernel header includes this one.
 */
#pragma once

#include <linux/types.h>

/* __emulate_cc() of before 8924779df820: JLE/JG with "and". Any context. */
bool __emulate_cc_pre_8924779df820(unsigned long flags, u8 cc);
