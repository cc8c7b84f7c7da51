/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * instrumentation_begin()/instrumentation_end(): where noinstr code lets
 * instrumentable code run.
 *
 * PORT: written fresh after include/linux/instrumentation.h. In the kernel
 * they are annotations for objtool; in pokelab instrumentation_begin() is
 * also where the checker looks: a CPU that reaches it with text older than
 * the last returned sync round, and no deferred sync pending, is running
 * stale kernel text (docs/context_tracking.md). Async-signal-safe.
 */
#pragma once

#include <linux/compiler.h>

namespace pokelab {
/* The checker, on when pokelab.ct_check=1 (tests turn it on). */
void ctCheckInstrumentation(unsigned long ip) noexcept;
} /* namespace pokelab */

#define instrumentation_begin() pokelab::ctCheckInstrumentation(_THIS_IP_)
#define instrumentation_end() barrier()
