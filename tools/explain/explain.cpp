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
#include <asm/processor.h>
#include <asm/tlbflush.h>
#include <linux/context_tracking.h>
#include <linux/context_tracking_state.h>
#include <linux/jump_label.h>
#include <linux/smp.h>
#include <pokelab/ct_entry.h>
#include <pokelab/text_poke_stats.h>
#include <workloads/small_key.h>

#include "command.h"
#include "explain/explain.h"
#include "options.h"
#include "stop.h"

extern "C" struct jump_entry __start___jump_table[];
extern "C" struct jump_entry __stop___jump_table[];

namespace pokelab::explain {

ExplainOptions opts;

namespace {

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

} /* namespace */

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
static std::atomic<bool> stopReaders;
std::vector<unsigned long> runs(512), enabledRuns(512);

/* CPUs 1..@last-1 (default: all) run the sites */
static unsigned int readersEnd;

void startReaders(unsigned int last)
{
	readersEnd = last ? last : nr_cpu_ids;
	stopReaders.store(false);
	for (unsigned int cpu = 1; cpu < readersEnd; cpu++)
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
	for (unsigned int cpu = 1; cpu < readersEnd; cpu++)
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

int bootMachine(Machine &m, const std::string &extra)
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

namespace {

const Topic topics[] = {
	{"static-key", "a static key's sites, flipped on and off, with the CPUs running them",
	 topicStaticKey},
	{"int3-batch", "smp_text_poke_batch_finish() phase by phase: INT3s, tails, first bytes, "
		       "a CPU inside the handler", topicInt3Batch},
	{"refs", "the INT3 handler's refs, global (v6.15) against per-CPU (v6.16): who writes "
		 "whose cache line", topicRefs},
	{"deferral", "an isolated CPU in user mode during a flip under each --ct-defer policy: "
		     "IPI or deferred work, and the flush at its next entry", topicDeferral},
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
	x->add_option("--ct-defer", opts.ctDefer,
		      "deferral: show only this policy (off, v7, v7-tlbi, v8; default: all four)")
		->check(CLI::IsMember({"off", "v7", "v7-tlbi", "v8"}));
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

} /* namespace pokelab::explain */