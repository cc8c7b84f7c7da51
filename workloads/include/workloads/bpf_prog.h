/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * 164 bpf_prog_run() instances, each with its own static-branch site of
 * bpf_stats_enabled_key (tools/demo/bpf_prog.cpp).
 */
#pragma once

#include <linux/jump_label.h>

DECLARE_STATIC_KEY_FALSE(bpf_stats_enabled_key);

namespace pokelab {

struct BpfCtx {
	unsigned long arg;
};

/* Bit set in a program's return value when it ran with stats accounting. */
inline constexpr unsigned int kBpfRanWithStats = 0x10000;

using BpfProgFn = unsigned int (*)(const BpfCtx *ctx);

/* The instances, in address order of nothing in particular. */
const BpfProgFn *bpfProgs();

/* Stats the accounting branch collected on @cpu (run count). */
unsigned long bpfProgStatsCnt(int cpu);

/*
 * The kernel.bpf_stats_enabled sysctl write: 0 or 1; flips the key through
 * static_key_slow_inc()/dec() when the value changes. Task context, CPU 0.
 */
int bpf_stats_handler_write(int val);

} /* namespace pokelab */
