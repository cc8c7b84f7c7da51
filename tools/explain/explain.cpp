// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab explain TOPIC: live patching step by step, on the live machine
 * and the real sites of the running program (docs/explain.md).
 *
 * Each topic boots the simulated CPUs, lets CPUs 1..N-1 run the sites of
 * pokelab_small_key (two functions, one 5-byte site each) and flips the
 * key from CPU 0. At each step it prints each site's address, symbol,
 * bytes and their disassembly as they are in memory at that moment, what
 * each CPU is doing (read from its live INT3 refs and counters), the IPIs
 * that reached it, and at the end what the cross-modifying-code model
 * concluded. The int3-batch topic stops inside smp_text_poke_batch_finish()
 * at the start of each phase (pokelab::batchPhaseHook).
 */
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <kernel_shim/boot.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/disasm.h>
#include <kernel_shim/machine.h>
#include <kernel_shim/plural.h>
#include <kernel_shim/sched.h>
#include <kernel_shim/torture.h>
#include <kernel_shim/trace.h>
#include <kernel_shim/trace_output.h>
#include <kernel_shim/trace_record.h>
#include <kernel_shim/xmc.h>
#include <linux/jump_label.h>
#include <linux/smp.h>
#include <pokelab/text_poke_stats.h>
#include <workloads/small_key.h>

#include "command.h"
#include "options.h"
#include "stop.h"

extern "C" struct jump_entry __start___jump_table[];
extern "C" struct jump_entry __stop___jump_table[];

namespace pokelab {

namespace {

struct ExplainOptions {
	std::string topic;
	unsigned int cpus = 4;
	bool step = false;
	bool list = false;
	std::string trace;
	std::vector<std::string> params;
} opts;
CLI::App *x;

struct Topic {
	const char *name;
	const char *what;
	int (*run)();
};

/* Colour only on a terminal, and never with NO_COLOR set (no-color.org). */
bool colour()
{
	static const bool on = isatty(1) && !getenv("NO_COLOR");

	return on;
}

std::string bold(const std::string &s)
{
	return colour() ? "\033[1m" + s + "\033[0m" : s;
}

unsigned int stepNo;

/* "CPU 1" or "CPUs 1-3": the readers (of the machine booted, or about to be) */
std::string readers()
{
	unsigned int n = kshim::booted() ? nr_cpu_ids : opts.cpus;

	return n == 2 ? "CPU 1" : fmt::format("CPUs 1-{}", n - 1);
}

/* A step's heading; with --step, wait for Enter before it (not before the first). */
void step(const std::string &title)
{
	if (opts.step && stepNo) {
		std::string line;

		fmt::print("{}", bold("-- Enter for the next step --"));
		std::fflush(stdout);
		std::getline(std::cin, line);
	}
	stepNo++;
	fmt::print("\n{}\n", bold(fmt::format("Step {}: {}", stepNo, title)));
	std::fflush(stdout);
}

/* pokelab_small_key's sites, from the jump table. */
std::vector<unsigned long> sites()
{
	std::vector<unsigned long> v;

	for (struct jump_entry *e = __start___jump_table; e < __stop___jump_table; e++)
		if (jump_entry_key(e) == &pokelab_small_key.key)
			v.push_back(jump_entry_code(e));
	std::sort(v.begin(), v.end());
	return v;
}

/* Each site as it is in memory now: address, symbol, bytes, instruction. */
void showSites(const char *when)
{
	for (unsigned long a : sites()) {
		const u8 *p = (const u8 *)a;
		std::string hex;

		for (int i = 0; i < 5; i++)
			hex += fmt::format("{:02x} ", p[i]);
		fmt::print("  {} {:#x} <{}>: {}  {}\n", when, a, kshim::traceSymbol(a, true), hex,
			   kshim::disasmOne(p, 16, a));
	}
}

/* The readers: CPUs 1..N-1 run the two sites until told to stop. */
std::atomic<bool> stopReaders;
std::vector<unsigned long> runs(512), enabledRuns(512);

void startReaders()
{
	stopReaders.store(false);
	for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++)
		kshim::cpuRun(cpu, [cpu] {
			BpfCtx ctx{cpu};
			unsigned long n = 0, en = 0;

			while (!stopReaders.load(std::memory_order_relaxed)) {
				unsigned int r = smallKeyProgs()[n % kNrSmallKeySites](&ctx);

				en += (r & kBpfRanWithStats) != 0;
				n++;
				kshim::schedTick();
			}
			runs[cpu] = n;
			enabledRuns[cpu] = en;
		});
}

void stopReadersAndWait()
{
	stopReaders.store(true);
	for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++)
		kshim::cpuWait(cpu);
}

std::vector<unsigned long> snapshot(unsigned long (*f)(int))
{
	std::vector<unsigned long> v(nr_cpu_ids);

	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++)
		v[cpu] = f(cpu);
	return v;
}

unsigned long ipisOf(int cpu)
{
	return kshim::cpuStats(cpu).ipiReceived;
}

unsigned long int3sOf(int cpu)
{
	return int3Emulated(cpu);
}

/* What the IPIs and INT3 traps did on each CPU since @ipi0 / @int30. */
void showCpus(const std::vector<unsigned long> &ipi0, const std::vector<unsigned long> &int30)
{
	for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++)
		fmt::print("  CPU {}: running the sites; {} received, {} emulated so far in "
			   "this flip\n", cpu, kshim::nOf(ipisOf(cpu) - ipi0[cpu], "IPI"),
			   kshim::nOf(int3sOf(cpu) - int30[cpu], "INT3 trap"));
}

/*
 * Sample the live refs for up to @ns: which CPUs are inside the INT3
 * handler holding a ref right now. The torture delay after the ref is
 * taken (pokelab's, not the kernel's) keeps a CPU there long enough to be
 * seen; it is on for this sampling only, and the output says so.
 */
std::vector<int> caughtInHandler(u64 ns)
{
	std::vector<int> caught(nr_cpu_ids, 0);
	u64 until = kshim::clockNs() + ns;

	kshim::tortureDelays(true, 1);
	while (kshim::clockNs() < until) {
		for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++) {
			int r = int3RefsNow(cpu);

			if (r >= 2 && !caught[cpu])
				caught[cpu] = r;
		}
	}
	kshim::tortureDelays(false, 1);
	return caught;
}

std::vector<unsigned long> flipIpi0, flipInt30;

void explainPhase(int phase)
{
	switch (phase) {
	case kshim::TRACE_BATCH_INT3:
		step("phase 1: the refs are published, an INT3 goes on every site's first byte");
		fmt::print("smp_text_poke_batch_finish() holds text_mutex and has published the "
			   "refs: every CPU's INT3 refs count is 1 (CPU 1: {}), so a CPU that traps "
			   "can take a ref. Nothing is written yet:\n",
			   int3RefsNow(1));
		showSites("before");
		fmt::print("Next it writes 0xcc on each first byte and syncs every CPU "
			   "(do_sync_core IPIs).\n");
		break;
	case kshim::TRACE_BATCH_TAILS: {
		step("phase 2: every INT3 is in place and synced; the tails are next");
		showSites("during");
		fmt::print("A CPU that runs a site now traps: smp_text_poke_int3_handler() takes "
			   "a ref, emulates the instruction the site will hold and returns past "
			   "it. Sampling the live refs for 50 ms (with pokelab's torture delay "
			   "after the ref, so that a CPU stays inside long enough to be seen):\n");
		std::vector<int> caught = caughtInHandler(50000000ull);
		bool any = false;

		for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++) {
			if (!caught[cpu])
				continue;
			any = true;
			fmt::print("  CPU {}: inside smp_text_poke_int3_handler() with a ref held "
				   "(its refs count read {})\n", cpu, caught[cpu]);
		}
		if (!any)
			fmt::print("  no CPU was seen inside the handler in 50 ms\n");
		showCpus(flipIpi0, flipInt30);
		break;
	}
	case kshim::TRACE_BATCH_FIRST_BYTES:
		step("phase 3: the tails are written and synced; the first bytes are next");
		showSites("during");
		fmt::print("The INT3 still guards each site: the bytes behind it are the new "
			   "instruction's, but no CPU can fetch them without the trap. Next the "
			   "first bytes go in, a last sync, and the refs are drained (each CPU's "
			   "count back to 0 once no handler holds one).\n");
		showCpus(flipIpi0, flipInt30);
		break;
	default:
		break;
	}
}

/* A topic's machine: its --trace sink and the model's counters at boot. */
struct Machine {
	std::unique_ptr<kshim::TraceSink> sink;
	kshim::XmcStats x0;
};

int bootMachine(Machine &m, const std::string &extra = "")
{
	std::string err, cmdline = fmt::format("nr_cpus={}", opts.cpus);
	u32 events = kshim::traceBit(kshim::TraceType::IpiSendCpumask) |
		     kshim::traceBit(kshim::TraceType::IpiSendCpu) |
		     kshim::traceBit(kshim::TraceType::CsdQueueCpu) |
		     kshim::traceBit(kshim::TraceType::TextPokeBatch) |
		     kshim::traceBit(kshim::TraceType::Int3Emulate);

	for (const std::string &p : opts.params)
		cmdline += " " + p;
	if (!extra.empty())
		cmdline += " " + extra;
	if (kshim::boot(cmdline, &err, true)) {
		fmt::print(stderr, "explain: {}\n", err);
		return kExitUsage;
	}
	fmt::print("{}\n", kshim::machineLine());
	m.x0 = kshim::xmcStats();
	if (!opts.trace.empty()) {
		kshim::TraceFormat f;

		if (!kshim::traceFormatFor(opts.trace, "", &f, &err) ||
		    !(m.sink = kshim::makeTraceSink(opts.trace, f, {}, &err))) {
			kshim::shutdown();
			fmt::print(stderr, "explain: --trace {}: {}\n", opts.trace, err);
			return kExitUsage;
		}
		if (kshim::traceStart(0, &err, events) ||
		    kshim::traceRecorderStart({m.sink.get()}, 1000000, &err)) {
			kshim::shutdown();
			fmt::print(stderr, "explain: {}\n", err);
			return 1;
		}
	}
	return 0;
}

int finishMachine(Machine &m)
{
	std::string err;
	int ret = 0;

	if (m.sink) {
		kshim::traceStop();
		if (!m.sink->finish(kshim::traceRecorderStop(), &err)) {
			fmt::print(stderr, "explain: {}\n", err);
			ret = 1;
		}
	}
	kshim::xmcQuiesce();
	kshim::XmcStats x = kshim::xmcStats() - m.x0;

	fmt::print("\nThe checker: {}\n", kshim::xmcVerdict(x));
	if (x.violations)
		ret = 1;
	kshim::shutdown();
	return ret;
}

/* One flip of pokelab_small_key to @val from CPU 0, the readers running. */
void flip(int val)
{
	flipIpi0 = snapshot(ipisOf);
	flipInt30 = snapshot(int3sOf);
	small_key_write(val);
}

int topicStaticKey()
{
	Machine m;
	int ret = bootMachine(m);

	if (ret)
		return ret;
	TextPokeStats s0 = textPokeStats();

	step("a static key and its sites");
	fmt::print("pokelab_small_key is DEFINE_STATIC_KEY_FALSE(); two functions test it with "
		   "static_branch_unlikely(). The compiler left a 5-byte NOP at each test, and "
		   "the key's jump-table entries point at them:\n");
	showSites("now");
	fmt::print("{} now run both functions in a loop: with the key off, the NOP falls "
		   "through and the branch is never taken.\n", readers());
	startReaders();
	kshim::sleepForNs(20000000ull);

	step("static_branch_enable(): every site becomes a JMP");
	fmt::print("static_key_slow_inc() -> jump_label_update() queues one entry per site "
		   "(arch_jump_label_transform_queue(), smp_text_poke_batch_add()) and "
		   "arch_jump_label_transform_apply() runs the batch: INT3s, tails, first bytes, "
		   "a sync after each.\n");
	flip(1);
	TextPokeStats s1 = textPokeStats();

	showSites("now");
	fmt::print("  {} batch of {} sites, {} sync rounds\n", s1.batches - s0.batches,
		   sites().size(), s1.syncRounds - s0.syncRounds);
	showCpus(flipIpi0, flipInt30);
	kshim::sleepForNs(20000000ull);	/* the readers take the branch for a while */

	step("static_branch_disable(): back to NOPs");
	flip(0);
	showSites("now");
	showCpus(flipIpi0, flipInt30);
	stopReadersAndWait();
	for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++)
		fmt::print("  CPU {}: ran the sites {} times, {} of them with the key on\n", cpu,
			   runs[cpu], enabledRuns[cpu]);
	ret = finishMachine(m);
	fmt::print("\nRead next: include/linux/jump_label.h (static_branch_unlikely()), "
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
	fmt::print("pokelab_small_key's two sites, NOPs while the key is off; {} run them "
		   "in a loop from now on:\n", readers());
	showSites("before");
	startReaders();
	kshim::sleepForNs(20000000ull);

	batchPhaseHook = explainPhase;
	flip(1);
	batchPhaseHook = nullptr;

	step("the batch returned: every site holds the new instruction");
	showSites("after");
	showCpus(flipIpi0, flipInt30);
	stopReadersAndWait();
	std::vector<unsigned long> int3 = snapshot(int3sOf);

	for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++)
		fmt::print("  CPU {}: {} emulated in the batch\n", cpu,
			   kshim::nOf(int3[cpu] - flipInt30[cpu], "INT3 trap"));
	small_key_write(0);	/* leave the key as found */
	ret = finishMachine(m);
	fmt::print("\nRead next: arch/x86/kernel/alternative.c: smp_text_poke_batch_finish() "
		   "(the three phases), smp_text_poke_int3_handler() (the trap), "
		   "smp_text_poke_sync_each_cpu() (the syncs).\n");
	return ret;
}

/* One machine of the refs topic: a flip under pokelab.refs=@mode, the refs seen during it. */
int refsRun(const char *mode, std::vector<unsigned long> *xcpu)
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
		std::vector<int> caught = caughtInHandler(50000000ull);

		fmt::print("  during phase 2, the refs each trapping CPU took: ");
		for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++)
			if (caught[cpu])
				fmt::print("CPU {} read {}; ", cpu, caught[cpu]);
		fmt::print("\n");
	};
	flip(1);
	batchPhaseHook = nullptr;
	stopReadersAndWait();
	*xcpu = snapshot(refsCrossCpuWrites);
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		(*xcpu)[cpu] -= x0[cpu];
		fmt::print("  CPU {}: {} INT3 traps, {} to a refs line another CPU wrote last\n",
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
		fmt::print(stderr, "explain refs: --trace {}: this topic boots two machines; "
			   "expected no --trace\n", opts.trace);
		return kExitUsage;
	}
	step("pokelab.refs=global: one count for every CPU (v6.15's bp_desc.refs)");
	fmt::print("A CPU that traps on a batch's INT3 takes a ref before it reads the batch "
		   "and drops it after; the patcher waits for the count to drain. With one "
		   "global count every trapping CPU writes the same cache line. One flip of "
		   "pokelab_small_key while {} run its sites:\n", readers());
	if ((ret = refsRun("global", &global)))
		return ret;
	step("pokelab.refs=percpu: a count per CPU (v6.16, E. Dumazet)");
	fmt::print("Each CPU now takes its own count's ref; only the patcher, publishing "
		   "and draining, writes another CPU's line. The same flip:\n");
	if ((ret = refsRun("percpu", &percpu)))
		return ret;
	for (unsigned int cpu = 1; cpu < global.size(); cpu++)
		g += global[cpu];
	for (unsigned int cpu = 1; cpu < percpu.size(); cpu++)
		p += percpu[cpu];
	step("what changed");
	fmt::print("  writes by {} to a refs line another CPU wrote last: global {}, "
		   "percpu {}\n", readers(), g, p);
	fmt::print("On 240 cores trapping at once, that line moving between them is what "
		   "made a 164-site batch take 2.65 s; per-CPU counts made it 702 us "
		   "(docs/reproduction.md, seed 000/001). This machine cannot show the "
		   "latency, only the writes.\n");
	fmt::print("\nRead next: arch/x86/kernel/alternative.c: try_get_text_poke_array(), "
		   "put_text_poke_array(), and the refs publish/drain in "
		   "smp_text_poke_batch_finish(); `pokelab run bpf-stats` for the seed's "
		   "numbers.\n");
	return g > p ? 0 : 1;
}

const Topic topics[] = {
	{"static-key", "a static key's sites, flipped on and off, with the CPUs running them",
	 topicStaticKey},
	{"int3-batch", "smp_text_poke_batch_finish() phase by phase: INT3s, tails, first bytes, "
		       "a CPU inside the handler", topicInt3Batch},
	{"refs", "the INT3 handler's refs, global (v6.15) against per-CPU (v6.16): who writes "
		 "whose cache line", topicRefs},
};

int runExplain()
{
	if (opts.list || opts.topic.empty()) {
		for (const Topic &t : topics)
			fmt::print("{:<12} {}\n", t.name, t.what);
		return 0;
	}
	for (const Topic &t : topics)
		if (opts.topic == t.name)
			return t.run();
	std::string names;

	for (const Topic &t : topics)
		names += (names.empty() ? "" : ", ") + std::string(t.name);
	fmt::print(stderr, "explain: {}: no such topic; expected one of {} (--list)\n", opts.topic,
		   names);
	return kExitUsage;
}

void addExplain(CLI::App &app)
{
	x = app.add_subcommand("explain", "Walk live patching step by step on the running program's "
					  "own sites (--list for the topics)");
	x->add_option("topic", opts.topic, "The topic (--list shows them)");
	x->add_flag("--list", opts.list, "List the topics");
	x->add_flag("--step", opts.step, "Wait for Enter between steps");
	x->add_option("--cpus", opts.cpus, "Simulated CPUs (2..64)")->check(wholeNumber(2, 64));
	x->add_option("--trace", opts.trace,
		      "Also write the run's trace (ipi, csd, text_poke_batch, int3_emulate): "
		      "trace-cmd report text, or trace.dat for FILE.dat");
	x->add_option("params", opts.params, "Boot parameters, kernel command-line style");
}

bool explainParsed()
{
	return x && x->parsed();
}

CommandRegistrar explainCommand({55, addExplain, explainParsed, runExplain});

} /* namespace */

} /* namespace pokelab */
