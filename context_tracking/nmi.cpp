// SPDX-License-Identifier: GPL-2.0-only
/*
 * The NMI's way into the kernel: the paranoid entry's CR3 handling
 * (SAVE_AND_SWITCH_TO_KERNEL_CR3 / PARANOID_RESTORE_CR3, arch/x86/entry/
 * calling.h, with v7 28-31's CONFIG_COALESCE_TLBI pieces), irqentry_nmi_
 * enter() / irqentry_nmi_exit() (kernel/entry/common.c, v7.3) and the
 * handler list of exc_nmi() (arch/x86/kernel/nmi.c, v7.3), on the
 * simulated NMI of kernel_shim/kernel/nmi.cpp.
 *
 * An NMI (as #MC and #DB) may land anywhere, the entry and exit stubs
 * included, so the paranoid entry reads the CR3 it finds:
 *
 *	user CR3 loaded			kernel CR3 already loaded
 *	switch to the kernel CR3	v7 as posted: nothing (nmi-paranoid-posted)
 *	kernel_cr3_loaded = 1		fixed (pokelab's, not posted): on a nohz_full
 *	smp_mb()			CPU with kernel_cr3_loaded 0, set it and
 *	COALESCE_TLBI flush		smp_mb(), noting it; v8 (reconstructed): CR3
 *					written again (serialising); the flush, always
 *	... handler ...			... handler ...
 *	kernel_cr3_loaded = 0 (if it	the flag put back if the NMI set it
 *	  was 0: v8, reconstructed, stores it first)
 *	switch to the user CR3
 *
 * The user-CR3 column is v7-tlbi's corrected order in both variants (as
 * posted, SAVE_AND_SWITCH_TO_KERNEL_CR3's COALESCE_TLBI flushes, then
 * stores, with no barrier: pokelab.busted=cr3-loaded-late's window), so
 * that nmi-paranoid-posted differs from the fix only in the kernel-CR3
 * column, the branch the finding is about.
 *
 * The posted stubs leave two windows (kernel-map.md §4.6): the entry's,
 * after its switch and before its store, and the exit's, after its store
 * and before its switch. An NMI there runs with the kernel CR3 and the
 * flag at 0, so a remote vunmap() skips the CPU, and the handler touches
 * freed kernel ranges through translations nobody flushed:
 *
 *	CPU1 (isolated)				CPU0 (housekeeping)
 *	exit stub: kernel_cr3_loaded = 0	|
 *	<NMI> paranoid: kernel CR3: nothing	| vunmap X: reads 0, no IPI, returns
 *	  handler touches X: stale		|
 *
 * The fixed path flushes even when the flag reads 1: an NMI between the
 * entry's store and its flush would otherwise touch what a flusher that
 * read 0 just before the store has unmapped.
 */
#include <cerrno>
#include <cstring>
#include <string>

#include <asm/barrier.h>
#include <asm/nmi.h>
#include <asm/tlbflush.h>
#include <kernel_shim/boot.h>
#include <kernel_shim/busted.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/cpu_events.h>
#include <kernel_shim/torture.h>
#include <kernel_shim/xmc.h>
#include <linux/bug.h>
#include <linux/context_tracking.h>
#include <linux/entry-common.h>
#include <linux/instrumentation.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/sched/isolation.h>
#include <linux/smp.h>

DECLARE_PER_CPU(int, pokelab_user_cr3);
DECLARE_PER_CPU(int, tick_nohz_full_bit);	/* entry.cpp: tick_nohz_full_mask, per CPU */

extern "C" int pokelab_entry_pti;
extern "C" void entry_switch_to_kernel_cr3(void);
extern "C" void entry_switch_to_user_cr3(void);
extern "C" void entry_kernel_tlb_flush(void);

namespace {

struct nmiaction {
	nmi_handler_t handler;
	const char *name;
};

nmiaction nmi_local[NMI_MAX_HANDLERS];

/* What the paranoid entry did, for its exit (the kernel keeps it in %r14) */
enum {
	PARANOID_USER_CR3 = 1,	/* it switched from the user CR3 */
	PARANOID_SET_FLAG = 2,	/* it set kernel_cr3_loaded, to be put back to 0 */
};

/* kernel_cr3_loaded = 1; smp_mb(): as the entry stub's, pairing with vunmap's PTE clear (XCHG) */
noinstr void paranoid_note_kernel_cr3(void)
{
	note_kernel_cr3_loaded(1);
	kshim::cpuFenceStore(kshim::FENCE_PAIR_CR3_LOADED);	/* userspace: the checker's mark */
	if (!BUSTED(NO_MB_NMI))	/* userspace: BUSTED, the smp_mb() deleted */
		smp_mb();
	torture_delay(kshim::TortureDelay::NmiCr3Window);	/* userspace: delay point */
}

/* SAVE_AND_SWITCH_TO_KERNEL_CR3, with CONFIG_COALESCE_TLBI's flush and signal */
noinstr unsigned int paranoid_entry_cr3(void)
{
	bool coalesce = ct_defer_policy == CT_DEFER_V7_TLBI || ct_defer_policy == CT_DEFER_V8;
	int cpu = smp_processor_id();

	if (!pokelab_entry_pti)
		return 0;
	if (this_cpu_read(pokelab_user_cr3)) {
		entry_switch_to_kernel_cr3();
		if (!coalesce)
			return PARANOID_USER_CR3;
		/*
		 * v8 (pokelab's reconstruction of an RFC, not posted code)
		 * stores the flag before its CR3 write: an NMI between the two
		 * finds the user CR3 and the flag at 1, and must leave it at 1.
		 * Under v7's order the flag is always 0 here. Whether v8's own
		 * RESTORE_CR3 keeps it is not known (its hunks were not read).
		 */
		unsigned int saved = PARANOID_USER_CR3;

		if (BUSTED(NMI_PARANOID_POSTED) || !this_cpu_read(kernel_cr3_loaded))
			saved |= PARANOID_SET_FLAG;
		paranoid_note_kernel_cr3();
		entry_kernel_tlb_flush();
		return saved;
	}
	/* the kernel CR3 was already loaded: the entry's or exit's window, or the kernel */
	if (!coalesce || BUSTED(NMI_PARANOID_POSTED))	/* userspace: BUSTED, v7 as posted */
		return 0;
	if (!READ_ONCE(*per_cpu_ptr(&tick_nohz_full_bit, cpu)))
		return 0;
	unsigned int saved = 0;

	if (!this_cpu_read(kernel_cr3_loaded)) {
		paranoid_note_kernel_cr3();
		saved = PARANOID_SET_FLAG;
	}
	/*
	 * v8 (reconstructed): a text writer that read the flag at 0 skipped this CPU's sync,
	 * counting on the entry's CR3 write, which may not have come yet (or
	 * came before the write, in the exit's window): write CR3 again, the
	 * kernel's, which serialises.
	 */
	if (ct_defer_policy == CT_DEFER_V8)
		entry_switch_to_kernel_cr3();
	entry_kernel_tlb_flush();
	return saved;
}

/* PARANOID_RESTORE_CR3, with NOTE_SWITCH_TO_USER_CR3 */
noinstr void paranoid_exit_cr3(unsigned int saved)
{
	if (saved & PARANOID_SET_FLAG)
		note_kernel_cr3_loaded(0);	/* NOTE_SWITCH_TO_USER_CR3 */
	if (saved & PARANOID_USER_CR3)
		entry_switch_to_user_cr3();
}

/* nmi_handle(), arch/x86/kernel/nmi.c (v7.3): every handler of the list, in order */
/* Port of nmi_handle(), arch/x86/kernel/nmi.c, v7.3 */
int nmi_handle(unsigned int type, struct pt_regs *regs)
{
	int handled = 0;

	for (const nmiaction &a : nmi_local) {
		nmi_handler_t h = __atomic_load_n(&a.handler, __ATOMIC_ACQUIRE);

		if (h)
			handled += h(type, regs);
	}
	return handled;
}

/*
 * exc_nmi(), arch/x86/kernel/nmi.c (v7.3), entered through the paranoid
 * entry: irqentry_nmi_enter() (__nmi_enter(): the NMI and hardirq counts;
 * ct_nmi_enter(), which ends an EQS and runs its deferred work), the
 * handlers, irqentry_nmi_exit() in reverse. userspace: no pt_regs (the
 * signal frame is not turned into one), no nested-NMI state machine (the
 * signal does not nest in itself).
 */
/* Port of exc_nmi(), arch/x86/kernel/nmi.c, v7.3 */
noinstr void exc_nmi(void) noexcept
{
	unsigned int saved = paranoid_entry_cr3();
	irqentry_state_t irq_state;

	irq_state = irqentry_nmi_enter(NULL);
	instrumentation_begin();
	nmi_handle(NMI_LOCAL, NULL);
	instrumentation_end();
	irqentry_nmi_exit(NULL, irq_state);
	paranoid_exit_cr3(saved);
}

int nmiInit(std::string &)
{
	kshim::setNmiEntry(exc_nmi);
	return 0;
}

/* Late: after housekeeping_init (the nohz_full mask) */
kshim::BootHookRegistrar nmiHook({"nmi_init", kshim::BootStage::Late, nmiInit});

} /* namespace */

int register_nmi_handler(unsigned int type, nmi_handler_t handler, unsigned long flags,
			 const char *name)
{
	(void)flags;
	if (type != NMI_LOCAL || !handler)
		return -EINVAL;
	for (nmiaction &a : nmi_local)
		if (!a.handler) {
			a.name = name;
			__atomic_store_n(&a.handler, handler, __ATOMIC_RELEASE);
			return 0;
		}
	return -ENOSPC;
}

void unregister_nmi_handler(unsigned int type, const char *name)
{
	if (type != NMI_LOCAL)
		return;
	for (nmiaction &a : nmi_local)
		if (a.handler && a.name && name && !strcmp(a.name, name)) {
			__atomic_store_n(&a.handler, (nmi_handler_t)nullptr, __ATOMIC_RELEASE);
			a.name = nullptr;
		}
}
