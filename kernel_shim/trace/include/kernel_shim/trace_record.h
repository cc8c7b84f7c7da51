/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The trace recorder: a thread that drains the per-CPU trace rings into
 * outputs while the run goes on, as trace-cmd record's readers do, so that
 * memory stays bounded by trace_buf_size and a long run loses only what
 * the recorder cannot keep up with.
 *
 * CUSTOM: trace-cmd record splices each CPU's ring pages into a file per
 * CPU; pokelab's recorder copies events out of its rings every
 * @intervalNs, merges them by timestamp up to a watermark no later event
 * can precede, and hands them in time order to the sinks (text, JSON,
 * trace.dat), which write fresh files renamed into place at the end.
 *
 * The writers (the CPUs) never wait for the recorder: when it falls
 * behind, a ring fills and its CPU drops events, counted per CPU and
 * passed to the sinks as TraceType::Lost marks where they happened.
 */
#pragma once

#include <string>
#include <vector>

#include <kernel_shim/trace.h>

namespace kshim {

/* An output fed by the recorder. All calls come from one thread at a time. */
class TraceSink
{
public:
	virtual ~TraceSink() = default;

	/* The session's CPUs (names), before the first event. */
	virtual void begin(const std::vector<TraceCpu> &cpus) = 0;

	/* The next event in time order (Lost marks included). The recorder thread. */
	virtual void event(const TraceEvent &e) = 0;

	/*
	 * After the last event, with the final per-CPU counts: complete the
	 * output and put it in place. Returns false with one line in *@err.
	 */
	virtual bool finish(const std::vector<TraceCpu> &cpus, std::string *err) = 0;
};

/*
 * Start the recorder thread on a started trace session (after traceStart())
 * feeding @sinks, draining every @intervalNs (ns, >= 10000). Task context,
 * the thread that called traceStart(); not async-signal-safe. Returns 0 or
 * -errno (the thread could not start) with one line in *@err.
 */
int traceRecorderStart(const std::vector<TraceSink *> &sinks, unsigned long intervalNs = 1000000,
		       std::string *err = nullptr);

/*
 * After traceStop(), once the CPUs are quiet: drain what is left, stop and
 * join the recorder. Returns the session's per-CPU counts (events written
 * and dropped). Sinks are not finished here: the caller calls finish().
 * Task context, the thread that started it.
 */
std::vector<TraceCpu> traceRecorderStop();

/* Is a recorder running? */
bool traceRecorderRunning();

} /* namespace kshim */
