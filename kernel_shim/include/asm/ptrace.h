/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * struct pt_regs, x86-64.
 *
 * PORT: written fresh after arch/x86/include/asm/ptrace.h; the field order is
 * the kernel's. In pokelab a pt_regs is built from a signal's ucontext by the
 * INT3 (SIGTRAP) entry, handed to the ported handler, and written back.
 */
#pragma once

struct pt_regs {
	unsigned long r15;
	unsigned long r14;
	unsigned long r13;
	unsigned long r12;
	unsigned long bp;
	unsigned long bx;
	unsigned long r11;
	unsigned long r10;
	unsigned long r9;
	unsigned long r8;
	unsigned long ax;
	unsigned long cx;
	unsigned long dx;
	unsigned long si;
	unsigned long di;
	unsigned long orig_ax;
	unsigned long ip;
	unsigned long cs;
	unsigned long flags;
	unsigned long sp;
	unsigned long ss;
	/* userspace: not in the kernel's pt_regs; see user_mode() */
	int from_user;
};

/*
 * userspace: the whole program is "kernel" text running at the simulated
 * CPL 0, so an INT3 comes from user mode only when the SIGTRAP was not
 * raised by an INT3 instruction at all (kill(), raise()): the entry code
 * sets from_user for those.
 */
static inline int user_mode(struct pt_regs *regs)
{
	return regs->from_user;
}

/* EFLAGS bits used by the Jcc emulation */
#define X86_EFLAGS_CF	0x0001UL
#define X86_EFLAGS_PF	0x0004UL
#define X86_EFLAGS_ZF	0x0040UL
#define X86_EFLAGS_SF	0x0080UL
#define X86_EFLAGS_OF	0x0800UL
