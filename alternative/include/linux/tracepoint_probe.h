/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Probes on the context_tracking tracepoints (alternative/tracepoint.cpp).
 *
 * CUSTOM: kernel/tracepoint.c's tracepoint_probe_register() and
 * tracepoint_probe_unregister(), for user_enter and user_exit, one probe
 * each: registering turns the tracepoint's static key on (its sites in
 * __ct_user_enter() and __ct_user_exit() jump to the tracepoint's
 * iterator, which calls @probe), unregistering turns it off again (counted:
 * static_key_slow_inc()/dec()). Task context on a CPU; sleeps.
 */
#pragma once

#include <linux/jump_label.h>
#include <linux/tracepoint.h>
#include <trace/events/context_tracking.h>

/* A probe: called with the tracepoint's argument, on the CPU that hit it, IRQs off. */
using tracepoint_probe_t = void (*)(int arg);

/* 0, or -EINVAL for a tracepoint without a key or a NULL @probe. */
int tracepoint_probe_register(kshim::TraceType type, tracepoint_probe_t probe);
int tracepoint_probe_unregister(kshim::TraceType type);
