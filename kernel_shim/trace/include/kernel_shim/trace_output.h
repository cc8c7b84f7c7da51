/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Trace output of the machine: the recorded events as trace-cmd report
 * text, as Chrome trace-event JSON (Perfetto) and as trace-cmd's trace.dat
 * (trace_dat.h), with a trace-cmd-style CPU filter, and the one way pokelab
 * writes an output file (OutputFile). Formats: docs/tracing.md.
 *
 * Everything here runs in task context (the recorder thread or the
 * command's own); none of it is async-signal-safe.
 */
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <kernel_shim/trace.h>
#include <kernel_shim/trace_record.h>
#include <linux/cpumask.h>

namespace kshim {

/*
 * An output file that appears complete or not at all. open() checks that
 * @path is absent or a regular file (a symlink, device, FIFO or directory
 * there is refused, never followed or replaced) and creates the data's
 * file in the same directory, unnamed (O_TMPFILE) where the file system
 * allows it, else as a fresh DIR/.BASE.XXXXXX made with
 * O_CREAT|O_EXCL|O_NOFOLLOW (an existing name is never deleted, followed or
 * reused). commit() flushes and fsync()s it, gives it a fresh name, checks
 * @path again and renames it into place. abort(), or destruction without
 * commit(), removes it. A process killed before commit() leaves no name
 * behind (the O_TMPFILE case) or only a dot-file (the fallback). Task
 * context; one thread at a time.
 */
class OutputFile
{
public:
	OutputFile() = default;
	OutputFile(const OutputFile &) = delete;
	OutputFile &operator=(const OutputFile &) = delete;
	~OutputFile();

	/* Returns false with one line in *@err. */
	bool open(const std::string &path, std::string *err);
	/* Append @n bytes; false once a write failed (commit() reports it). */
	bool write(const void *data, size_t n);
	bool write(const std::string &s) { return write(s.data(), s.size()); }
	/* Returns false with one line in *@err; the file is removed then. */
	bool commit(std::string *err);
	void abort() noexcept;

	int fd() const { return fd_; }
	const std::string &path() const { return path_; }

private:
	bool copyToFresh();

	int fd_ = -1;
	bool named_ = false;	/* the fallback: tmp_ has a name */
	int errno_ = 0;		/* the first failed write's */
	std::string path_, tmp_;
};

/*
 * An unnamed scratch file in @dir (O_TMPFILE, else a fresh name unlinked at
 * once), for data that is assembled before it goes into an OutputFile.
 * Returns the fd, or -1 with one line in *@err. Task context.
 */
int scratchFile(const std::string &dir, std::string *err);

/* The directory part of @path ("." for a bare name). */
std::string outputDir(const std::string &path);

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
 * the list (as trace-cmd's -f "cpumask & CPUS{...}"); the events with no
 * target CPU (context_tracking's, pokelab's): the CPU that wrote them.
 */
bool traceEventSelected(const TraceEvent &e, const TraceFilter &f);

/* trace-cmd report-style text, one line per selected event, in time order. */
std::string formatTraceText(const TraceSnapshot &s, const TraceFilter &f);

/*
 * A cpumask as trace-cmd report prints ipi_send_cpumask's cpumask= (a
 * __get_bitmask() of nr_cpu_ids bits stored in longs): 32-bit words, most
 * significant first, 8 hex digits each, comma-separated.
 */
std::string traceBitmask(const struct cpumask *m);

/* The event's name ("ipi_send_cpu"). */
const char *traceEventName(TraceType t);

/*
 * Chrome trace-event JSON: one named thread track per CPU, "X" slices for
 * csd function handlers (and a 1 ns slice for each csd_queue_cpu), "i"
 * instants for IPI sends, and "s"/"f" flow pairs from each csd_queue_cpu to
 * the csd_function_entry that ran it.
 */
std::string formatTraceJson(const TraceSnapshot &s, const TraceFilter &f);

/*
 * Write @data to @path through an OutputFile, so that @path is either
 * absent, the old file, or complete. Returns false with one line in *@err
 * on failure. Task context.
 */
bool writeFileAtomic(const std::string &path, const std::string &data, std::string *err);

/* The formats a trace output can take. */
enum class TraceFormat { Text, Json, Dat };

/*
 * --trace FILE's format: Dat for a name ending in ".dat", else Text, unless
 * @name ("text", "dat", "" for by-extension) says. False with one line in
 * *@err for another @name.
 */
bool traceFormatFor(const std::string &path, const std::string &name, TraceFormat *fmt,
		    std::string *err);

/*
 * A sink for the recorder that streams the selected events to @path in
 * @fmt through an OutputFile (opened here: nullptr with one line in *@err
 * when it cannot be). Memory stays bounded: text and JSON go out in 1 MiB
 * writes, trace.dat pages to per-CPU scratch files (trace_dat.h). Drops
 * (Lost marks) are written where the format has a place: "CPU:N [M EVENTS
 * DROPPED]" lines in the text, lost-events pages in trace.dat.
 */
std::unique_ptr<TraceSink> makeTraceSink(const std::string &path, TraceFormat fmt,
					 const TraceFilter &f, std::string *err);

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
std::string formatTraceSummary(const std::vector<TraceCpu> &cpus, const TraceCounters &c,
			       const TraceFilter &f);

} /* namespace kshim */
