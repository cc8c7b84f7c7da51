// SPDX-License-Identifier: GPL-2.0-only
/*
 * module_finalize() (module/module_x86.cpp) and the text_poke_early()
 * writes it makes while the module is MODULE_STATE_UNFORMED:
 *  - every such write is followed by a serialisation of the writing CPU
 *    before the next one, as upstream's text_poke_early() syncs for text
 *    is_module_text_address() does not know yet (the machine counts the
 *    serialising instructions, kshim::cpuEvents[cpu].serialCount); pokelab
 *    used to copy a loading module's text without one.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <kernel_shim/cpu_events.h>
#include <linux/module.h>
#include <pokelab/alt_test.h>
#include <pokelab/module_load.h>

#include "booted.h"

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

} /* namespace */
