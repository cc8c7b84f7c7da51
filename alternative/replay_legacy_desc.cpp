// SPDX-License-Identifier: GPL-2.0-only
/*
 * Bug replays of the pre-v6.0 batch descriptor: v5.5's bp_patching and
 * v5.6's bp_desc, so that the replays of 285a54efe386 and efd608fa7403 run
 * on the structure those bugs lived in (tests/alternative/bug_replay_test.cpp).
 * Test-only: nothing here runs unless a test sets pokelab_bugs.legacy_desc.
 */
#include <asm/text-patching.h>
#include <linux/atomic.h>
#include <pokelab/bug_switches.h>

#include "text_poke_array.h"

/*
 * userspace: test-only legacy descriptor mode (pokelab_bugs.legacy_desc), so
 * that the bug replays of 285a54efe386 and efd608fa7403 run on the structure
 * those bugs lived in. The batch still fills text_poke_array (and still
 * publishes and drains the v6.16 refs); finish also publishes it through the
 * old descriptor, and the INT3 handler then reads only the descriptor:
 *  - POKELAB_LEGACY_DESC_V5_5: bp_patching of v5.5 (vec + nr_entries, no
 *    refs; the handler's "nr_entries != 0" is its only guard), torn down in
 *    the order of 285a54efe386 (nr_entries = 0, sync, vec = NULL), or with
 *    null_vec_285a54efe386 in the order before it (vec = NULL first, no sync);
 *  - POKELAB_LEGACY_DESC_V5_6: the bp_desc pointer and refs of
 *    1f676247f36a (v5.6..v5.19). The descriptor is static storage, which is
 *    what efd608fa7403 made it; with stack_desc_efd608fa7403 it lives in
 *    smp_text_poke_batch_finish()'s frame, as in text_poke_bp_batch() before.
 * Never used outside tests: every switch is off unless a test sets it.
 */


/* v5.5's static descriptor; in V5_6 mode the storage bp_desc points at (the efd608fa7403 fix) */
static struct bp_patching_desc bp_patching;
/* v5.6's published pointer (in V5_5 mode it always points at bp_patching) */
static struct bp_patching_desc *bp_desc;

/* Port of try_get_desc(), arch/x86/kernel/alternative.c, v5.6 (before efd608fa7403) */
static __always_inline struct bp_patching_desc *try_get_desc(struct bp_patching_desc **descp)
{
	struct bp_patching_desc *desc = READ_ONCE(*descp);	/* rcu_dereference */

	if (!desc)
		return NULL;
	/* userspace: test hook, the window between the pointer read and the inc */
	if (unlikely(pokelab_hooks.legacy_handler_window))
		pokelab_hooks.legacy_handler_window();
	if (!raw_atomic_inc_not_zero(&desc->refs))
		return NULL;

	return desc;
}

/* Port of put_desc(), arch/x86/kernel/alternative.c, v5.6 */
static __always_inline void put_desc(struct bp_patching_desc *desc)
{
	smp_mb__before_atomic();
	raw_atomic_dec(&desc->refs);
}

/*
 * Port of poke_int3_handler(), arch/x86/kernel/alternative.c, v5.5
 * (bp_patching) and v5.6 (bp_desc). Signal context, like the v6.16 handler.
 */
int poke_int3_handler(struct pt_regs *regs)
{
	bool v5_5 = pokelab_bugs.legacy_desc == POKELAB_LEGACY_DESC_V5_5;
	struct bp_patching_desc *desc;
	struct smp_text_poke_loc *tp;
	int ret = 0;
	char *ip;

	if (user_mode(regs))
		return 0;

	/* Having seen our INT3, we see the descriptor published before it. */
	smp_rmb();

	if (v5_5) {
		desc = READ_ONCE(bp_desc);
		/* v5.5: a non-zero nr_entries was the only sign of a live batch */
		if (!desc || likely(!READ_ONCE(desc->nr_entries)))
			return 0;
		/* userspace: test hook, the window after the nr_entries check */
		if (unlikely(pokelab_hooks.legacy_handler_window))
			pokelab_hooks.legacy_handler_window();
	} else {
		desc = try_get_desc(&bp_desc);
		if (!desc)
			return 0;
	}

	ip = (char *)regs->ip - INT3_INSN_SIZE;

	/* nr_entries is read again here, as the kernel did */
	if (unlikely(READ_ONCE(desc->nr_entries) > 1)) {
		tp = (struct smp_text_poke_loc *)__inline_bsearch(
			ip, READ_ONCE(desc->vec), READ_ONCE(desc->nr_entries),
			sizeof(struct smp_text_poke_loc), patch_cmp);
		if (!tp)
			goto out_put;
	} else {
		tp = READ_ONCE(desc->vec);
		if (text_poke_addr(tp) != ip)	/* 285a54efe386: tp == NULL here */
			goto out_put;
	}

	ip += tp->len;

	switch (tp->opcode) {
	case INT3_INSN_OPCODE:
		/* Somebody poked an explicit INT3: theirs to handle. */
		goto out_put;

	case RET_INSN_OPCODE:
		int3_emulate_ret(regs);
		break;

	case CALL_INSN_OPCODE:
		int3_emulate_call(regs, (long)ip, (long)ip + tp->disp);
		break;

	case JMP32_INSN_OPCODE:
	case JMP8_INSN_OPCODE:
		int3_emulate_jmp(regs, (long)ip + tp->disp);
		break;

	case 0x70 ... 0x7f: /* Jcc */
		int3_emulate_jcc(regs, tp->opcode & 0xf, (long)ip, tp->disp);
		break;

	default:
		BUG();
	}

	text_poke_count_int3_emulated();	/* userspace: report counter */
	ret = 1;

out_put:
	if (!v5_5)
		put_desc(desc);
	return ret;
}

/*
 * Publish the batch through the legacy descriptor: text_poke_bp_batch(),
 * arch/x86/kernel/alternative.c, v5.5 (field stores; the smp_wmb() before
 * the INT3 writes is finish's) and v5.6 (smp_store_release of the pointer).
 * @stack_desc is finish's local, used only with stack_desc_efd608fa7403.
 */
void bp_desc_publish(struct bp_patching_desc *stack_desc)
{
	struct bp_patching_desc *desc = &bp_patching;

	if (pokelab_bugs.legacy_desc == POKELAB_LEGACY_DESC_V5_5) {
		WRITE_ONCE(bp_patching.vec, &text_poke_array.vec[0]);
		WRITE_ONCE(bp_patching.nr_entries, text_poke_array.nr_entries);
		WRITE_ONCE(bp_desc, &bp_patching);
		return;
	}
	if (pokelab_bugs.stack_desc_efd608fa7403)
		desc = stack_desc;	/* as text_poke_bp_batch()'s local before efd608fa7403 */
	desc->vec = text_poke_array.vec;
	desc->nr_entries = text_poke_array.nr_entries;
	atomic_set(&desc->refs, 1);
	smp_store_release(&bp_desc, desc);	/* rcu_assign_pointer */
}

/* The end of text_poke_bp_batch(), v5.5 (after 285a54efe386) and v5.6 (1f676247f36a) */
void bp_desc_teardown(void)
{
	struct bp_patching_desc *desc;

	if (unlikely(pokelab_hooks.legacy_before_teardown))
		pokelab_hooks.legacy_before_teardown();

	if (pokelab_bugs.legacy_desc == POKELAB_LEGACY_DESC_V5_5) {
		if (pokelab_bugs.null_vec_285a54efe386) {
			/* before 285a54efe386: a handler can see nr_entries with no vec */
			WRITE_ONCE(bp_patching.vec, NULL);
			if (unlikely(pokelab_hooks.legacy_teardown_first_store))
				pokelab_hooks.legacy_teardown_first_store();
			WRITE_ONCE(bp_patching.nr_entries, 0);
			return;
		}
		WRITE_ONCE(bp_patching.nr_entries, 0);
		if (unlikely(pokelab_hooks.legacy_teardown_first_store))
			pokelab_hooks.legacy_teardown_first_store();
		/* Every handler that saw nr_entries != 0 has finished: vec may go. */
		smp_text_poke_sync_each_cpu();	/* text_poke_sync() */
		WRITE_ONCE(bp_patching.vec, NULL);
		return;
	}

	/* synchronize_rcu() by hand: unpublish, drop our ref, wait for the handlers' */
	desc = bp_desc;
	WRITE_ONCE(bp_desc, NULL);	/* RCU_INIT_POINTER */
	if (!atomic_dec_and_test(&desc->refs))
		atomic_cond_read_acquire(&desc->refs, !VAL);
}

