// SPDX-License-Identifier: GPL-2.0-only
/*
 * A relocation written into a live module (livepatch's path through
 * apply_relocate_add() -> write_relocate_add()): text_poke(), then the
 * deferral series' deferrable sync (v7 25/31, v6 24/29). Under v7 an
 * isolated CPU in user mode takes the sync as deferred work at its next
 * kernel entry instead of an IPI; a housekeeping CPU still gets the IPI.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include <asm/text-patching.h>
#include <kernel_shim/cpu.h>
#include <linux/context_tracking.h>
#include <linux/execmem.h>
#include <pokelab/ct_entry.h>
#include <pokelab/module_load.h>
#include <pokelab/text_poke_stats.h>

#include "booted.h"

namespace {

const int kHousekeeping = 1;
const int kIsolated = 2;

class ModuleRelocate : public pokelab::test::Booted
{
protected:
	std::string extraParams() const override
	{
		return "nohz_full=2-3 pokelab.ct_defer=v7";
	}

	/* The isolated CPU in user mode, entering the kernel only if an IPI reaches it. */
	void startUserLoop()
	{
		stop_ = false;
		cfg_.stop = &stop_;
		cfg_.syscallPeriodNs = 0;
		kshim::cpuRun(kIsolated, [this] { (void)pokelab::ctUserLoop(cfg_); });
		while (ct_state_cpu(kIsolated) != CT_STATE_USER)
			std::this_thread::yield();
	}

	void stopUserLoop()
	{
		stop_ = true;
		kshim::cpuWait(kIsolated);
	}

	std::atomic<bool> stop_{false};
	pokelab::UserLoopConfig cfg_;
};

/*
 * issue 33 item 2: one R_X86_64_32 into "mov eax, imm32; ret" of a live
 * module's text, the way klp_apply_section_relocs() writes a livepatch's.
 */
TEST_F(ModuleRelocate, LiveModuleRelocationDefersTheIsolatedCpusSync)
{
	const u32 val = 0x5eed1234;
	u8 code[6] = {0xb8, 0, 0, 0, 0, RET_INSN_OPCODE};
	u8 *text = (u8 *)execmem_alloc(EXECMEM_MODULE_TEXT, 4096);
	Elf64_Sym syms[2] = {};
	Elf64_Rela rela = {};
	Elf64_Shdr sechdrs[4] = {};
	struct module mod = {};

	ASSERT_NE(text, nullptr);
	text_poke_copy(text, code, sizeof(code));
	syms[1].st_shndx = SHN_ABS;
	syms[1].st_value = val;
	rela.r_offset = 1;
	rela.r_info = ELF64_R_INFO(1, R_X86_64_32);
	sechdrs[1].sh_addr = (Elf64_Addr)text;
	sechdrs[2].sh_addr = (Elf64_Addr)syms;
	sechdrs[3].sh_addr = (Elf64_Addr)&rela;
	sechdrs[3].sh_size = sizeof(rela);
	sechdrs[3].sh_info = 1;
	mod.state = MODULE_STATE_LIVE;
	strcpy(mod.name, "reloc_test");

	startUserLoop();
	unsigned long deferred = pokelab::syncsDeferred(kIsolated);
	unsigned long isoSyncs = pokelab::syncCoreRuns(kIsolated);
	unsigned long isoIpis = kshim::cpuStats(kIsolated).ipiReceived;
	unsigned long hkSyncs = pokelab::syncCoreRuns(kHousekeeping);

	ASSERT_EQ(apply_relocate_add(sechdrs, "", 2, 3, &mod), 0);

	/* deferred to the isolated CPU's next entry, not sent */
	EXPECT_EQ(pokelab::syncsDeferred(kIsolated), deferred + 1);
	EXPECT_EQ(pokelab::syncCoreRuns(kIsolated), isoSyncs);
	EXPECT_EQ(kshim::cpuStats(kIsolated).ipiReceived, isoIpis);
	/* a housekeeping CPU still gets its do_sync_core() IPI */
	EXPECT_EQ(pokelab::syncCoreRuns(kHousekeeping), hkSyncs + 1);
	stopUserLoop();

	EXPECT_EQ(memcmp(text + 1, &val, sizeof(val)), 0);
	execmem_free(text);
}

} /* namespace */
