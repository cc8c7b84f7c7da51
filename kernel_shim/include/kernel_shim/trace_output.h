/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Trace output of the machine: the machine's recorded ipi/csd events as
 * trace-cmd report text and as Chrome trace-event JSON (Perfetto), with a
 * trace-cmd-style CPU filter. Formats: docs/tracing.md.
 *
 * Everything here runs in task context after kshim::traceStop(); none of it
 * is async-signal-safe.
 */
#pragma once

#include <string>

#include <kernel_shim/trace.h>
#include <linux/cpumask.h>

namespace kshim {

/* --trace-cpus: keep events whose target CPU is in @cpus. */
struct TraceFilter {
	bool active = false;
	struct cpumask cpus {};
};

/*
 * Parse a --trace-cpus list (kernel CPU-list syntax) into @f. @nrCpus: the
 * machine's CPU count to check against, or 0 before boot (syntax only).
 * Returns false with one line in *@err naming the value and the accepted form.
 */
bool parseTraceCpus(const std::string &list, unsigned int nrCpus, TraceFilter *f,
		    std::string *err);

/*
 * Does @e pass @f? ipi_send_cpu / csd_queue_cpu: cpu= in the list;
 * csd_function_*: the CPU running it; ipi_send_cpumask: the mask intersects
 * the list (as trace-cmd's -f "cpumask & CPUS{...}").
 */
bool traceEventSelected(const TraceEvent &e, const TraceFilter &f);

/* trace-cmd report-style text, one line per selected event, in time order. */
std::string formatTraceText(const TraceSnapshot &s, const TraceFilter &f);

/*
 * Chrome trace-event JSON: one named thread track per CPU, "X" slices for
 * csd function handlers (and a 1 ns slice for each csd_queue_cpu), "i"
 * instants for IPI sends, and "s"/"f" flow pairs from each csd_queue_cpu to
 * the csd_function_entry that ran it.
 */
std::string formatTraceJson(const TraceSnapshot &s, const TraceFilter &f);

/*
 * Write @data to @path: into a fresh file created next to it
 * (DIR/.BASE.XXXXXX with O_CREAT|O_EXCL|O_NOFOLLOW: an existing name is
 * never followed, truncated or reused), fsync(), then rename() over @path,
 * so that @path is either absent, the old file, or complete. @path must be
 * absent or a regular file (a symlink, device, FIFO or directory there is
 * refused, not replaced). Returns false with one line in *@err on failure
 * (the temporary file is removed). Task context.
 */
bool writeFileAtomic(const std::string &path, const std::string &data, std::string *err);

/* Write the text to @text and the JSON to @json (each skipped if ""), atomically. */
bool writeTraceFiles(const TraceSnapshot &s, const TraceFilter &f, const std::string &text,
		     const std::string &json, std::string *err);

/*
 * Could @path be written by writeFileAtomic()? (Not empty; absent or a
 * regular file; a new file can be created in its directory.) For checking
 * options before a run. One line in *@err when not. Task context.
 */
bool checkWritable(const std::string &path, std::string *err);

/*
 * Do two output paths name the same file? Compared by what they resolve to
 * (an existing file's device and inode; else the directory's device and
 * inode and the name), not as strings: "a.txt" and "./a.txt" are the same.
 */
bool sameOutput(const std::string &a, const std::string &b);

/* The machine's own counters that the census must match, summed over CPUs. */
struct TraceCounters {
	unsigned long ipiSendCpu = 0;
	unsigned long ipiSendCpumask = 0;
	unsigned long csdQueued = 0;
	unsigned long ipiSignals = 0;
};
TraceCounters readTraceCounters();
TraceCounters operator-(const TraceCounters &a, const TraceCounters &b);

/*
 * The demo table's "trace:" lines: events written and dropped per CPU, and
 * the counters the census pipelines should print (@c, over the traced run).
 */
std::string formatTraceSummary(const TraceSnapshot &s, const TraceCounters &c,
			       const TraceFilter &f);

} /* namespace kshim */
