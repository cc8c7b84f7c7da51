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
#include "near.h"
#include "options.h"
#include "stop.h"
#include "timeline/timeline.h"
#include "wrote.h"

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

/* Ctrl-C inside a batch: the step at which the stop came, for the stop line (step()). */
unsigned int stoppedAt;

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
	if (sayMuted)
		return;
	bool stop = pokelab::stopRequested();

	if (!stop && opts.step && stepNo) {
		sayFlush();
		fmt::print("{}", bold("-- Enter for the next step --"));
		std::fflush(stdout);
		stop = !waitEnter();
		if (stop && !inBatch)
			throw Stopped{};
		if (stop)
			fmt::print("\n");
	}
	if (stop) {
		/* inside the batch: it runs to its end unsaid; the next step outside throws */
		stoppedAt = stepNo;
		sayMuted = true;
		return;
	}
	stepNo++;
	/* bold each piece of the heading: the escapes do not count as columns */
	std::string head = wrapLine(fmt::format("Step {}: {}", stepNo, title)) + "\n";

	say("\n");
	for (size_t at = 0, nl; (nl = head.find('\n', at)) != std::string::npos; at = nl + 1)
		say("{}\n", bold(head.substr(at, nl - at)));
	sayFlush();
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
		say("  {} {:#x} <{}>: {}  {}\n", when, a, kshim::traceSymbol(a, true), hex,
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

/* What the IPIs and INT3 traps did on each CPU since @ipi0 / @int30, under "  @label:". */
void showCpus(const std::string &label, const std::vector<unsigned long> &ipi0,
	      const std::vector<unsigned long> &int30)
{
	say("  {}:\n", label);
	for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++)
		say("    CPU {}: running; {} received, {} emulated so far in this flip\n", cpu,
		    kshim::nOf(ipisOf(cpu) - ipi0[cpu], "IPI"),
		    kshim::nOf(int3sOf(cpu) - int30[cpu], "INT3 trap"));
}

/*
 * The probe (pokelab::int3AfterRefProbe) that holds CPUs inside the INT3
 * handler: @holdSlots CPUs may still be taken; each taken one notes where
 * it trapped, counts itself in @holdCount and spins until @holdRelease.
 * Signal context: atomics only.
 */
namespace {

constexpr unsigned int kMaxCpus = 512;
std::atomic<int> holdSlots, holdCount;
std::atomic<bool> holdRelease;
std::atomic<unsigned long> heldIp[kMaxCpus];
std::atomic<bool> heldNow[kMaxCpus];

void holdProbe(unsigned long ip) noexcept
{
	int cpu = raw_smp_processor_id();
	int n = holdSlots.load(std::memory_order_relaxed);

	/* CPU 0 patches: holding it would hold the batch */
	if (cpu <= 0 || (unsigned int)cpu >= kMaxCpus)
		return;
	do {
		if (n <= 0)
			return;
	} while (!holdSlots.compare_exchange_weak(n, n - 1, std::memory_order_acq_rel));
	heldIp[cpu].store(ip, std::memory_order_relaxed);
	heldNow[cpu].store(true, std::memory_order_relaxed);
	holdCount.fetch_add(1, std::memory_order_release);
	while (!holdRelease.load(std::memory_order_acquire))
		cpu_relax();
	heldNow[cpu].store(false, std::memory_order_release);
}

} /* namespace */

std::vector<HeldCpu> holdInHandler(unsigned int n)
{
	std::vector<HeldCpu> held;
	u64 until = kshim::clockNs() + 10000000000ull;

	for (unsigned int cpu = 0; cpu < kMaxCpus; cpu++)
		heldNow[cpu].store(false, std::memory_order_relaxed);
	holdRelease.store(false);
	holdCount.store(0);
	holdSlots.store((int)n);
	int3AfterRefProbe = holdProbe;
	/* yield: on an oversubscribed host the readers need the PU to trap */
	while (holdCount.load(std::memory_order_acquire) < (int)n && kshim::clockNs() < until)
		std::this_thread::yield();
	/* no more CPUs after the wait: what is held now is all there is */
	holdSlots.store(0);
	for (unsigned int cpu = 1; cpu < nr_cpu_ids && cpu < kMaxCpus; cpu++)
		if (heldNow[cpu].load(std::memory_order_acquire))
			held.push_back({(int)cpu, heldIp[cpu].load() - 1, int3RefsNow(cpu)});
	return held;
}

void releaseHandler()
{
	holdRelease.store(true, std::memory_order_release);
	for (unsigned int cpu = 1; cpu < nr_cpu_ids && cpu < kMaxCpus; cpu++)
		while (heldNow[cpu].load(std::memory_order_acquire))
			cpu_relax();
	int3AfterRefProbe = nullptr;
}

void showInHandler(const std::string &where, unsigned int n)
{
	std::vector<HeldCpu> held = holdInHandler(n);

	for (const HeldCpu &h : held)
		say("  CPU {}: inside smp_text_poke_int3_handler() {}, held there by a probe: it "
		    "trapped on the INT3 at {:#x} <{}>; its refs count reads {}\n", h.cpu, where,
		    h.site, kshim::traceSymbol(h.site, true), h.refs);
	if (held.size() < n)
		say("  {} of {} trapped within 10 s of the probe being armed\n",
		    kshim::nOf(held.size(), "CPU"), n);
	releaseHandler();
	if (!held.empty())
		say("  the probe let {} go: {} returned from the trap and ran on\n",
		    held.size() == 1 ? "it" : "them", held.size() == 1 ? "it" : "they");
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
		fmt::print(stderr, "pokelab: explain: {}\n", err);
		return kExitUsage;
	}
	m.cmdline = cmdline;
	say("{}\n", kshim::machineLine());
	m.x0 = kshim::xmcStats();
	if (!opts.trace.empty()) {
		kshim::TraceFormat f;

		if (!kshim::traceFormatFor(opts.trace, "", &f, &err) ||
		    !(m.sink = kshim::makeTraceSink(opts.trace, f, {}, &err))) {
			kshim::shutdown();
			fmt::print(stderr, "pokelab: explain: --trace {}: {}\n", opts.trace, err);
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
		fmt::print(stderr, "pokelab: explain: {}\n", err);
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
		fmt::print(stderr, "pokelab: explain: {}\n", err);
		m.traceFailed = true;
	} else if (m.sink) {
		sayWrote(opts.trace, "--trace");
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

/*
 * The checker's finding in words, from its counters: the text writes it
 * watched, the checks of what the CPUs could fetch, the problems found.
 */
static std::string checkerLine(const kshim::XmcStats &x)
{
	unsigned long checks = x.events() - x.writes;

	if (!kshim::xmcEnabled)
		return "The checker (pokelab's model of cross-modifying code) was off "
		       "(pokelab.xmc=0): nothing was checked.";
	if (!x.writes)
		return "The checker had nothing to check: no text was written while it watched.";
	return fmt::format("The checker saw {} in {}, with {} of what the CPUs could fetch: {}.",
			   kshim::nOf(x.violations, "problem"), kshim::nOf(x.writes, "text write"),
			   kshim::nOf(checks, "check"), x.violations ? "FAIL" : "PASS");
}

int finishMachine(Machine &m)
{
	int ret;

	stopTrace(m);
	ret = m.traceFailed;
	kshim::xmcQuiesce();
	kshim::XmcStats x = kshim::xmcStats() - m.x0;

	say("\n{}\n", checkerLine(x));
	if (opts.verbose)
		say("  {}\n", kshim::xmcVerdict(x));
	if (x.violations) {
		for (const kshim::XmcViolation &v : kshim::xmcViolations())
			say("{}", kshim::xmcFormat(v));
		ret = 1;
	}
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
			fmt::print(stderr, "pokelab: explain: --trace {}: {}\n", opts.trace, err);
			return kExitUsage;
		}
	}
	if (!opts.timeline.empty()) {
		if (!opts.trace.empty() && kshim::sameOutput(opts.trace, opts.timeline)) {
			fmt::print(stderr, "pokelab: explain: --trace '{}' and --timeline '{}' are "
				   "the same file; expected two outputs\n", opts.trace,
				   opts.timeline);
			return kExitUsage;
		}
		if (!book.open(opts.timeline, commandLine(), &err)) {
			fmt::print(stderr, "pokelab: explain: --timeline {}: {}\n", opts.timeline,
				   err);
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
		sayMuted = false;
		say("\nexplain {}: stopped ({}) after step {}: {}the CPUs stopped and the "
			   "machine shut down{}\n", t.name, pokelab::stopSignalName(),
			   stoppedAt ? stoppedAt : stepNo,
			   stoppedAt ? "the batch in progress ran to its end, its steps not shown; "
				     : "",
			   opts.trace.empty() && opts.timeline.empty()
				   ? "" : "; no --trace or --timeline file written");
		return pokelab::stopExitStatus();
	}
	if (book.active() && !book.commit(&err)) {
		fmt::print(stderr, "pokelab: explain: --timeline {}: {}\n", opts.timeline, err);
		return 1;
	}
	if (book.active())
		sayWrote(opts.timeline, "--timeline");
	return ret;
}

/*
 * Boot parameters explain takes only as its options. The topics check the
 * CPU count they need against --cpus before the first boot: an nr_cpus=
 * among the parameters would override it behind their back (the later one
 * wins on a kernel command line). The deferral topic boots each policy
 * itself: its choice is --ct-defer, as the CPUs' are --cpus. --help-all
 * marks them refused from this table.
 */
struct RefusedParam {
	const char *param, *option, *what;
};

const RefusedParam refusedParams[] = {
	{"nr_cpus", "--cpus N", "the CPU count as"},
	{"pokelab.ct_defer", "--ct-defer P", "the policy as"},
};

int runExplain()
{
	if (opts.list && !opts.topic.empty()) {
		fmt::print(stderr, "pokelab: explain --list {}: --list lists every topic and takes "
			   "none; expected pokelab explain --list, or pokelab explain {}\n", opts.topic,
			   opts.topic);
		return kExitUsage;
	}
	if (opts.list || opts.topic.empty()) {
		for (const Topic &t : topics)
			fmt::print("{}\n", wrapLine(fmt::format("{:<18} {}", t.name, t.what), kWidth,
						    19));
		return 0;
	}
	for (const std::string &p : opts.params)
		for (const RefusedParam &r : refusedParams)
			if (p.rfind(std::string(r.param) + "=", 0) == 0) {
				fmt::print(stderr, "pokelab: explain: {}: expected {} {}, not as a "
					   "boot parameter\n", p, r.what, r.option);
				return kExitUsage;
			}
	for (const Topic &t : topics) {
		if (opts.topic != t.name)
			continue;
		/* an option without effect is refused (docs/cli.md): --ct-defer is deferral's */
		if (!opts.ctDefer.empty() && opts.topic != "deferral") {
			fmt::print(stderr, "pokelab: explain {}: --ct-defer {}: chooses the policy "
				   "explain deferral shows, and has no effect here; expected no "
				   "--ct-defer\n", opts.topic, opts.ctDefer);
			return kExitUsage;
		}
		return runTopic(t);
	}
	std::string names, near;

	for (const Topic &t : topics) {
		names += (names.empty() ? "" : ", ") + std::string(t.name);
		if (pokelab::nearName(opts.topic, t.name))
			near += (near.empty() ? "" : " or ") + std::string(t.name);
	}
	fmt::print(stderr, "pokelab: explain: {}: no such topic; {}expected one of {} (--list)\n",
		   opts.topic, near.empty() ? "" : "did you mean " + near + "? ", names);
	return kExitUsage;
}

void addExplain(CLI::App &app)
{
	x = app.add_subcommand("explain", "Walk live patching step by step on the running program's "
					  "own sites (--list for the topics)");
	x->add_option("topic", opts.topic, "The topic (--list shows them)");
	x->add_flag("--list", opts.list, "List the topics");
	x->add_flag("--step", opts.step, "Wait for Enter between steps");
	x->add_option("--cpus", opts.cpus,
		      "Simulated CPUs (default: 4, not the allowed PUs: a topic shows the same "
		      "steps on every host; refs and deferral need 3); boot parameter nr_cpus=, "
		      "given as --cpus only")
		->check(wholeNumber(2, kMaxCpus));
	x->add_option("--ct-defer", opts.ctDefer,
		      "deferral: show only this policy (off, v7, v7-tlbi, v8; default: all four; "
		      "v8: pokelab's reconstruction of an RFC, not posted code)")
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
		->check(timelineWindowCheck());
	addTimelineGapOption(x);
	x->add_flag("--verbose", opts.verbose,
		    "Also print the checker's counters (the model's own line) after each machine");
	x->add_option("params", opts.params, "Boot parameters, kernel command-line style");
	for (const RefusedParam &r : refusedParams)
		bootParamRefused(x, r.param, r.option);
}

bool explainParsed()
{
	return x && x->parsed();
}

CommandRegistrar explainCommand({55, addExplain, explainParsed, runExplain});

} /* namespace */

} /* namespace pokelab::explain */