/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The entry model: a CPU runs "user mode" code and enters the kernel by a
 * syscall, by an interrupt (an IPI), or by leaving idle.
 *
 * The kernel-named entry functions (enter_from_user_mode(),
 * exit_to_user_mode(), the irqentry hooks) live in the noinstr section;
 * the task helpers below run them on a CPU thread. All run on the CPU they
 * concern, from a cpuRun() task.
 */
#pragma once

#include <string>

#include <atomic>

#include <linux/types.h>

struct pt_regs;

/* Port of enter_from_user_mode(), include/linux/irq-entry-common.h. IRQs off. noinstr. */
void enter_from_user_mode(struct pt_regs *regs);
/* Port of exit_to_user_mode(), include/linux/irq-entry-common.h. IRQs off. noinstr. */
void exit_to_user_mode(void);

namespace pokelab {

/*
 * Leave the kernel for user mode (exit_to_user_mode(), RCU EQS) /
 * come back for good (enter_from_user_mode() without a return). For task
 * loops that write their own user-mode code; ctUserLoop() uses them.
 */
/*
 * Test hook: called on an entry from user mode under v7 28-31 inside the
 * window the order of kernel_cr3_loaded and the TLB flush decides (the
 * replay of the v7 30/31 review's race). noinstr context, IRQs off.
 */
extern void (*entryCr3Hook)(unsigned int cpu);

/*
 * Test hook: called with pti=on in the stubs' windows where the kernel CR3
 * is loaded but kernel_cr3_loaded reads 0 (@exit false: the entry's, after
 * its switch and before its store; true: the exit's, after its store and
 * before its switch), where an NMI finds the paranoid entry's kernel-CR3
 * branch (context_tracking/nmi.cpp). noinstr context, IRQs off; the hook
 * may raise an NMI (kshim::nmiSelf()).
 */
extern void (*ptiWindowHook)(unsigned int cpu, bool exit);

void ctReturnToUser();
void ctEnterKernelForGood();

/* A simulated system call from user mode: @fn(@arg) is its instrumentable body. */
void ctSyscall(void (*fn)(void *), void *arg);

struct UserLoopConfig {
	const std::atomic<bool> *stop = nullptr;	/* loop until true */
	u64 syscallPeriodNs = 1000000;	/* one syscall per period (0 = never) */
	void (*syscallBody)(void *) = nullptr;	/* the syscall's kernel work (may be NULL) */
	void *arg = nullptr;
};

struct UserLoopStats {
	unsigned long iterations = 0;	/* user-mode loop iterations */
	unsigned long syscalls = 0;
};

/*
 * Run a user-mode loop on the calling CPU until *cfg.stop: leave the kernel
 * (exit_to_user_mode(), RCU EQS), spin in user mode, enter the kernel only
 * by a syscall every cfg.syscallPeriodNs (or by the IPIs that reach it),
 * and come back to the kernel at the end. Task context on a CPU thread.
 */
UserLoopStats ctUserLoop(const UserLoopConfig &cfg);

/* Go idle (ct_idle_enter(), IRQs on as in sti;hlt) until *until, then leave idle. */
void ctIdleUntil(const std::atomic<bool> *until);
/* The same for @ns nanoseconds: a task that blocks in a system call and is woken. */
void ctIdleFor(u64 ns);

/*
 * Boot (context tracking's init, after the policy, pti= and busted= are
 * known): what the asm entry/exit stubs do, nothing (@coalesce false), v7
 * 28-31's kernel_cr3_loaded and flush, or v8's with the CR3 write's
 * serialisation; and, pti=on (the default with @coalesce), the MOV to CR3
 * of each switch, serialising. Returns 0, or -EINVAL with @err for pti=off
 * with @coalesce (CONFIG_COALESCE_TLBI depends on page-table isolation).
 */
int ctEntrySetCr3Mode(bool coalesce, bool v8, std::string &err);

/* Whether the entry and exit stubs write CR3 (pti=on). Any context. */
bool ctEntryPti();

/*
 * Kernel TLB flushes @cpu's entry stubs (and paranoid entries) ran since
 * boot: v7 29/31's COALESCE_TLBI, only on nohz_full CPUs; v8's, on every
 * CPU. Relaxed, any thread.
 */
unsigned long ctEntryTlbFlushes(int cpu) noexcept;

/* Is the calling CPU in simulated user mode? (what user_mode(regs) reads) */
bool ctInUserMode() noexcept;
/* Is @cpu in user mode (set before the exit's last steps, cleared after the entry's first)? */
bool ctCpuInUserMode(int cpu) noexcept;

} /* namespace pokelab */
