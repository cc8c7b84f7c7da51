/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pokelab explain: what the topics share (explain.cpp) and the topics
 * themselves (explain_topics.cpp). Task context on CPU 0 (the main thread).
 */
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <kernel_shim/trace_record.h>
#include <kernel_shim/xmc_verdict.h>

namespace pokelab::explain {

struct ExplainOptions {
	std::string topic;
	unsigned int cpus = 4;
	bool step = false;
	bool list = false;
	std::string trace;
	std::string ctDefer;	/* deferral: the one policy to show (default: off, v7, v7-tlbi, v8) */
	std::string timeline;	/* --timeline: every machine the topic boots, one SVG */
	double timelineWindow = 10;	/* --timeline-window: the last seconds of each */
	bool verbose = false;	/* --verbose: the checker's counters line too */
	std::vector<std::string> params;
};
extern ExplainOptions opts;

/* No line of explain's output is wider than this: say() wraps at it. */
constexpr unsigned int kWidth = 100;
/*
 * @line (no newline) wrapped at @width columns, the pieces joined by
 * newlines, breaking at spaces (a word wider than the line is cut). The
 * continuation lines are indented by @hang columns, or (-1) by the line's
 * own indentation, two more under an indented line, and under the text of
 * a numbered item ("  3. ...").
 */
std::string wrapLine(const std::string &line, unsigned int width = kWidth, int hang = -1);
/* Print @s to stdout, each complete line wrapped (wrapLine()); the rest waits for its newline. */
void sayText(const std::string &s);
/*
 * While set, say() prints nothing: a Ctrl-C inside a batch lets the batch
 * run to its end unsaid (step()). The command's thread only.
 */
extern bool sayMuted;
/* Print what is pending (a prompt, say) and flush stdout. */
void sayFlush();
/*
 * The closing "Read next:" paragraph, @text naming kernel files and
 * functions, then for each NAME() in it that the port keeps, the port's
 * FILE:LINE (kernel_shim/port_map.h).
 */
void sayReadNext(const std::string &text);
template <typename... T>
void say(fmt::format_string<T...> f, T &&...a)
{
	sayText(fmt::format(f, std::forward<T>(a)...));
}

/* Thrown by step() when a signal asked to stop (Ctrl-C); runExplain() cleans up. */
struct Stopped {
};
/*
 * A step's heading; with --step, wait for Enter before it (not before the
 * first). Throws Stopped on a stop request, but never inside a batch.
 */
void step(const std::string &title);
/* What the CPUs run now (startReaders(), a topic's own loop): the function that stops it. */
extern void (*running)();
/* "CPU 1" or "CPUs 1-3": the readers (of the machine booted, or about to be) */
std::string readers();
/* pokelab_small_key's sites (from the jump table), and each as it is in memory now. */
std::vector<unsigned long> sites();
void showSites(const char *when);

/* CPUs 1..@last-1 (default: all) run the sites until stopReadersAndWait(). */
void startReaders(unsigned int last = 0);
void stopReadersAndWait();
/* Per reader CPU, after stopReadersAndWait(): its runs, and those that took the branch. */
extern std::vector<unsigned long> runs, enabledRuns;

std::vector<unsigned long> snapshot(unsigned long (*f)(int));
unsigned long ipisOf(int cpu);
unsigned long int3sOf(int cpu);
/*
 * What the IPIs and INT3 traps did on each reader CPU since @ipi0 / @int30,
 * under the line "  @label:" (a snapshot: "snapshot at return", say).
 */
void showCpus(const std::string &label, const std::vector<unsigned long> &ipi0,
	      const std::vector<unsigned long> &int30);

/* A CPU the probe holds inside smp_text_poke_int3_handler(), after its ref. */
struct HeldCpu {
	int cpu;
	unsigned long site;	/* the INT3 it trapped on */
	int refs;		/* its refs count (int3RefsNow()), read while it is held */
};
/*
 * From a batchPhaseHook while the batch's INT3s are armed (phase 2 or 3):
 * arm pokelab::int3AfterRefProbe so that the first @n reader CPUs to trap
 * stay inside the handler, their ref held, and wait for them (up to 10 s,
 * the readers trap at once); the CPUs held, in CPU order. releaseHandler()
 * lets them go on.
 */
std::vector<HeldCpu> holdInHandler(unsigned int n);
/* Let the held CPUs return from the trap, wait until they left the probe, disarm it. */
void releaseHandler();
/*
 * Hold @n CPUs (holdInHandler()), print each ("  CPU k: inside
 * smp_text_poke_int3_handler() @where, held there by a probe: ...") and
 * release them.
 */
void showInHandler(const std::string &where, unsigned int n = 1);

/* A topic's machine: its --trace sink, its --timeline window, the model's counters at boot. */
struct Machine {
	Machine() = default;
	Machine(const Machine &) = delete;
	/* a topic stopped by Ctrl-C: the recorder stops before the sinks go (unfinished) */
	~Machine();

	std::unique_ptr<kshim::TraceSink> sink;
	std::unique_ptr<kshim::TraceSink> window;
	std::unique_ptr<kshim::TraceSink> capture;	/* the topic's own reading of the trace */
	bool tracing = false;
	bool traceFailed = false;
	std::string cmdline;
	kshim::XmcStats x0;
};
/*
 * Boot nr_cpus=--cpus, the boot parameters and @extra; with @capture, the
 * topic reads the run's trace itself (captured()). 0, or the exit status.
 */
int bootMachine(Machine &m, const std::string &extra = "", bool capture = false);
/* Stop the trace: the --trace file and the timeline's section are complete. */
void stopTrace(Machine &m);
/* After stopTrace(): the events the @capture trace recorded, in time order. */
std::vector<kshim::TraceEvent> captured(const Machine &m);
/* Stop the trace, print the model's verdict, shut down; 0, or 1 on a violation. */
int finishMachine(Machine &m);

/* One flip of pokelab_small_key to @val from CPU 0; the counters it starts from. */
void flip(int val);
extern std::vector<unsigned long> flipIpi0, flipInt30;

int topicStaticKey();
int topicInt3Batch();
int topicRefs();
int topicDeferral();
int topicInt3Handler();
int topicApplyAlternatives();
int topicStaticCall();

} /* namespace pokelab::explain */
