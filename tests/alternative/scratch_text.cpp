// SPDX-License-Identifier: GPL-2.0-only
/*
 * The scratch text of scratch_text.h: real functions in the test binary's
 * .text, patched live by the tests.
 */
#include <gtest/gtest.h>

#include <cstring>

#include <asm/text-patching.h>
#include <kernel_shim/xmc.h>

#include "scratch_text.h"

asm(".pushsection .data\n"
    ".balign 8\n"
    ".globl pl_entry_sp\n"
    "pl_entry_sp: .quad 0\n"
    ".globl pl_callee_sp\n"
    "pl_callee_sp: .quad 0\n"
    ".popsection\n"
    ".pushsection .text, \"ax\", @progbits\n"
    ".balign 32\n"
    ".globl pl_slots\n"
    "pl_slots:\n"
    ".rept 300\n"
    "	1: mov %rsp, pl_entry_sp(%rip)\n"
    "	mov %edi, %eax\n"
    "	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"
    "	add $1, %eax\n"
    "	ret\n"
    "	.fill 32 - (. - 1b), 1, 0xcc\n"
    ".endr\n"
    ".balign 32\n"
    ".globl pl_jcc_slot\n"
    "pl_jcc_slot:\n"
    "	mov %edi, %eax\n"
    "	test %eax, %eax\n"
    "	.byte 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00\n"
    "	add $1, %eax\n"
    "	ret\n"
    "	int3\n"
    ".balign 16\n"
    ".globl pl_add100\n"
    "pl_add100:\n"
    "	mov %rsp, pl_callee_sp(%rip)\n"
    "	add $100, %eax\n"
    "	ret\n"
    ".balign 16\n"
    ".globl pl_ret_neg\n"
    "pl_ret_neg:\n"
    "	mov $-1, %eax\n"
    "	ret\n"
    ".popsection\n");

namespace pltest {

const unsigned char nop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
const unsigned char nop6[6] = {0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00};

void gen_rel32(unsigned char *buf, unsigned char opcode, const void *at, const void *dest)
{
	__text_gen_insn(buf, opcode, at, dest, 5);
}

void reset_slots()
{
	mutex_lock(&text_mutex);
	for (int i = 0; i < PL_NR_SLOTS; i++) {
		/* a site left at INT3 (or RET) cannot be emulated as NOP5's first byte: rewrite */
		if (memcmp(site(i), nop5, 5))
			smp_text_poke_batch_add(site(i), nop5, 5, NULL);
	}
	smp_text_poke_batch_finish();
	if (memcmp(jcc_site(), nop6, 6)) {
		/*
		 * NOP6 cannot be emulated, so no batch can write it: the site is
		 * put back plainly, as text that only CPU 0 runs until it is
		 * published again (no test runs it on another CPU meanwhile).
		 */
		kshim::xmcTextPrivate(jcc_site(), 6, 0);
		text_poke(jcc_site(), nop6, 6);
		kshim::xmcQuiesce();
		kshim::xmcTextPublish(jcc_site(), 6);
	}
	mutex_unlock(&text_mutex);
}

} /* namespace pltest */
