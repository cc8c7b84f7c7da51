// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab.busted=NAME: the BUSTED variant table and its boot parameter.
 */
#include <cstring>
#include <string>

#include <kernel_shim/boot.h>
#include <kernel_shim/busted.h>

enum pokelab_busted pokelab_busted;

namespace kshim {

namespace {

#define ISO4 "--cpus 4 --nohz-full 2-3 --ct-defer "

const BustedVariant variants[] = {
	{POKELAB_BUSTED_NO_SYNC_1, "no-sync-1",
	 "smp_text_poke_batch_finish() without the sync after phase 1 (INT3s)", nullptr},
	{POKELAB_BUSTED_NO_SYNC_2, "no-sync-2",
	 "smp_text_poke_batch_finish() without the sync after phase 2 (tails)", nullptr},
	{POKELAB_BUSTED_NO_SYNC_3, "no-sync-3",
	 "smp_text_poke_batch_finish() without the sync after phase 3 (first bytes)", nullptr},
	{POKELAB_BUSTED_FIRST_BYTE_FIRST, "first-byte-first",
	 "smp_text_poke_batch_finish() writes a site's new first byte before its tail", nullptr},
	{POKELAB_BUSTED_EMPTY_DO_SYNC_CORE, "empty-do-sync-core",
	 "do_sync_core() returns without serialising", nullptr},
	{POKELAB_BUSTED_REFS_DRAIN_EARLY, "refs-drain-early",
	 "smp_text_poke_batch_finish() drains the INT3 refs before the phase-3 sync", nullptr},
	{POKELAB_BUSTED_SKIP_ENTRY_FLUSH, "skip-entry-flush",
	 "ct_kernel_enter_state() never runs ct_work_flush()", ISO4 "v7"},
	{POKELAB_BUSTED_DEFER_NOINSTR, "defer-noinstr",
	 "smp_text_poke_batch_finish() defers syncs even when a site is noinstr text",
	 ISO4 "v7"},
	{POKELAB_BUSTED_PHASE3_SKIP_LAST, "phase3-skip-last",
	 "smp_text_poke_batch_finish()'s phase 3 stops one site short: its INT3 stays", nullptr},
	{POKELAB_BUSTED_TAIL_OVERRUN, "tail-overrun",
	 "smp_text_poke_batch_finish()'s phase 2 writes one byte past each site's tail", nullptr},
	{POKELAB_BUSTED_CALL_AS_JMP, "call-as-jmp",
	 "smp_text_poke_int3_handler() emulates a CALL site as a JMP (no return address)",
	 nullptr},
	{POKELAB_BUSTED_CR3_LOADED_LATE, "cr3-loaded-late",
	 "kernel entry flushes the kernel TLB before setting kernel_cr3_loaded (v6 27/29)",
	 ISO4 "v7-tlbi"},
	{POKELAB_BUSTED_NO_MB_ENTRY, "no-mb-entry",
	 "the entry stub without its smp_mb() between kernel_cr3_loaded = 1 and the TLB flush",
	 ISO4 "v7-tlbi"},
	{POKELAB_BUSTED_PTE_CLEAR_PLAIN, "pte-clear-plain",
	 "vunmap clears a PTE with pte_clear()'s plain store, not ptep_get_and_clear()'s XCHG, "
	 "before the flush gate reads kernel_cr3_loaded",
	 "--cpus 4 --nohz-full 1-3 --ct-defer v7-tlbi"},
	{POKELAB_BUSTED_REFS_NO_WAIT, "refs-no-wait",
	 "the INT3 refs drain drops the batch's refs without waiting for the handlers", nullptr},
	{POKELAB_BUSTED_HANDLER_MISS_LAST, "handler-miss-last",
	 "smp_text_poke_int3_handler()'s lookup misses the last site of the vector", nullptr},
	{POKELAB_BUSTED_JL_SKIP_LAST, "jl-skip-last",
	 "__jump_label_update()'s loop stops one site short of the key's last", nullptr},
	{POKELAB_BUSTED_SC_JMP_FOR_CALL, "sc-jmp-for-call",
	 "__static_call_update() rewrites an inline CALL site with a JMP", nullptr},
	{POKELAB_BUSTED_GATE_NO_CR3, "gate-no-cr3",
	 "flush_tlb_kernel_range()'s gate skips every isolated CPU (no kernel_cr3_loaded test)",
	 ISO4 "v7-tlbi"},
	{POKELAB_BUSTED_DEFER_MODULE_NOINSTR, "defer-module-noinstr",
	 "smp_text_poke_batch_finish() defers syncs for a site in a module's noinstr text",
	 ISO4 "v7 --module MODULE.o"},
	{POKELAB_BUSTED_NMI_PARANOID_POSTED, "nmi-paranoid-posted",
	 "the NMI's paranoid entry as posted in v7: no flush, no kernel_cr3_loaded on the "
	 "kernel CR3", ISO4 "v7-tlbi"},
	{POKELAB_BUSTED_ALT_NOT_IGNORED, "alt-not-ignored",
	 "apply_alternatives() takes an ALT_NOT() entry's feature test without its NOT", nullptr},
	{POKELAB_BUSTED_DISPATCHER_LIVE_HALF, "dispatcher-live-half",
	 "bpf_dispatcher_update() prepares the half its callers are running, not the idle one",
	 nullptr},
	{POKELAB_BUSTED_RET0_EMULATE_NOP, "ret0-emulate-nop",
	 "__static_call_transform() asks the INT3 handler to emulate a RET0 site as a NOP5, "
	 "not as the call of __static_call_return0 (rax left as it was)", nullptr},
	{POKELAB_BUSTED_NO_MB_NMI, "no-mb-nmi",
	 "the fixed NMI paranoid entry without its smp_mb() between kernel_cr3_loaded = 1 "
	 "and its TLB flush", ISO4 "v7-tlbi"},
	{POKELAB_BUSTED_WAIT_IPI_ONLY, "wait-ipi-only",
	 "smp_call_function_many_cond() waits only for the CPUs it sent an IPI, not for those "
	 "whose queue already held a csd", nullptr},
	{POKELAB_BUSTED_KICK_NO_WAIT, "kick-no-wait",
	 "kick_all_cpus_sync() returns without waiting for the CPUs to take its IPI (the end of "
	 "a membarrier sync round)", "pokelab.sync=membarrier"},
	/* wedges: the lockup detectors name them (kernel_shim/watchdog.h), not the model */
	{POKELAB_BUSTED_REFS_LEAK_PUT, "refs-leak-put",
	 "put_text_poke_array() loses its decrement: the next refs drain waits forever "
	 "(a soft lockup)", nullptr},
	{POKELAB_BUSTED_JL_TEXT_MUTEX_HELD, "jl-text-mutex-held",
	 "arch_jump_label_transform_queue() returns with text_mutex held (recursive locking)",
	 nullptr},
};

enum pokelab_busted param;

int setBusted(const char *val, std::string &err)
{
	std::string names;

	for (const BustedVariant &v : variants) {
		if (val && !strcmp(val, v.name)) {
			param = v.id;
			return 0;
		}
		names += std::string(names.empty() ? "" : "|") + v.name;
	}
	err = std::string("pokelab.busted=") + (val ? val : "") + ": unknown variant; accepted: " +
	      "pokelab.busted=" + names;
	return -EINVAL;
}

BootParamRegistrar bustedParam({
	"pokelab.busted", setBusted, [] { param = POKELAB_BUSTED_NONE; },
	"pokelab.busted=NAME: boot a deliberately broken variant (test only; see pokelab "
	"torture --help)",
});

} /* namespace */

void bustedBoot() noexcept
{
	pokelab_busted = param;
}

const BustedVariant *bustedVariants(unsigned int *n) noexcept
{
	*n = sizeof(variants) / sizeof(variants[0]);
	return variants;
}

const BustedVariant *bustedActive() noexcept
{
	for (const BustedVariant &v : variants)
		if (v.id == pokelab_busted)
			return &v;
	return nullptr;
}

} /* namespace kshim */
