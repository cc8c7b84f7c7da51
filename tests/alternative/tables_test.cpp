// SPDX-License-Identifier: GPL-2.0-only
/*
 * R7, the tables: a site that holds other bytes than its table and its
 * key's state demand is found, whether a batch was asked for the wrong
 * bytes or memory ended up holding them, and a site that holds what they
 * demand is not; for jump labels, static calls and their trampolines, and
 * for the program's alternatives after boot.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <cstring>

#include <asm/nops.h>
#include <asm/text-patching.h>
#include <kernel_shim/xmc.h>
#include <kernel_shim/xmc_verdict.h>
#include <linux/jump_label.h>
#include <linux/mutex.h>
#include <linux/static_call.h>

#include "booted.h"

extern "C" struct jump_entry __start___jump_table[];
extern "C" struct jump_entry __stop___jump_table[];

DEFINE_STATIC_KEY_FALSE(tables_key);

extern "C" __noinline int tables_user(void)
{
	if (static_branch_unlikely(&tables_key))
		return 2;
	return 1;
}

extern "C" int tables_fa(int x)
{
	return x + 1;
}

extern "C" int tables_fb(int x)
{
	return x + 2;
}

DEFINE_STATIC_CALL(tables_call, tables_fa);

namespace {

class Tables : public pokelab::test::Booted
{
protected:
	bool xmcViolationsExpected() const override { return true; }

	const struct jump_entry *entryOf(struct static_key *key)
	{
		for (struct jump_entry *e = __start___jump_table; e < __stop___jump_table; e++)
			if (jump_entry_key(e) == key)
				return e;
		return nullptr;
	}

	unsigned long wrongSites(bool request)
	{
		unsigned long n = 0;

		for (const kshim::XmcViolation &v : kshim::xmcViolations())
			n += v.rule == kshim::XmcRule::WrongSite && v.request == request;
		return n;
	}
};

TEST_F(Tables, TheBootedMachineHoldsWhatItsTablesDemand)
{
	kshim::XmcStats s0 = kshim::xmcStats();

	kshim::xmcTablesCheck("the test");
	EXPECT_GT((kshim::xmcStats() - s0).tableChecks, 100u) << "the jump table and the alternatives";
	EXPECT_EQ(wrongSites(false), 0u);
	EXPECT_EQ(tables_user(), 1);
}

TEST_F(Tables, ABatchAskedForTheWrongJumpIsFound)
{
	const struct jump_entry *e = entryOf(&tables_key.key);
	u8 jmp[5];

	ASSERT_NE(e, nullptr);
	/* the key is off: its site must be a NOP; a batch asked for the JMP is wrong at once */
	__text_gen_insn(jmp, JMP32_INSN_OPCODE, (void *)jump_entry_code(e),
			(void *)jump_entry_target(e), JMP32_INSN_SIZE);
	mutex_lock(&text_mutex);
	smp_text_poke_single((void *)jump_entry_code(e), jmp, 5, NULL);
	EXPECT_EQ(wrongSites(true), 1u);
	/* and put back: no other report */
	smp_text_poke_single((void *)jump_entry_code(e), x86_nops[5], 5, NULL);
	mutex_unlock(&text_mutex);
	EXPECT_EQ(wrongSites(true), 1u);
	kshim::xmcTablesCheck("the test");
	EXPECT_EQ(wrongSites(false), 0u);
}

TEST_F(Tables, ASiteLeftBehindByAnUpdateIsFound)
{
	const struct jump_entry *e = entryOf(&tables_key.key);

	ASSERT_NE(e, nullptr);
	static_key_enable(&tables_key.key);
	EXPECT_EQ(tables_user(), 2);
	EXPECT_EQ(wrongSites(false), 0u) << "the update left every site as its entry demands";
	/* a write outside any batch makes the site a NOP again while the key is on */
	mutex_lock(&text_mutex);
	text_poke((void *)jump_entry_code(e), x86_nops[5], 5);
	smp_text_poke_sync_each_cpu();
	mutex_unlock(&text_mutex);
	kshim::xmcTablesCheck("the test");
	ASSERT_EQ(wrongSites(false), 1u);

	const kshim::XmcViolation v = kshim::xmcViolations().back();
	std::string line = kshim::xmcFormat(v);

	EXPECT_EQ(v.site, jump_entry_code(e));
	EXPECT_NE(line.find("its __jump_table entry demands (key tables_key"), std::string::npos)
		<< line;
	EXPECT_NE(line.find("a 5-byte JMP to"), std::string::npos) << line;
	/* the JMP put back by hand (__jump_label_patch() BUGs on a site it did not leave) */
	u8 jmp[5];

	__text_gen_insn(jmp, JMP32_INSN_OPCODE, (void *)jump_entry_code(e),
			(void *)jump_entry_target(e), JMP32_INSN_SIZE);
	mutex_lock(&text_mutex);
	text_poke((void *)jump_entry_code(e), jmp, 5);
	smp_text_poke_sync_each_cpu();
	mutex_unlock(&text_mutex);
	static_key_disable(&tables_key.key);
	EXPECT_EQ(tables_user(), 1);
	kshim::xmcTablesCheck("the test");
	EXPECT_EQ(wrongSites(false), 1u);
}

TEST_F(Tables, AStaticCallTrampolineIsHeldToItsKey)
{
	u8 jmp[5];

	static_call_update(tables_call, tables_fb);
	EXPECT_EQ(static_call(tables_call)(1), 3);
	kshim::xmcTablesCheck("the test");
	EXPECT_EQ(wrongSites(false), 0u);
	/* the trampoline sent back to the old function by hand */
	__text_gen_insn(jmp, JMP32_INSN_OPCODE, STATIC_CALL_TRAMP_ADDR(tables_call),
			(void *)tables_fa, JMP32_INSN_SIZE);
	mutex_lock(&text_mutex);
	text_poke(STATIC_CALL_TRAMP_ADDR(tables_call), jmp, 5);
	smp_text_poke_sync_each_cpu();
	mutex_unlock(&text_mutex);
	kshim::xmcTablesCheck("the test");
	ASSERT_EQ(wrongSites(false), 1u);
	EXPECT_NE(kshim::xmcFormat(kshim::xmcViolations().back()).find("trampoline of __SCK__tables_call"),
		  std::string::npos);
	static_call_update(tables_call, tables_fa);	/* as it is: no write */
	static_call_update(tables_call, tables_fb);
	static_call_update(tables_call, tables_fa);
	kshim::xmcTablesCheck("the test");
	EXPECT_EQ(wrongSites(false), 1u) << "the trampoline is the key's again";
}

} /* namespace */
