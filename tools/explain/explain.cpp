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
#include <cerrno>
#include <poll.h>
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
#include <kernel_shim/xmc_verdict.h>
#include <asm/processor.h>
#include <asm/tlbflush.h>
#include <linux/context_tracking.h>
#include <linux/context_tracking_state.h>
#include <linux/bug.h>
#include <linux/jump_label.h>
#include <linux/smp.h>
#include <pokelab/ct_entry.h>
#include <pokelab/text_poke_stats.h>
#include <workloads/small_key.h>

#include "command.h"
#include "explain/explain.h"
#include "options.h"
#include "stop.h"
#include "timeline/timeline.h"

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

void (*running)();

/*
 * Wait for a line on stdin (Enter), polling the stop flag: true at Enter
 * (or end of input: the rest runs straight through), false when a signal
 * asked to stop.
 */
static bool waitEnter()
{
	static bool eof;
	struct pollfd p = {STDIN_FILENO, POLLIN, 0};
	char c;

	while (!eof) {
		if (pokelab::stopRequested())
			return false;
		if (poll(&p, 1, 100) <= 0)
			continue;
		ssize_t n = read(STDIN_FILENO, &c, 1);

		if (n <= 0 && !(n < 0 && errno == EINTR))
			eof = true;
		else if (n == 1 && c == '\n')
			return true;
	}
	return true;
}

/*
 * A step's heading; with --step, wait for Enter before it (not before the
 * first). On a stop request (Ctrl-C) it throws Stopped, except inside a
 * batch (batchPhaseHook set: text_mutex is held), where the batch goes on
 * and the first step after it throws.
 */
void step(const std::string &title)
{
	bool inBatch = batchPhaseHook != nullptr;

	if (pokelab::stopRequested() && !inBatch)
		throw Stopped{};
	if (opts.step && stepNo) {
		fmt::print("{}", bold("-- Enter for the next step --"));
		std::fflush(stdout);
		if (!waitEnter() && !inBatch)
			throw Stopped{};
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
	running = stopReadersAndWait;
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
	running = nullptr;
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
		fmt::print("  CPU {}: running; {} received, {} emulated so far in this "
			   "flip\n", cpu, kshim::nOf(ipisOf(cpu) - ipi0[cpu], "IPI"),
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

/* Sample for 50 ms and print each CPU seen inside the handler, "inside the handler @where". */
void showInHandler(const std::string &where)
{
	std::vector<int> caught = caughtInHandler(50000000ull);
	bool any = false;

	for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++) {
		if (!caught[cpu])
			continue;
		any = true;
		fmt::print("  CPU {}: inside smp_text_poke_int3_handler() {} (its refs count read "
			   "{})\n", cpu, where, caught[cpu]);
	}
	if (!any)
		fmt::print("  no CPU was seen inside the handler in 50 ms\n");
}

std::vector<unsigned long> flipIpi0, flipInt30;

/* --timeline: the one picture of every machine the topic boots */
static TimelineBook book;

int bootMachine(Machine &m, const std::string &extra, bool capture)
{
	std::string err, cmdline = fmt::format("nr_cpus={}", opts.cpus);
	u32 events = kshim::traceBit(kshim::TraceType::IpiSendCpumask) |
		     kshim::traceBit(kshim::TraceType::IpiSendCpu) |
		     kshim::traceBit(kshim::TraceType::CsdQueueCpu) |
		     kshim::traceBit(kshim::TraceType::TextPokeBatch) |
		     kshim::traceBit(kshim::TraceType::Int3Emulate);
	std::vector<kshim::TraceSink *> sinks;

	for (const std::string &p : opts.params)
		cmdline += " " + p;
	if (!extra.empty())
		cmdline += " " + extra;
	if (kshim::boot(cmdline, &err, true)) {
		fmt::print(stderr, "explain: {}\n", err);
		return kExitUsage;
	}
	m.cmdline = cmdline;
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
		/* the timeline's events are recorded too; the file keeps the topic's */
		if (book.active())
			m.sink = maskTraceSink(std::move(m.sink), events);
		sinks.push_back(m.sink.get());
	}
	if (book.active()) {
		m.window = makeTimelineWindow((u64)(opts.timelineWindow * 1e9));
		sinks.push_back(m.window.get());
		events |= timelineEvents();
	}
	if (capture) {
		m.capture = makeTimelineWindow(0);
		sinks.push_back(m.capture.get());
	}
	if (!sinks.empty() &&
	    (kshim::traceStart(0, &err, events) || kshim::traceRecorderStart(sinks, 1000000, &err))) {
		kshim::shutdown();
		fmt::print(stderr, "explain: {}\n", err);
		return 1;
	}
	m.tracing = !sinks.empty();
	return 0;
}

Machine::~Machine()
{
	if (tracing) {
		kshim::traceStop();
		kshim::traceRecorderStop();
	}
}

void stopTrace(Machine &m)
{
	std::string err;

	if (!m.tracing)
		return;
	m.tracing = false;
	kshim::traceStop();
	std::vector<kshim::TraceCpu> cpus = kshim::traceRecorderStop();

	if (m.sink && !m.sink->finish(cpus, &err)) {
		fmt::print(stderr, "explain: {}\n", err);
		m.traceFailed = true;
	}
	if (m.capture)
		m.capture->finish(cpus, &err);
	if (m.window) {
		m.window->finish(cpus, &err);
		book.add(timelineWindowSection(m.window.get(),
					       fmt::format("pokelab explain {}: {}", opts.topic,
							   m.cmdline),
					       kshim::machineLine()));
	}
}

std::vector<kshim::TraceEvent> captured(const Machine &m)
{
	BUG_ON(!m.capture || m.tracing);
	return timelineWindowSection(m.capture.get(), "", "").events;
}

int finishMachine(Machine &m)
{
	int ret;

	stopTrace(m);
	ret = m.traceFailed;
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
	{"int3-handler", "one INT3 trap step by step: the ref, the search, the emulated "
			 "instruction, read back from the run's trace", topicInt3Handler},
	{"refs", "the INT3 handler's refs, global (v6.15) against per-CPU (v6.16): who writes "
		 "whose cache line", topicRefs},
	{"deferral", "an isolated CPU in user mode during a flip under each --ct-defer policy: "
		     "IPI or deferred work, and the flush at its next entry", topicDeferral},
	{"apply-alternatives", "the boot pass over the program's own alternative sites: "
			       "compiler bytes, each entry's feature, the bytes written",
	 topicApplyAlternatives},
	{"static-call", "a static call's trampoline retargeted while CPUs call through it",
	 topicStaticCall},
};

int runTopic(const Topic &t)
{
	std::string err;
	int ret;

	/* every output is checked before anything boots */
	if (!opts.trace.empty()) {
		kshim::TraceFormat f;

		if (!kshim::traceFormatFor(opts.trace, "", &f, &err) ||
		    !kshim::checkWritable(opts.trace, &err)) {
			fmt::print(stderr, "explain: --trace {}: {}\n", opts.trace, err);
			return kExitUsage;
		}
	}
	if (!opts.timeline.empty()) {
		if (!opts.trace.empty() && kshim::sameOutput(opts.trace, opts.timeline)) {
			fmt::print(stderr, "explain: --trace '{}' and --timeline '{}' are the same "
				   "file; expected two outputs\n", opts.trace, opts.timeline);
			return kExitUsage;
		}
		if (!book.open(opts.timeline, fmt::format("pokelab explain {}", t.name), &err)) {
			fmt::print(stderr, "explain: --timeline {}: {}\n", opts.timeline, err);
			return kExitUsage;
		}
	}
	/* Ctrl-C: the step in progress completes, the CPUs stop, the machine shuts down */
	pokelab::stopOrderly();
	try {
		ret = t.run();
	} catch (const Stopped &) {
		if (running)
			running();
		if (kshim::booted())
			kshim::shutdown();
		fmt::print("\nexplain {}: stopped ({}) after step {}: the CPUs stopped and the "
			   "machine shut down{}\n", t.name, pokelab::stopSignalName(), stepNo,
			   opts.trace.empty() && opts.timeline.empty()
				   ? "" : "; no --trace or --timeline file written");
		return pokelab::stopExitStatus();
	}
	if (book.active() && !book.commit(&err)) {
		fmt::print(stderr, "explain: --timeline {}: {}\n", opts.timeline, err);
		return 1;
	}
	return ret;
}

int runExplain()
{
	if (opts.list || opts.topic.empty()) {
		for (const Topic &t : topics)
			fmt::print("{:<18} {}\n", t.name, t.what);
		return 0;
	}
	for (const Topic &t : topics)
		if (opts.topic == t.name)
			return runTopic(t);
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
	x->add_option("--cpus", opts.cpus, "Simulated CPUs (default: 4)")->check(wholeNumber(2, 64));
	x->add_option("--ct-defer", opts.ctDefer,
		      "deferral: show only this policy (off, v7, v7-tlbi, v8; default: all four)")
		->check(CLI::IsMember({"off", "v7", "v7-tlbi", "v8"}));
	x->add_option("--trace", opts.trace,
		      "Also write the run's trace (ipi, csd, text_poke_batch, int3_emulate): "
		      "trace-cmd report text, or trace.dat for FILE.dat")
		->check(outputFile("--trace"));
	x->add_option("--timeline", opts.timeline,
		      "Draw every machine the topic boots as an SVG timeline, one under the other "
		      "(docs/timeline.md)")
		->check(outputFile("--timeline", "FILE.svg"));
	x->add_option("--timeline-window", opts.timelineWindow,
		      "Seconds of each machine the timeline keeps, the last ones (default: 10)")
		->check(decimalNumber(0.001, 3600.0));
	x->add_option("params", opts.params, "Boot parameters, kernel command-line style");
}

bool explainParsed()
{
	return x && x->parsed();
}

CommandRegistrar explainCommand({55, addExplain, explainParsed, runExplain});

} /* namespace */

} /* namespace pokelab::explain */