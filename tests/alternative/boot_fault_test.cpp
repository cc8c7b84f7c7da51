// SPDX-License-Identifier: GPL-2.0-only
/*
 * The model at boot (kernel_shim/xmc/boot.cpp, docs/testing.md "The model
 * at boot"): the check at a boot stage's end finds a site that holds other
 * bytes than its table demands and names the stage, the site, the table
 * entry and the bytes; only the tables made true so far are judged; at
 * boot such a fault panics with exit status 1 after the report; and the
 * INT3 self-test's emulation is held to "call int3_selftest_callee". The
 * sites are corrupted by hand after boot, no BUSTED switch (the source
 * mutations that do it at boot are tests/bootfaults/, not in this suite).
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include <asm/nops.h>
#include <asm/ptrace.h>
#include <asm/text-patching.h>
#include <kernel_shim/elf_image.h>
#include <kernel_shim/xmc.h>
#include <kernel_shim/xmc_verdict.h>
#include <linux/jump_label.h>
#include <linux/mutex.h>

#include "booted.h"

extern "C" struct jump_entry __start___jump_table[];
extern "C" struct jump_entry __stop___jump_table[];

DEFINE_STATIC_KEY_FALSE(boot_fault_key);

extern "C" __noinline int boot_fault_user(void)
{
	if (static_branch_unlikely(&boot_fault_key))
		return 2;
	return 1;
}

namespace {

class BootFault : public pokelab::test::Booted
{
protected:
	bool xmcViolationsExpected() const override { return true; }

	void SetUp() override
	{
		pokelab::test::Booted::SetUp();
		for (e_ = __start___jump_table; e_ < __stop___jump_table; e_++)
			if (jump_entry_key(e_) == &boot_fault_key.key)
				break;
		ASSERT_LT(e_, __stop___jump_table);
		site_ = (u8 *)jump_entry_code(e_);
		memcpy(saved_, site_, 5);
	}

	void TearDown() override
	{
		if (kshim::booted())
			poke(saved_);
		pokelab::test::Booted::TearDown();
	}

	/*
	 * The site rewritten by hand, as a boot stage would have left it: a
	 * plain write no CPU can fetch while it lands (hidden from the model,
	 * so R1 has nothing to say), serialised everywhere, then published.
	 */
	void poke(const u8 *bytes)
	{
		mutex_lock(&text_mutex);
		kshim::xmcTextHidden(site_, 5);
		text_poke(site_, bytes, 5);
		smp_text_poke_sync_each_cpu();
		kshim::xmcTextPublish(site_, 5);
		mutex_unlock(&text_mutex);
	}

	struct jump_entry *e_ = nullptr;
	u8 *site_ = nullptr;
	u8 saved_[5];
};

TEST_F(BootFault, TheCorrectBootIsSilentAtEveryStage)
{
	kshim::XmcStats s = kshim::xmcStats();

	/* the model, reset before the first text write, saw the boot's own */
	EXPECT_GT(s.writes, 0u) << "apply_alternatives() writes every boot (from the originals)";
	EXPECT_GE(s.emulations, 1u) << "the INT3 self-test's trap";
	EXPECT_GT(s.tableChecks, 100u) << "the stages' R7";
	EXPECT_EQ(s.violations, 0u) << "the boot itself";
	EXPECT_EQ(kshim::xmcBootStageCheck("the test", kshim::XMC_TABLES_ALL), 0u);
	EXPECT_EQ(boot_fault_user(), 1);
}

TEST_F(BootFault, AWrongJumpSiteIsNamedWithItsEntryAndBytes)
{
	u8 jmp[5];

	/* the key is off: the entry demands a NOP; the site made a JMP to its target */
	__text_gen_insn(jmp, JMP32_INSN_OPCODE, site_, (void *)jump_entry_target(e_),
			JMP32_INSN_SIZE);
	poke(jmp);
	/* the model as a boot starts it (machine quiet): no table made true yet */
	kshim::xmcReset();
	/* the stages before jump_label_init() do not judge __jump_table */
	EXPECT_EQ(kshim::xmcBootStageCheck("static_call_init", kshim::XMC_TABLE_STATIC_CALLS), 0u);
	EXPECT_EQ(kshim::xmcBootStageCheck("apply_alternatives",
					   kshim::XMC_TABLE_ALTERNATIVES), 0u);
	ASSERT_EQ(kshim::xmcBootStageCheck("jump_label_init", kshim::XMC_TABLE_JUMP_LABELS), 1u);
	ASSERT_EQ(kshim::xmcStats().violations, 1u);
	/* and every later stage judges it too */
	EXPECT_EQ(kshim::xmcBootStageCheck("boot", 0), 1u);

	const kshim::XmcViolation v = kshim::xmcViolations().front();
	std::string line = kshim::xmcFormat(v);

	EXPECT_EQ(v.rule, kshim::XmcRule::WrongSite);
	EXPECT_STREQ(v.op, "jump_label_init");
	EXPECT_EQ(v.site, (unsigned long)site_);
	EXPECT_EQ(v.len, 5u);
	EXPECT_EQ(memcmp(v.newBytes, jmp, 5), 0) << "the bytes now";
	EXPECT_EQ(memcmp(v.oldBytes, saved_, 5), 0) << "the build's bytes (a NOP5 here)";
	EXPECT_EQ(line.rfind("xmc: site holds the wrong instruction: CPU 0 at boot_fault_user", 0),
		  0u) << line;
	EXPECT_NE(line.find("after jump_label_init the site holds other bytes than its "
			    "__jump_table entry demands (key boot_fault_key"), std::string::npos)
		<< line;
	EXPECT_NE(line.find(fmt::format("entry {} of the program's __jump_table",
					e_ - __start___jump_table)), std::string::npos) << line;
	EXPECT_NE(line.find("a 5-byte NOP"), std::string::npos) << line;
	EXPECT_NE(line.find("\n  now:   e9"), std::string::npos) << line;
	/* put back, the next stage's check is silent again */
	poke(saved_);
	EXPECT_EQ(kshim::xmcBootStageCheck("boot", kshim::XMC_TABLES_ALL), 0u);
}

TEST_F(BootFault, AFaultAtABootStagePanicsAfterItsReport)
{
	static const u8 ud2[5] = {0x0f, 0x0b, 0x90, 0x90, 0x90};

	poke(ud2);
	EXPECT_EXIT(kshim::xmcBootStage("jump_label_init", kshim::XMC_TABLE_JUMP_LABELS),
		    testing::ExitedWithCode(1),
		    "xmc: site holds the wrong instruction: CPU 0 at boot_fault_user.*"
		    "now: +0f 0b +ud2.*"
		    "Kernel panic - not syncing: xmc: 1 violation at boot, by the end of "
		    "jump_label_init: the machine does not boot");
}

TEST_F(BootFault, TheSelfTestsPushIsHeldToItsCall)
{
	unsigned long site = kshim::elfProgramSymbol("int3_selftest_asm");
	unsigned long callee = kshim::elfProgramSymbol("int3_selftest_callee");
	unsigned long stack[4] = {0x1111, 0x2222, 0x3333, 0x4444};
	struct pt_regs before = {}, after;

	ASSERT_NE(site, 0u);
	ASSERT_NE(callee, 0u);
	before.ip = site + 1;
	before.sp = (unsigned long)&stack[2];
	/* right: the return address below the trapped top, which stays */
	kshim::xmcInt3Enter(&before);
	after = before;
	after.ip = callee;
	after.sp = before.sp - 8;
	stack[1] = site + 5;
	kshim::xmcInt3Claimed(&before, &after);
	kshim::xmcInt3Exit();
	kshim::xmcQuiesce();
	EXPECT_EQ(kshim::xmcStats().violations, 0u);

	/* the push stored before it moved the stack pointer: the trapped top overwritten */
	stack[1] = 0x2222;
	kshim::xmcInt3Enter(&before);
	stack[2] = site + 5;
	kshim::xmcInt3Claimed(&before, &after);
	kshim::xmcInt3Exit();
	kshim::xmcQuiesce();
	ASSERT_EQ(kshim::xmcStats().violations, 1u);

	const kshim::XmcViolation v = kshim::xmcViolations().back();
	std::string line = kshim::xmcFormat(v);

	EXPECT_EQ(v.rule, kshim::XmcRule::Int3Misemulated);
	EXPECT_EQ(v.site, site);
	EXPECT_EQ(v.oldBytes[0], 0xcc) << "the self-test's INT3";
	EXPECT_EQ(line.rfind("xmc: INT3 emulated wrongly: CPU 0 at int3_selftest_asm", 0), 0u)
		<< line;
	EXPECT_NE(line.find(fmt::format("the trapped frame's top overwritten ({:#x}, was 0x3333)",
					site + 5)), std::string::npos) << line;
	EXPECT_NE(line.find(fmt::format("return address {:#x} pushed", site + 5)),
		  std::string::npos) << line;
}

} /* namespace */
