/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pokelab explain: what the topics share (explain.cpp) and the topics
 * themselves (explain_topics.cpp). Task context on CPU 0 (the main thread).
 */
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

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
	std::vector<std::string> params;
};
extern ExplainOptions opts;

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
/* What the IPIs and INT3 traps did on each reader CPU since @ipi0 / @int30. */
void showCpus(const std::vector<unsigned long> &ipi0, const std::vector<unsigned long> &int30);
/* Which CPUs hold an INT3 ref inside the handler during @ns (the refs read, or 0). */
std::vector<int> caughtInHandler(u64 ns);
/* Sample 50 ms; print each CPU seen inside the handler ("... handler() @where (refs ...)"). */
void showInHandler(const std::string &where);

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
