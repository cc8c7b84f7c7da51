// SPDX-License-Identifier: GPL-2.0-only
/*
 * Trace output: trace-cmd report text, Chrome trace-event JSON, the
 * --trace-cpus filter and atomic file writes. See trace_output.h and
 * docs/tracing.md.
 */
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include <kernel_shim/clock.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/trace_output.h>
#include <linux/cpumask.h>

namespace kshim {

namespace {

const char *eventName(TraceType t)
{
	switch (t) {
	case TraceType::IpiSendCpu:
		return "ipi_send_cpu";
	case TraceType::IpiSendCpumask:
		return "ipi_send_cpumask";
	case TraceType::CsdQueueCpu:
		return "csd_queue_cpu";
	case TraceType::CsdFunctionEntry:
		return "csd_function_entry";
	case TraceType::CsdFunctionExit:
		return "csd_function_exit";
	}
	return "unknown";
}

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

/* libtraceevent prints %p as 0x-prefixed hex */
std::string ptr(unsigned long p)
{
	return fmt::format("{:#x}", p);
}

std::string fields(const TraceEvent &e, const TraceFilter &f, SymCache &sc)
{
	switch (e.type) {
	case TraceType::IpiSendCpu:
		return fmt::format("cpu={} callsite={} callback={}", e.target,
				   sc.get(e.callsite, true), sc.get(e.fn, true));
	case TraceType::IpiSendCpumask: {
		struct cpumask m = shownMask(e, f);

		return fmt::format("cpumask={} callsite={} callback={}", kshim::cpumaskPrintHex(&m),
				   sc.get(e.callsite, true), sc.get(e.fn, true));
	}
	case TraceType::CsdQueueCpu:
		return fmt::format("cpu={} callsite={} func={} csd={}", e.target,
				   sc.get(e.callsite, true), sc.get(e.fn, false), ptr(e.csd));
	case TraceType::CsdFunctionEntry:
	case TraceType::CsdFunctionExit:
		return fmt::format("func={}, csd={}", sc.get(e.fn, false), ptr(e.csd));
	}
	return "";
}

/* trace-cmd's latency column: irqs-off, need-resched, hardirq, preempt depth, migrate-disable */
std::string latencyFlags(const TraceEvent &e)
{
	std::string s = ".....";

	if (e.flags & kshim::TRACE_FLAG_IRQS_OFF)
		s[0] = 'd';
	if (e.flags & kshim::TRACE_FLAG_HARDIRQ)
		s[2] = 'h';
	if (e.flags >> kshim::TRACE_PREEMPT_SHIFT)
		s[3] = "0123456789abcdef"[e.flags >> kshim::TRACE_PREEMPT_SHIFT];
	return s;
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
	if (e.type == TraceType::IpiSendCpumask)
		return cpumask_intersects(&e.mask, &f.cpus);
	return e.target >= 0 && cpumask_test_cpu(e.target, &f.cpus);
}

std::string formatTraceText(const TraceSnapshot &s, const TraceFilter &f)
{
	std::string out;
	SymCache sc;

	out += fmt::format("cpus={}\n", s.nrCpuIds);
	for (const TraceEvent &e : s.events) {
		if (!traceEventSelected(e, f))
			continue;
		const std::string &comm = s.cpus[e.cpu].comm;

		out += fmt::format("{:>16}-{:<7} [{:03}] {} {:>5}.{:06}: {}: {}\n", comm, e.pid,
				   e.cpu, latencyFlags(e), e.ts / 1000000000ULL,
				   (e.ts / 1000) % 1000000, eventName(e.type), fields(e, f, sc));
	}
	return out;
}

std::string formatTraceJson(const TraceSnapshot &s, const TraceFilter &f)
{
	std::vector<const TraceEvent *> ev;
	std::map<size_t, unsigned long> flowStart, flowEnd;	/* event index -> flow id */
	std::unordered_map<unsigned long, size_t> pending;	/* csd -> queue event index */
	unsigned long nextFlow = 1;
	int pid = getpid();
	SymCache sc;
	std::string out;
	bool first = true;

	for (const TraceEvent &e : s.events)
		if (traceEventSelected(e, f))
			ev.push_back(&e);

	/* A csd is reused only after it ran: each queue pairs with that csd's next entry. */
	for (size_t i = 0; i < ev.size(); i++) {
		const TraceEvent &e = *ev[i];

		if (e.type == TraceType::CsdQueueCpu) {
			pending[e.csd] = i;
		} else if (e.type == TraceType::CsdFunctionEntry && e.csd) {
			auto it = pending.find(e.csd);

			if (it != pending.end()) {
				flowStart[it->second] = nextFlow;
				flowEnd[i] = nextFlow++;
				pending.erase(it);
			}
		}
	}

	auto emit = [&](const std::string &obj) {
		out += first ? "\n" : ",\n";
		out += obj;
		first = false;
	};

	out += "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"pokelab\"},"
	       "\"traceEvents\":[";
	emit(fmt::format("{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"args\":{{\"name\":"
			 "\"pokelab machine\"}}}}", pid));
	for (const TraceCpu &c : s.cpus) {
		emit(fmt::format("{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},"
				 "\"args\":{{\"name\":{}}}}}", pid, c.cpu,
				 jstr(fmt::format("CPU {} ({})", c.cpu, c.comm))));
		emit(fmt::format("{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{},"
				 "\"tid\":{},\"args\":{{\"sort_index\":{}}}}}", pid, c.cpu, c.cpu));
	}

	/* Handler slices: pair entry and exit per CPU (IRQ nesting makes it a stack). */
	std::vector<std::vector<size_t>> open(s.cpus.size());

	for (size_t i = 0; i < ev.size(); i++) {
		const TraceEvent &e = *ev[i];
		std::string common = fmt::format("\"pid\":{},\"tid\":{},\"ts\":{}", pid, e.cpu,
						 jts(e.ts));

		switch (e.type) {
		case TraceType::IpiSendCpu:
			emit(fmt::format("{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"ipi_send_cpu\","
					 "\"cat\":\"ipi\",{},\"args\":{{\"cpu\":{},\"callsite\":{},"
					 "\"callback\":{}}}}}", common, e.target,
					 jstr(sc.get(e.callsite, true)), jstr(sc.get(e.fn, true))));
			break;
		case TraceType::IpiSendCpumask: {
			struct cpumask m = shownMask(e, f);

			emit(fmt::format("{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"ipi_send_cpumask\","
					 "\"cat\":\"ipi\",{},\"args\":{{\"cpumask\":{},\"cpus\":{},"
					 "\"callsite\":{},\"callback\":{}}}}}", common,
					 jstr(kshim::cpumaskPrintHex(&m)),
					 jstr(kshim::cpumaskPrintList(&m)),
					 jstr(sc.get(e.callsite, true)), jstr(sc.get(e.fn, true))));
			break;
		}
		case TraceType::CsdQueueCpu: {
			emit(fmt::format("{{\"ph\":\"X\",\"name\":\"csd_queue_cpu\","
					 "\"cat\":\"csd\",{},\"dur\":0.001,\"args\":{{\"cpu\":{},"
					 "\"callsite\":{},"
					 "\"func\":{},\"csd\":{}}}}}", common, e.target,
					 jstr(sc.get(e.callsite, true)), jstr(sc.get(e.fn, false)),
					 jstr(ptr(e.csd))));
			auto it = flowStart.find(i);
			if (it != flowStart.end())
				emit(fmt::format("{{\"ph\":\"s\",\"name\":\"csd\",\"cat\":\"csd\","
						 "\"id\":{},{}}}", it->second, common));
			break;
		}
		case TraceType::CsdFunctionEntry: {
			open[e.cpu].push_back(i);
			auto it = flowEnd.find(i);
			if (it != flowEnd.end())
				emit(fmt::format("{{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"csd\","
						 "\"cat\":\"csd\",\"id\":{},{}}}", it->second,
						 common));
			break;
		}
		case TraceType::CsdFunctionExit: {
			std::vector<size_t> &st = open[e.cpu];

			/* an entry lost to a full ring leaves an exit without a slice */
			if (st.empty() || ev[st.back()]->csd != e.csd || ev[st.back()]->fn != e.fn)
				break;
			const TraceEvent &b = *ev[st.back()];
			std::string name = jstr(sc.get(b.fn, false));

			st.pop_back();
			emit(fmt::format("{{\"ph\":\"X\",\"name\":{},\"cat\":\"csd_function\","
					 "\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},\"args\":{{"
					 "\"func\":{},\"csd\":{}}}}}", name, pid, b.cpu, jts(b.ts),
					 jts(e.ts - b.ts), name, jstr(ptr(b.csd))));
			break;
		}
		}
	}
	out += "\n]}\n";
	return out;
}

namespace {

/* The directory part of @path ("." for a bare name) and its last component. */
std::string dirOf(const std::string &path)
{
	size_t slash = path.find_last_of('/');

	if (slash == std::string::npos)
		return ".";
	return slash ? path.substr(0, slash) : "/";
}

std::string baseOf(const std::string &path)
{
	size_t slash = path.find_last_of('/');

	return slash == std::string::npos ? path : path.substr(slash + 1);
}

/*
 * Create a fresh temporary file next to @path: DIR/.BASE.XXXXXX, opened with
 * O_CREAT|O_EXCL|O_NOFOLLOW so that an existing name (a file, a symlink
 * someone planted) is never followed, truncated or reused: another suffix
 * is tried instead. Returns the fd and sets *@tmp, or -1 with errno.
 */
int createFresh(const std::string &path, std::string *tmp)
{
	static unsigned long counter;
	std::string stem = dirOf(path) + "/." + baseOf(path) + ".";

	for (unsigned int tries = 0; tries < 100; tries++) {
		unsigned long n = (unsigned long)getpid() * 1000003ul + clockNs() + counter++;
		std::string name = fmt::format("{}{:06x}", stem, n & 0xffffff);
		int fd = open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);

		if (fd >= 0) {
			*tmp = name;
			return fd;
		}
		if (errno != EEXIST)
			return -1;
	}
	errno = EEXIST;
	return -1;
}

/* @path may be replaced by rename(): absent, or a regular file (not followed). */
bool replaceable(const std::string &path, std::string *err)
{
	struct stat st;

	if (lstat(path.c_str(), &st) || S_ISREG(st.st_mode))
		return true;
	*err = fmt::format("'{}' exists and is not a regular file (a {}); the output is written "
			   "to a new file and renamed into place, so give a file path", path,
			   S_ISDIR(st.st_mode)   ? "directory"
			   : S_ISLNK(st.st_mode) ? "symbolic link"
			   : S_ISFIFO(st.st_mode) ? "FIFO"
						  : "device or socket");
	return false;
}

/* replaceable(), then createFresh(): the fd, or -1 with one line in *@err. */
int openFresh(const std::string &path, std::string *tmp, std::string *err)
{
	int fd;

	if (!replaceable(path, err))
		return -1;
	fd = createFresh(path, tmp);
	if (fd < 0)
		*err = fmt::format("cannot write '{}' (a new file in {}): {}", path, dirOf(path),
				   strerror(errno));
	return fd;
}

} /* namespace */

bool writeFileAtomic(const std::string &path, const std::string &data, std::string *err)
{
	std::string tmp;
	size_t done = 0;
	int fd = openFresh(path, &tmp, err);
	bool ok = true;

	if (fd < 0)
		return false;
	while (ok && done < data.size()) {
		ssize_t n = write(fd, data.data() + done, data.size() - done);

		if (n < 0 && errno == EINTR)
			continue;
		ok = n > 0;
		done += ok ? n : 0;
	}
	ok = ok && !fsync(fd);
	ok = !close(fd) && ok;
	if (!ok)
		*err = fmt::format("cannot write '{}': {}", path, strerror(errno));
	/* Checked again: a symlink or device put there meanwhile is not replaced either. */
	else if (!replaceable(path, err))
		ok = false;
	else if (rename(tmp.c_str(), path.c_str())) {
		*err = fmt::format("cannot write '{}': {}", path, strerror(errno));
		ok = false;
	}
	if (!ok)
		unlink(tmp.c_str());
	return ok;
}

bool writeTraceFiles(const TraceSnapshot &s, const TraceFilter &f, const std::string &text,
		     const std::string &json, std::string *err)
{
	if (!text.empty() && !writeFileAtomic(text, formatTraceText(s, f), err))
		return false;
	return json.empty() || writeFileAtomic(json, formatTraceJson(s, f), err);
}

bool checkWritable(const std::string &path, std::string *err)
{
	std::string tmp;
	int fd;

	if (path.empty()) {
		*err = "empty output file name; expected a path to a regular file";
		return false;
	}
	fd = openFresh(path, &tmp, err);
	if (fd < 0)
		return false;
	close(fd);
	unlink(tmp.c_str());
	return true;
}

bool sameOutput(const std::string &a, const std::string &b)
{
	struct stat sa, sb;

	/* Existing files: the same inode. */
	if (!stat(a.c_str(), &sa) && !stat(b.c_str(), &sb))
		return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	/* Otherwise: the same name in the same directory (by inode). */
	if (baseOf(a) != baseOf(b) || stat(dirOf(a).c_str(), &sa) || stat(dirOf(b).c_str(), &sb))
		return false;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
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

std::string formatTraceSummary(const TraceSnapshot &s, const TraceCounters &c,
			       const TraceFilter &f)
{
	unsigned long written = 0, dropped = 0;
	std::string per;

	for (const TraceCpu &tc : s.cpus) {
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
