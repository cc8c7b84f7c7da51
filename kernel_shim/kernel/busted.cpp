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

const BustedVariant variants[] = {
	{POKELAB_BUSTED_NO_SYNC_1, "no-sync-1",
	 "smp_text_poke_batch_finish() without the sync after phase 1 (INT3s)", false},
	{POKELAB_BUSTED_NO_SYNC_2, "no-sync-2",
	 "smp_text_poke_batch_finish() without the sync after phase 2 (tails)", false},
	{POKELAB_BUSTED_NO_SYNC_3, "no-sync-3",
	 "smp_text_poke_batch_finish() without the sync after phase 3 (first bytes)", false},
	{POKELAB_BUSTED_FIRST_BYTE_FIRST, "first-byte-first",
	 "smp_text_poke_batch_finish() writes a site's new first byte before its tail", false},
	{POKELAB_BUSTED_EMPTY_DO_SYNC_CORE, "empty-do-sync-core",
	 "do_sync_core() returns without serialising", false},
	{POKELAB_BUSTED_REFS_DRAIN_EARLY, "refs-drain-early",
	 "smp_text_poke_batch_finish() drains the INT3 refs before the phase-3 sync", false},
	{POKELAB_BUSTED_SKIP_ENTRY_FLUSH, "skip-entry-flush",
	 "ct_kernel_enter_state() never runs ct_work_flush()", true},
	{POKELAB_BUSTED_DEFER_NOINSTR, "defer-noinstr",
	 "smp_text_poke_batch_finish() defers syncs even when a site is noinstr text", true},
	{POKELAB_BUSTED_PHASE3_SKIP_LAST, "phase3-skip-last",
	 "smp_text_poke_batch_finish()'s phase 3 stops one site short: its INT3 stays", false},
	{POKELAB_BUSTED_TAIL_OVERRUN, "tail-overrun",
	 "smp_text_poke_batch_finish()'s phase 2 writes one byte past each site's tail", false},
	{POKELAB_BUSTED_CALL_AS_JMP, "call-as-jmp",
	 "smp_text_poke_int3_handler() emulates a CALL site as a JMP (no return address)", false},
	{POKELAB_BUSTED_CR3_LOADED_LATE, "cr3-loaded-late",
	 "kernel entry flushes the kernel TLB before setting kernel_cr3_loaded (v7 30/31)", true},
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
