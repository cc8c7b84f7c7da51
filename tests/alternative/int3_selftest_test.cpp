// SPDX-License-Identifier: GPL-2.0-only
/*
 * The kernel's INT3 self-test (int3_selftest(), arch/x86/kernel/alternative.c)
 * in pokelab's form: a real INT3 followed by four NOPs, claimed by a die
 * notifier that emulates a CALL to int3_magic(&val). The callee must store 1
 * through its argument, and execution must resume after the 5-byte slot
 * with the stack intact.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <climits>

#include <asm/text-patching.h>
#include <linux/kdebug.h>

#include "booted.h"

extern "C" void int3_magic(unsigned int *ptr);
extern "C" const char int3_selftest_ip[];

/* int3_magic: *%rdi = 1; ret. Hand-written so it clobbers nothing else. */
asm(".pushsection .text, \"ax\", @progbits\n"
    ".type int3_magic, @function\n"
    "int3_magic:\n"
    "	movl $1, (%rdi)\n"
    "	ret\n"
    ".size int3_magic, .-int3_magic\n"
    ".popsection\n");

namespace {

int int3_exception_notify(struct notifier_block *, unsigned long val, void *data)
{
	struct die_args *args = (struct die_args *)data;
	struct pt_regs *regs = args->regs;

	if (!regs || user_mode(regs))
		return NOTIFY_DONE;
	if (val != DIE_INT3)
		return NOTIFY_DONE;
	if (regs->ip - INT3_INSN_SIZE != (unsigned long)int3_selftest_ip)
		return NOTIFY_DONE;

	int3_emulate_call(regs, (unsigned long)&int3_magic);
	return NOTIFY_STOP;
}

class Int3SelfTest : public pokelab::test::Booted
{
};

TEST_F(Int3SelfTest, EmulatedCallStoresOneAndResumesAfterTheSlot)
{
	static struct notifier_block int3_exception_nb = {int3_exception_notify, nullptr,
							   INT_MAX - 1};
	unsigned int val = 0;
	unsigned long sp_before, sp_after;

	ASSERT_EQ(register_die_notifier(&int3_exception_nb), 0);

	/*
	 * int3_magic(&val), the hard way. userspace: step over the red zone
	 * first, since the emulated CALL pushes below the stack pointer.
	 */
	asm volatile("mov %%rsp, %[before]\n\t"
		     "sub $128, %%rsp\n\t"
		     "int3_selftest_ip:\n\t"
		     "int3; nop; nop; nop; nop\n\t"
		     "add $128, %%rsp\n\t"
		     "mov %%rsp, %[after]\n\t"
		     : [before] "=&r"(sp_before), [after] "=&r"(sp_after)
		     : "D"(&val)
		     : "memory");

	EXPECT_EQ(val, 1u);
	EXPECT_EQ(sp_before, sp_after);
	EXPECT_EQ(unregister_die_notifier(&int3_exception_nb), 0);
}

TEST_F(Int3SelfTest, UnclaimedInt3IsAnOops)
{
	/* The death-test child boots through the fixture too. */
	EXPECT_DEATH(asm volatile("int3"), "Oops: int3");
}

} /* namespace */
