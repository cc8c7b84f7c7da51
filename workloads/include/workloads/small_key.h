/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A second static key with exactly two sites, for the case's small batch
 * (smp_text_poke_batch_finish(nr_entries=2), E. Dumazet's 324 -> 519 us).
 */
#pragma once

#include <linux/jump_label.h>

#include <workloads/bpf_prog.h>

DECLARE_STATIC_KEY_FALSE(pokelab_small_key);

namespace pokelab {

inline constexpr unsigned int kNrSmallKeySites = 2;

/*
 * The two functions, each with its own 5-byte site of pokelab_small_key;
 * like the BPF programs, a return value with kBpfRanWithStats set means the
 * enabled branch ran. Any CPU.
 */
const BpfProgFn *smallKeyProgs();

/*
 * Set the key to @val (0 or 1) through static_key_slow_inc()/dec() when it
 * changes: one two-entry batch. Task context, CPU 0. -EINVAL for other values.
 */
int small_key_write(int val);

} /* namespace pokelab */
