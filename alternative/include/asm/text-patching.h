/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * x86 text patching: text_poke(), the INT3 batch, and the INT3 emulation.
 *
 * PORT: written fresh after arch/x86/include/asm/text-patching.h, v7.3;
 * kernel names kept. Implemented in alternative/alternative.cpp.
 *
 * Threading: every function that writes text must be called with text_mutex
 * held, from task context on a simulated CPU (CPU 0 in practice), never from
 * a signal handler. smp_text_poke_int3_handler() and the int3_emulate_*()
 * helpers are the exception: they run in the SIGTRAP handler and are
 * async-signal-safe (no allocation, no lock, no logging).
 */
#pragma once

#include <cstring>

#include <asm/ptrace.h>
#include <linux/bug.h>
#include <linux/compiler.h>
#include <linux/mutex.h>
#include <linux/types.h>

/* Port of INT3_INSN_SIZE(), arch/x86/include/asm/text-patching.h, v7.3 */
#define INT3_INSN_SIZE		1
/* Port of INT3_INSN_OPCODE(), arch/x86/include/asm/text-patching.h, v7.3 */
#define INT3_INSN_OPCODE	0xCC

/* Port of RET_INSN_SIZE(), arch/x86/include/asm/text-patching.h, v7.3 */
#define RET_INSN_SIZE		1
/* Port of RET_INSN_OPCODE(), arch/x86/include/asm/text-patching.h, v7.3 */
#define RET_INSN_OPCODE		0xC3

/* Port of CALL_INSN_SIZE(), arch/x86/include/asm/text-patching.h, v7.3 */
#define CALL_INSN_SIZE		5
/* Port of CALL_INSN_OPCODE(), arch/x86/include/asm/text-patching.h, v7.3 */
#define CALL_INSN_OPCODE	0xE8

/* Port of JMP32_INSN_SIZE(), arch/x86/include/asm/text-patching.h, v7.3 */
#define JMP32_INSN_SIZE		5
/* Port of JMP32_INSN_OPCODE(), arch/x86/include/asm/text-patching.h, v7.3 */
#define JMP32_INSN_OPCODE	0xE9

/* Port of JMP8_INSN_SIZE(), arch/x86/include/asm/text-patching.h, v7.3 */
#define JMP8_INSN_SIZE		2
/* Port of JMP8_INSN_OPCODE(), arch/x86/include/asm/text-patching.h, v7.3 */
#define JMP8_INSN_OPCODE	0xEB

/* Port of DISP32_SIZE(), arch/x86/include/asm/text-patching.h, v7.3 */
#define DISP32_SIZE		4

/* Port of TEXT_POKE_MAX_OPCODE_SIZE(), arch/x86/include/asm/text-patching.h, v7.3 */
#define TEXT_POKE_MAX_OPCODE_SIZE	5

/*
 * userspace: the bit numbers of uapi/asm/processor-flags.h, which the shim's
 * asm/ptrace.h (the masks alone) lacks; __emulate_cc() shifts by them.
 */
#ifndef X86_EFLAGS_SF_BIT
#define X86_EFLAGS_SF_BIT	7
#endif
#ifndef X86_EFLAGS_OF_BIT
#define X86_EFLAGS_OF_BIT	11
#endif

/* Serialises every writer of text (kernel/extable.c in the kernel). */
extern struct mutex text_mutex;

/*
 * Write @len bytes at @addr in live text, on this CPU, through the private
 * writable alias; no other CPU is synchronised. Returns @addr. BUGs if the
 * bytes read back differ. Caller holds text_mutex.
 */
void *text_poke(void *addr, const void *opcode, size_t len);

/* As text_poke(), for kgdb-like callers that stopped every other CPU (no mutex). */
void *text_poke_kgdb(void *addr, const void *opcode, size_t len);

/*
 * The BPF JIT's and the module loader's writers: copy @len bytes of
 * @opcode to @addr (text_poke_copy()), or fill @len bytes at @addr with the
 * byte @c (text_poke_set()), in chunks of up to two pages, with no sync:
 * for text that no CPU runs yet or any more (an execmem ROX cache page).
 * text_poke_copy() and text_poke_set() take text_mutex; the _locked form
 * wants it held. @core_ok: the program's own text may be written. Return
 * @addr, or NULL (WARN once) for the program's own text. Task context.
 */
void *text_poke_copy_locked(void *addr, const void *opcode, size_t len, bool core_ok);
void *text_poke_copy(void *addr, const void *opcode, size_t len);
void *text_poke_set(void *addr, int c, size_t len);

/*
 * Write text before it can run anywhere else (boot, before the other CPUs
 * start), then sync_core(), with IRQs off until after the sync.
 */
void text_poke_early(void *addr, const void *opcode, size_t len);

/*
 * pokelab (not a kernel function): text_poke_early()'s write without its
 * sync_core(), for the batched-sync experiment of case 004
 * (pokelab_apply_alternatives_pass()). Caller: IRQs off, boot CPU, inside a
 * kshim::xmcOpBegin()/xmcOpEnd() operation, then one sync_core() +
 * pokelab_text_poke_early_synced(). Not async-signal-safe.
 */
void pokelab_text_poke_early_write(void *addr, const void *opcode, size_t len);

/* IPI every online CPU to run sync_core(), and wait. Caller holds text_mutex. */
void smp_text_poke_sync_each_cpu(void);

/*
 * As smp_text_poke_sync_each_cpu(), but an isolated CPU outside the kernel
 * gets the sync as deferred work at its next kernel entry instead of an IPI
 * (ct_set_cpu_work(), deferral series v7). Caller holds text_mutex.
 */
void smp_text_poke_sync_each_cpu_deferrable(void);

/*
 * Queue one site of a batch: @len bytes of @opcode to go to @addr (6 for a
 * Jcc.d32, else 1..5), emulating @emulate (NULL = @opcode) while the INT3 is
 * armed. Finishes the pending batch first when the array is full or @addr is
 * lower than the last queued address. BUGs on an instruction the INT3
 * handler could not emulate. Caller holds text_mutex.
 */
void smp_text_poke_batch_add(void *addr, const void *opcode, size_t len, const void *emulate);

/*
 * Apply the queued batch on the live machine: INT3 on every site, sync;
 * tails, sync; first bytes, sync; wait for handlers to drain. Returns once
 * every CPU executes only the new text. Caller holds text_mutex.
 */
void smp_text_poke_batch_finish(void);

/* Patch one site live: a checked batch_add() and a finish(). Caller holds text_mutex. */
void smp_text_poke_single(void *addr, const void *opcode, size_t len, const void *emulate);

/*
 * userspace: not a kernel function. The kernel's INT3 refs are per-CPU
 * since v6.16 (text_poke_array_refs) and were one shared count before
 * (v6.15's bp_desc.refs), fixed at build time; pokelab.refs=percpu|global
 * picks one at boot. This switches between them on the running machine,
 * between two batches, so that a comparison can interleave the two modes
 * on one machine (pokelab run bpf-stats) instead of booting one per mode.
 * @global: true for the shared count, false for the per-CPU ones.
 *
 * Caller: task context on a booted machine, text_mutex held (so no batch
 * runs), not from a signal handler; it sends a cross-call to every online
 * CPU and waits for it.
 *
 * Ordering: the next batch's publish, its handlers and the
 * cross-modifying-code model (which reads the same flag, xmcInt3Refs())
 * all see the new mode. Before returning, every CPU has left any INT3
 * handler it entered under the old mode (the IPI signal is blocked in the
 * SIGTRAP handler, so a CPU takes the cross-call only outside it); the
 * cross-call's barriers order the switch before every later handler's read.
 * The census (pokelab::refsCrossCpuWrites()) keeps each refs line's last
 * writer across the switch, as a cache would.
 *
 * Returns 0 (also when @global is the mode already: then nothing is sent),
 * or -EBUSY when a batch is queued and not finished (smp_text_poke_batch_add()
 * without its finish) or a count is not 0 (a handler still holds a ref);
 * the mode is then unchanged.
 */
int text_poke_set_refs_mode(bool global);

/*
 * The INT3 trap handler: if the trap hit a site of the live batch, emulate
 * the instruction being written and return 1; else return 0. Runs from the
 * SIGTRAP handler with the IPI signal blocked. Async-signal-safe.
 */
int smp_text_poke_int3_handler(struct pt_regs *regs);

/*
 * Instruction generation, as the kernel's: @opcode at @addr reaching @dest.
 * text_gen_insn() returns a static buffer (not reentrant, text_mutex held).
 */
/* Port of union text_poke_insn, arch/x86/include/asm/text-patching.h, v7.3 */
union text_poke_insn {
	u8 text[TEXT_POKE_MAX_OPCODE_SIZE];
	struct {
		u8 opcode;
		s32 disp;
	} __attribute__((packed));
};

int text_opcode_size(u8 opcode);
void __text_gen_insn(void *buf, u8 opcode, const void *addr, const void *dest, int size);
void *text_gen_insn(u8 opcode, const void *addr, const void *dest);

/* Port of the int3_emulate_*() helpers, arch/x86/include/asm/text-patching.h, v7.3 */
static __always_inline void int3_emulate_jmp(struct pt_regs *regs, unsigned long ip)
{
	regs->ip = ip;
}

/*
 * userspace: the push lands below the interrupted stack pointer, in the
 * 128-byte red zone the kernel skips when it builds a signal frame; that
 * gap plays the part of the kernel's INT3 entry stack gap, so the push
 * cannot overwrite the signal frame.
 */
static __always_inline void int3_emulate_push(struct pt_regs *regs, unsigned long val)
{
	regs->sp -= sizeof(unsigned long);
	*(unsigned long *)regs->sp = val;
}

static __always_inline unsigned long int3_emulate_pop(struct pt_regs *regs)
{
	unsigned long val = *(unsigned long *)regs->sp;

	regs->sp += sizeof(unsigned long);
	return val;
}

/* @ip: the return address, the byte after the CALL being emulated */
static __always_inline void int3_emulate_call(struct pt_regs *regs, unsigned long ip,
					      unsigned long func)
{
	int3_emulate_push(regs, ip);
	int3_emulate_jmp(regs, func);
}

static __always_inline void int3_emulate_ret(struct pt_regs *regs)
{
	unsigned long ip = int3_emulate_pop(regs);

	int3_emulate_jmp(regs, ip);
}

/* Port of __emulate_cc(), arch/x86/include/asm/text-patching.h, v7.3 */
static __always_inline bool __emulate_cc(unsigned long flags, u8 cc)
{
	/* the flags each pair of Jcc tests, index cc >> 1 (g++ takes C's array designators) */
	static const unsigned long cc_mask[6] = {
		[0] = X86_EFLAGS_OF,
		[1] = X86_EFLAGS_CF,
		[2] = X86_EFLAGS_ZF,
		[3] = X86_EFLAGS_CF | X86_EFLAGS_ZF,
		[4] = X86_EFLAGS_SF,
		[5] = X86_EFLAGS_PF,
	};

	bool invert = cc & 1;
	bool match;

	if (cc < 0xc) {
		match = flags & cc_mask[cc >> 1];
	} else {
		match = ((flags & X86_EFLAGS_SF) >> X86_EFLAGS_SF_BIT) ^
			((flags & X86_EFLAGS_OF) >> X86_EFLAGS_OF_BIT);
		if (cc >= 0xe)
			match = match || (flags & X86_EFLAGS_ZF);
	}

	return (match && !invert) || (!match && invert);
}

/* Port of int3_emulate_jcc(), arch/x86/include/asm/text-patching.h, v7.3 */
static __always_inline void int3_emulate_jcc(struct pt_regs *regs, u8 cc, unsigned long ip,
					     unsigned long disp)
{
	if (__emulate_cc(regs->flags, cc))
		ip += disp;

	int3_emulate_jmp(regs, ip);
}
