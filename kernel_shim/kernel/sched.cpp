// SPDX-License-Identifier: GPL-2.0-only
/*
 * The host scheduler model and the idle loop of the simulated CPUs (see
 * kernel_shim/sched.h): pokelab.slice_us= and idle=; and kernel/sched/core.c's
 * might-sleep check, __might_resched(), which cond_resched() runs first.
 *
 * Why a CPU must give way (2 PUs, 64 busy CPUs, one IPI round):
 *
 *	CPU0 (patcher)				CPU37 (hot loop, not on a PU)
 *	pthread_kill(CPU37, SIGIPI)
 *	spin on CPU37's CSD lock ...		... waits for a host time slice:
 *	                                        the 31 CPUs ahead of it on its PU
 *	                                        each run a full slice (ms)
 *	                                        scheduled: takes the IPI, unlocks
 *
 * With schedTick() each of those 31 runs for 10 us at most before it yields,
 * so CPU37 is scheduled within a millisecond instead of tens.
 */
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <execinfo.h>
#include <string>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include <asm/processor.h>
#include <kernel_shim/boot.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/machine.h>
#include <kernel_shim/sched.h>
#include <linux/bug.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/preempt.h>
#include <linux/smp.h>

#define KSHIM_PRIVATE
#include "internal.h"

namespace kshim {

u64 schedSliceNs;

namespace {

constexpr unsigned long kDefaultSliceUs = 10;
constexpr unsigned long kMaxSliceUs = 100000;
unsigned long sliceUs = kDefaultSliceUs;
IdleMode idleParam = IdleMode::HaltPoll;
IdleMode idleNow = IdleMode::HaltPoll;

int setSliceUs(const char *val, std::string &err)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = val && *val && val[0] != '-' && val[0] != '+' ? strtoul(val, &end, 10) : ULONG_MAX;
	if (v == ULONG_MAX || errno || *end || v > kMaxSliceUs) {
		err = fmt::format("pokelab.slice_us={}: expected pokelab.slice_us=US with US a whole "
				  "number of microseconds, 0 (never give way) to {}", val ? val : "",
				  kMaxSliceUs);
		return -EINVAL;
	}
	sliceUs = v;
	return 0;
}

int setIdle(const char *val, std::string &err)
{
	if (val && !strcmp(val, "poll")) {
		idleParam = IdleMode::Poll;
	} else if (val && !strcmp(val, "halt")) {
		idleParam = IdleMode::Halt;
	} else {
		err = fmt::format("idle={}: expected idle=poll or idle=halt (default: poll {} us, "
				  "then halt, as cpuidle-haltpoll)", val ? val : "", kHaltPollNs / 1000);
		return -EINVAL;
	}
	return 0;
}

BootParamRegistrar sliceParam({
	"pokelab.slice_us", setSliceUs, [] { sliceUs = kDefaultSliceUs; },
	"pokelab.slice_us=US: an oversubscribed CPU in a loop gives way after US us "
	"(default: 10; 0 = never)",
});

BootParamRegistrar idleBootParam({
	"idle", setIdle, [] { idleParam = IdleMode::HaltPoll; },
	"idle=poll|halt: how an idle CPU waits (default: poll 200 us, then halt)",
});

/*
 * userspace: __might_resched()'s ratelimit timestamp, a static of the
 * function in the kernel: here each boot() starts without one, as a
 * kernel boots (a process boots many machines, one test each).
 */
unsigned long mightReschedPrevJiffy;

int schedBoot(std::string &)
{
	const BootInfo &bi = bootInfo();

	mightReschedPrevJiffy = 0;

	idleNow = idleParam;
	for (unsigned int cpu = 0; cpu < bi.nrCpus; cpu++) {
		cpuState(cpu).yields.store(0, std::memory_order_relaxed);
		cpuState(cpu).sliceStartNs.store(0, std::memory_order_relaxed);
	}
	__atomic_store_n(&schedSliceNs, bi.oversubscribed ? (u64)sliceUs * 1000 : 0,
			 __ATOMIC_RELAXED);
	setMachineAttr("idle", idleModeName(idleNow));
	if (bi.oversubscribed)
		setMachineAttr("slice", sliceUs ? fmt::format("{}us", sliceUs) : "off");
	return 0;
}

int schedShutdown(std::string &)
{
	__atomic_store_n(&schedSliceNs, 0, __ATOMIC_RELAXED);
	return 0;
}

BootHookRegistrar schedBootHook({"sched", BootStage::Early, schedBoot});
BootHookRegistrar schedShutdownHook({"sched", BootStage::Shutdown, schedShutdown});

long futexWait(std::atomic<u32> *word, u32 val) noexcept
{
	return syscall(SYS_futex, (u32 *)word, FUTEX_WAIT_PRIVATE, val, nullptr, nullptr, 0);
}

void futexWake(std::atomic<u32> *word) noexcept
{
	syscall(SYS_futex, (u32 *)word, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

} /* namespace */

void schedTickSlow() noexcept
{
	int cpu = tlsCpu;
	u64 now;

	if (cpu < 0)
		return;
	CpuState &c = cpuState(cpu);

	if (c.irqDisabled.load(std::memory_order_relaxed) ||
	    c.hardirq.load(std::memory_order_relaxed))
		return;
	now = clockNs();
	if (now - c.sliceStartNs.load(std::memory_order_relaxed) < schedSliceNs)
		return;
	sched_yield();
	c.yields.store(c.yields.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
	c.sliceStartNs.store(clockNs(), std::memory_order_relaxed);
}

unsigned long schedYields(int cpu) noexcept
{
	return cpuState(cpu).yields.load(std::memory_order_relaxed);
}

IdleMode idleMode() noexcept
{
	return idleNow;
}

const char *idleModeName(IdleMode m) noexcept
{
	switch (m) {
	case IdleMode::HaltPoll:
		return "haltpoll";
	case IdleMode::Poll:
		return "poll";
	case IdleMode::Halt:
		return "halt";
	}
	return "?";
}

/*
 * The idle loop, in the shape of the kernel's do_idle() with the haltpoll
 * governor: poll while the poll window lasts, then halt (a futex sleep);
 * each IPI taken meanwhile (the handler bumps idleSeq) starts a new window.
 */
void cpuIdle(CpuState &c) noexcept
{
	u32 seq = c.idleSeq.load(std::memory_order_acquire);

	for (;;) {
		u64 until = idleNow == IdleMode::Halt ? 0 : clockNs() + kHaltPollNs;

		/* Poll: the thread keeps its PU, so an IPI is taken at once. */
		while (idleNow == IdleMode::Poll || clockNs() < until) {
			if (c.kick.load(std::memory_order_acquire))
				return;
			if (c.idleSeq.load(std::memory_order_relaxed) != seq) {
				seq = c.idleSeq.load(std::memory_order_acquire);
				until = clockNs() + kHaltPollNs;
			}
			cpu_relax();
			schedTick();
		}
		/* Halt: sleep until a task, stop or IPI changes idleSeq. */
		if (c.kick.load(std::memory_order_acquire))
			return;
		futexWait(&c.idleSeq, seq);
		c.sliceStartNs.store(clockNs(), std::memory_order_relaxed);
		if (c.kick.load(std::memory_order_acquire))
			return;
		seq = c.idleSeq.load(std::memory_order_acquire);
	}
}

void cpuIdleInterrupted() noexcept
{
	int cpu = tlsCpu;

	/* pairs with the acquire load of idleSeq after the futex sleep in cpuIdle() */
	if (cpu >= 0)
		cpuState(cpu).idleSeq.fetch_add(1, std::memory_order_release);
}

void cpuKick(CpuState &c) noexcept
{
	/* kick before idleSeq: a CPU that sees the new idleSeq sees kick (acquire above). */
	c.kick.store(true, std::memory_order_release);
	c.idleSeq.fetch_add(1, std::memory_order_release);
	futexWake(&c.idleSeq);
}

} /* namespace kshim */

namespace {

/* Port of rcu_preempt_depth(), include/linux/rcupdate.h, v7.3 (!CONFIG_PREEMPT_RCU) */
static inline int rcu_preempt_depth(void)
{
	return 0;
}

/* Port of resched_offsets_ok(), kernel/sched/core.c, v7.3 */
static inline bool resched_offsets_ok(unsigned int offsets)
{
	unsigned int nested = preempt_count();

	nested += rcu_preempt_depth() << MIGHT_RESCHED_RCU_SHIFT;

	return nested == offsets;
}

/* userspace: the task's comm is the calling thread's name */
std::string currentComm()
{
	char comm[16] = "";

	pthread_getname_np(pthread_self(), comm, sizeof(comm));
	return comm;
}

/*
 * include/linux/printk.h's dump_stack(): the kernel's dump_stack_print_info()
 * line (the CPU, the task), then the caller's frames. userspace: the
 * thread's id and name for the task's pid and comm.
 */
void dump_stack(void)
{
	void *frames[32];
	int n;

	fmt::print(stderr, "CPU: {} PID: {} Comm: {}\n", raw_smp_processor_id(), gettid(),
		   currentComm());
	fmt::print(stderr, "Call Trace:\n");
	n = backtrace(frames, ARRAY_SIZE(frames));
	backtrace_symbols_fd(frames, n, STDERR_FILENO);
}

} /* namespace */

/*
 * Port of __might_resched(), kernel/sched/core.c, v7.3, with
 * CONFIG_DEBUG_ATOMIC_SLEEP=y: code that may sleep, reached with a preempt
 * count other than @offsets or with interrupts off, is reported (at most
 * once a second) and taints the kernel as a warning. Task context.
 * userspace:
 *  - no lockdep: no rcu_sleep_check(), no held locks, no irqtrace events;
 *  - no task_struct: no idle-task or non_block checks (a simulated CPU's
 *    idle loop calls no might-sleep code), the thread's id and name for
 *    the task's pid and comm;
 *  - no CONFIG_DEBUG_PREEMPT, so no record of where preemption went off;
 *  - the shim's BUG() aborts, so no oops is ever in progress;
 *  - printed with fmt to stderr, the console, without printk's level.
 */
void __might_resched(const char *file, int line, unsigned int offsets)
{
	if ((resched_offsets_ok(offsets) && !irqs_disabled()) ||
	    system_state == SYSTEM_BOOTING || system_state > SYSTEM_RUNNING)
		return;

	if (time_before(jiffies, kshim::mightReschedPrevJiffy + HZ) &&
	    kshim::mightReschedPrevJiffy)
		return;
	kshim::mightReschedPrevJiffy = jiffies;

	fmt::print(stderr, "BUG: sleeping function called from invalid context at {}:{}\n",
		   file, line);
	fmt::print(stderr, "in_atomic(): {:d}, irqs_disabled(): {:d}, non_block: {}, pid: {}, "
		   "name: {}\n", in_atomic(), irqs_disabled(), 0, gettid(), currentComm());
	fmt::print(stderr, "preempt_count: {:x}, expected: {:x}\n", preempt_count(),
		   offsets & MIGHT_RESCHED_PREEMPT_MASK);

	dump_stack();
	kshim::addTaintWarn();	/* userspace: add_taint(TAINT_WARN, ...): a warning counted */
}
