/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The host scheduler as the simulated CPUs see it, and their idle loop.
 *
 * A kernel CPU is hardware: nothing deschedules it. A simulated CPU is a host
 * thread, and when CPUs outnumber PUs a busy one keeps its PU for a whole
 * host time slice (milliseconds) while an IPI to a CPU that is not running
 * waits for that CPU to be scheduled. schedTick() models what a time-sliced
 * machine would need: a CPU in a long loop calls it where kernel code would
 * call cond_resched() (and where the tick would preempt a user task), and on
 * an oversubscribed machine, once the CPU has run pokelab.slice_us
 * (default 10 us) since it last gave way, it yields its PU to the next
 * runnable CPU. On a machine with a PU per CPU it is one load and a branch.
 *
 * Idle (idle= as the kernel's, plus a haltpoll-like default): a CPU with
 * nothing to run polls for kHaltPollNs (the 200 us of cpuidle-haltpoll's
 * guest_halt_poll_ns) and then sleeps in the host kernel until a task or an
 * IPI wakes it; an IPI taken while idle starts a new poll window, as the
 * kernel re-enters its idle governor after the interrupt. idle=poll never
 * sleeps; idle=halt sleeps at once (the wake-up then costs a host wake-up).
 */
#pragma once

#include <linux/compiler.h>
#include <linux/types.h>

namespace kshim {

/* Boot-time state behind schedTick(); 0 when the machine is not oversubscribed. */
extern u64 schedSliceNs;
void schedTickSlow() noexcept;

/*
 * Give way if this CPU has had its slice on an oversubscribed machine. Task
 * context of a CPU thread (a non-CPU thread returns at once); not from the
 * IPI or INT3 handlers, nor with IRQs off (a CPU that masked interrupts is
 * not preemptible). Async-signal-safe in itself (a clock read and
 * sched_yield()), but never called from a handler.
 */
static __always_inline void schedTick() noexcept
{
	if (unlikely(__atomic_load_n(&schedSliceNs, __ATOMIC_RELAXED)))
		schedTickSlow();
}

/*
 * A sleeping point of a CPU's own thread (docs/kernel_shim.md, "Work
 * queues"): cpuSleepBegin() lends the calling CPU to its kworker, as the
 * kernel's scheduler runs a runnable kworker while the current task
 * sleeps, and takes the thread out of RCU for the sleep (an extended
 * quiescent state); cpuSleepEnd() waits for the kworker to finish the item
 * it runs and takes the CPU back. Nothing is lent (token 0) on a thread
 * that is not a CPU's own, before the kworkers start, with preemption or
 * IRQs off, in an IRQ, or while the caller holds a struct mutex unless
 * @holdingOk (a kworker blocked on the caller's mutex would hold the CPU
 * the caller needs to let it go). Task context; not async-signal-safe.
 */
int cpuSleepBegin(bool holdingOk) noexcept;
void cpuSleepEnd(int token) noexcept;

/* Times the CPU @cpu gave way in schedTick() since boot. Any thread. */
unsigned long schedYields(int cpu) noexcept;

enum class IdleMode { HaltPoll, Poll, Halt };
inline constexpr u64 kHaltPollNs = 200000;

/*
 * What an interrupt does to the calling CPU's idle loop: a CPU asleep in it
 * wakes and polls for a new window, as the kernel re-enters its idle
 * governor after any interrupt. Called by the IPI handler, and by a bench's
 * raw signal handler that stands for an interrupt (tools/bench/ipi.cpp).
 * One atomic add (release); async-signal-safe; on a CPU's own thread, in a
 * signal handler (a thread that is no CPU's returns at once).
 */
void cpuIdleInterrupted() noexcept;

/* The idle= mode of the running machine, and its name ("haltpoll", "poll", "halt"). */
IdleMode idleMode() noexcept;
const char *idleModeName(IdleMode m) noexcept;

} /* namespace kshim */
