/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The INT3 batch's array and the helpers that read it, shared by
 * alternative.cpp and the legacy-descriptor replay (replay_legacy_desc.cpp).
 * Private to the alternative module.
 *
 * Port of the text_poke_array part of arch/x86/kernel/alternative.c, v6.16.
 * userspace: upstream keeps all of this static in one file; here a second
 * file (the replay of two v5.x bugs) reads the same array.
 */
#pragma once

#include <cstddef>

#include <asm/ptrace.h>
#include <asm/sections.h>
#include <asm/text-patching.h>
#include <linux/atomic.h>
#include <linux/types.h>

#define PAGE_SIZE 4096UL

/* userspace: the first byte of the program's text stands in for _stext */
#define _stext ((char *)__executable_start)

/*
 * One site of the batch; 16 bytes, so that a 4 KiB page holds 256.
 * NOTE: a Jcc.d32 (0f 8x, 6 bytes) is stored as its Jcc.d8 opcode with
 * len 6; text[] then holds the 5 bytes after the 0x0f escape.
 */
/* Port of struct smp_text_poke_loc, arch/x86/kernel/alternative.c, v7.3 */
struct smp_text_poke_loc {
	s32 rel_addr;	/* site - _stext */
	s32 disp;
	u8 len;
	u8 opcode;	/* the instruction the INT3 handler emulates */
	u8 text[TEXT_POKE_MAX_OPCODE_SIZE];	/* userspace: not const, C++ could not zero-init it */
	u8 old;		/* first byte before phase 1 */
};
static_assert(sizeof(struct smp_text_poke_loc) == 16, "smp_text_poke_loc must stay 16 bytes");

/* Port of TEXT_POKE_ARRAY_MAX(), arch/x86/kernel/alternative.c, v7.3 */
#define TEXT_POKE_ARRAY_MAX (PAGE_SIZE / sizeof(struct smp_text_poke_loc))

/* Port of struct smp_text_poke_array, arch/x86/kernel/alternative.c, v7.3 */
struct smp_text_poke_array {
	struct smp_text_poke_loc vec[TEXT_POKE_ARRAY_MAX];
	int nr_entries;
};

extern struct smp_text_poke_array text_poke_array;

/* Port of text_poke_addr(), arch/x86/kernel/alternative.c, v7.3 */
static __always_inline void *text_poke_addr(const struct smp_text_poke_loc *tpl)
{
	return _stext + tpl->rel_addr;
}

/* Port of patch_cmp(), arch/x86/kernel/alternative.c, v7.3 */
static __always_inline int patch_cmp(const void *tpl_a, const void *tpl_b)
{
	if (tpl_a < text_poke_addr((const struct smp_text_poke_loc *)tpl_b))
		return -1;
	if (tpl_a > text_poke_addr((const struct smp_text_poke_loc *)tpl_b))
		return 1;
	return 0;
}

/* Port of __inline_bsearch(), include/linux/bsearch.h */
static __always_inline void *__inline_bsearch(const void *key, const void *base, size_t num,
					      size_t size, int (*cmp)(const void *, const void *))
{
	const char *pivot;
	int result;

	while (num > 0) {
		pivot = (const char *)base + (num >> 1) * size;
		result = cmp(key, pivot);

		if (result == 0)
			return (void *)pivot;

		if (result > 0) {
			base = pivot + size;
			num--;
		}
		num >>= 1;
	}

	return NULL;
}

/* "text_poke: bad instruction at ADDR (bytes ..): WHY" on stderr, before a BUG. Signal-safe. */
void text_poke_bad_insn(const void *addr, const void *bytes, size_t len, const char *why);

/* The port's own __smp_text_poke_batch_add() (alternative.cpp). Caller holds text_mutex. */
void __smp_text_poke_batch_add(void *addr, const void *opcode, size_t len, const void *emulate);

/*
 * Bug replays (replay_text_poke.cpp), test-only, each the code of before its
 * fix, chosen at the one call site the fix changed:
 *  - 26c44b776dba: RET/JMP with INT3 padding rejected (length must be the
 *    instruction's), from smp_text_poke_batch_add();
 *  - 2aebf5ee43bf: c8976ade0c1b's smp_text_poke_single(), which appends
 *    without the checked add, from smp_text_poke_single().
 */
void __smp_text_poke_batch_add_pre_26c44b776dba(void *addr, const void *opcode, size_t len,
						 const void *emulate);
void smp_text_poke_single_pre_2aebf5ee43bf(void *addr, const void *opcode, size_t len,
					    const void *emulate);

/* pokelab's count of traps emulated on this CPU (the report's "INT3 emulated"). Signal-safe. */
void text_poke_count_int3_emulated(void);

/*
 * The legacy-descriptor replay (replay_legacy_desc.cpp), test-only: the
 * v5.5/v5.6 handler, and finish's publication and teardown of the old
 * descriptor. @stack is finish's frame's descriptor (efd608fa7403).
 */
struct bp_patching_desc;
int poke_int3_handler(struct pt_regs *regs);
void bp_desc_publish(struct bp_patching_desc *stack);
void bp_desc_teardown(void);

/* Port of struct bp_patching_desc, arch/x86/kernel/alternative.c, v5.6 */
struct bp_patching_desc {
	struct smp_text_poke_loc *vec;
	int nr_entries;
	atomic_t refs;
};
