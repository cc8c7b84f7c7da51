// SPDX-License-Identifier: GPL-2.0-only
/*
 * The model at boot (docs/testing.md, "The model at boot"). The model is
 * reset by the machine's own boot hook, before any early hook writes text
 * (text_poke_early(), apply_alternatives(), the INT3 self-test,
 * static_call_init(), jump_label_init()), so every text write of a boot is
 * fed to it. What this file adds is when a boot fault is decided, and that
 * it stops the boot:
 *
 *  - R7 at the end of each boot stage that writes text, over every table
 *    the stages so far have made true (a table is checked from the stage
 *    that writes its sites on: the alternatives are not judged before
 *    apply_alternatives() ran);
 *  - R5 on the INT3 self-test's emulation, on the trapping CPU, before the
 *    handler returns to the state it built (a wrong push would crash the
 *    CPU at the callee's RET, before any later check could speak);
 *  - a fault found at boot prints every report so far, then a panic line,
 *    and exits with status 1: the machine does not boot. From the INT3
 *    handler that is async-signal-safe code only (SigSafeBuf, _exit()).
 */
#include <cstdio>
#include <cstring>
#include <string>

#include <unistd.h>

#include <fmt/format.h>

#include <asm/ptrace.h>
#include <kernel_shim/boot.h>
#include <kernel_shim/busted.h>
#include <kernel_shim/elf_image.h>
#include <kernel_shim/plural.h>
#include <linux/bug.h>
#include <kernel_shim/sigsafe.h>
#include <kernel_shim/xmc_verdict.h>
#include <linux/cpumask.h>
#include <linux/kernel.h>

#define XMC_PRIVATE
#include "xmc_internal.h"

namespace kshim {

namespace xmc {

namespace {

/* The tables the boot stages so far have made true (XMC_TABLE_* bits). */
unsigned int bootTables;
/* The INT3 self-test, from the symbol table: its INT3 and the function its notifier calls. */
unsigned long selftestSite, selftestCallee;
constexpr unsigned long kCallLen = 5;	/* the slot: a CALL rel32 */

/* The machine does not boot: what the model found, then the panic line. Task context. */
[[noreturn]] void bootPanic(const char *stage)
{
	std::string s;

	for (const XmcViolation &v : violationLog)
		s += xmcFormat(v);
	s += fmt::format("Kernel panic - not syncing: xmc: {} at boot, by the end of {}: "
			 "the machine does not boot\n", nOf(stats.violations, "violation"), stage);
	fflush(stdout);
	for (size_t off = 0; off < s.size();) {
		ssize_t r = write(2, s.data() + off, s.size() - off);

		if (r <= 0)
			break;
		off += r;
	}
	runPanicNotifiers();	/* the command's verdict */
	_exit(1);
}

/* The self-test's wrong emulation, as CPU @cpu recorded it, in one line. Signal-safe. */
void selftestLine(int cpu, SigSafeBuf &b)
{
	const Int3Cpu *t = &int3Cpus[cpu];

	b.str("xmc: INT3 emulated wrongly: CPU ").dec(cpu).str(" at int3_selftest_asm [")
		.hex(selftestSite).str("]: int3_selftest()'s die notifier resumed it at ")
		.hex(t->selftestIp).str(", sp ").hex(t->selftestSp1).str(" holding ")
		.hex(t->selftestTop1).str(", the trapped frame's top ").hex(t->selftestSp0)
		.str(" holding ").hex(t->selftestTop0Now).str(" (was ").hex(t->selftestTop0)
		.str("); expected, after its slot's instruction call int3_selftest_callee: ")
		.hex(selftestCallee).str(", sp ").hex(t->selftestSp0 - 8).str(" holding ")
		.hex(selftestSite + kCallLen).str(", the frame's top unchanged\n  site:  ")
		.hexBytes((const void *)selftestSite, kCallLen)
		.str("   (the INT3 and its slot)\n");
}

} /* namespace */

void bootReset()
{
	static const unsigned long site = elfProgramSymbol("int3_selftest_asm");
	static const unsigned long callee = elfProgramSymbol("int3_selftest_callee");

	bootTables = 0;
	selftestSite = site;
	selftestCallee = callee;
}

void takeSelftest()
{
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		Int3Cpu *t = &int3Cpus[cpu];
		XmcViolation v = {};

		if (__atomic_load_n(&t->selftestHave, __ATOMIC_ACQUIRE) != 1)
			continue;
		v.rule = XmcRule::Int3Misemulated;
		v.cpu = cpu;
		v.op = "int3_selftest";
		v.site = selftestSite;
		v.len = kCallLen;
		memcpy(v.oldBytes, (const void *)selftestSite, kCallLen);
		memcpy(v.newBytes, v.oldBytes, kCallLen);
		v.detail = fmt::format("resumed at {:#x}, sp {:+d} holding {:#x}, the trapped "
				       "frame's top {} ({:#x}, was {:#x}); expected, after call "
				       "int3_selftest_callee: {:#x}, sp -8, return address {:#x} "
				       "pushed, the frame's top unchanged",
				       t->selftestIp, (long)(t->selftestSp1 - t->selftestSp0),
				       t->selftestTop1,
				       t->selftestTop0Now == t->selftestTop0 ? "unchanged"
									     : "overwritten",
				       t->selftestTop0Now, t->selftestTop0, selftestCallee,
				       selftestSite + kCallLen);
		__atomic_store_n(&t->selftestHave, 0, __ATOMIC_RELEASE);
		report(v);
	}
}

} /* namespace xmc */

using namespace xmc;

void xmcInt3Claimed(const struct pt_regs *before, const struct pt_regs *after) noexcept
{
	int cpu = tlsCpu;
	unsigned long sp0 = before->sp, top0, top0Now, top1;
	Int3Cpu *t;
	SigSafeBuf b;

	if (!xmcEnabled || cpu < 0 || !selftestSite || before->ip - 1 != selftestSite)
		return;
	t = &int3Cpus[cpu];
	/* the word as trapped (xmcInt3Enter()), and as the handler leaves it */
	top0 = t->enterSp == sp0 ? t->enterTop : *(const unsigned long *)sp0;
	top0Now = *(const unsigned long *)sp0;
	top1 = *(const unsigned long *)after->sp;
	__atomic_fetch_add(&stats.emulations, 1, __ATOMIC_RELAXED);
	if (after->ip == selftestCallee && after->sp == sp0 - 8 &&
	    top1 == selftestSite + kCallLen && top0Now == top0)
		return;
	if (!claimOwn(&t->selftestHave, 0, kRecFilling))
		return;
	t->selftestSp0 = sp0;
	t->selftestTop0 = top0;
	t->selftestTop0Now = top0Now;
	t->selftestIp = after->ip;
	t->selftestSp1 = after->sp;
	t->selftestTop1 = top1;
	__atomic_store_n(&t->selftestHave, 1, __ATOMIC_RELEASE);
	selftestLine(cpu, b);
	b.emit();
	xmcNoteReported();
	if (READ_ONCE(system_state) >= SYSTEM_RUNNING)
		return;		/* a test's run after boot: reported by the writer */
	/* the panic, from the handler: the state it would return to crashes the CPU */
	b = SigSafeBuf();
	b.str("Kernel panic - not syncing: xmc: the INT3 self-test was emulated wrongly at "
	      "boot, by the end of int3_selftest: the machine does not boot\n");
	b.emit();
	runPanicNotifiers();	/* the command's verdict */
	_exit(1);
}

unsigned long xmcBootStageCheck(const char *stage, unsigned int tables) noexcept
{
	u64 before;

	if (!xmcEnabled)
		return 0;
	/* the stage's writes form an operation of their own, and what the CPUs recorded */
	xmcQuiesce();
	before = stats.violations;
	bootTables |= tables;
	checkTableSet(stage, bootTables);
	return stats.violations - before;
}

void xmcBootStage(const char *stage, unsigned int tables) noexcept
{
	unsigned long found;

	/*
	 * A BUSTED run (pokelab.busted=NAME) is fault injection judged by its
	 * run's verdict, which the mutation sweep and torture's tests read:
	 * its boot goes on, each stage judging only the tables it made true
	 * (one report per fault, as before the stages had checks).
	 */
	if (bustedActive()) {
		if (xmcEnabled) {
			xmcQuiesce();
			bootTables |= tables;
			checkTableSet(stage, tables);
		}
		return;
	}
	found = xmcBootStageCheck(stage, tables);

	/* before the other CPUs run, any report is the boot's own text's */
	if (found || (xmcEnabled && stats.violations && num_online_cpus() <= 1))
		bootPanic(stage);
}

} /* namespace kshim */
