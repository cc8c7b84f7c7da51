// SPDX-License-Identifier: GPL-2.0-only
/*
 * The context_tracking tracepoints' static keys and the probes a CPU
 * registers on them (alternative/include/linux/tracepoint_probe.h).
 *
 * CUSTOM: kernel/tracepoint.c, cut to what a probe on user_enter and
 * user_exit needs: one probe per tracepoint, called by the tracepoint's
 * iterator (__traceiter_*(), instrumentable text) when the key's site in
 * __ct_user_enter() / __ct_user_exit() jumps to it. The keys are _NOINSTR
 * (their sites are in noinstr text: every batch that flips one IPIs every
 * CPU); the iterator is not noinstr, and the probe it calls is ordinary
 * kernel text that deferred batches patch: a caller that runs it before
 * the entry's flush (in the extended quiescent state) may run stale text.
 * The iterator is where the cross-modifying-code model learns that the CPU
 * fetches instrumentable text (kernel_shim/xmc.h).
 */
#include <cerrno>

#include <linux/compiler.h>
#include <linux/jump_label.h>
#include <linux/tracepoint_probe.h>

#include <kernel_shim/xmc.h>

DEFINE_STATIC_KEY_FALSE_NOINSTR(__tracepoint_user_enter);
DEFINE_STATIC_KEY_FALSE_NOINSTR(__tracepoint_user_exit);

static tracepoint_probe_t tracepoint_probes[(int)kshim::TraceType::NrTypes];

static struct static_key *tracepoint_key(kshim::TraceType type)
{
	switch (type) {
	case kshim::TraceType::UserEnter:
		return &__tracepoint_user_enter.key;
	case kshim::TraceType::UserExit:
		return &__tracepoint_user_exit.key;
	default:
		return nullptr;
	}
}

/* The tracepoints' __traceiter_*(): instrumentable text, any context the probe allows. */
static __noinline void tracepoint_iter(kshim::TraceType type, int arg) noexcept
{
	tracepoint_probe_t probe;

	/* userspace: instrumentable text begins (kernel_shim/xmc.h) */
	kshim::xmcInstrumentationBegin(_THIS_IP_);
	probe = __atomic_load_n(&tracepoint_probes[(int)type], __ATOMIC_ACQUIRE);
	if (probe)
		probe(arg);
}

int tracepoint_probe_register(kshim::TraceType type, tracepoint_probe_t probe)
{
	struct static_key *key = tracepoint_key(type);

	if (!key || !probe)
		return -EINVAL;
	__atomic_store_n(&tracepoint_probes[(int)type], probe, __ATOMIC_RELEASE);
	kshim::traceIter = tracepoint_iter;
	static_key_slow_inc(key);
	return 0;
}

int tracepoint_probe_unregister(kshim::TraceType type)
{
	struct static_key *key = tracepoint_key(type);

	if (!key)
		return -EINVAL;
	/* the probe stays: a CPU past the site until the key's batch synced still calls it */
	static_key_slow_dec(key);
	return 0;
}
