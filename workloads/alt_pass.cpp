// SPDX-License-Identifier: GPL-2.0-only
/*
 * Case 004: the generated alternatives table and one timed pass (see
 * alt_pass.h).
 */
#include <algorithm>
#include <ctime>

#include <asm/alternative.h>
#include <asm/cpufeatures.h>
#include <asm/sync_core.h>
#include <pokelab/alt_text.h>

#include <kernel_shim/clock.h>
#include <workloads/alt_pass.h>

/* Generated sites per kind; three kinds, so 3 * this many sites. */
#define ALT_SCEN_REPS 1365

#define ALT_SCEN_SEC "pokelab_alt_scen"

extern "C" {
extern struct alt_instr __start_pokelab_alt_scen[];
extern struct alt_instr __stop_pokelab_alt_scen[];
}

/*
 * userspace: a few thousand real ALTERNATIVE() sites in their own table, so
 * that one pass takes measurable time. Three kinds per repetition: a CALL
 * that becomes POPCNT (when the CPU has it), padding that becomes LFENCE
 * (ALWAYS), and a RIP-relative load whose displacement is relocated
 * (ALWAYS). The code is never executed: nothing jumps to
 * pokelab_alt_scen_text, and boot never applies this table.
 */
asm(".pushsection .text, \"ax\", @progbits\n"
    ".type pokelab_alt_scen_hweight, @function\n"
    "pokelab_alt_scen_hweight:\n"
    "	ret\n"
    ".size pokelab_alt_scen_hweight, .-pokelab_alt_scen_hweight\n"
    ".type pokelab_alt_scen_text, @function\n"
    "pokelab_alt_scen_text:\n"
    "	ud2\n"
    ".rept " __alt_stringify(ALT_SCEN_REPS) "\n"
    __ALTERNATIVE_SEC(ALT_SCEN_SEC, "call pokelab_alt_scen_hweight", "popcntl %edi, %eax",
		      X86_FEATURE_POPCNT)
    __ALTERNATIVE_SEC(ALT_SCEN_SEC, "", "lfence", X86_FEATURE_ALWAYS)
    __ALTERNATIVE_SEC(ALT_SCEN_SEC, "movl pokelab_alt_scen_var(%rip), %eax",
		      "movl pokelab_alt_scen_var+4(%rip), %eax", X86_FEATURE_ALWAYS)
    ".endr\n"
    "	ud2\n"
    ".size pokelab_alt_scen_text, .-pokelab_alt_scen_text\n"
    ".popsection\n"
    ".pushsection .data\n"
    ".balign 8\n"
    "pokelab_alt_scen_var:\n"
    "	.long 0, 0\n"
    ".popsection\n");

namespace pokelab::scenario {

namespace {

unsigned long generatedSites = 3 * ALT_SCEN_REPS;

/* The generated table's compiler bytes, copied before the first pass patches it. */
AltTextSnapshot *generatedPristine;

void syncSerialize(void)
{
	serialize();
}

void syncIretToSelf(void)
{
	iret_to_self();
}

void syncCpuid(void)
{
	cpuid_serialize();
}

} /* namespace */

const std::vector<AltSyncFlavour> &altSyncFlavours()
{
	static const std::vector<AltSyncFlavour> f = {
		{"serialize", syncSerialize, kshim::cpuHasSerialize},
		{"iret_to_self", syncIretToSelf, true},
		{"cpuid", syncCpuid, true},
	};

	return f;
}

std::vector<pokelab_alt_table> altPassTables()
{
	return {{__start_altinstructions, __stop_altinstructions},
		{__start_pokelab_alt_scen, __start_pokelab_alt_scen + generatedSites}};
}

unsigned long altGeneratedSites()
{
	return generatedSites;
}

unsigned long altGeneratedSitesMax()
{
	return __stop_pokelab_alt_scen - __start_pokelab_alt_scen;
}

void altSetGeneratedSites(unsigned long n)
{
	generatedSites = std::min(std::max(n, 1ul), altGeneratedSitesMax());
}

void altPassRestore()
{
	if (!generatedPristine)
		generatedPristine = new AltTextSnapshot(__start_pokelab_alt_scen,
							__stop_pokelab_alt_scen);
	generatedPristine->restore();
	pokelab::altOwnSitesRestore();
}

AltPassResult altRunPass(bool batched, void (*sync)(void))
{
	std::vector<pokelab_alt_table> t = altPassTables();
	struct pokelab_alt_pass pass = {};
	u64 t0;

	altPassRestore();
	pass.batched = batched;
	pass.sync = sync;
	t0 = kshim::clockNs();
	pokelab_apply_alternatives_pass(t.data(), (int)t.size(), &pass);
	return {kshim::clockNs() - t0, pass.sites, pass.syncs};
}

std::vector<u8> altPassBytes()
{
	std::vector<u8> out;

	for (const pokelab_alt_table &t : altPassTables())
		for (struct alt_instr *a = t.start; a < t.end; a++) {
			u8 *p = (u8 *)&a->instr_offset + a->instr_offset;

			out.insert(out.end(), p, p + a->instrlen);
		}
	return out;
}

} /* namespace pokelab::scenario */
