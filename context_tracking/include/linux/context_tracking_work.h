/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Work deferred to a CPU's next kernel entry.
 *
 * PORT: written fresh after include/linux/context_tracking_work.h and
 * kernel/context_tracking.c of the deferral series, v7 (24/31
 * "context-tracking: Introduce work deferral infrastructure", with v7's
 * ct_set_cpu_work() fix), and its x86 half (25/31).
 */
#pragma once

enum {
	CT_WORK_SYNC_OFFSET,
	CT_WORK_MAX_OFFSET,
};

enum ct_work {
	CT_WORK_SYNC	= 1 << CT_WORK_SYNC_OFFSET,
	CT_WORK_MAX	= 1 << CT_WORK_MAX_OFFSET,
};

/*
 * Record @work for @cpu to run at its next kernel entry, if @cpu is an
 * isolated (active) CPU that is not in the kernel. Returns true if the work
 * was recorded (the caller may skip its IPI), false if the caller must IPI.
 * Memory ordering: fully ordered on success (cmpxchg on the state word),
 * pairing with the fully ordered add of the target's kernel entry.
 * Any CPU thread; async-signal-safe.
 */
bool ct_set_cpu_work(unsigned int cpu, enum ct_work work);

/* arch hook: run one deferred work item on this CPU. noinstr, NMI-safe. */
void arch_context_tracking_work(enum ct_work work);
