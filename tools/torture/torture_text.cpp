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
#include <linux/mutex.h>
#include <linux/static_call.h>

#include <workloads/bpf_prog.h>
#include <workloads/bpf_stats.h>
#include <workloads/small_key.h>
#include "torture_text.h"

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
	"bpf_stats_enabled_key", "pokelab_small_key", "torture_big_key",
	"torture_noinstr_key",   "torture_call",      "torture_poke_site",
};

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
		return true;
	case KnobNoinstr:
		for (unsigned int i = 0; i < 4; i++)
			if ((noinstrUsers[i](7) == 7 * (i + 3) + 1) != on)
				return false;
		return true;
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
	sum += static_call(torture_call)(arg);
	sum += torture_poke_fn();
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
			    static_call_query(torture_call) != (void *)callTargets[want])
				bad.push_back(fmt::format("torture_call: does not call target {}",
							  want));
		} else if (torture_poke_fn() != want + 1) {
			bad.push_back(fmt::format("torture_poke_site: returns {}, last writer asked "
						  "for {}", torture_poke_fn(), want + 1));
		}
	}
	return bad;
}

} /* namespace pokelab::torture */
