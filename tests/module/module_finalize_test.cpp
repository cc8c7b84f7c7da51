// SPDX-License-Identifier: GPL-2.0-only
/*
 * module_finalize() (module/module_x86.cpp) and the text_poke_early()
 * writes it makes while the module is MODULE_STATE_UNFORMED:
 *  - every such write is followed by a serialisation of the writing CPU
 *    before the next one, as upstream's text_poke_early() syncs for text
 *    is_module_text_address() does not know yet (the machine counts the
 *    serialising instructions, kshim::cpuEvents[cpu].serialCount); pokelab
 *    used to copy a loading module's text without one;
 *  - a module built with the mitigation thunks (pokelab_thunk_mod) has its
 *    retpolines and returns rewritten as the boot asks, its NULL static
 *    call's trampoline included (apply_returns()'s __static_call_fixup()):
 *    with retbleed=off no "JMP __x86_return_thunk" may stay, with
 *    spectre_v2=off no call of __x86_indirect_thunk_REG. module_finalize()
 *    used to apply only the alternatives.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <asm/alternative.h>
#include <kernel_shim/cpu_events.h>
#include <kernel_shim/disasm.h>
#include <linux/module.h>
#include <linux/static_call.h>
#include <pokelab/alt_test.h>
#include <pokelab/module_load.h>

#include "booted.h"
#include "branch_target.h"

namespace {

std::string modPath(const char *name)
{
	const char *dir = getenv("POKELAB_MODULES");

	return std::string(dir ? dir : "modules") + "/" + name + ".o";
}

class ModuleFinalize : public pokelab::test::Booted
{
protected:
	void TearDown() override
	{
		pokelab::altTestReset();
		Booted::TearDown();
	}
};

/* CPU 0's serialisations at each early write of the load */
std::vector<u64> serialAtWrite;

void recordWrite(void)
{
	serialAtWrite.push_back(__atomic_load_n(&kshim::cpuEvents[0].serialCount,
						 __ATOMIC_RELAXED));
}

TEST_F(ModuleFinalize, EarlyWritesToAFormingModuleAreSerialised)
{
	struct module *mod = nullptr;
	std::string err;

	serialAtWrite.clear();
	pokelab_alt_bugs.text_poke_early_after_write = recordWrite;
	ASSERT_EQ(load_module_file(modPath("pokelab_alt_mod"), &mod, &err), 0) << err;
	pokelab_alt_bugs.text_poke_early_after_write = nullptr;
	u64 after = __atomic_load_n(&kshim::cpuEvents[0].serialCount, __ATOMIC_RELAXED);

	/* its init saw the replacements */
	auto sum = (int (*)(void))find_kallsyms_symbol_value(mod, "pokelab_alt_mod_sum");
	ASSERT_TRUE(sum);
	EXPECT_EQ(sum(), 6);

	/* three alternatives, each through text_poke_early() with IRQs off, each synced */
	ASSERT_GE(serialAtWrite.size(), 3u) << "the module's alternatives were not written by "
					       "text_poke_early()'s serialised path";
	for (size_t i = 1; i < serialAtWrite.size(); i++)
		EXPECT_GT(serialAtWrite[i], serialAtWrite[i - 1])
			<< "write " << i << " came before a serialisation after write " << i - 1;
	EXPECT_GT(after, serialAtWrite.back());
	EXPECT_FALSE(pokelab::textPokeEarlyUnsynced(0));
	EXPECT_EQ(delete_module(mod), 0);
}

/* The first instruction of @fn (at most @max bytes in) whose opcode is one of @ops. */
const u8 *firstOf(const void *fn, std::initializer_list<u8> ops, unsigned int max = 96)
{
	const u8 *p = (const u8 *)fn;

	for (unsigned int off = 0; off < max;) {
		unsigned int len = 0;

		for (u8 op : ops)
			if (p[off] == op)
				return p + off;
		kshim::disasmOne(p + off, 16, (unsigned long)(p + off), &len);
		if (!len)
			break;
		off += len;
	}
	return nullptr;
}

struct ThunkMod {
	struct module *mod = nullptr;
	int (*leaf)(int);
	int (*call)(int (*)(int), int);
	const u8 *tramp;
};

void loadThunkMod(ThunkMod *t)
{
	std::string err;

	ASSERT_EQ(load_module_file(modPath("pokelab_thunk_mod"), &t->mod, &err), 0) << err;
	t->leaf = (int (*)(int))find_kallsyms_symbol_value(t->mod, "pokelab_thunk_mod_leaf");
	t->call = (int (*)(int (*)(int), int))find_kallsyms_symbol_value(t->mod,
									  "pokelab_thunk_mod_call");
	t->tramp = (const u8 *)find_kallsyms_symbol_value(t->mod, "__SCT__pokelab_thunk_mod_null");
	ASSERT_TRUE(t->leaf && t->call && t->tramp);
	EXPECT_EQ(t->call(t->leaf, 5), 16);
}

TEST_F(ModuleFinalize, ThunksKeptWhereWanted)
{
	ThunkMod t;

	loadThunkMod(&t);
	/* the defaults: both thunks wanted, so the compiler's jumps and calls stay */
	const u8 *r = firstOf((const void *)t.leaf, {0xc3, 0xe9});
	const u8 *c = firstOf((const void *)t.call, {0xe8, 0xff});

	ASSERT_TRUE(r && c);
	EXPECT_EQ(pokelab::test::branchTarget(r, 0xe9), (unsigned long)x86_return_thunk);
	EXPECT_EQ(c[0], 0xe8);
	EXPECT_EQ(pokelab::test::branchTarget(t.tramp, 0xe9), (unsigned long)x86_return_thunk);
	EXPECT_EQ(memcmp(t.tramp + 5, "\x0f\xb9\xcc", 3), 0);
	EXPECT_EQ(delete_module(t.mod), 0);
}

class ModuleFinalizeNoThunks : public ModuleFinalize
{
protected:
	std::string extraParams() const override { return "spectre_v2=off retbleed=off"; }
};

TEST_F(ModuleFinalizeNoThunks, ThunksRewrittenAway)
{
	ThunkMod t;

	loadThunkMod(&t);
	const u8 *r = firstOf((const void *)t.leaf, {0xc3, 0xe9});
	const u8 *c = firstOf((const void *)t.call, {0xe8, 0xff, 0x2e});

	ASSERT_TRUE(r && c);
	/* v7.3's emit_indirect(): CS prefixes fill the CALL's slot ahead of it */
	while (*c == 0x2e)
		c++;
	EXPECT_EQ(memcmp(r, "\xc3\xcc\xcc\xcc\xcc", 5), 0)
		<< "the module's return still jumps to __x86_return_thunk";
	EXPECT_EQ(c[0], 0xff) << "the module's indirect call still calls the retpoline thunk";
	EXPECT_EQ(c[1] & 0x38, 0x10) << "CALL *%reg";
	/* the NULL trampoline: the RET form, its signature kept */
	EXPECT_EQ(memcmp(t.tramp, "\xc3\xcc\xcc\xcc\xcc", 5), 0);
	EXPECT_EQ(memcmp(t.tramp + 5, "\x0f\xb9\xcc", 3), 0);
	EXPECT_EQ(t.call(t.leaf, 1), 4);
	EXPECT_EQ(delete_module(t.mod), 0);
}

} /* namespace */
