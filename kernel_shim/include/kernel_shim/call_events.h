/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Cross-calls as the machine saw them: the sender's side (what it was asked
 * to call where, which CPUs its condition skipped, its return) and each
 * target's (the function begun and ended), kept by the core's
 * kernel/smp.c port and read by the checker's rule on waited cross-calls
 * (kernel_shim/xmc/calls.cpp, R9 in docs/testing.md).
 *
 * The record is the call's arguments and what each CPU ran, never what
 * the code waited for: a waited smp_call_function_many_cond() must return
 * only after every online CPU of its mask (less the sender) that its
 * condition did not skip has ended the function, whatever its wait loop
 * looked at.
 *
 *	sender (task context)			target (IPI handler, signal context)
 *	callBegin(): gen++, func, targets
 *	callSkipped(cpu) for a cond's "no"
 *	queue the csds, send the IPIs	----->	callFuncBegin(func, src): began = gen
 *						func(info)
 *						callFuncEnd(): ended = gen
 *	wait				<-----	csd_unlock() (release)
 *	callEnd(): the checker compares
 *
 * Each record has one writer: the sender its CallRecord (task context; a
 * CPU makes one cross-call at a time, never from an interrupt), the target
 * its row of CallRan (signal context, plain stores). The target credits a
 * call only when the function it runs is the one its sender's record
 * names, so an unrelated asynchronous call never counts for a waited one;
 * a late asynchronous run of the same function can (never stricter).
 *
 * Nothing here calls up but through callHooks, which the checker installs.
 */
#pragma once

#include <linux/compiler.h>
#include <linux/cpumask.h>
#include <linux/threads.h>
#include <linux/types.h>

namespace kshim {

struct alignas(SMP_CACHE_BYTES) CallRecord {
	u64 gen;		/* calls this CPU began; the current one's number (0: none) */
	unsigned long func;	/* the function sent */
	unsigned long caller;	/* the sender's caller (_RET_IP_ at the hook) */
	const char *sender;	/* the kernel function that sent it, for the report */
	u64 seq;		/* textWriteSeq when it began */
	bool wait;
	bool open;		/* between callBegin() and callEnd() */
	struct cpumask targets;	/* the mask's online CPUs, less the sender */
	struct cpumask skipped;	/* those the condition skipped */
};

extern CallRecord callRecords[NR_CPUS];

/* A target's runs of one sender's calls: the number of the call it last began and ended. */
struct CallRan {
	u64 began;
	u64 ended;
};

/* [target][sender], each row written by its target only. */
extern CallRan callRan[NR_CPUS][NR_CPUS];

/* The checker's calls, on the sending CPU, task context (none until it installs them). */
struct CallHooks {
	void (*skipped)(int sender, int cpu) noexcept;	/* right after the cond's "no" */
	void (*returned)(int sender) noexcept;		/* a waited call returns */
};

extern CallHooks callHooks;

/*
 * The calling CPU begins a cross-call of @func to the online CPUs of @mask
 * (or, @mask NULL, to CPU @single), from @sender (a kernel function's name)
 * called at @caller; @wait: the call waits for them.
 */
void callBegin(const char *sender, const struct cpumask *mask, int single, unsigned long func,
	       bool wait, unsigned long caller) noexcept;
/* The call's condition skipped @cpu. */
void callSkipped(int cpu) noexcept;
/* The call returns to its caller. */
void callEnd() noexcept;
/*
 * The calling CPU begins / ends a cross-call's @func sent by @src (itself
 * for a local run). Plain stores, async-signal-safe, no fence.
 */
void callFuncBegin(unsigned long func, int src) noexcept;
void callFuncEnd() noexcept;
/* Forget every record: boot, machine quiet. */
void callReset() noexcept;

} /* namespace kshim */
