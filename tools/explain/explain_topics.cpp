// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab explain's topics (explain.h): static-key, int3-batch, refs,
 * deferral. Each boots its machine(s), shows the steps, and returns the
 * command's exit status.
 */
#include <atomic>
#include <thread>

#include <fmt/format.h>

#include <asm/processor.h>
#include <asm/tlbflush.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/plural.h>
#include <kernel_shim/trace.h>
#include <linux/context_tracking.h>
#include <linux/context_tracking_state.h>
#include <linux/smp.h>
#include <pokelab/ct_entry.h>
#include <pokelab/text_poke_stats.h>
#include <workloads/small_key.h>

#include "command.h"
#include "explain/explain.h"

namespace pokelab::explain {

static void explainPhase(int phase)
{
	switch (phase) {
	case kshim::TRACE_BATCH_INT3:
		step("phase 1: the refs are published, an INT3 goes on every site's first byte");
		say("smp_text_poke_batch_finish() holds text_mutex and has published the "
		    "refs: every CPU's INT3 refs count is 1 (CPU 1: {}), so a CPU that traps "
		    "can take a ref. Nothing is written yet:\n",
		    int3RefsNow(1));
		showSites("before");
		say("Next it writes 0xcc on each first byte and syncs every CPU "
		    "(do_sync_core IPIs).\n");
		break;
	case kshim::TRACE_BATCH_TAILS: {
		step("phase 2: every INT3 is in place and synced; the tails are next");
		showSites("during");
		say("A CPU that runs a site now traps: smp_text_poke_int3_handler() takes "
		    "a ref, emulates the instruction the site will hold and returns past "
		    "it. A probe in the handler, right after the ref (pokelab's, not the "
		    "kernel's), holds the first CPU that traps there until CPU 0 has read it; "
		    "held during phase 2:\n");
		showInHandler("with a ref held");
		showCpus("snapshot during phase 2, after the release", flipIpi0, flipInt30);
		break;
	}
	case kshim::TRACE_BATCH_FIRST_BYTES:
		step("phase 3: the tails are written and synced; the first bytes are next");
		showSites("during");
		say("The INT3 still guards each site: the bytes behind it are the new "
		    "instruction's, but no CPU can fetch them without the trap. Next the "
		    "first bytes go in, a last sync, and the refs are drained (each CPU's "
		    "count back to 0 once no handler holds one).\n");
		showCpus("snapshot at the start of phase 3", flipIpi0, flipInt30);
		break;
	default:
		break;
	}
}

/* A topic's machine: its --trace sink and the model's counters at boot. */
int topicStaticKey()
{
	Machine m;
	int ret = bootMachine(m);

	if (ret)
		return ret;
	TextPokeStats s0 = textPokeStats();

	step("a static key and its sites");
	say("pokelab_small_key is DEFINE_STATIC_KEY_FALSE(); two functions test it with "
	    "static_branch_unlikely(). The compiler left a 5-byte NOP at each test, and "
	    "the key's jump-table entries point at them:\n");
	showSites("now");
	say("{} now run both functions in a loop: with the key off, the NOP falls "
	    "through and the branch is never taken.\n", readers());
	startReaders();
	kshim::sleepForNs(20000000ull);

	step("static_branch_enable(): every site becomes a JMP");
	say("static_key_slow_inc() -> jump_label_update() queues one entry per site "
	    "(arch_jump_label_transform_queue(), smp_text_poke_batch_add()) and "
	    "arch_jump_label_transform_apply() runs the batch: INT3s, tails, first bytes, "
	    "a sync after each.\n");
	flip(1);
	TextPokeStats s1 = textPokeStats();

	showSites("now");
	say("  {} batch of {} sites, {} sync rounds\n", s1.batches - s0.batches,
	    sites().size(), s1.syncRounds - s0.syncRounds);
	showCpus("snapshot at return", flipIpi0, flipInt30);
	kshim::sleepForNs(20000000ull);	/* the readers take the branch for a while */

	step("static_branch_disable(): back to NOPs");
	flip(0);
	showSites("now");
	showCpus("snapshot at return", flipIpi0, flipInt30);
	stopReadersAndWait();
	for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++)
		say("  CPU {}: ran the sites {} times, {} of them with the key on\n", cpu,
		    runs[cpu], enabledRuns[cpu]);
	ret = finishMachine(m);
	sayReadNext("include/linux/jump_label.h (static_branch_unlikely()), "
	    "kernel/jump_label.c (static_key_slow_inc(), jump_label_update()), "
	    "arch/x86/kernel/jump_label.c (arch_jump_label_transform_queue()); then "
	    "`pokelab explain int3-batch` for the batch itself.\n");
	return ret;
}

int topicInt3Batch()
{
	Machine m;
	int ret = bootMachine(m);

	if (ret)
		return ret;

	step("the sites before the batch");
	say("pokelab_small_key's two sites, NOPs while the key is off; {} run them "
	    "in a loop from now on:\n", readers());
	showSites("before");
	startReaders();
	kshim::sleepForNs(20000000ull);

	batchPhaseHook = explainPhase;
	flip(1);
	batchPhaseHook = nullptr;

	step("the batch returned: every site holds the new instruction");
	showSites("after");
	showCpus("snapshot at return", flipIpi0, flipInt30);
	stopReadersAndWait();
	std::vector<unsigned long> int3 = snapshot(int3sOf);

	for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++)
		say("  CPU {}: {} emulated in the batch\n", cpu,
		    kshim::nOf(int3[cpu] - flipInt30[cpu], "INT3 trap"));
	small_key_write(0);	/* leave the key as found */
	ret = finishMachine(m);
	sayReadNext("arch/x86/kernel/alternative.c: smp_text_poke_batch_finish() "
	    "(the three phases), smp_text_poke_int3_handler() (the trap), "
	    "smp_text_poke_sync_each_cpu() (the syncs).\n");
	return ret;
}

/* One machine of the refs topic: a flip under pokelab.refs=@mode, the refs seen during it. */
static int refsRun(const char *mode, std::vector<unsigned long> *xcpu)
{
	Machine m;
	int ret = bootMachine(m, std::string("pokelab.refs=") + mode);
	std::vector<unsigned long> x0;

	if (ret)
		return ret;
	startReaders();
	kshim::sleepForNs(20000000ull);
	x0 = snapshot(refsCrossCpuWrites);
	batchPhaseHook = [](int phase) {
		if (phase != kshim::TRACE_BATCH_TAILS)
			return;
		std::vector<HeldCpu> held = holdInHandler(nr_cpu_ids - 1);
		std::string seen;

		for (const HeldCpu &h : held)
			seen += fmt::format("{}CPU {} reads {}", seen.empty() ? "" : ", ", h.cpu,
					    h.refs);
		say("  during phase 2, a probe after the ref held {} inside the handler at "
		    "once; the refs count each sees: {}\n",
		    kshim::nOf(held.size(), "CPU"), seen.empty() ? "none" : seen);
		releaseHandler();
	};
	flip(1);
	batchPhaseHook = nullptr;
	stopReadersAndWait();
	*xcpu = snapshot(refsCrossCpuWrites);
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		(*xcpu)[cpu] -= x0[cpu];
		say("  CPU {}: {} INT3 traps, {} to a refs line another CPU wrote last\n",
		    cpu, int3sOf(cpu) - flipInt30[cpu],
		    kshim::nOf((*xcpu)[cpu], "write", "writes"));
	}
	small_key_write(0);
	return finishMachine(m);
}

int topicRefs()
{
	std::vector<unsigned long> global, percpu;
	unsigned long g = 0, p = 0;
	int ret;

	if (!opts.trace.empty()) {
		fmt::print(stderr, "pokelab: explain refs: --trace {}: this topic boots two "
			   "machines; expected no --trace\n", opts.trace);
		return kExitUsage;
	}
	/*
	 * With one reader there is no line for trapping CPUs to share: its
	 * writes cross CPUs only after the patcher's publish, the same under
	 * either mode, and the comparison would fail on a correct kernel.
	 */
	if (opts.cpus < 3) {
		fmt::print(stderr, "pokelab: explain refs: --cpus {}: expected at least 3 (CPU 0 "
			   "patches, two or more CPUs trap on its INT3s and share the global refs "
			   "line)\n",
			   opts.cpus);
		return kExitUsage;
	}
	step("pokelab.refs=global: one count for every CPU (v6.15's bp_desc.refs)");
	say("A CPU that traps on a batch's INT3 takes a ref before it reads the batch "
	    "and drops it after; the patcher waits for the count to drain. With one "
	    "global count every trapping CPU writes the same cache line. One flip of "
	    "pokelab_small_key while {} run its sites:\n", readers());
	if ((ret = refsRun("global", &global)))
		return ret;
	step("pokelab.refs=percpu: a count per CPU (v6.16, E. Dumazet)");
	say("Each CPU now takes its own count's ref; only the patcher, publishing "
	    "and draining, writes another CPU's line. The same flip:\n");
	if ((ret = refsRun("percpu", &percpu)))
		return ret;
	for (unsigned int cpu = 1; cpu < global.size(); cpu++)
		g += global[cpu];
	for (unsigned int cpu = 1; cpu < percpu.size(); cpu++)
		p += percpu[cpu];
	step("what changed");
	say("  writes by {} to a refs line another CPU wrote last: global {}, "
	    "percpu {}\n", readers(), g, p);
	say("On 240 cores trapping at once, that line moving between them is what "
	    "made a 164-site batch take 2.65 s; per-CPU counts made it 702 us "
	    "(docs/reproduction.md, case 000/001). This machine cannot show the "
	    "latency, only the writes.\n");
	sayReadNext("arch/x86/kernel/alternative.c: try_get_text_poke_array(), "
	    "put_text_poke_array(), and the refs publish/drain in "
	    "smp_text_poke_batch_finish(); `pokelab run bpf-stats` for the case's "
	    "numbers.\n");
	return g > p ? 0 : 1;
}

/* One machine of the deferral topic: an isolated CPU in user mode while CPU 0 flips. */
static std::atomic<int> isoState;	/* 1: in user mode, 2: make a system call, 3: back in the kernel */

static void isoNothing(void *)
{
}

static int deferralRun(const std::string &policy, const char *what)
{
	Machine m;
	int ret;
	unsigned int iso = opts.cpus - 1;

	step(fmt::format("pokelab.ct_defer={}: CPU {} isolated, in user mode, during a flip",
			 policy, iso));
	say("{}\n", what);
	if ((ret = bootMachine(m, fmt::format("nohz_full={} pokelab.ct_defer={}", iso, policy))))
		return ret;
	isoState.store(0);
	kshim::cpuRun(iso, [] {
		ctReturnToUser();
		isoState.store(1);
		while (isoState.load() != 2)
			cpu_relax();
		ctSyscall(isoNothing, nullptr);
		isoState.store(3);
		ctEnterKernelForGood();
	});
	while (isoState.load() != 1)
		std::this_thread::yield();
	startReaders(iso);
	kshim::sleepForNs(10000000ull);

	unsigned long ipi0 = ipisOf(iso), flushed0 = ctWorkFlushed(iso);

	flip(1);
	int work = (atomic_read(&per_cpu_ptr(&context_tracking, iso)->state) & CT_WORK_MASK) >>
		   CT_WORK_START;

	say("  CPU {}: {} reached it during the flip's 3 sync rounds; deferred work "
	    "waiting in its context-tracking state: {}; kernel_cr3_loaded {}\n", iso,
	    kshim::nOf(ipisOf(iso) - ipi0, "IPI"),
	    work ? kshim::traceCtWorkName(work) : std::string("none"),
	    (int)*per_cpu_ptr(&kernel_cr3_loaded, iso));
	isoState.store(2);
	while (isoState.load() != 3)
		std::this_thread::yield();
	say("  CPU {} made a system call: {} ran at its entry, before any "
	    "instrumentable code{}\n", iso,
	    kshim::nOf(ctWorkFlushed(iso) - flushed0, "deferred flush", "deferred flushes"),
	    policy == "v8" ? "; the entry stub's CR3 write serialised it instead (v8: "
			     "pokelab's reconstruction of an RFC, not posted code)" : "");
	kshim::cpuWait(iso);
	stopReadersAndWait();
	small_key_write(0);
	return finishMachine(m);
}

int topicDeferral()
{
	static const struct {
		const char *policy, *what;
	} policies[] = {
		{"off", "mainline: every sync round IPIs every CPU, the isolated one in user mode "
			"too"},
		{"v7", "the series (v7): ct_set_cpu_work() sets CT_WORK_SYNC in the isolated "
		       "CPU's state instead of an IPI; its next entry runs sync_core() in "
		       "ct_work_flush()"},
		{"v7-tlbi", "v7 and RFC 28-31, in pokelab's corrected order (flag, then flush): the "
			    "same for text, and kernel TLB flushes skip the CPU too while "
			    "kernel_cr3_loaded reads 0"},
		{"v8", "v8: pokelab's reconstruction of an RFC, not posted code. No work bits; the "
		       "IPI is skipped because kernel_cr3_loaded reads 0, and the entry's CR3 "
		       "write (the asm entry stub) is the sync"},
	};
	unsigned int n = 0;
	int ret;

	if (!opts.trace.empty()) {
		fmt::print(stderr, "pokelab: explain deferral: --trace {}: this topic boots a "
			   "machine per policy; expected no --trace\n", opts.trace);
		return kExitUsage;
	}
	if (opts.cpus < 3) {
		fmt::print(stderr, "pokelab: explain deferral: --cpus {}: expected at least 3 (CPU "
			   "0 patches, one CPU runs the sites, the last is isolated)\n", opts.cpus);
		return kExitUsage;
	}
	for (const auto &p : policies) {
		if (!opts.ctDefer.empty() && opts.ctDefer != p.policy)
			continue;
		if ((ret = deferralRun(p.policy, p.what)))
			return ret;
		n++;
	}
	if (!n) {
		fmt::print(stderr, "pokelab: explain deferral: --ct-defer {}: expected off, v7, "
			   "v7-tlbi or v8\n", opts.ctDefer);
		return kExitUsage;
	}
	sayReadNext("kernel/context_tracking.c: ct_set_cpu_work(), ct_work_flush() "
	    "(the series); arch/x86/kernel/alternative.c: do_sync_core_defer_cond(); "
	    "docs/context_tracking.md for the revisions and `pokelab run isolation "
	    "--ct-defer off,v7,v7-tlbi,v8` for the census.\n");
	return 0;
}

} /* namespace pokelab::explain */
