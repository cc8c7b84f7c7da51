// SPDX-License-Identifier: GPL-2.0-only
/*
 * The entry model: syscalls, interrupts and idle exits of a simulated CPU,
 * and where the deferred work runs.
 *
 * Port of the generic entry code, include/linux/entry-common.h and
 * kernel/entry/common.c (v6.16): enter_from_user_mode(),
 * exit_to_user_mode(), the user-mode and idle branches of irqentry_enter()
 * and irqentry_exit(), and the frame of do_syscall_64()
 * (arch/x86/entry/syscall_64.c). Everything up to the deferred-work flush
 * is noinstr and sits in the noinstr section:
 *
 *	user mode ... SYSCALL / IPI / idle exit
 *	  enter_from_user_mode() / ct_irq_enter()      noinstr
 *	    __ct_user_exit() -> ct_kernel_enter()        noinstr
 *	      ct_kernel_enter_state() -> ct_work_flush() noinstr: sync_core() if deferred
 *	  instrumentation_begin()                       checker: text must be current
 *	  ... instrumentable kernel code ...
 *
 * userspace: user_mode(regs) is a per-CPU flag the user loop keeps (there
 * is no CS to look at); RCU's QSBR state follows the user loop and idle in
 * task context only (liburcu's online/offline are not meant for signal
 * handlers), so an IRQ taken from user mode does not bring the CPU online
 * for RCU.
 */
#include <atomic>
#include <cstring>
#include <ctime>
#include <string>

#include <asm/barrier.h>
#include <asm/processor.h>
#include <asm/sync_core.h>
#include <asm/tlbflush.h>
#include <kernel_shim/boot.h>
#include <kernel_shim/busted.h>
#include <kernel_shim/torture.h>
#include <kernel_shim/xmc.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/machine.h>
#include <kernel_shim/sched.h>
#include <linux/bug.h>
#include <linux/context_tracking.h>
#include <linux/entry-common.h>
#include <linux/instrumentation.h>
#include <linux/irqflags.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/rcupdate.h>
#include <linux/sched/isolation.h>
#include <trace/events/pokelab.h>
#include <pokelab/ct_entry.h>

namespace {

DEFINE_PER_CPU(bool, in_user_mode);
DEFINE_PER_CPU(bool, irq_from_user);

/* pti= (arch/x86/mm/pti.c, pti_check_boottime_disable()): -1 auto, 0 off, 1 on */
int ptiParam = -1;

int setPti(const char *val, std::string &err)
{
	if (val && !strcmp(val, "on"))
		ptiParam = 1;
	else if (val && !strcmp(val, "off"))
		ptiParam = 0;
	else if (val && !strcmp(val, "auto"))
		ptiParam = -1;
	else {
		err = std::string("pti=") + (val ? val : "") + ": expected pti=on, pti=off or pti=auto";
		return -EINVAL;
	}
	return 0;
}

kshim::BootParamRegistrar ptiBootParam({
	"pti", setPti, [] { ptiParam = -1; },
	"pti=on|off|auto: page-table isolation, a CR3 write at each user entry and exit"
	" (auto: on under v7-tlbi and v8)",
});

kshim::BootParamRegistrar noptiBootParam({
	"nopti",
	[](const char *val, std::string &err) {
		if (val) {
			err = std::string("nopti=") + val + ": nopti takes no value (it is pti=off)";
			return -EINVAL;
		}
		ptiParam = 0;
		return 0;
	},
	[] {}, "nopti: pti=off",
});

} /* namespace */

void (*pokelab::entryCr3Hook)(unsigned int cpu);
void (*pokelab::ptiWindowHook)(unsigned int cpu, bool exit);

/*
 * The entry stub's C helpers: each noinstr, each a step the stub calls.
 * userspace: entry_cr3_window() is pokelab's own (the replay test's hook,
 * an indirect call, and the torture delay point inside the window).
 */
extern "C" noinstr void entry_cr3_window(void)
{
	if (pokelab::entryCr3Hook) {
		pokelab_instr_begin();
		pokelab::entryCr3Hook(smp_processor_id());
		pokelab_instr_end();
	}
	torture_delay(kshim::TortureDelay::EntryCr3Window);
}

/*
 * v8 (v8: pokelab's reconstruction of an RFC, not posted code; after v8
 * 09/10's description): the MOV to CR3 serialises (SDM Vol. 2 4.3) and is
 * the deferred text sync; userspace: sync_core()'s flavour (SERIALIZE or
 * IRET-to-self, never CPUID) stands in for it and is what the model
 * records as this CPU's serialisation.
 */
extern "C" noinstr void entry_cr3_write(void)
{
	sync_core();
}

/*
 * The hardware's CR3: whether the user page tables are loaded (pti=on
 * only; without PTI there is one CR3, the kernel's). The paranoid entry of
 * an NMI reads it (context_tracking/nmi.cpp). Written only by the stubs'
 * CR3 writes below, on their own CPU.
 */
DEFINE_PER_CPU(int, pokelab_user_cr3);

/* SWITCH_TO_KERNEL_CR3's MOV to CR3 (pti=on; v8, reconstructed: the one after the smp_mb()) */
extern "C" noinstr void entry_switch_to_kernel_cr3(void)
{
	this_cpu_write(pokelab_user_cr3, 0);
	entry_cr3_write();
}

/* SWITCH_TO_USER_CR3's MOV to CR3 (pti=on), last in the exit stub */
extern "C" noinstr void entry_switch_to_user_cr3(void)
{
	entry_cr3_write();
	this_cpu_write(pokelab_user_cr3, 1);
}

/*
 * userspace: pokelab's test hook, delay points and simulated NMIs (torture.h) in the
 * stubs' windows where the kernel CR3 is loaded but kernel_cr3_loaded
 * reads 0: after the entry's switch, before its store; after the exit's
 * store, before its switch.
 */
static __always_inline void pti_window_hook(bool exit)
{
	if (pokelab::ptiWindowHook) {
		pokelab_instr_begin();
		pokelab::ptiWindowHook(smp_processor_id(), exit);
		pokelab_instr_end();
	}
}

extern "C" noinstr void entry_pti_window(void)
{
	pti_window_hook(false);
	torture_delay(kshim::TortureDelay::EntryPtiWindow);
}

extern "C" noinstr void exit_pti_window(void)
{
	pti_window_hook(true);
	torture_delay(kshim::TortureDelay::ExitPtiWindow);
}

/*
 * userspace: tick_nohz_full_mask as the stubs test it (a bt on the mask),
 * one int per CPU filled at boot: housekeeping_cpu() is not noinstr here.
 */
DEFINE_PER_CPU(int, tick_nohz_full_bit);
/* userspace: counted, for the tests and the census */
DEFINE_PER_CPU(unsigned long, entry_tlb_flushes);

/*
 * The kernel TLB flush right after the switch (v7 29/31's COALESCE_TLBI,
 * v8). v7 flushes only on CPUs in tick_nohz_full_mask: a housekeeping CPU
 * gets every flush_tlb_kernel_range_deferrable() IPI, so it has nothing
 * outstanding. Under v8 (pokelab's reconstruction of an RFC, not posted
 * code) the flush runs on every CPU: v8's gate, if any, was not read.
 */
extern "C" noinstr void entry_kernel_tlb_flush(void)
{
	if (ct_defer_policy != CT_DEFER_V8 && !this_cpu_read(tick_nohz_full_bit))
		return;
	__atomic_store_n(this_cpu_ptr(&entry_tlb_flushes),
			 this_cpu_read(entry_tlb_flushes) + 1, __ATOMIC_RELAXED);	/* userspace */
	/* userspace: the flush reads the page tables: a fence after kernel_cr3_loaded = 1? */
	kshim::xmcFenceCheck(kshim::FENCE_PAIR_CR3_LOADED);
	kshim::tlbFlushLocal();
}

extern "C" int pokelab_entry_pti;

/*
 * pokelab.busted=cr3-loaded-late: the order as posted (v6 27/29's flush
 * right after the switch, v7 29/31's store after it), flush first, store
 * after: the window D. Hansen's v7 30/31 review found.
 */
extern "C" noinstr void switch_to_kernel_cr3_late(void)
{
	if (ct_defer_policy == CT_DEFER_V8 || pokelab_entry_pti) {
		entry_switch_to_kernel_cr3();
		entry_pti_window();
	}
	entry_kernel_tlb_flush();
	entry_cr3_window();
	note_kernel_cr3_loaded(1);
}

/* What the asm entry stub does (pokelab_entry_cr3_mode); numbers, for the asm */
#define ENTRY_CR3_NONE 0	/* no CONFIG_COALESCE_TLBI: nothing */
#define ENTRY_CR3_TLBI 1	/* v7-tlbi: store, smp_mb(), flush */
#define ENTRY_CR3_V8 2		/* v8, reconstructed: store, smp_mb(), the CR3 write, flush */
#define ENTRY_CR3_LATE 3	/* pokelab.busted=cr3-loaded-late: switch_to_kernel_cr3_late() */
#define __entry_stringify(x) #x
#define entry_stringify(x) __entry_stringify(x)

extern "C" int pokelab_entry_cr3_mode;
int pokelab_entry_cr3_mode;
/* pti=on: SWITCH_TO_KERNEL_CR3 / SWITCH_TO_USER_CR3 write CR3 (serialising) */
int pokelab_entry_pti;
/* userspace: pokelab.busted=no-mb-entry, for the asm below (set with the mode) */
extern "C" int pokelab_busted_no_mb_entry;
int pokelab_busted_no_mb_entry;

static_assert(sizeof(kshim::PerCpu<int>::Slot) == 64, "the stub indexes per-CPU slots by << 6");

/*
 * The entry and exit stubs, SWITCH_TO_KERNEL_CR3 / SWITCH_TO_USER_CR3 with
 * v7 28-31 (CONFIG_COALESCE_TLBI) in the order the v7 30/31 review settled
 * on (arch/x86/entry/calling.h, RFC), in asm in the noinstr section: they
 * run first on every entry from user mode, before any C entry code, and
 * last on the way out. The flusher's side is flush_tlb_kernel_cond() in
 * kernel_shim/mm/tlb.cpp:
 *
 *	CPU n (entry stub)			flusher
 *	kernel_cr3_loaded = 1			change page tables
 *	smp_mb()				smp_mb()
 *	[v8: the CR3 write, serialising]	read kernel_cr3_loaded[n]
 *	flush (reads the tables)
 *
 * either the flusher sees 1 and IPIs, or the CPU's flush sees the change
 * (and, v8, a text writer that read 0 wrote before the CPU serialised).
 * With page-table isolation (pti=on, which CONFIG_COALESCE_TLBI depends
 * on) the stub starts with the switch itself, a MOV to CR3, serialising
 * (SDM Vol. 2 4.3); under v8 that write is the one after the smp_mb(). The
 * exit stub ends with the switch to the user CR3.
 * The v8 path is pokelab's reconstruction of an RFC, not posted code: v8
 * 08/10's message stores the flag right before SWITCH_TO_KERNEL_CR3 and
 * maps it into the user page tables for that; the smp_mb() (redundant
 * before a MOV to CR3, and not buildable as a locked add on %rsp where
 * %rsp is the macro's scratch register) and the flush after it are
 * pokelab's.
 * As posted (v6 27/29, v7 29/31) the stub flushed first and stored after:
 * a flusher that reads 0 in between skips a CPU already past its flush
 * (pokelab.busted=cr3-loaded-late, switch_to_kernel_cr3_late() above). The smp_mb() is the kernel's x86 one,
 * a locked add of 0 below the stack pointer. The exit stub's 1 -> 0 edge
 * costs a spurious IPI at most.
 * userspace: per-CPU data is not %gs-relative; the stub reads the CPU id
 * from local-exec TLS (kshim::tlsCpu, one %fs load) and indexes the 64-byte
 * slots.
 */
asm(".pushsection noinstr_text, \"ax\", @progbits\n"
    ".globl pokelab_switch_to_kernel_cr3\n"
    ".type pokelab_switch_to_kernel_cr3, @function\n"
    "pokelab_switch_to_kernel_cr3:\n\t"
    "cmpl $" entry_stringify(ENTRY_CR3_LATE) ", pokelab_entry_cr3_mode(%rip)\n\t"
    "je switch_to_kernel_cr3_late\n\t"
    "subq $8, %rsp\n\t"				/* the calls below want %rsp 16-aligned */
    /* pti=on, but for v8's (reconstructed) place below: SWITCH_TO_KERNEL_CR3's MOV to CR3 */
    "cmpl $0, pokelab_entry_pti(%rip)\n\t"
    "je 3f\n\t"
    "cmpl $" entry_stringify(ENTRY_CR3_V8) ", pokelab_entry_cr3_mode(%rip)\n\t"
    "je 3f\n\t"
    "call entry_switch_to_kernel_cr3\n\t"
    "call entry_pti_window\n"			/* userspace: a delay (NMI) point */
    "3:\n\t"
    "cmpl $" entry_stringify(ENTRY_CR3_NONE) ", pokelab_entry_cr3_mode(%rip)\n\t"
    "je 8f\n\t"
    "movslq %fs:_ZN5kshim6tlsCpuE@tpoff, %rcx\n\t"
    "shlq $6, %rcx\n\t"
    "leaq kernel_cr3_loaded(%rip), %rdx\n\t"
    /* series v6 26/29: movl, 4 bytes into the bool, as posted */
    "movl $1, (%rdx,%rcx)\n\t"			/* kernel_cr3_loaded = 1 */
    /* userspace: the store's mark for the checker's store→load rule (cpuFenceStore()) */
    "movq %fs:cpu_fence_events@tpoff, %rax\n\t"
    "incq %rax\n\t"
    "movq %rax, %fs:cpu_fence_mark@tpoff\n\t"
    /* userspace: BUSTED, the smp_mb() below deleted */
    "cmpl $0, pokelab_busted_no_mb_entry(%rip)\n\t"
    "jne 2f\n\t"
    /* smp_mb(): pairs with vunmap's PTE clear (an XCHG) and (v8) ct_set_cpu_work()'s smp_mb() */
    ASM_SMP_MB
    "2:\n\t"
    "call entry_cr3_window\n\t"
    "cmpl $" entry_stringify(ENTRY_CR3_V8) ", pokelab_entry_cr3_mode(%rip)\n\t"
    "jne 1f\n\t"
    "call entry_switch_to_kernel_cr3\n"	/* v8 (reconstructed): the CR3 write */
    "1:\n\t"
    "addq $8, %rsp\n\t"
    "jmp entry_kernel_tlb_flush\n"		/* the kernel TLB flush */
    "8:\n\t"
    "addq $8, %rsp\n\t"
    "ret\n"
    ".size pokelab_switch_to_kernel_cr3, . - pokelab_switch_to_kernel_cr3\n"
    ".globl pokelab_switch_to_user_cr3\n"
    ".type pokelab_switch_to_user_cr3, @function\n"
    "pokelab_switch_to_user_cr3:\n\t"
    "cmpl $" entry_stringify(ENTRY_CR3_NONE) ", pokelab_entry_cr3_mode(%rip)\n\t"
    "je 4f\n\t"
    "movslq %fs:_ZN5kshim6tlsCpuE@tpoff, %rcx\n\t"
    "shlq $6, %rcx\n\t"
    "leaq kernel_cr3_loaded(%rip), %rdx\n\t"
    "movl $0, (%rdx,%rcx)\n"			/* kernel_cr3_loaded = 0 (series v6 26/29: movl) */
    "4:\n\t"
    /* pti=on: SWITCH_TO_USER_CR3's MOV to CR3, last */
    "cmpl $0, pokelab_entry_pti(%rip)\n\t"
    "je 9f\n\t"
    "subq $8, %rsp\n\t"
    "call exit_pti_window\n\t"		/* userspace: a delay (NMI) point */
    "addq $8, %rsp\n\t"
    "jmp entry_switch_to_user_cr3\n"
    "9:\n\t"
    "ret\n"
    ".size pokelab_switch_to_user_cr3, . - pokelab_switch_to_user_cr3\n"
    ".popsection\n");

extern "C" void pokelab_switch_to_kernel_cr3(void);
extern "C" void pokelab_switch_to_user_cr3(void);

namespace pokelab {

int ctEntrySetCr3Mode(bool coalesce, bool v8, std::string &err)
{
	/* pti=auto: on where CONFIG_COALESCE_TLBI is (it depends on page-table isolation) */
	bool pti = ptiParam < 0 ? coalesce : ptiParam;

	if (coalesce && !pti) {
		err = std::string("pti=off: pokelab.ct_defer=") + (v8 ? "v8" : "v7-tlbi") +
		      " needs page-table isolation (CONFIG_COALESCE_TLBI depends on it);"
		      " expected pti=on or pti=auto";
		return -EINVAL;
	}
	pokelab_entry_pti = pti;
	pokelab_entry_cr3_mode = !coalesce		   ? ENTRY_CR3_NONE
				 : BUSTED(CR3_LOADED_LATE) ? ENTRY_CR3_LATE
				 : v8			   ? ENTRY_CR3_V8
							   : ENTRY_CR3_TLBI;
	pokelab_busted_no_mb_entry = BUSTED(NO_MB_ENTRY);
	if (pti)
		kshim::setMachineAttr("pti", "on");
	return 0;
}

bool ctEntryPti()
{
	return pokelab_entry_pti;
}

unsigned long ctEntryTlbFlushes(int cpu) noexcept
{
	return __atomic_load_n(per_cpu_ptr(&entry_tlb_flushes, cpu), __ATOMIC_RELAXED);
}

} /* namespace pokelab */

/* Port of enter_from_user_mode(), include/linux/irq-entry-common.h */
noinstr void enter_from_user_mode(struct pt_regs *regs)
{
	(void)regs;
	pokelab_switch_to_kernel_cr3();	/* userspace: the entry stub, called first */
	lockdep_assert_irqs_disabled();
	WRITE_ONCE(*this_cpu_ptr(&in_user_mode), false);
	WARN_ON_ONCE(__ct_state() != CT_STATE_USER);
	/* user_exit_irqoff(): RCU watches again and deferred work runs */
	__ct_user_exit(CT_STATE_USER);

	instrumentation_begin();
	instrumentation_end();
}

/* Port of exit_to_user_mode(), include/linux/irq-entry-common.h */
noinstr void exit_to_user_mode(void)
{
	instrumentation_begin();
	lockdep_assert_irqs_disabled();
	instrumentation_end();

	/* user_enter_irqoff() */
	__ct_user_enter(CT_STATE_USER);
	WRITE_ONCE(*this_cpu_ptr(&in_user_mode), true);
	pokelab_switch_to_user_cr3();	/* userspace: the exit stub, called last */
}

/* The user-mode and idle branches of irqentry_enter(), kernel/entry/common.c */
static noinstr irqentry_state_t ct_irqentry_enter(struct pt_regs *regs)
{
	irqentry_state_t ret = {};

	if (READ_ONCE(*this_cpu_ptr(&in_user_mode))) {
		/* irqentry_enter_from_user_mode() */
		WRITE_ONCE(*this_cpu_ptr(&irq_from_user), true);
		enter_from_user_mode(regs);
		return ret;
	}

	/*
	 * From idle (an EQS in the kernel): make RCU watch for the
	 * interrupt; the deferred work runs in ct_irq_enter()'s flush.
	 */
	if (!rcu_is_watching_curr_cpu()) {
		ct_irq_enter();
		instrumentation_begin();
		instrumentation_end();
		ret.exit_rcu = true;
		return ret;
	}

	instrumentation_begin();
	instrumentation_end();
	return ret;
}

/* The matching branches of irqentry_exit(), kernel/entry/common.c */
static noinstr void ct_irqentry_exit(struct pt_regs *regs, irqentry_state_t state)
{
	(void)regs;
	if (READ_ONCE(*this_cpu_ptr(&irq_from_user))) {
		/* irqentry_exit_to_user_mode() */
		WRITE_ONCE(*this_cpu_ptr(&irq_from_user), false);
		exit_to_user_mode();
		return;
	}
	if (state.exit_rcu)
		ct_irq_exit();
}

/*
 * Port of __nmi_enter() / __nmi_exit(), include/linux/hardirq.h, v7.3:
 * the NMI and hardirq counts (in_nmi() from here). userspace: no lockdep,
 * printk_nmi or RCU-Tasks state; the kernel's BUG_ON(in_nmi() == NMI_MASK)
 * on a nesting overflow cannot fire, the signal does not nest in itself.
 */
static __always_inline void __nmi_enter(void)
{
	__preempt_count_add(NMI_OFFSET + HARDIRQ_OFFSET);
}

static __always_inline void __nmi_exit(void)
{
	__preempt_count_sub(NMI_OFFSET + HARDIRQ_OFFSET);
}

/* Port of irqentry_nmi_enter(), kernel/entry/common.c, v7.3 */
noinstr irqentry_state_t irqentry_nmi_enter(struct pt_regs *regs)
{
	irqentry_state_t irq_state;

	irq_state.lockdep = false;	/* userspace: no lockdep_hardirqs_enabled() */

	__nmi_enter();
	/* userspace: no lockdep_hardirqs_off(), lockdep_hardirq_enter() */

	ct_nmi_enter();

	instrumentation_begin();
	(void)regs;	/* userspace: no kmsan_unpoison_entry_regs() */
	/* userspace: no trace_hardirqs_off_finish(), ftrace_nmi_enter() */

	instrumentation_end();

	return irq_state;
}

/* Port of irqentry_nmi_exit(), kernel/entry/common.c, v7.3 */
noinstr void irqentry_nmi_exit(struct pt_regs *regs, irqentry_state_t irq_state)
{
	instrumentation_begin();
	(void)regs;	/* userspace: no ftrace_nmi_exit() */
	/* userspace: no lockdep; irq_state.lockdep is always false */

	instrumentation_end();

	ct_nmi_exit();
	(void)irq_state;	/* userspace: no lockdep_hardirq_exit(), lockdep_hardirqs_on() */
	__nmi_exit();
}

namespace pokelab {

bool ctInUserMode() noexcept
{
	return READ_ONCE(*this_cpu_ptr(&in_user_mode));
}

bool ctCpuInUserMode(int cpu) noexcept
{
	return READ_ONCE(*per_cpu_ptr(&in_user_mode, cpu));
}

/* The frame of do_syscall_64(), arch/x86/entry/syscall_64.c */
void ctSyscall(void (*fn)(void *), void *arg)
{
	/* SYSCALL arrives with interrupts off */
	local_irq_disable();
	/* syscall_enter_from_user_mode() */
	enter_from_user_mode(nullptr);
	instrumentation_begin();
	local_irq_enable();
	kshim::rcuEqsExit();

	if (fn)
		fn(arg);

	/* syscall_exit_to_user_mode() */
	kshim::rcuEqsEnter();
	local_irq_disable();
	instrumentation_end();
	exit_to_user_mode();
	local_irq_enable();
}

void ctReturnToUser()
{
	/* As the return from the system call that started the program. */
	kshim::rcuEqsEnter();
	local_irq_disable();
	exit_to_user_mode();
	local_irq_enable();
}

void ctEnterKernelForGood()
{
	/* A last system call that does not return to user mode. */
	local_irq_disable();
	enter_from_user_mode(nullptr);
	instrumentation_begin();
	local_irq_enable();
	kshim::rcuEqsExit();
}

UserLoopStats ctUserLoop(const UserLoopConfig &cfg)
{
	UserLoopStats st;
	volatile unsigned long work = 0;
	u64 next = cfg.syscallPeriodNs ? kshim::clockNs() + cfg.syscallPeriodNs : ~0ull;

	ctReturnToUser();

	while (!cfg.stop->load(std::memory_order_relaxed)) {
		/* user-mode work: touches no kernel text */
		for (int i = 0; i < 64; i++)
			work = work + i;
		kshim::schedTick();	/* the host's time slice (kernel_shim/sched.h) */
		st.iterations++;
		if ((st.iterations & 63) == 0 && kshim::clockNs() >= next) {
			ctSyscall(cfg.syscallBody, cfg.arg);
			st.syscalls++;
			next = kshim::clockNs() + cfg.syscallPeriodNs;
		}
	}

	ctEnterKernelForGood();
	return st;
}

/* Idle until *@until, or until @deadline (ns of CLOCK_MONOTONIC) when @until is NULL. */
static void ctIdle(const std::atomic<bool> *until, u64 deadline)
{
	local_irq_disable();
	kshim::rcuEqsEnter();
	trace_pokelab_ct_idle(true);	/* userspace: pokelab's event */
	ct_idle_enter();
	/* sti; hlt: interrupts are taken while idle */
	local_irq_enable();
	while (until ? !until->load(std::memory_order_relaxed) : kshim::clockNs() < deadline) {
		cpu_relax();
		kshim::schedTick();
	}
	local_irq_disable();
	ct_idle_exit();
	instrumentation_begin();
	trace_pokelab_ct_idle(false);	/* userspace: pokelab's event */
	kshim::rcuEqsExit();
	local_irq_enable();
}

void ctIdleUntil(const std::atomic<bool> *until)
{
	ctIdle(until, 0);
}

void ctIdleFor(u64 ns)
{
	ctIdle(nullptr, kshim::clockNs() + ns);
}

} /* namespace pokelab */

namespace {

const kshim::IrqEntryHooks ctIrqHooks = {ct_irqentry_enter, ct_irqentry_exit};

int ctEntryInit(std::string &)
{
	for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++) {
		*per_cpu_ptr(&in_user_mode, cpu) = false;
		*per_cpu_ptr(&irq_from_user, cpu) = false;
		*per_cpu_ptr(&pokelab_user_cr3, cpu) = 0;
	}
	kshim::setIrqEntryHooks(&ctIrqHooks);
	return 0;
}

kshim::BootHookRegistrar ctEntryHook({"ct_entry_init", kshim::BootStage::Early, ctEntryInit});

int ctEntryNohzInit(std::string &)
{
	for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++)
		*per_cpu_ptr(&tick_nohz_full_bit, cpu) = !housekeeping_cpu(cpu, HK_TYPE_KERNEL_NOISE);
	return 0;
}

/* Late: after housekeeping_init (the nohz_full mask) */
kshim::BootHookRegistrar ctEntryNohzHook({"ct_entry_nohz_init", kshim::BootStage::Late,
					  ctEntryNohzInit});

} /* namespace */
