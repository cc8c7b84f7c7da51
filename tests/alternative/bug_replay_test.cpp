// SPDX-License-Identifier: GPL-2.0-only
/*
 * The kernel's bug history as tests. Each test is named after the upstream
 * commit that fixed the bug; it passes on the port as it is, then puts the
 * bug back with its switch (pokelab/bug_switches.h) and shows the failure
 * the kernel saw: an "Oops: int3", a BUG, or a checker count above zero.
 * Where the kernel's failure needed a race, a test-only hook stops the
 * patching path at the racy point and runs the other side there, so the
 * interleaving is forced rather than hoped for.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <cstring>

#include <asm/processor.h>
#include <asm/text-patching.h>
#include <kernel_shim/cpu.h>
#include <linux/jump_label.h>
#include <linux/kdebug.h>
#include <linux/static_call.h>
#include <pokelab/bug_switches.h>
#include <pokelab/replay.h>
#include <pokelab/text_poke_stats.h>

#include "booted.h"
#include "scratch_text.h"

using namespace pltest;

/*
 * How a replayed bad memory access ends the death-test child: SIGSEGV in a
 * plain build; under AddressSanitizer, which sees the same access first, its
 * report and exit status 1.
 */
#if defined(__SANITIZE_ADDRESS__)
#define BAD_ACCESS_EXIT ::testing::ExitedWithCode(1)
#define BAD_ACCESS_MSG "AddressSanitizer"
#else
#define BAD_ACCESS_EXIT ::testing::KilledBySignal(SIGSEGV)
#define BAD_ACCESS_MSG ""
#endif

namespace {

DEFINE_STATIC_KEY_FALSE(replay_key);

__noinline bool replay_branch()
{
	return static_branch_unlikely(&replay_key);
}

class BugReplay : public ScratchBooted
{
};

/* --- 2aebf5ee43bf: smp_text_poke_single() appended to a pending batch --- */

int unsorted_result[2];
int unsorted_round;

void run_slot7_on_cpu1(void)
{
	kshim::cpuRun(1, [] { unsorted_result[unsorted_round] = call_slot(7, 1); });
	kshim::cpuWait(1);
	unsorted_round++;
}

/* Queue site 7, single-poke site 3 (lower), and run site 7 on CPU 1 with the INT3s armed. */
void unsorted_single_poke(void)
{
	unsigned char a[5], b[5];

	gen_rel32(a, JMP32_INSN_OPCODE, site(7), pl_ret_neg);
	gen_rel32(b, JMP32_INSN_OPCODE, site(3), pl_ret_neg);
	unsorted_round = 0;
	unsorted_result[0] = unsorted_result[1] = 0;
	pokelab::batchAfterPhase1Probe = run_slot7_on_cpu1;
	mutex_lock(&text_mutex);
	smp_text_poke_batch_add(site(7), a, 5, NULL);
	smp_text_poke_single(site(3), b, 5, NULL);
	mutex_unlock(&text_mutex);
	pokelab::batchAfterPhase1Probe = nullptr;
}

TEST_F(BugReplay, Fix2aebf5ee43bfUnsortedSinglePoke)
{
	unsorted_single_poke();
	/* fixed: the pending site 7 went out in its own batch first */
	EXPECT_EQ(unsorted_round, 2);
	EXPECT_EQ(unsorted_result[0], -1);	/* emulated JMP on the INT3 */
	EXPECT_EQ(unsorted_result[1], -1);	/* already patched */
	EXPECT_EQ(call_slot(3, 1), -1);

	/* bug put back: vec = {site 7, site 3}, the bsearch misses site 7 */
	reset_slots();
	pokelab_bugs.unchecked_single_poke_2aebf5ee43bf = true;
	EXPECT_DEATH(unsorted_single_poke(), "Oops: int3");
}

void overflowing_single_poke(void)
{
	unsigned char jmp[257][5];

	mutex_lock(&text_mutex);
	for (int i = 0; i < 256; i++) {
		gen_rel32(jmp[i], JMP32_INSN_OPCODE, site(i), pl_ret_neg);
		smp_text_poke_batch_add(site(i), jmp[i], 5, NULL);
	}
	gen_rel32(jmp[256], JMP32_INSN_OPCODE, site(256), pl_ret_neg);
	smp_text_poke_single(site(256), jmp[256], 5, NULL);
	mutex_unlock(&text_mutex);
}

TEST_F(BugReplay, Fix2aebf5ee43bfOverflowingSinglePoke)
{
	pokelab::TextPokeStats before = pokelab::textPokeStats();

	overflowing_single_poke();
	pokelab::TextPokeStats after = pokelab::textPokeStats();
	EXPECT_EQ(after.batches - before.batches, 2u);
	EXPECT_EQ(after.lastNrEntries, 1u);
	for (int i = 0; i <= 256; i++)
		EXPECT_EQ(call_slot(i, 1), -1) << "slot " << i;

	/* bug put back: the 257th entry is written past vec[255] */
	reset_slots();
	pokelab_bugs.unchecked_single_poke_2aebf5ee43bf = true;
	EXPECT_DEATH(overflowing_single_poke(), "text_poke: array overflow");
}

/* --- 8924779df820: JNG/JNLE emulation --- */

/* Checker: condition codes whose emulation differs from the SDM, over all flag combinations. */
unsigned int jcc_mismatches(bool (*emulate_cc)(unsigned long flags, u8 cc))
{
	static const unsigned long bits[5] = {X86_EFLAGS_CF, X86_EFLAGS_PF, X86_EFLAGS_ZF,
					      X86_EFLAGS_SF, X86_EFLAGS_OF};
	unsigned int bad = 0;

	for (unsigned int cc = 0; cc < 16; cc++) {
		for (unsigned int combo = 0; combo < 32; combo++) {
			unsigned long f = 0x2;
			bool zf, sf, of, cf, pf, want;

			for (int b = 0; b < 5; b++)
				if (combo & (1u << b))
					f |= bits[b];
			cf = f & X86_EFLAGS_CF;
			pf = f & X86_EFLAGS_PF;
			zf = f & X86_EFLAGS_ZF;
			sf = f & X86_EFLAGS_SF;
			of = f & X86_EFLAGS_OF;
			bool base[8] = {of, cf, zf, cf || zf, sf, pf, sf != of, zf || sf != of};

			want = base[cc >> 1] ^ (cc & 1);
			if (emulate_cc(f, cc) != want)
				bad++;
		}
	}
	return bad;
}

TEST_F(BugReplay, Fix8924779df820JngJnle)
{
	EXPECT_EQ(jcc_mismatches([](unsigned long f, u8 cc) { return __emulate_cc(f, cc); }), 0u);

	/* the code of before the fix: JLE and JG are wrong wherever exactly one of ZF and
	 * SF != OF holds, 8 + 8 of 32 */
	EXPECT_EQ(jcc_mismatches(__emulate_cc_pre_8924779df820), 32u);
}

/* --- 26c44b776dba: RET + INT3 padding --- */

void ret_padded_tail_site(void)
{
	unsigned char jmp[5];

	gen_rel32(jmp, JMP32_INSN_OPCODE, site(2), pl_ret_neg);
	mutex_lock(&text_mutex);
	smp_text_poke_single(site(2), jmp, 5, NULL);
	mutex_unlock(&text_mutex);
	/* a NULL conditional tail call: "ret; int3; int3; int3; int3" */
	arch_static_call_transform(site(2), NULL, NULL, true);
}

/* the RET form of a site is "ret; int3 x4" only where no return thunk is wanted */
class BugReplayNoRethunk : public BugReplay
{
protected:
	std::string extraParams() const override { return "retbleed=off"; }
};

TEST_F(BugReplayNoRethunk, Fix26c44b776dbaRetInt3Padding)
{
	static const unsigned char ret[5] = {0xc3, 0xcc, 0xcc, 0xcc, 0xcc};

	ret_padded_tail_site();
	EXPECT_EQ(memcmp(site(2), ret, 5), 0);
	EXPECT_EQ(call_slot(2, 9), 9);

	/* bug put back: the length must equal the RET's one byte */
	reset_slots();
	pokelab_bugs.strict_len_26c44b776dba = true;
	EXPECT_DEATH(ret_padded_tail_site(),
		     "text_poke: bad instruction at 0x[0-9a-f]+ \\(bytes c3 cc cc cc cc\\): length");
}

/* --- 83ab38ef0a0b: two decrementers of a count of 1 --- */

void second_decrementer(struct static_key *key)
{
	pokelab_hooks.slow_dec_before_lock = nullptr;
	static_key_slow_dec(key);
}

/*
 * CPU0's dec fails its fast path on a count of 1 and, before it takes the
 * lock, a second dec runs through (the commit's first diagram).
 */
int racing_decs(void)
{
	static_branch_inc(&replay_key);
	pokelab_hooks.slow_dec_before_lock = second_decrementer;
	static_branch_dec(&replay_key);
	return atomic_read(&replay_key.key.enabled);
}

TEST_F(BugReplay, Fix83ab38ef0a0bSlowDecNegative)
{
	unsigned long warns = kshim::warnCount();

	/* fixed: the second one under the lock sees 0, WARNs and leaves it */
	EXPECT_EQ(racing_decs(), 0);
	EXPECT_EQ(kshim::warnCount() - warns, 1u);
	EXPECT_FALSE(replay_branch());

	/* bug put back: the count goes to -1 */
	pokelab_bugs.slow_dec_try_dec_83ab38ef0a0b = true;
	EXPECT_EQ(racing_decs(), -1);
	EXPECT_FALSE(replay_branch());
	atomic_set(&replay_key.key.enabled, 0);	/* repair the key for the next test */
}

/* --- 224fa3552029: disable with the cmpxchg result as a boolean --- */

void concurrent_inc(struct static_key *key)
{
	pokelab_hooks.disable_before_lock = nullptr;
	ASSERT_TRUE(static_key_fast_inc_not_disabled(key));
}

/* disable passes its "== 1" check, then an inc makes the count 2 before it locks */
void disable_racing_inc(void)
{
	static_branch_enable(&replay_key);
	pokelab_hooks.disable_before_lock = concurrent_inc;
	static_branch_disable(&replay_key);
}

TEST_F(BugReplay, Fix224fa3552029DisableBrownPaperBag)
{
	disable_racing_inc();
	/* fixed: 2 is not 1 -> 0, nothing is patched, the branch stays taken */
	EXPECT_EQ(atomic_read(&replay_key.key.enabled), 2);
	EXPECT_TRUE(replay_branch());
	static_branch_dec(&replay_key);
	static_branch_dec(&replay_key);
	EXPECT_FALSE(replay_branch());

	/* bug put back: jump_label_update() re-patches a JMP to a JMP: __jump_label_patch BUGs */
	pokelab_bugs.disable_cmpxchg_bool_224fa3552029 = true;
	EXPECT_DEATH(disable_racing_inc(), "unexpected op");
}

/*
 * --- 285a54efe386 and efd608fa7403: the legacy descriptor (v5.5, v5.6) ---
 *
 * Both races need an INT3 handler that starts after the batch's last sync,
 * which a sync cannot wait for: in the kernel a kprobe's INT3, or a site
 * whose new first byte is INT3 (phase 3 leaves it). Here that is site 4,
 * poked to INT3 and claimed by a die notifier, as a kprobe would be. The
 * hook before the teardown runs site 4 on CPU 1 and waits until its handler
 * is parked in the window; the teardown (or, for efd608fa7403, the stack
 * reuse after finish returned) then lets it go.
 */

std::atomic<int> legacy_in_window;	/* handler parked in its window */
std::atomic<int> legacy_go;		/* let it go on */
std::atomic<int> legacy_cpu1_done;
int legacy_claimed;
int legacy_result;

int claim_legacy_site4(struct notifier_block *, unsigned long val, void *data)
{
	struct pt_regs *regs = ((struct die_args *)data)->regs;

	if (val != DIE_INT3 || regs->ip - INT3_INSN_SIZE != (unsigned long)site(4))
		return NOTIFY_DONE;
	legacy_claimed++;
	regs->ip = (unsigned long)site(4) + 5;	/* as a kprobe would: step over the site */
	return NOTIFY_STOP;
}

struct notifier_block legacy_nb = {claim_legacy_site4, nullptr, 0};

/* Signal context on CPU 1: park until told. Only atomics. */
void legacy_park_handler(void)
{
	legacy_in_window.fetch_add(1);
	while (!legacy_go.load())
		cpu_relax();
}

/* CPU 0, text_mutex held, after the last sync: CPU 1 traps on site 4 and parks. */
void legacy_run_site4_on_cpu1(void)
{
	kshim::cpuRun(1, [] {
		legacy_result = call_slot(4, 1);
		legacy_cpu1_done.store(1);
	});
	while (!legacy_in_window.load())
		cpu_relax();
}

void legacy_release_handler(void)
{
	legacy_go.store(1);
}

/* Poke INT3 onto site 4 with a single poke, under the legacy descriptor @mode. */
void legacy_poke_int3_site4(int mode)
{
	const unsigned char int3 = INT3_INSN_OPCODE;

	legacy_in_window = 0;
	legacy_go = 0;
	legacy_cpu1_done = 0;
	legacy_claimed = 0;
	legacy_result = 0;
	pokelab_bugs.legacy_desc = mode;
	pokelab_hooks.legacy_handler_window = legacy_park_handler;
	pokelab_hooks.legacy_before_teardown = legacy_run_site4_on_cpu1;
	mutex_lock(&text_mutex);
	smp_text_poke_single(site(4), &int3, 1, NULL);
	mutex_unlock(&text_mutex);
}

/* Checker: the handler parked once and declined, the notifier took the trap, CPU 1 went on. */
void expect_handler_declined_cleanly(void)
{
	kshim::cpuWait(1);
	EXPECT_EQ(legacy_in_window.load(), 1);
	EXPECT_EQ(legacy_claimed, 1);
	EXPECT_EQ(legacy_result, 2);
	EXPECT_EQ(*(unsigned char *)site(4), INT3_INSN_OPCODE);
}

/* v5.5 teardown: the handler resumes right after the teardown's first store. */
void null_vec_race(void)
{
	pokelab_hooks.legacy_teardown_first_store = legacy_release_handler;
	legacy_poke_int3_site4(POKELAB_LEGACY_DESC_V5_5);
	kshim::cpuWait(1);
}

TEST_F(BugReplay, Fix285a54efe386NullDescriptorRace)
{
	ASSERT_EQ(register_die_notifier(&legacy_nb), 0);

	/*
	 * fixed (nr_entries = 0, sync, vec = NULL): the sync waits for the
	 * parked handler, which finds vec still set, site 4 an explicit INT3,
	 * and declines it.
	 */
	null_vec_race();
	expect_handler_declined_cleanly();

	/*
	 * bug put back (vec = NULL first, no sync): the handler saw
	 * nr_entries != 0 and now reads a NULL vec, the kernel's
	 * "RIP: poke_int3_handler+0x39".
	 */
	pokelabBugsReset();	/* reset_slots()'s batch: no legacy mode, no CPU 1 run */
	reset_slots();
	pokelab_bugs.null_vec_285a54efe386 = true;
	EXPECT_EXIT(null_vec_race(), BAD_ACCESS_EXIT, BAD_ACCESS_MSG);
	EXPECT_EQ(unregister_die_notifier(&legacy_nb), 0);
}

/*
 * Runs where finish's frame was: fill the stack with non-zero garbage, let
 * the handler go and wait for CPU 1. Returns how many garbage bytes changed
 * under us (a handler writing into memory it no longer owns).
 */
__noinline int reuse_stack_then_release(void)
{
	volatile unsigned char frame[16384];
	int changed = 0;

	for (size_t i = 0; i < sizeof(frame); i++)
		frame[i] = 0x5a;
	legacy_release_handler();
	while (!legacy_cpu1_done.load())
		cpu_relax();
	for (size_t i = 0; i < sizeof(frame); i++)
		changed += frame[i] != 0x5a;
	return changed;
}

/* v5.6: the handler read bp_desc, then finish unpublished, dropped its ref and returned. */
int stack_desc_race(void)
{
	legacy_poke_int3_site4(POKELAB_LEGACY_DESC_V5_6);
	return reuse_stack_then_release();
}

TEST_F(BugReplay, FixEfd608fa7403StackDescriptorUseAfterScope)
{
	ASSERT_EQ(register_die_notifier(&legacy_nb), 0);

	/*
	 * fixed (static descriptor): the parked handler's inc_not_zero sees
	 * the drained refs == 0 and declines; nothing on the stack is touched.
	 */
	EXPECT_EQ(stack_desc_race(), 0);
	expect_handler_declined_cleanly();

	/*
	 * bug put back (descriptor in finish's frame): the handler's
	 * inc_not_zero hits the reused stack's garbage (non-zero: "success"),
	 * corrupts it and follows its garbage vec.
	 */
	pokelabBugsReset();	/* reset_slots()'s batch: no legacy mode, no CPU 1 run */
	reset_slots();
	pokelab_bugs.stack_desc_efd608fa7403 = true;
	EXPECT_EXIT(stack_desc_race(), BAD_ACCESS_EXIT, BAD_ACCESS_MSG);
	EXPECT_EQ(unregister_die_notifier(&legacy_nb), 0);
}

} /* namespace */
