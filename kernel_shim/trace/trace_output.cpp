// SPDX-License-Identifier: GPL-2.0-only
/*
 * Trace output: trace-cmd report text, Chrome trace-event JSON, the
 * --trace-cpus filter and the streaming sinks (output files: output_file.cpp). See
 * trace_output.h and docs/tracing.md.
 */
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <algorithm>
#include <atomic>
#include <map>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "trace_dat.h"

#include <kernel_shim/clock.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/trace_output.h>
#include <linux/cpumask.h>

namespace kshim {

namespace {

/* Symbols are resolved once per address. */
class SymCache {
public:
	const std::string &get(unsigned long addr, bool offset)
	{
		auto &m = offset ? withOff_ : bare_;
		auto it = m.find(addr);

		if (it == m.end())
			it = m.emplace(addr, kshim::traceSymbol(addr, offset)).first;
		return it->second;
	}

private:
	std::unordered_map<unsigned long, std::string> withOff_, bare_;
};

/* The mask an ipi_send_cpumask event shows: restricted to the filter's CPUs. */
struct cpumask shownMask(const TraceEvent &e, const TraceFilter &f)
{
	struct cpumask m;

	if (f.active)
		cpumask_and(&m, &e.mask, &f.cpus);
	else
		cpumask_copy(&m, &e.mask);
	return m;
}

/* trace-cmd report's timestamps: microseconds, rounded to the nearest */
u64 usecs(u64 ns)
{
	return (ns + 500) / 1000;
}

/* libtraceevent prints %p as the C library's printf() does: 0x-prefixed hex, "(nil)" for 0 */
std::string ptr(unsigned long p)
{
	return p ? fmt::format("{:#x}", p) : std::string("(nil)");
}

/*
 * What libtraceevent prints for the event's print fmt (trace_dat.cpp holds
 * the same formats): %pS "name+0xoff", %ps "name", %p "0x..", bitmask as
 * comma-separated 32-bit hex words, __print_symbolic's names,
 * __print_hex_str's bytes.
 */
std::string info(const TraceEvent &e, const struct cpumask &m, SymCache &sc)
{
	switch (e.type) {
	case TraceType::IpiSendCpu:
		return fmt::format("cpu={} callsite={} callback={}", e.target,
				   sc.get(e.callsite, true), sc.get(e.fn, true));
	case TraceType::IpiSendCpumask:
		return fmt::format("cpumask={} callsite={} callback={}", traceBitmask(&m),
				   sc.get(e.callsite, true), sc.get(e.fn, true));
	case TraceType::CsdQueueCpu:
		return fmt::format("cpu={} callsite={} func={} csd={}", e.target,
				   sc.get(e.callsite, true), sc.get(e.fn, false), ptr(e.csd));
	case TraceType::CsdFunctionEntry:
	case TraceType::CsdFunctionExit:
		return fmt::format("func={}, csd={}", sc.get(e.fn, false), ptr(e.csd));
	case TraceType::UserEnter:
	case TraceType::UserExit:
	case TraceType::CtIdleEnter:
	case TraceType::CtIdleExit:
		return "";
	case TraceType::TextPoke: {
		std::string hex;
		unsigned int shown = std::min(e.target, 8);

		for (unsigned int i = 0; i < shown; i++)
			hex += fmt::format("{:02x}", (unsigned int)((e.fn >> (8 * i)) & 0xff));
		return fmt::format("addr={} len={} bytes={}", sc.get(e.callsite, true), e.target,
				   hex);
	}
	case TraceType::TextPokeBatch:
		return fmt::format("nr_entries={} phase={}", e.callsite, traceBatchPhaseName(e.target));
	case TraceType::Int3Emulate:
		return fmt::format("addr={} to={}", sc.get(e.callsite, true), sc.get(e.fn, true));
	case TraceType::CtWorkFlush:
		return fmt::format("work={}", traceCtWorkName(e.target));
	case TraceType::Lost:
	case TraceType::NrTypes:
		break;
	}
	return "";
}

void jsonEscape(std::string &out, const std::string &s)
{
	for (char ch : s) {
		unsigned char c = ch;

		if (c == '"' || c == '\\') {
			out += '\\';
			out += ch;
		} else if (c < 0x20) {
			out += fmt::format("\\u{:04x}", c);
		} else {
			out += ch;
		}
	}
}

std::string jstr(const std::string &s)
{
	std::string out = "\"";

	jsonEscape(out, s);
	out += '"';
	return out;
}

/* Chrome trace timestamps are microseconds; keep the nanoseconds. */
std::string jts(u64 ns)
{
	return fmt::format("{}.{:03}", ns / 1000, ns % 1000);
}

} /* namespace */

bool parseTraceCpus(const std::string &list, unsigned int nrCpus, TraceFilter *f, std::string *err)
{
	struct cpumask m;
	int ret;

	if (list.find_first_not_of(" \t") == std::string::npos)
		ret = -EINVAL;
	else
		ret = cpulist_parse(list.c_str(), &m);
	if (!ret && nrCpus) {
		/* not for_each_cpu(): it stops at nr_cpu_ids */
		for (unsigned int cpu = nrCpus; cpu < NR_CPUS; cpu++)
			if (cpumask_test_cpu(cpu, &m))
				ret = -ERANGE;
	}
	if (ret) {
		*err = fmt::format("--trace-cpus: bad CPU list '{}'; expected a non-empty CPU list "
				   "such as 1-3,5 with CPUs below nr_cpus{}", list,
				   nrCpus ? fmt::format(" ({})", nrCpus) : std::string());
		return false;
	}
	f->active = true;
	cpumask_copy(&f->cpus, &m);
	return true;
}

bool traceEventSelected(const TraceEvent &e, const TraceFilter &f)
{
	if (!f.active)
		return true;
	switch (e.type) {
	case TraceType::IpiSendCpumask:
		return cpumask_intersects(&e.mask, &f.cpus);
	case TraceType::IpiSendCpu:
	case TraceType::CsdQueueCpu:
	case TraceType::CsdFunctionEntry:
	case TraceType::CsdFunctionExit:
		/* the CPU aimed at (csd_function_*: the CPU running it) */
		return e.target >= 0 && cpumask_test_cpu(e.target, &f.cpus);
	default:
		/* no target CPU: the CPU that wrote the event */
		return cpumask_test_cpu(e.cpu, &f.cpus);
	}
}

const char *traceEventName(TraceType t)
{
	for (const TraceEventInfo &i : traceEventTypes())
		if (i.type == t)
			return i.name;
	return "unknown";
}

namespace {

/* Formats events as they come into bytes: the text and JSON outputs. */
class Formatter
{
public:
	explicit Formatter(const TraceFilter &f) : f_(f) {}
	virtual ~Formatter() = default;
	virtual void begin(const std::vector<TraceCpu> &cpus, std::string &out) = 0;
	virtual void event(const TraceEvent &e, std::string &out) = 0;
	virtual void end(std::string &out) = 0;

protected:
	TraceFilter f_;
	SymCache sc_;
	std::vector<std::string> comm_;
};

/* trace-cmd report text: "cpus=N", then one line per event, drops where they happened. */
class TextFormatter : public Formatter
{
public:
	using Formatter::Formatter;

	void begin(const std::vector<TraceCpu> &cpus, std::string &out) override
	{
		for (const TraceCpu &c : cpus)
			comm_.push_back(c.comm);
		lost_.assign(cpus.size(), 0);
		out += fmt::format("cpus={}\n", cpus.size());
	}

	/*
	 * Drops are shown as trace-cmd report shows a page that lost events:
	 * "CPU:N [M EVENTS DROPPED]" before that CPU's next event shown.
	 */
	void event(const TraceEvent &e, std::string &out) override
	{
		if (e.cpu >= lost_.size())
			return;
		if (e.type == TraceType::Lost) {
			lost_[e.cpu] += e.target;
			return;
		}
		if (!traceEventSelected(e, f_))
			return;
		if (lost_[e.cpu]) {
			out += fmt::format("CPU:{} [{} EVENTS DROPPED]\n", e.cpu, lost_[e.cpu]);
			lost_[e.cpu] = 0;
		}
		/* trace-cmd report's default line (its -l adds the latency flags) */
		out += fmt::format("{:>16}-{:<5} [{:03}] {:>5}.{:06}: {:<21} {}\n",
				   e.cpu < comm_.size() ? comm_[e.cpu] : "<...>", e.pid, e.cpu,
				   usecs(e.ts) / 1000000, usecs(e.ts) % 1000000,
				   std::string(traceEventName(e.type)) + ":",
				   info(e, shownMask(e, f_), sc_));
	}

	/* drops after a CPU's last event (trace-cmd report does not show these) */
	void end(std::string &out) override
	{
		for (size_t cpu = 0; cpu < lost_.size(); cpu++)
			if (lost_[cpu])
				out += fmt::format("CPU:{} [{} EVENTS DROPPED]\n", cpu, lost_[cpu]);
	}

private:
	std::vector<unsigned long> lost_;
};

/*
 * Chrome trace-event JSON, streamed: one named thread track per CPU, "X"
 * slices for csd function handlers and for each batch (begin to done),
 * "i" instants for IPI sends and pokelab's events, and an "s"/"f" flow
 * pair from each csd_queue_cpu to the csd_function_entry that ran it
 * (written when the entry comes: a csd is reused only after it ran).
 */
class JsonFormatter : public Formatter
{
public:
	using Formatter::Formatter;

	void begin(const std::vector<TraceCpu> &cpus, std::string &out) override
	{
		out += "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"pokelab\"},"
		       "\"traceEvents\":[";
		emit(out, fmt::format("{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},"
				      "\"args\":{{\"name\":\"pokelab machine\"}}}}", pid_));
		for (const TraceCpu &c : cpus) {
			emit(out, fmt::format("{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},"
					      "\"tid\":{},\"args\":{{\"name\":{}}}}}", pid_, c.cpu,
					      jstr(fmt::format("CPU {} ({})", c.cpu, c.comm))));
			emit(out, fmt::format("{{\"ph\":\"M\",\"name\":\"thread_sort_index\","
					      "\"pid\":{},\"tid\":{},\"args\":{{\"sort_index\":{}}}}}",
					      pid_, c.cpu, c.cpu));
		}
		open_.resize(cpus.size());
	}

	void event(const TraceEvent &e, std::string &out) override
	{
		if (e.type == TraceType::Lost) {
			emit(out, fmt::format("{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"events dropped\","
					      "\"cat\":\"trace\",\"pid\":{},\"tid\":{},\"ts\":{},"
					      "\"args\":{{\"dropped\":{}}}}}", pid_, e.cpu, jts(e.ts),
					      e.target));
			return;
		}
		if (!traceEventSelected(e, f_))
			return;
		std::string common = fmt::format("\"pid\":{},\"tid\":{},\"ts\":{}", pid_, e.cpu,
						 jts(e.ts));

		switch (e.type) {
		case TraceType::IpiSendCpu:
			emit(out, fmt::format("{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"ipi_send_cpu\","
					      "\"cat\":\"ipi\",{},\"args\":{{\"cpu\":{},"
					      "\"callsite\":{},\"callback\":{}}}}}", common, e.target,
					      jstr(sc_.get(e.callsite, true)),
					      jstr(sc_.get(e.fn, true))));
			break;
		case TraceType::IpiSendCpumask: {
			struct cpumask m = shownMask(e, f_);

			emit(out, fmt::format("{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"ipi_send_cpumask\","
					      "\"cat\":\"ipi\",{},\"args\":{{\"cpumask\":{},\"cpus\":{},"
					      "\"callsite\":{},\"callback\":{}}}}}", common,
					      jstr(kshim::cpumaskPrintHex(&m)),
					      jstr(kshim::cpumaskPrintList(&m)),
					      jstr(sc_.get(e.callsite, true)),
					      jstr(sc_.get(e.fn, true))));
			break;
		}
		case TraceType::CsdQueueCpu:
			emit(out, fmt::format("{{\"ph\":\"X\",\"name\":\"csd_queue_cpu\","
					      "\"cat\":\"csd\",{},\"dur\":0.001,\"args\":{{\"cpu\":{},"
					      "\"callsite\":{},\"func\":{},\"csd\":{}}}}}", common,
					      e.target, jstr(sc_.get(e.callsite, true)),
					      jstr(sc_.get(e.fn, false)), jstr(ptr(e.csd))));
			if (e.csd)
				queued_[e.csd] = {e.ts, e.cpu};
			break;
		case TraceType::CsdFunctionEntry: {
			open_[e.cpu].push_back(e);
			auto it = e.csd ? queued_.find(e.csd) : queued_.end();

			if (it != queued_.end()) {
				unsigned long id = nextFlow_++;

				emit(out, fmt::format("{{\"ph\":\"s\",\"name\":\"csd\",\"cat\":\"csd\","
						      "\"id\":{},\"pid\":{},\"tid\":{},\"ts\":{}}}", id,
						      pid_, it->second.cpu, jts(it->second.ts)));
				emit(out, fmt::format("{{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"csd\","
						      "\"cat\":\"csd\",\"id\":{},{}}}", id, common));
				queued_.erase(it);
			}
			break;
		}
		case TraceType::CsdFunctionExit: {
			std::vector<TraceEvent> &st = open_[e.cpu];

			/* an entry lost to a full ring leaves an exit without a slice */
			if (st.empty() || st.back().csd != e.csd || st.back().fn != e.fn)
				break;
			const TraceEvent b = st.back();
			std::string name = jstr(sc_.get(b.fn, false));

			st.pop_back();
			emit(out, fmt::format("{{\"ph\":\"X\",\"name\":{},\"cat\":\"csd_function\","
					      "\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},\"args\":{{"
					      "\"func\":{},\"csd\":{}}}}}", name, pid_, b.cpu,
					      jts(b.ts), jts(e.ts - b.ts), name, jstr(ptr(b.csd))));
			break;
		}
		case TraceType::TextPokeBatch:
			if (e.target == TRACE_BATCH_BEGIN) {
				batchTs_ = e.ts;
				batchOpen_ = true;
			} else if (e.target == TRACE_BATCH_DONE && batchOpen_) {
				batchOpen_ = false;
				emit(out, fmt::format("{{\"ph\":\"X\",\"name\":"
						      "\"smp_text_poke_batch_finish\",\"cat\":\"pokelab\","
						      "\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},"
						      "\"args\":{{\"nr_entries\":{}}}}}", pid_, e.cpu,
						      jts(batchTs_), jts(e.ts - batchTs_), e.callsite));
			}
			[[fallthrough]];
		default:
			emit(out, fmt::format("{{\"ph\":\"i\",\"s\":\"t\",\"name\":{},\"cat\":\"pokelab\","
					      "{},\"args\":{{\"info\":{}}}}}",
					      jstr(traceEventName(e.type)), common,
					      jstr(info(e, e.mask, sc_))));
			break;
		}
	}

	void end(std::string &out) override
	{
		out += "\n]}\n";
	}

private:
	struct Queued {
		u64 ts;
		int cpu;
	};

	void emit(std::string &out, const std::string &obj)
	{
		out += first_ ? "\n" : ",\n";
		out += obj;
		first_ = false;
	}

	int pid_ = getpid();
	bool first_ = true;
	std::vector<std::vector<TraceEvent>> open_;	/* per CPU: handlers entered, a stack */
	std::unordered_map<unsigned long, Queued> queued_;	/* csd -> its queueing */
	unsigned long nextFlow_ = 1;
	u64 batchTs_ = 0;
	bool batchOpen_ = false;
};

std::string formatAll(Formatter &fm, const TraceSnapshot &s)
{
	std::string out;

	fm.begin(s.cpus, out);
	for (const TraceEvent &e : s.events)
		fm.event(e, out);
	fm.end(out);
	return out;
}

/* The recorder's sink for text and JSON: formats into a buffer, 1 MiB writes. */
class StreamSink : public TraceSink
{
public:
	StreamSink(std::unique_ptr<Formatter> fm) : fm_(std::move(fm)) {}

	bool open(const std::string &path, std::string *err) { return file_.open(path, err); }

	void begin(const std::vector<TraceCpu> &cpus) override
	{
		fm_->begin(cpus, buf_);
	}

	void event(const TraceEvent &e) override
	{
		fm_->event(e, buf_);
		if (buf_.size() >= (1u << 20))
			flush();
	}

	bool finish(const std::vector<TraceCpu> &, std::string *err) override
	{
		fm_->end(buf_);
		flush();
		return file_.commit(err);
	}

private:
	void flush()
	{
		file_.write(buf_);
		buf_.clear();
	}

	std::unique_ptr<Formatter> fm_;
	OutputFile file_;
	std::string buf_;
};

} /* namespace */

std::string formatTraceText(const TraceSnapshot &s, const TraceFilter &f)
{
	TextFormatter fm(f);

	return formatAll(fm, s);
}

std::string formatTraceJson(const TraceSnapshot &s, const TraceFilter &f)
{
	JsonFormatter fm(f);

	return formatAll(fm, s);
}

bool traceFormatFor(const std::string &path, const std::string &name, TraceFormat *fmt,
		    std::string *err)
{
	bool dat = path.size() > 4 && path.compare(path.size() - 4, 4, ".dat") == 0;

	if (name == "text" && dat) {
		*err = fmt::format("--trace-format text: '{}' ends in .dat, the name of trace-cmd's "
				   "binary format; name the text file otherwise", path);
		return false;
	}
	if (name == "text" || name == "dat") {
		*fmt = name == "dat" ? TraceFormat::Dat : TraceFormat::Text;
		return true;
	}
	if (!name.empty()) {
		*err = fmt::format("--trace-format {}: not a trace format; expected --trace-format "
				   "text or dat (default: dat for a FILE ending in .dat, else text)",
				   name);
		return false;
	}
	*fmt = dat ? TraceFormat::Dat : TraceFormat::Text;
	return true;
}

std::unique_ptr<TraceSink> makeTraceSink(const std::string &path, TraceFormat fmt,
					 const TraceFilter &f, std::string *err)
{
	if (fmt == TraceFormat::Dat)
		return makeDatSink(path, f, err);

	std::unique_ptr<Formatter> fm;

	if (fmt == TraceFormat::Json)
		fm = std::make_unique<JsonFormatter>(f);
	else
		fm = std::make_unique<TextFormatter>(f);
	auto sink = std::make_unique<StreamSink>(std::move(fm));
	if (!sink->open(path, err))
		return nullptr;
	return sink;
}

TraceCounters readTraceCounters()
{
	TraceCounters t;

	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		kshim::CpuStats c = kshim::cpuStats(cpu);

		t.ipiSendCpu += c.ipiSendCpu;
		t.ipiSendCpumask += c.ipiSendCpumask;
		t.csdQueued += c.csdQueued;
		t.ipiSignals += c.ipiSent;
	}
	return t;
}

TraceCounters operator-(const TraceCounters &a, const TraceCounters &b)
{
	TraceCounters t;

	t.ipiSendCpu = a.ipiSendCpu - b.ipiSendCpu;
	t.ipiSendCpumask = a.ipiSendCpumask - b.ipiSendCpumask;
	t.csdQueued = a.csdQueued - b.csdQueued;
	t.ipiSignals = a.ipiSignals - b.ipiSignals;
	return t;
}

std::string formatTraceSummary(const std::vector<TraceCpu> &cpus, const TraceCounters &c,
			       const TraceFilter &f)
{
	unsigned long written = 0, dropped = 0;
	std::string per;

	for (const TraceCpu &tc : cpus) {
		written += tc.written;
		dropped += tc.dropped;
		per += fmt::format(" {}:{}/{}", tc.cpu, tc.written, tc.dropped);
	}
	return fmt::format("trace: {} events written, {} dropped (per CPU written/dropped:{})\n"
			   "trace: counters: {} IPI sends ({} ipi_send_cpu + {} ipi_send_cpumask, "
			   "{} signals), {} CSDs queued{}\n",
			   written, dropped, per, c.ipiSendCpu + c.ipiSendCpumask, c.ipiSendCpu,
			   c.ipiSendCpumask, c.ipiSignals, c.csdQueued,
			   f.active ? " (whole machine; the trace is filtered by --trace-cpus)"
				    : "");
}

} /* namespace kshim */
