// SPDX-License-Identifier: GPL-2.0-only
/*
 * The INT3 trap: SIGTRAP -> exc_int3().
 *
 * Port of exc_int3() and do_int3(), arch/x86/kernel/traps.c, v6.16, and of
 * the die notifier chain (kernel/notifier.c) for DIE_INT3.
 *
 * userspace: the trap is the SIGTRAP the kernel sends a thread that executes
 * INT3 (si_code SI_KERNEL); its ucontext becomes a struct pt_regs and is
 * written back, so the emulated instruction takes effect when the handler
 * returns. The handler runs with the IPI signal blocked (sa_mask), as the
 * kernel's INT3 path runs with interrupts off. An INT3 that nobody claims
 * ends the process with the kernel's "Oops: int3".
 */
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <ucontext.h>

#include <asm/text-patching.h>
#include <kernel_shim/boot.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/sigsafe.h>
#include <kernel_shim/xmc.h>
#include <linux/entry-common.h>
#include <linux/instrumentation.h>
#include <linux/kdebug.h>
#include <linux/percpu.h>
#include <linux/smp.h>
#include <trace/events/pokelab.h>
#include <pokelab/text_poke_stats.h>

#define MAX_DIE_NOTIFIERS 8

static struct notifier_block *die_chain[MAX_DIE_NOTIFIERS];

int register_die_notifier(struct notifier_block *nb)
{
	for (auto &slot : die_chain) {
		struct notifier_block *expected = NULL;

		if (__atomic_compare_exchange_n(&slot, &expected, nb, false, __ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			return 0;
	}
	return -ENOSPC;
}

int unregister_die_notifier(struct notifier_block *nb)
{
	for (auto &slot : die_chain) {
		struct notifier_block *expected = nb;

		if (__atomic_compare_exchange_n(&slot, &expected, (struct notifier_block *)NULL,
						false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
			return 0;
	}
	return -ENOENT;
}

int notify_die(enum die_val val, const char *str, struct pt_regs *regs, long err, int trap, int sig)
{
	struct die_args args = {regs, str, err, trap, sig};
	struct notifier_block *nbs[MAX_DIE_NOTIFIERS];
	int n = 0, ret = NOTIFY_DONE;

	for (auto &slot : die_chain) {
		struct notifier_block *nb = __atomic_load_n(&slot, __ATOMIC_ACQUIRE);

		if (nb)
			nbs[n++] = nb;
	}
	/* highest priority first (insertion sort: at most 8) */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && nbs[j]->priority > nbs[j - 1]->priority; j--)
			std::swap(nbs[j], nbs[j - 1]);
	for (int i = 0; i < n; i++) {
		ret = nbs[i]->notifier_call(nbs[i], val, &args);
		if (ret & NOTIFY_STOP_MASK)
			break;
	}
	return ret;
}

/* Port of do_int3(), arch/x86/kernel/traps.c */
static bool do_int3(struct pt_regs *regs)
{
	int res;

	/* userspace: no kprobes; the die chain is the only other claimant */
	res = notify_die(DIE_INT3, "int3", regs, 0, 3 /* X86_TRAP_BP */, SIGTRAP);

	return res == NOTIFY_STOP;
}

static void regsFromUcontext(struct pt_regs *regs, const ucontext_t *uc)
{
	const greg_t *g = uc->uc_mcontext.gregs;

	regs->r15 = g[REG_R15];
	regs->r14 = g[REG_R14];
	regs->r13 = g[REG_R13];
	regs->r12 = g[REG_R12];
	regs->bp = g[REG_RBP];
	regs->bx = g[REG_RBX];
	regs->r11 = g[REG_R11];
	regs->r10 = g[REG_R10];
	regs->r9 = g[REG_R9];
	regs->r8 = g[REG_R8];
	regs->ax = g[REG_RAX];
	regs->cx = g[REG_RCX];
	regs->dx = g[REG_RDX];
	regs->si = g[REG_RSI];
	regs->di = g[REG_RDI];
	regs->orig_ax = -1;
	regs->ip = g[REG_RIP];
	regs->cs = g[REG_CSGSFS] & 0xffff;
	regs->flags = g[REG_EFL];
	regs->sp = g[REG_RSP];
	regs->ss = 0;
}

static void regsToUcontext(const struct pt_regs *regs, ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;

	g[REG_R15] = regs->r15;
	g[REG_R14] = regs->r14;
	g[REG_R13] = regs->r13;
	g[REG_R12] = regs->r12;
	g[REG_RBP] = regs->bp;
	g[REG_RBX] = regs->bx;
	g[REG_R11] = regs->r11;
	g[REG_R10] = regs->r10;
	g[REG_R9] = regs->r9;
	g[REG_R8] = regs->r8;
	g[REG_RAX] = regs->ax;
	g[REG_RCX] = regs->cx;
	g[REG_RDX] = regs->dx;
	g[REG_RSI] = regs->si;
	g[REG_RDI] = regs->di;
	g[REG_RIP] = regs->ip;
	g[REG_EFL] = regs->flags;
	g[REG_RSP] = regs->sp;
}

[[noreturn]] static void die_int3(const struct pt_regs *regs)
{
	kshim::SigSafeBuf b;
	const unsigned char *ip = (const unsigned char *)regs->ip - INT3_INSN_SIZE;

	kshim::xmcInt3DeclinedNote((unsigned long)ip);	/* userspace: the model's word first */

	b.str("Oops: int3: 0000 [#1] SMP\nCPU: ").dec(raw_smp_processor_id())
		.str(regs->from_user ? " (SIGTRAP not raised by an INT3 instruction)" : "")
		.str("\nRIP: ").hex((unsigned long)ip).str(" Code: ").hexBytes(ip, 8)
		.str("\nRSP: ").hex(regs->sp).str(" EFLAGS: ").hex(regs->flags).str("\n");
	b.emit();
	kshim::bugAt(__FILE__, __LINE__, "exc_int3", "unclaimed int3");
}

/*
 * userspace: time inside the handler, per CPU, for the INT3 path's share of
 * a hot loop (pokelab/text_poke_stats.h). clock_gettime() is
 * async-signal-safe (vDSO); the slots are per-CPU cache lines.
 */
static DEFINE_PER_CPU(u64, int3_handler_ns);
/* userspace: exc_int3()'s nesting on this CPU, for torture's count of NMIs landing inside it */
static DEFINE_PER_CPU(int, int3_nesting);

/*
 * A plain load and store, not a locked RMW (no host fence in the handler):
 * a nested handler that lands between the two has put the count back by
 * the time this one stores.
 */
static __always_inline void int3_nesting_add(int d)
{
	int *n = this_cpu_ptr(&int3_nesting);

	__atomic_store_n(n, __atomic_load_n(n, __ATOMIC_RELAXED) + d, __ATOMIC_RELAXED);
}
static DEFINE_PER_CPU(unsigned long, int3_traps);

static __always_inline void int3_account(u64 t0)
{
	int cpu = raw_smp_processor_id();

	__atomic_store_n(per_cpu_ptr(&int3_handler_ns, cpu),
			 *per_cpu_ptr(&int3_handler_ns, cpu) + kshim::clockNs() - t0,
			 __ATOMIC_RELAXED);
	__atomic_store_n(per_cpu_ptr(&int3_traps, cpu), *per_cpu_ptr(&int3_traps, cpu) + 1,
			 __ATOMIC_RELAXED);
}

/* Port of exc_int3(), arch/x86/kernel/traps.c, v6.16 */
static void exc_int3(int, siginfo_t *si, void *ucv) noexcept
{
	int savedErrno = errno;
	u64 t0 = kshim::clockNs();	/* userspace: INT3-path time census */
	ucontext_t *uc = (ucontext_t *)ucv;
	struct pt_regs regs;
	struct pt_regs trapped;	/* userspace: for the model's check of the emulation */
	irqentry_state_t irq_state;

	int3_nesting_add(1);	/* userspace: census */
	regsFromUcontext(&regs, uc);
	regs.from_user = si->si_code != SI_KERNEL;
	trapped = regs;
	kshim::xmcInt3Enter(&regs);	/* userspace: the model */

	/* The batch handler goes first: anything after it may itself be patched. */
	if (smp_text_poke_int3_handler(&regs)) {
		regsToUcontext(&regs, uc);
		int3_account(t0);
		/* userspace: IRET (serialising under pokelab.eret=serialising), checked by the model */
		kshim::xmcInt3Return(&trapped, &regs);
		trace_pokelab_int3_emulate(trapped.ip - INT3_INSN_SIZE, regs.ip);
		kshim::xmcInt3Exit();	/* userspace */
		int3_nesting_add(-1);	/* userspace: census */
		errno = savedErrno;
		return;
	}
	/* userspace: the model, on a trap the batch handler declined */
	kshim::xmcInt3Declined(trapped.ip - INT3_INSN_SIZE);

	/*
	 * Kernel mode: do_int3() in NMI context, as an NMI could have hit
	 * anywhere (a kprobe's handler, the self-test's notifier).
	 * userspace: no user-mode branch; a SIGTRAP from user mode is for
	 * die_int3() (regs.from_user).
	 */
	irq_state = irqentry_nmi_enter(&regs);
	instrumentation_begin();
	if (!do_int3(&regs))
		die_int3(&regs);
	kshim::xmcInt3Claimed(&trapped, &regs);	/* userspace: the model's R5 (self-test) */
	instrumentation_end();
	irqentry_nmi_exit(&regs, irq_state);

	regsToUcontext(&regs, uc);
	int3_account(t0);
	kshim::xmcInt3Exit();	/* userspace */
	int3_nesting_add(-1);	/* userspace: census */
	kshim::cpuEret();
	errno = savedErrno;
}

namespace pokelab {

u64 int3HandlerNs(int cpu) noexcept
{
	return __atomic_load_n(per_cpu_ptr(&int3_handler_ns, cpu), __ATOMIC_RELAXED);
}

int int3Nesting() noexcept
{
	return raw_smp_processor_id() >= 0 ? this_cpu_read(int3_nesting) : 0;
}

unsigned long int3Traps(int cpu) noexcept
{
	return __atomic_load_n(per_cpu_ptr(&int3_traps, cpu), __ATOMIC_RELAXED);
}

void resetInt3HandlerNs() noexcept
{
	for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++) {
		__atomic_store_n(per_cpu_ptr(&int3_handler_ns, cpu), 0, __ATOMIC_RELAXED);
		__atomic_store_n(per_cpu_ptr(&int3_traps, cpu), 0, __ATOMIC_RELAXED);
	}
}

} /* namespace pokelab */

namespace {

int int3TrapInit(std::string &err)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = exc_int3;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	/*
	 * The INT3 path runs with interrupts off: the IPI signal waits until
	 * it returns. An NMI does not wait: it may land anywhere in the
	 * handler, and an INT3 in its handler comes back in here (SA_NODEFER).
	 */
	sigaddset(&sa.sa_mask, kshim::ipiSignal());
	if (sigaction(SIGTRAP, &sa, nullptr)) {
		err = std::string("cannot install the INT3 (SIGTRAP) handler: ") + strerror(errno);
		return -errno;
	}
	return 0;
}

/* Installed before anything can be patched (bug 17f41571bb2c: no window without a handler). */
kshim::BootHookRegistrar int3TrapHook({"trap_init", kshim::BootStage::Early, int3TrapInit});

} /* namespace */
