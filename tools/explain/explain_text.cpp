// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab explain's topics on the rest of the text: int3-handler (one trap,
 * read back from the run's trace), apply-alternatives (the boot pass over
 * the program's own sites) and static-call (a trampoline retargeted while
 * CPUs call through it). Each returns the command's exit status.
 */
#include <atomic>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include <asm/alternative.h>
#include <asm/processor.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/disasm.h>
#include <kernel_shim/plural.h>
#include <kernel_shim/sched.h>
#include <kernel_shim/trace.h>
#include <linux/smp.h>
#include <linux/static_call.h>
#include <pokelab/alt_sites.h>
#include <pokelab/alt_text.h>
#include <pokelab/text_poke_stats.h>
#include <workloads/small_key.h>

#include "command.h"
#include "explain/explain.h"

extern "C" __noinline int pokelab_explain_call_a(int x)
{
	return x + 1;
}

extern "C" __noinline int pokelab_explain_call_b(int x)
{
	return x + 2;
}

DEFINE_STATIC_CALL(pokelab_explain_call, pokelab_explain_call_a);

namespace pokelab::explain {

namespace {

/* The handler's walk, told while the batch has every INT3 in place. */
void handlerPhase(int phase)
{
	if (phase != kshim::TRACE_BATCH_TAILS)
		return;
	step("every site starts with an INT3: a CPU that runs one traps");
	showSites("during");
	say("What happens on a CPU that fetches the 0xcc (the kernel's #BP; here "
	    "SIGTRAP, with the registers of the interrupted code):\n"
	    "  1. the trap reports the byte after the INT3: regs->ip = site + 1\n"
	    "  2. smp_text_poke_int3_handler(): not from user mode; smp_rmb(), pairing "
	    "with the patcher's smp_wmb() between publishing the refs and writing the "
	    "INT3\n"
	    "  3. try_get_text_poke_array(): take this CPU's ref (its count goes from 1 to 2); "
	    "0 means the batch is over and the trap is not ours\n"
	    "  4. ip = regs->ip - 1; find the site: bsearch over the batch's sorted entries "
	    "(this batch has {} sites)\n"
	    "  5. emulate the instruction the site will hold: a JMP sets regs->ip to its "
	    "target, a NOP to ip + len, a CALL pushes the return address too\n"
	    "  6. put_text_poke_array(): drop the ref; the patcher's drain waits for it\n",
	    sites().size());
	say("A probe right after step 3 (pokelab's, not the kernel's) holds the first CPU "
	    "that traps there until CPU 0 has read it:\n");
	showInHandler("between steps 3 and 6");
}

} /* namespace */

int topicInt3Handler()
{
	Machine m;
	int ret = bootMachine(m, "", true);

	if (ret)
		return ret;
	step("the sites, and the CPUs that run them");
	say("pokelab_small_key's sites hold NOPs; {} run them in a loop. CPU 0 turns "
	    "the key on: one batch, each site's NOP becoming a JMP.\n", readers());
	showSites("before");
	startReaders();
	kshim::sleepForNs(20000000ull);

	batchPhaseHook = handlerPhase;
	flip(1);
	batchPhaseHook = nullptr;
	stopReadersAndWait();
	stopTrace(m);
	small_key_write(0);	/* leave the key as found, after the trace */

	step("what each trap did, from the run's trace (int3_emulate events)");
	std::map<unsigned int, unsigned long> per;
	std::map<std::pair<unsigned long, unsigned long>, unsigned long> paths;

	for (const kshim::TraceEvent &e : captured(m)) {
		if (e.type != kshim::TraceType::Int3Emulate)
			continue;
		per[e.cpu]++;
		paths[{e.callsite, e.fn}]++;
	}
	for (const auto &[p, n] : paths)
		say("  site {:#x} <{}> -> {:#x} <{}>: {}\n", p.first,
		    kshim::traceSymbol(p.first, true), p.second,
		    kshim::traceSymbol(p.second, true), kshim::nOf(n, "emulation"));
	for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++)
		say("  CPU {}: {} emulated in the batch\n", cpu,
		    kshim::nOf(per.count(cpu) ? per[cpu] : 0, "INT3 trap"));
	say("Each trap continued at the JMP's target (the key's branch), as if the "
	    "new instruction had run; no CPU executed a half-written one.\n");
	ret = finishMachine(m);
	sayReadNext("arch/x86/kernel/alternative.c: smp_text_poke_int3_handler(), "
	    "try_get_text_poke_array(); arch/x86/include/asm/text-patching.h: "
	    "int3_emulate_jmp(), int3_emulate_call(); arch/x86/kernel/traps.c: "
	    "do_int3().\n");
	return ret;
}

namespace {

/*
 * @b at @addr, one instruction a line; a run of the same NOP (a padding of
 * 0x90s, say) is one line: its bytes once, the count and the run's length.
 */
void showBytes(const char *what, const std::vector<u8> &b, unsigned long addr)
{
	size_t off = 0;
	bool first = true;

	while (off < b.size()) {
		unsigned int l, run = 1;
		std::string text = kshim::disasmOne(b.data() + off, b.size() - off, addr + off, &l);
		std::string hex;

		if (!l) {
			hex = fmt::format("{:02x}", b[off]);
			l = 1;
		} else {
			for (unsigned int k = 0; k < l; k++)
				hex += fmt::format("{}{:02x}", k ? " " : "", b[off + k]);
		}
		/* the same NOP again right after: one line for the run */
		while (text.rfind("nop", 0) == 0 && off + (size_t)(run + 1) * l <= b.size() &&
		       !memcmp(b.data() + off, b.data() + off + (size_t)run * l, l))
			run++;
		if (run > 1) {
			hex += fmt::format(" x{}", run);
			text += fmt::format(" ({} bytes)", run * l);
		}
		say("    {:<10} +{:<3} {:<32} {}\n", first ? what : "", off, hex, text);
		first = false;
		off += (size_t)run * l;
	}
}

} /* namespace */

int topicApplyAlternatives()
{
	Machine m;
	int ret = bootMachine(m);

	if (ret)
		return ret;
	std::vector<AltSiteView> v = altOwnSites();
	AltStats st = altStats();

	step("the alternative sites, as the compiler left them");
	say("ALTERNATIVE(old, new, feature) emits the old instructions inline, padded "
	    "with NOPs to the longest replacement, the replacement in altinstr_replacement "
	    "and a struct alt_instr per entry. The program has {} sites with {} entries:\n",
	    v.size(), [&] {
		    size_t n = 0;
		    for (const AltSiteView &s : v)
			    n += s.entries.size();
		    return n;
	    }());
	for (const AltSiteView &s : v) {
		say("  {:#x} <{}>, {} bytes:\n", s.addr, s.name, s.len);
		showBytes("compiler", s.original, s.addr);
	}

	step("apply_alternatives() at boot: one decision per site");
	say("alternative_instructions() ran apply_alternatives() on CPU 0 before the "
	    "other CPUs started. For each site it reads every entry (the later one that "
	    "applies wins), copies that replacement into a buffer, relocates its "
	    "RIP-relative operands and calls, pads with NOPs that optimize_nops() "
	    "merges, and writes the buffer once with text_poke_early() (a sync_core() "
	    "follows). What this CPU's CPUID (and clearcpuid=) decided:\n");
	for (const AltSiteView &s : v) {
		int taken = -1;

		say("  {:#x} <{}>:\n", s.addr, s.name);
		for (size_t i = 0; i < s.entries.size(); i++) {
			const AltSiteView::Entry &e = s.entries[i];
			bool applies = e.has != e.notFlag;

			if (applies)
				taken = (int)i;
			say("    entry {}: feature {}{}: the CPU {} it -> {}\n", i,
			    e.notFlag ? "NOT " : "", e.feature, e.has ? "has" : "lacks",
			    applies ? "applies" : "does not apply");
			if (e.repl.empty())
				say("      replace  (empty: the site becomes NOPs)\n");
			showBytes("  replace", e.repl, e.replAddr);
		}
		say("    -> {}{}\n",
		    taken < 0 ? "no entry applies: the original stays (its NOPs optimised)"
			      : fmt::format("entry {}'s replacement", taken),
		    taken >= 0 && s.entries[taken].directCall
			    ? ", a direct CALL to the pointer's target (ALT_FLAG_DIRECT_CALL)"
			    : "");
		showBytes("now", s.now, s.addr);
	}
	say("  {} sites: {} patched with a replacement, {} kept their original\n",
	    st.sites, st.patched, st.original);

	step("running the patched sites");
	unsigned long sw0 = pokelab_sw_hweight_calls;
	unsigned int w = 0;
	int level = 0, direct = 0;

	kshim::cpuRun(1, [&] {
		w = pokelab_hweight32(0xf0f0u);
		level = pokelab_alt_level();
		direct = pokelab_alt_direct_call();
	});
	kshim::cpuWait(1);
	say("  CPU 1: pokelab_hweight32(0xf0f0) = {} through {}\n", w,
	    pokelab_sw_hweight_calls != sw0 ? "the call to __sw_hweight32 (no POPCNT taken)"
					    : "the POPCNT instruction");
	say("  CPU 1: pokelab_alt_level() = {} (0: neither entry, 1: SSE2's, 2: "
	    "AVX2's)\n", level);
	say("  CPU 1: pokelab_alt_direct_call() = {:#x} (the pointer's target at boot, "
	    "called directly)\n", direct);
	say("Boot with clearcpuid= to see the other side: `pokelab explain "
	    "apply-alternatives clearcpuid=popcnt,avx2`.\n");
	say("(The model below counts from the end of boot: the pass ran inside it, "
	    "each text_poke_early() with its sync_core(), and nothing was written "
	    "since.)\n");
	ret = finishMachine(m);
	sayReadNext("arch/x86/kernel/alternative.c: apply_alternatives(), "
	    "analyze_patch_site(), optimize_nops(), text_poke_apply_relocation(), "
	    "text_poke_early(); arch/x86/include/asm/alternative.h: ALTERNATIVE().\n");
	return ret;
}

namespace {

std::atomic<bool> callersStop;
std::vector<unsigned long> gotA(512), gotB(512), got0(512);

void stopCallers();

void startCallers()
{
	running = stopCallers;
	callersStop.store(false);
	for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++)
		kshim::cpuRun(cpu, [cpu] {
			unsigned long a = 0, b = 0, z = 0;

			while (!callersStop.load(std::memory_order_relaxed)) {
				int r = static_call(pokelab_explain_call)(10);

				a += r == 11;
				b += r == 12;
				z += r == 0;
				kshim::schedTick();
			}
			gotA[cpu] = a;
			gotB[cpu] = b;
			got0[cpu] = z;
		});
}

void stopCallers()
{
	running = nullptr;
	callersStop.store(true);
	for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++)
		kshim::cpuWait(cpu);
}

void showTramp(const char *when)
{
	const u8 *p = (const u8 *)STATIC_CALL_TRAMP_ADDR(pokelab_explain_call);
	std::string hex, text = kshim::disasmOne(p, 8, (unsigned long)p);

	for (int i = 0; i < 5; i++)
		hex += fmt::format("{:02x} ", p[i]);
	/* a JMP32 names its target: rel32 from the end of the instruction */
	if (p[0] == 0xe9) {
		unsigned long to;
		s32 rel;

		memcpy(&rel, p + 1, 4);
		to = (unsigned long)p + 5 + rel;
		text = fmt::format("jmp {:#x} <{}>", to, kshim::traceSymbol(to, false));
	}
	say("  {} {:#x} <__SCT__pokelab_explain_call>: {} {}\n", when, (unsigned long)p, hex,
	    text);
}

void trampPhase(int phase)
{
	if (phase != kshim::TRACE_BATCH_TAILS)
		return;
	step("inside the update: an INT3 on the trampoline's first byte");
	showTramp("during");
	say("A caller that reaches the trampoline now traps; the handler emulates "
	    "the new JMP (to pokelab_explain_call_b). A probe after the ref holds the "
	    "first caller that traps until CPU 0 has read it:\n");
	showInHandler("with a ref held");
}

} /* namespace */

int topicStaticCall()
{
	Machine m;
	int ret = bootMachine(m);
	std::vector<unsigned long> ipi0, int30;

	if (ret)
		return ret;
	step("a static call and its trampoline");
	say("DEFINE_STATIC_CALL(pokelab_explain_call, pokelab_explain_call_a) defines "
	    "the key (its func {}) and the trampoline __SCT__pokelab_explain_call, a "
	    "5-byte JMP. Every static_call(pokelab_explain_call)(x) is a direct CALL to "
	    "the trampoline: no pointer is loaded, so no retpoline is needed.\n",
	    kshim::traceSymbol((unsigned long)static_call_query(pokelab_explain_call), false));
	showTramp("now");
	say("{} now call it in a loop (a returns x + 1, b x + 2).\n", readers());
	startCallers();
	kshim::sleepForNs(20000000ull);

	ipi0 = snapshot(ipisOf);
	int30 = snapshot(int3sOf);
	step("static_call_update(pokelab_explain_call, pokelab_explain_call_b)");
	say("__static_call_update() writes key->func, then arch_static_call_transform() "
	    "rewrites the trampoline's JMP with smp_text_poke_single(): a batch of one "
	    "site, INT3 first.\n");
	batchPhaseHook = trampPhase;
	static_call_update(pokelab_explain_call, &pokelab_explain_call_b);
	batchPhaseHook = nullptr;

	step("the update returned");
	showTramp("after");
	say("  the key's func: {}\n",
	    kshim::traceSymbol((unsigned long)static_call_query(pokelab_explain_call), false));
	showCpus("snapshot at return", ipi0, int30);
	kshim::sleepForNs(20000000ull);

	step("static_call_update() to __static_call_return0");
	say("The target DEFINE_STATIC_CALL_RET0() starts with: the trampoline jumps to a "
	    "function that returns 0.\n");
	static_call_update(pokelab_explain_call,
			   (int (*)(int))(void *)&__static_call_return0);
	showTramp("after");
	kshim::sleepForNs(20000000ull);
	stopCallers();
	for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++)
		say("  CPU {}: {} calls reached a, {} b, {} returned 0\n", cpu, gotA[cpu],
		    gotB[cpu], got0[cpu]);
	static_call_update(pokelab_explain_call, &pokelab_explain_call_a);
	say("pokelab ports the trampoline configuration (HAVE_STATIC_CALL without "
	    "HAVE_STATIC_CALL_INLINE): the callers' CALLs are never rewritten "
	    "(docs/porting.md).\n");
	ret = finishMachine(m);
	sayReadNext("include/linux/static_call.h (static_call(), "
	    "static_call_update()); kernel/static_call.c: __static_call_return0(); "
	    "arch/x86/kernel/static_call.c: arch_static_call_transform(), "
	    "__static_call_transform().\n");
	return ret;
}

} /* namespace pokelab::explain */
