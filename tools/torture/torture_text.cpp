// SPDX-License-Identifier: GPL-2.0-only
/*
 * The text pokelab torture patches and runs (torture_text.h).
 */
#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <utility>

#include <fmt/format.h>

#include <asm/nops.h>
#include <asm/text-patching.h>
#include <linux/jump_label.h>
#include <linux/kdebug.h>
#include <linux/mutex.h>
#include <linux/static_call.h>
#include <linux/tracepoint_probe.h>

#include <workloads/bpf_prog.h>
#include <workloads/bpf_stats.h>
#include <workloads/small_key.h>
#include "torture_forms.h"
#include "torture_text.h"
#include "torture/torture_module.h"

DEFINE_STATIC_KEY_FALSE(torture_big_key);
DEFINE_STATIC_KEY_FALSE_NOINSTR(torture_noinstr_key);

/*
 * The noinstr users: entry-path-like code that tests a _NOINSTR key, so
 * that every batch flipping it must IPI every CPU, isolated or not.
 */
#define TORTURE_NOINSTR_USER(n)							\
	noinstr unsigned long torture_noinstr_user##n(unsigned long x)		\
	{									\
		if (static_branch_unlikely(&torture_noinstr_key))		\
			return x * (n + 3) + 1;					\
		return x + n;							\
	}
TORTURE_NOINSTR_USER(0)
TORTURE_NOINSTR_USER(1)
TORTURE_NOINSTR_USER(2)
TORTURE_NOINSTR_USER(3)

/*
 * Instrumentable users of the same key, so that its batch mixes noinstr
 * and instrumentable sites (in .text, below the noinstr section: the
 * instrumentable ones come first in the batch's sorted array).
 */
__noinline unsigned long torture_mixed_user(unsigned long x)
{
	if (static_branch_unlikely(&torture_noinstr_key))
		return x * 5 + 2;
	return x + 9;
}

/*
 * Sites the INT3 handler must emulate as something other than a NOP or a
 * JMP, both patched by one two-entry batch:
 *
 *	torture_emu_call	CALL torture_emu_a (adds 1) <-> CALL torture_emu_b (adds 2)
 *	torture_emu_jcc		JZ.d32 <-> JNZ.d32 to torture_emu_odd (adds 32; else 16)
 *
 * torture_emu_fn(x) = x + 1 + (even ? 32 : 16) in state 0, x + 2 + (odd ? 32 : 16) in
 * state 1, the parity being that of the sum after the call.
 */
extern "C" unsigned long torture_emu_fn(unsigned long x);
extern "C" const u8 torture_emu_call[];
extern "C" const u8 torture_emu_jcc[];
extern "C" const u8 torture_emu_a[];
extern "C" const u8 torture_emu_b[];
asm(".pushsection .text, \"ax\", @progbits\n"
    ".globl torture_emu_fn\n"
    ".type torture_emu_fn, @function\n"
    ".balign 16\n"
    "torture_emu_fn:\n"
    "	mov %rdi, %rax\n"
    ".globl torture_emu_call\n"
    "torture_emu_call:\n"
    "	call torture_emu_a\n"
    "	test $1, %al\n"
    ".globl torture_emu_jcc\n"
    "torture_emu_jcc:\n"
    "	.byte 0x0f, 0x84\n"
    "	.long torture_emu_odd - . - 4\n"
    "	add $16, %rax\n"
    "	ret\n"
    "torture_emu_odd:\n"
    "	add $32, %rax\n"
    "	ret\n"
    ".size torture_emu_fn, . - torture_emu_fn\n"
    ".globl torture_emu_a\n"
    ".type torture_emu_a, @function\n"
    "torture_emu_a:\n"
    "	add $1, %rax\n"
    "	ret\n"
    ".size torture_emu_a, . - torture_emu_a\n"
    ".globl torture_emu_b\n"
    ".type torture_emu_b, @function\n"
    "torture_emu_b:\n"
    "	add $2, %rax\n"
    "	ret\n"
    ".size torture_emu_b, . - torture_emu_b\n"
    ".popsection\n");

/*
 * The probe site: a NOP5 that a batch arms with an INT3 (its new first
 * byte) and disarms again; armed, torture's die notifier steps over it.
 * torture_probe_fn returns 5 either way.
 */
extern "C" unsigned long torture_probe_fn(void);
extern "C" const u8 torture_probe_site[];
asm(".pushsection .text, \"ax\", @progbits\n"
    ".globl torture_probe_fn\n"
    ".type torture_probe_fn, @function\n"
    ".balign 16\n"
    "torture_probe_fn:\n"
    ".globl torture_probe_site\n"
    "torture_probe_site:\n"
    "	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"
    "	mov $5, %eax\n"
    "	ret\n"
    ".size torture_probe_fn, . - torture_probe_fn\n"
    ".popsection\n");

/* The site smp_text_poke_single() toggles: NOP5 (returns 1) or JMP32 to the alternative (2). */
extern "C" unsigned long torture_poke_fn(void);
extern "C" const u8 torture_poke_site[];
extern "C" const u8 torture_poke_alt[];
asm(".pushsection .text, \"ax\", @progbits\n"
    ".globl torture_poke_fn\n"
    ".type torture_poke_fn, @function\n"
    ".balign 16\n"
    "torture_poke_fn:\n"
    ".globl torture_poke_site\n"
    "torture_poke_site:\n"
    "	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"
    "	mov $1, %eax\n"
    "	ret\n"
    ".globl torture_poke_alt\n"
    "torture_poke_alt:\n"
    "	mov $2, %eax\n"
    "	ret\n"
    ".size torture_poke_fn, . - torture_poke_fn\n"
    ".popsection\n");

extern "C" unsigned long torture_call_a(unsigned long x)
{
	return x + 1;
}

extern "C" unsigned long torture_call_b(unsigned long x)
{
	return x + 2;
}

extern "C" unsigned long torture_call_c(unsigned long x)
{
	return x + 3;
}

DEFINE_STATIC_CALL(torture_call, torture_call_a);

extern "C" void torture_cond_hook(unsigned long *x)
{
	*x += 1;
}

extern "C" long torture_ret0_fn(long x)
{
	return x + 7;
}

/* NULL until set (static_call_cond()); __static_call_return0 until set */
DEFINE_STATIC_CALL_NULL(torture_cond_call, torture_cond_hook);
DEFINE_STATIC_CALL_RET0(torture_ret0_call, torture_ret0_fn);

/* torture_calls.cpp: the inline sites, recorded by pokelab-objtool */
extern "C" unsigned long torture_call_inline(unsigned long x);
extern "C" unsigned long torture_call_tail(unsigned long x);
extern "C" unsigned long torture_cond_inline(unsigned long x);
extern "C" void torture_cond_tail(unsigned long *x);
extern "C" long torture_ret0_inline(long x);
extern "C" long torture_ret0_tail(long x);

namespace pokelab::torture {

namespace {

constexpr unsigned int kNrBigSites = 300;

template<int N>
__noinline unsigned long torture_big_site(unsigned long x)
{
	if (static_branch_unlikely(&torture_big_key))
		return x ^ (N + 1) ^ 0x10000;
	return x ^ (N + 1);
}

template<size_t... I>
constexpr std::array<unsigned long (*)(unsigned long), sizeof...(I)>
makeBig(std::index_sequence<I...>)
{
	return {&torture_big_site<I>...};
}

const std::array<unsigned long (*)(unsigned long), kNrBigSites> bigSites =
	makeBig(std::make_index_sequence<kNrBigSites>());

unsigned long (*const noinstrUsers[])(unsigned long) = {
	torture_noinstr_user0, torture_noinstr_user1, torture_noinstr_user2,
	torture_noinstr_user3,
};

unsigned long (*const callTargets[])(unsigned long) = {
	torture_call_a, torture_call_b, torture_call_c,
};

struct KnobState {
	std::mutex lock;
	unsigned int requested = 0;
	std::atomic<unsigned long> writes{0};
};

KnobState knobs[KnobNr];

const char *const knobNames[KnobNr] = {
	"bpf_stats_enabled_key", "pokelab_small_key", "torture_big_key",   "torture_noinstr_key",
	"torture_call",		 "torture_poke_site", "torture_emu_sites", "torture_probe_site",
	"torture_cond_call",	 "torture_ret0_call",
};

/* What the NULL and RET0 calls' inline sites compute in @state. */
bool condComputes(unsigned int state)
{
	unsigned long v = 10;

	torture_cond_tail(&v);
	return torture_cond_inline(10) == (state ? 12u : 11u) && v == (state ? 11u : 10u);
}

bool ret0Computes(unsigned int state)
{
	return torture_ret0_inline(10) == (state ? 18 : 1) && torture_ret0_tail(10) == (state ? 17 : 0);
}

/*
 * torture's "kprobe": a die notifier that claims a trap on the armed probe
 * site and resumes after its NOP5, as a kprobe's single-step would. Runs in
 * the SIGTRAP handler: plain loads and a store to the trapped registers.
 */
std::atomic<unsigned long> probeHits;

int probeNotify(struct notifier_block *, unsigned long val, void *data)
{
	struct die_args *args = (struct die_args *)data;

	if (val != DIE_INT3 ||
	    args->regs->ip - INT3_INSN_SIZE != (unsigned long)torture_probe_site)
		return NOTIFY_DONE;
	args->regs->ip = (unsigned long)torture_probe_site + 5;
	probeHits.fetch_add(1, std::memory_order_relaxed);
	return NOTIFY_STOP;
}

struct notifier_block probeNb = {probeNotify, nullptr, 0};
bool probeRegistered;

/*
 * torture's probe on the user_enter and user_exit tracepoints, registered
 * with the kprobe: kernel text a deferred batch patches (the poke site), run
 * from the tracepoints' iterator on the isolated CPUs' way to and from user
 * mode. IRQs off, any CPU: a relaxed count.
 */
std::atomic<unsigned long> tracepointHits;
bool tracepointsOn;

void tortureTracepointProbe(int)
{
	tracepointHits.fetch_add(1, std::memory_order_relaxed);
	(void)torture_poke_fn();
}

void setTracepoints(bool on)
{
	if (tracepointsOn == on)
		return;
	if (on) {
		tracepoint_probe_register(kshim::TraceType::UserEnter, tortureTracepointProbe);
		tracepoint_probe_register(kshim::TraceType::UserExit, tortureTracepointProbe);
	} else {
		tracepoint_probe_unregister(kshim::TraceType::UserEnter);
		tracepoint_probe_unregister(kshim::TraceType::UserExit);
	}
	tracepointsOn = on;
}

void setKey(struct static_key *key, unsigned int state)
{
	if (state)
		static_key_enable(key);
	else
		static_key_disable(key);
}

void setPoke(unsigned int state)
{
	u8 insn[JMP32_INSN_SIZE];

	if (state)
		__text_gen_insn(insn, JMP32_INSN_OPCODE, torture_poke_site, torture_poke_alt,
				JMP32_INSN_SIZE);
	else
		memcpy(insn, x86_nops[5], 5);
	if (!memcmp(torture_poke_site, insn, sizeof(insn)))
		return;
	mutex_lock(&text_mutex);
	smp_text_poke_single((void *)torture_poke_site, insn, sizeof(insn), NULL);
	mutex_unlock(&text_mutex);
}

/* The CALL and the Jcc for @state. */
void emuInsns(unsigned int state, u8 *call, u8 *jcc)
{
	__text_gen_insn(call, CALL_INSN_OPCODE, torture_emu_call,
			state ? torture_emu_b : torture_emu_a, CALL_INSN_SIZE);
	memcpy(jcc, torture_emu_jcc, 6);
	jcc[1] = state ? 0x85 : 0x84;
}

void setEmu(unsigned int state)
{
	u8 call[CALL_INSN_SIZE], jcc[6];

	emuInsns(state, call, jcc);
	if (!memcmp(torture_emu_call, call, sizeof(call)) && !memcmp(torture_emu_jcc, jcc, 6) &&
	    jccSitesIn(state))
		return;
	mutex_lock(&text_mutex);
	smp_text_poke_batch_add((void *)torture_emu_call, call, sizeof(call), NULL);
	smp_text_poke_batch_add((void *)torture_emu_jcc, jcc, sizeof(jcc), NULL);
	jccBatchAdd(state);	/* the 16 conditions, rel8 and rel32 (torture_forms.cpp) */
	smp_text_poke_batch_finish();
	mutex_unlock(&text_mutex);
}

void setProbe(unsigned int state)
{
	static const u8 int3 = INT3_INSN_OPCODE;

	if (!probeRegistered)
		probeRegistered = !register_die_notifier(&probeNb);
	setTracepoints(state);	/* the tracepoints' probe comes and goes with the kprobe */
	if ((torture_probe_site[0] == INT3_INSN_OPCODE) == !!state)
		return;
	mutex_lock(&text_mutex);
	if (state)
		smp_text_poke_single((void *)torture_probe_site, &int3, INT3_INSN_SIZE, NULL);
	else
		smp_text_poke_single((void *)torture_probe_site, x86_nops[5], 5, NULL);
	mutex_unlock(&text_mutex);
}

unsigned long emuComputes(unsigned int state, unsigned long x)
{
	unsigned long y = x + 1 + state;
	bool taken = state ? (y & 1) : !(y & 1);

	return y + (taken ? 32 : 16);
}

/* What a key's site computes in each state, for the end check. */
bool keyComputes(Knob k, bool on)
{
	BpfCtx ctx{7};

	switch (k) {
	case KnobBpfStats:
		for (unsigned int i = 0; i < kNrBpfSites; i++)
			if (!!(bpfProgs()[i](&ctx) & kBpfRanWithStats) != on)
				return false;
		return true;
	case KnobSmall:
		for (unsigned int i = 0; i < kNrSmallKeySites; i++)
			if (!!(smallKeyProgs()[i](&ctx) & kBpfRanWithStats) != on)
				return false;
		return true;
	case KnobBig:
		for (unsigned int i = 0; i < kNrBigSites; i++)
			if (!!(bigSites[i](7) & 0x10000) != on)
				return false;
		return jl2Computes(on);
	case KnobNoinstr:
		for (unsigned int i = 0; i < 4; i++)
			if ((noinstrUsers[i](7) == 7 * (i + 3) + 1) != on)
				return false;
		return (torture_mixed_user(7) == 37) == on;
	default:
		return false;
	}
}

struct static_key *keyOf(Knob k)
{
	switch (k) {
	case KnobBpfStats:
		return &bpf_stats_enabled_key.key;
	case KnobSmall:
		return &pokelab_small_key.key;
	case KnobBig:
		return &torture_big_key.key;
	case KnobNoinstr:
		return &torture_noinstr_key.key;
	default:
		return nullptr;
	}
}

} /* namespace */

void setKnob(Knob knob, unsigned int state)
{
	KnobState &k = knobs[knob];
	std::lock_guard<std::mutex> lk(k.lock);

	state %= knobStates(knob);
	switch (knob) {
	case KnobBpfStats:
		/* the sysctl's own path: static_key_slow_inc()/dec() when the value changes */
		bpf_stats_handler_write((int)state);
		break;
	case KnobSmall:
		small_key_write((int)state);
		break;
	case KnobBig:
	case KnobNoinstr:
		setKey(keyOf(knob), state);
		break;
	case KnobCall:
		static_call_update(torture_call, callTargets[state]);
		break;
	case KnobPoke:
		setPoke(state);
		break;
	case KnobEmu:
		setEmu(state);
		break;
	case KnobProbe:
		setProbe(state);
		break;
	case KnobCond:
		static_call_update(torture_cond_call, state ? &torture_cond_hook : NULL);
		break;
	case KnobRet0:
		static_call_update(torture_ret0_call,
				   state ? &torture_ret0_fn
					 : (long (*)(long))(void *)&__static_call_return0);
		break;
	case KnobNr:
		break;
	}
	k.requested = state;
	k.writes.fetch_add(1, std::memory_order_relaxed);
}

unsigned int knobStates(Knob knob)
{
	return knob == KnobCall ? 3 : 2;
}

const char *knobName(Knob knob)
{
	return knobNames[knob];
}

unsigned long knobWrites(Knob knob)
{
	return knobs[knob].writes.load(std::memory_order_relaxed);
}

void resetKnobs()
{
	for (int k = 0; k < KnobNr; k++) {
		setKnob((Knob)k, 0);
		knobs[k].writes.store(0, std::memory_order_relaxed);
	}
}

unsigned long runSites(unsigned long arg)
{
	BpfCtx ctx{arg};
	unsigned long sum = 0;

	for (unsigned int i = 0; i < kNrBpfSites; i++)
		sum += bpfProgs()[i](&ctx);
	for (unsigned int i = 0; i < kNrSmallKeySites; i++)
		sum += smallKeyProgs()[i](&ctx);
	for (unsigned int i = 0; i < kNrBigSites; i++)
		sum += bigSites[i](arg);
	for (unsigned long (*u)(unsigned long) : noinstrUsers)
		sum += u(arg);
	sum += torture_mixed_user(arg);
	sum += static_call(torture_call)(arg);
	sum += torture_call_inline(arg) + torture_call_tail(arg);
	sum += torture_cond_inline(arg);
	{
		unsigned long v = arg;

		torture_cond_tail(&v);
		sum += v;
	}
	sum += (unsigned long)torture_ret0_inline((long)arg) +
	       (unsigned long)torture_ret0_tail((long)arg);
	sum += torture_poke_fn();
	sum += torture_emu_fn(arg);
	sum += torture_emu_fn(arg + 1);
	sum += runJccSites(arg) + runJl2Sites();
	sum += torture_probe_fn();
	sum += runModuleSites();	/* --module: with a reference held, 0 when none */
	return sum;
}

unsigned long runSomeSites(unsigned long arg)
{
	BpfCtx ctx{arg};
	unsigned long sum = 0;

	for (unsigned int k = 0; k < 2; k++) {
		u64 d = arg >> (k * 16);

		sum += bpfProgs()[d % kNrBpfSites](&ctx);
		sum += smallKeyProgs()[(d >> 4) % kNrSmallKeySites](&ctx);
		sum += bigSites[(d >> 8) % kNrBigSites](arg);
	}
	sum += static_call(torture_call)(arg);
	sum += torture_call_inline(arg);
	sum += torture_emu_fn(arg);
	sum += runSomeJccSites(arg) + runJl2Sites();
	sum += torture_poke_fn();
	sum += runModuleSites();
	return sum;
}

std::vector<std::string> checkKnobs()
{
	std::vector<std::string> bad;

	for (int i = 0; i < KnobNr; i++) {
		Knob knob = (Knob)i;
		unsigned int want = knobs[knob].requested;
		struct static_key *key = keyOf(knob);
		std::string err;

		if (key) {
			if (static_key_enabled(key) != (bool)want)
				bad.push_back(fmt::format("{}: count says {}, last writer asked for {}",
							  knobName(knob),
							  static_key_enabled(key) ? "on" : "off",
							  want ? "on" : "off"));
			if (jump_label_check_sites(key, &err))
				bad.push_back(fmt::format("{}: {}", knobName(knob), err));
			if (!keyComputes(knob, want))
				bad.push_back(fmt::format("{}: a site computes the other state",
							  knobName(knob)));
		} else if (knob == KnobCall) {
			if (static_call(torture_call)(10) != callTargets[want](10) ||
			    torture_call_inline(10) != callTargets[want](10) + 100 ||
			    torture_call_tail(10) != callTargets[want](10) ||
			    static_call_query(torture_call) != (void *)callTargets[want])
				bad.push_back(fmt::format("torture_call: does not call target {}",
							  want));
		} else if (knob == KnobEmu) {
			u8 call[CALL_INSN_SIZE], jcc[6];

			emuInsns(want, call, jcc);
			if (memcmp(torture_emu_call, call, sizeof(call)) ||
			    memcmp(torture_emu_jcc, jcc, sizeof(jcc)) ||
			    torture_emu_fn(6) != emuComputes(want, 6) ||
			    torture_emu_fn(7) != emuComputes(want, 7))
				bad.push_back(fmt::format("torture_emu_sites: not in state {}", want));
			else if (!(err = jccCheck(want)).empty())
				bad.push_back(fmt::format("torture_emu_sites: {}", err));
		} else if (knob == KnobCond) {
			if (!condComputes(want) ||
			    static_call_query(torture_cond_call) != (want ? (void *)&torture_cond_hook
									  : nullptr))
				bad.push_back(fmt::format("torture_cond_call: not {}",
							  want ? "torture_cond_hook" : "NULL"));
		} else if (knob == KnobRet0) {
			if (!ret0Computes(want))
				bad.push_back(fmt::format("torture_ret0_call: not {}",
							  want ? "torture_ret0_fn"
							       : "__static_call_return0"));
		} else if (knob == KnobProbe) {
			if ((torture_probe_site[0] == INT3_INSN_OPCODE) != !!want ||
			    (!want && memcmp(torture_probe_site, x86_nops[5], 5)) ||
			    torture_probe_fn() != 5)
				bad.push_back(fmt::format("torture_probe_site: not {}",
							  want ? "armed" : "a NOP5"));
			for (struct static_key *tp : {&__tracepoint_user_enter.key,
						      &__tracepoint_user_exit.key}) {
				if (static_key_enabled(tp) != (bool)want)
					bad.push_back(fmt::format("torture_probe_site: a "
								  "tracepoint's key is {}",
								  want ? "off" : "on"));
				if (jump_label_check_sites(tp, &err))
					bad.push_back(fmt::format("torture_probe_site: {}", err));
			}
		} else if (torture_poke_fn() != want + 1) {
			bad.push_back(fmt::format("torture_poke_site: returns {}, last writer asked "
						  "for {}", torture_poke_fn(), want + 1));
		}
	}
	return bad;
}

} /* namespace pokelab::torture */
