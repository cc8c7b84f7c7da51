// SPDX-License-Identifier: GPL-2.0-only
/*
 * The demo's BPF programs: 164 distinct instances of an inlined
 * bpf_prog_run() whose stats accounting sits behind
 * static_branch_unlikely(&bpf_stats_enabled_key), as in
 * include/linux/filter.h. Each instance is a real function with its own
 * 5-byte NOP site that the key's flip patches live.
 */
#include <array>
#include <utility>
#include <x86intrin.h>

#include <linux/mutex.h>
#include <linux/percpu.h>

#include <workloads/bpf_prog.h>

DEFINE_STATIC_KEY_FALSE(bpf_stats_enabled_key);

namespace pokelab {

namespace {

struct bpf_prog_stats {
	u64 cnt;
	u64 nsecs;	/* userspace: TSC cycles, not ns; only the demo reads it */
};

DEFINE_PER_CPU(struct bpf_prog_stats, bpf_prog_stats);

/* The "JIT-ed program": a little work that depends on the instance. */
template<int N>
static __always_inline unsigned int bpf_func(const BpfCtx *ctx)
{
	return (unsigned int)((ctx->arg * (N + 1)) ^ N) & 0xffff;
}

/* Port of __bpf_prog_run(), include/linux/filter.h (the stats part) */
template<int N>
static __always_inline unsigned int __bpf_prog_run(const BpfCtx *ctx)
{
	unsigned int ret;

	if (static_branch_unlikely(&bpf_stats_enabled_key)) {
		struct bpf_prog_stats *stats;
		u64 start = __rdtsc();

		ret = bpf_func<N>(ctx);
		stats = this_cpu_ptr(&bpf_prog_stats);
		stats->cnt++;
		stats->nsecs += __rdtsc() - start;
		return ret | kBpfRanWithStats;
	}
	return bpf_func<N>(ctx);
}

template<int N>
__noinline unsigned int bpf_prog_run(const BpfCtx *ctx)
{
	return __bpf_prog_run<N>(ctx);
}

template<size_t... I>
constexpr std::array<BpfProgFn, sizeof...(I)> makeProgs(std::index_sequence<I...>)
{
	return {&bpf_prog_run<I>...};
}

const std::array<BpfProgFn, 164> progs = makeProgs(std::make_index_sequence<164>());

DEFINE_MUTEX(bpf_stats_enabled_mutex);
int saved_val;

} /* namespace */

const BpfProgFn *bpfProgs()
{
	return progs.data();
}

unsigned long bpfProgStatsCnt(int cpu)
{
	return per_cpu_ptr(&bpf_prog_stats, cpu)->cnt;
}

/* Port of bpf_stats_handler(), kernel/bpf/syscall.c (the write side) */
int bpf_stats_handler_write(int val)
{
	if (val < 0 || val > 1)
		return -EINVAL;

	mutex_lock(&bpf_stats_enabled_mutex);
	if (val != saved_val) {
		if (val)
			static_key_slow_inc(&bpf_stats_enabled_key.key);
		else
			static_key_slow_dec(&bpf_stats_enabled_key.key);
		saved_val = val;
	}
	mutex_unlock(&bpf_stats_enabled_mutex);
	return 0;
}

} /* namespace pokelab */
