// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab timeline TRACE -o FILE.svg: the timeline picture of a trace that
 * a run wrote, trace-cmd report text or a trace.dat (read through
 * `trace-cmd report`), and the reader of that text (timeline.h).
 */
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <poll.h>
#include <regex>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <kernel_shim/trace_output.h>
#include <linux/cpumask.h>

#include "command.h"
#include "options.h"
#include "timeline/timeline.h"
#include "wrote.h"

namespace pokelab {

namespace {

using kshim::TraceEvent;
using kshim::TraceType;

bool field(const std::string &info, const char *name, std::string *val)
{
	std::string key = std::string(name) + "=";
	size_t p = info.find(key);

	if (p == std::string::npos || (p && info[p - 1] != ' '))
		return false;
	p += key.size();
	*val = info.substr(p, info.find(' ', p) - p);
	if (!val->empty() && val->back() == ',')	/* "func=x, csd=y" */
		val->pop_back();
	return true;
}

/* cpumask=00000000,00000006: 32-bit hex words, the most significant first */
bool parseMask(const std::string &s, struct cpumask *m)
{
	std::vector<std::string> words;
	std::stringstream ss(s);
	std::string w;

	cpumask_clear(m);
	while (std::getline(ss, w, ','))
		words.push_back(w);
	for (size_t i = 0; i < words.size(); i++) {
		unsigned long v = strtoul(words[words.size() - 1 - i].c_str(), nullptr, 16);

		for (unsigned int b = 0; b < 32; b++)
			if ((v >> b) & 1 && i * 32 + b < NR_CPUS)
				cpumask_set_cpu(i * 32 + b, m);
	}
	return !words.empty();
}

int phaseOf(const std::string &name)
{
	for (int p = 0; p <= kshim::TRACE_BATCH_DONE; p++)
		if (kshim::traceBatchPhaseName(p) == name)
			return p;
	return -1;
}

int workOf(const std::string &name)
{
	for (int b = 0; b < 8; b++)
		if (kshim::traceCtWorkName(1 << b) == name)
			return 1 << b;
	return 0;
}

} /* namespace */

bool parseTraceReport(std::istream &in, std::vector<TraceEvent> *events, unsigned int *nrCpus,
		      std::string *err, unsigned long *lines)
{
	static const std::regex line(R"(^\s*.*-(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d+):\s+(\w+):\s*(.*)$)");
	static const std::regex lost(R"(^CPU:(\d+) \[(\d+) EVENTS DROPPED\]$)");
	static const std::map<std::string, TraceType> types = {
		{"ipi_send_cpu", TraceType::IpiSendCpu}, {"ipi_send_cpumask", TraceType::IpiSendCpumask},
		{"user_enter", TraceType::UserEnter}, {"user_exit", TraceType::UserExit},
		{"text_poke_batch", TraceType::TextPokeBatch},
		{"int3_emulate", TraceType::Int3Emulate}, {"ct_idle_enter", TraceType::CtIdleEnter},
		{"ct_idle_exit", TraceType::CtIdleExit}, {"ct_work_flush", TraceType::CtWorkFlush},
		{"csd_queue_cpu", TraceType::CsdQueueCpu},
	};
	std::string s;
	unsigned int lineNo = 0, maxCpu = 0;
	bool any = false;

	*nrCpus = 0;
	while (std::getline(in, s)) {
		std::smatch m;
		TraceEvent e = {};
		std::string v;

		lineNo++;
		if (s.rfind("cpus=", 0) == 0) {
			*nrCpus = (unsigned int)strtoul(s.c_str() + 5, nullptr, 10);
			continue;
		}
		if (std::regex_match(s, m, lost)) {
			e.type = TraceType::Lost;
			e.cpu = (u16)std::stoul(m[1]);
			e.target = (int)std::stoul(m[2]);
			e.ts = events->empty() ? 0 : events->back().ts;
			events->push_back(e);
			continue;
		}
		if (!std::regex_match(s, m, line)) {
			if (!s.empty() && !any && lineNo > 4) {
				*err = fmt::format("line {}: not trace-cmd report output: \"{}\"", lineNo,
						   s.substr(0, 60));
				return false;
			}
			continue;
		}
		any = true;
		if (lines)
			(*lines)++;
		auto t = types.find(m[5]);

		if (t == types.end())
			continue;
		e.type = t->second;
		e.pid = (u32)std::stoul(m[1]);
		e.cpu = (u16)std::stoul(m[2]);
		/* trace-cmd report's microseconds */
		e.ts = std::stoull(m[3]) * 1000000000ull + std::stoull(m[4]) * 1000ull;
		std::string info = m[6];

		if (e.type == TraceType::IpiSendCpu && field(info, "cpu", &v))
			e.target = std::stoi(v);
		if (e.type == TraceType::IpiSendCpumask &&
		    !(field(info, "cpumask", &v) && parseMask(v, &e.mask))) {
			*err = fmt::format("line {}: ipi_send_cpumask without a cpumask= field", lineNo);
			return false;
		}
		if (e.type == TraceType::TextPokeBatch) {
			if (!field(info, "phase", &v) || (e.target = phaseOf(v)) < 0) {
				*err = fmt::format("line {}: text_poke_batch with no known phase=", lineNo);
				return false;
			}
			if (field(info, "nr_entries", &v))
				e.callsite = std::stoul(v);
		}
		/*
		 * csd_queue_cpu: what the IPI after it is for. The timeline needs
		 * only the kind of its func= (timelineIpiKind()), kept in @csd + 1
		 * with no address in @fn (timeline_marks.cpp).
		 */
		if (e.type == TraceType::CsdQueueCpu) {
			std::string func;

			if (!field(info, "cpu", &v) || !field(info, "func", &func))
				continue;
			e.target = std::stoi(v);
			e.csd = (unsigned long)timelineIpiKind(func.substr(0, func.find('+'))) + 1;
		}
		if (e.type == TraceType::CtWorkFlush && field(info, "work", &v))
			e.target = workOf(v);
		maxCpu = std::max<unsigned int>(maxCpu, e.cpu);
		events->push_back(e);
	}
	if (!any) {
		*err = "no trace-cmd report event lines in it";
		return false;
	}
	if (*nrCpus <= maxCpu)
		*nrCpus = maxCpu + 1;
	return true;
}

void addTimelineGapOption(CLI::App *app, const char *name)
{
	app->add_option_function<double>(
		   name, [](double s) { timelineGapNs = (u64)(s * 1e9); },
		   "Draw a stretch of more than this many seconds with no event as a labelled "
		   "break, not to scale, so that the picture follows the batches "
		   "(default: 0.001; 0: all time to scale)")
		->check(decimalNumber(0, 3600.0));
}

namespace {

struct TimelineOptions {
	std::string trace, out, title;
} opts;
CLI::App *t;

/* `trace-cmd report -i FILE`'s output, or false with one line in *@err */
bool reportOf(const std::string &path, std::string *text, std::string *err)
{
	int fd[2];
	pid_t pid;
	char buf[65536];
	ssize_t r;
	int status;

	if (pipe(fd)) {
		*err = fmt::format("pipe: {}", strerror(errno));
		return false;
	}
	pid = fork();
	if (pid < 0) {
		*err = fmt::format("fork: {}", strerror(errno));
		close(fd[0]);
		close(fd[1]);
		return false;
	}
	if (!pid) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execlp("trace-cmd", "trace-cmd", "report", "-i", path.c_str(), (char *)nullptr);
		_exit(127);
	}
	close(fd[1]);
	while ((r = read(fd[0], buf, sizeof(buf))) > 0 || (r < 0 && errno == EINTR))
		if (r > 0)
			text->append(buf, r);
	close(fd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		*err = WIFEXITED(status) && WEXITSTATUS(status) == 127
			       ? "trace-cmd not found (tools/install-deps.sh installs it)"
			       : "trace-cmd report failed on it";
		return false;
	}
	return true;
}

bool isDat(const std::string &bytes)
{
	return bytes.size() >= 10 && !memcmp(bytes.data(), "\x17\x08\x44tracing", 10);
}

/* A FIFO or a pipe with nothing to read this long after it is opened has no writer. */
constexpr int kStreamWaitMs = 5000;

/*
 * The bytes of @path, or false with one line in *@err. A regular file is
 * read by name; anything else that is not a directory (a pipe: /dev/stdin,
 * <(...); a FIFO) as a stream, once, to its end, opened without blocking
 * so that a FIFO with no writer is refused after kStreamWaitMs, not waited
 * for forever.
 */
bool readTrace(const std::string &path, std::string *bytes, std::string *err)
{
	int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	char buf[65536];
	int wait = kStreamWaitMs;

	if (fd < 0 || fstat(fd, &st)) {
		*err = fmt::format("{}: {}; expected a trace written by --trace FILE", path,
				   strerror(errno));
		if (fd >= 0)
			close(fd);
		return false;
	}
	if (S_ISDIR(st.st_mode)) {
		*err = fmt::format("{}: a directory; expected a trace file (trace-cmd report text "
				   "or a trace.dat)", path);
		close(fd);
		return false;
	}
	for (;;) {
		ssize_t r = read(fd, buf, sizeof(buf));
		struct pollfd p = {fd, POLLIN, 0};

		if (r > 0) {
			bytes->append(buf, r);
			wait = -1;	/* a writer is there: read its stream to the end */
			continue;
		}
		if (!r && (S_ISREG(st.st_mode) || wait < 0))
			break;
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno != EAGAIN) {
			*err = fmt::format("{}: {}", path, strerror(errno));
			close(fd);
			return false;
		}
		/*
		 * EAGAIN: a writer is there, and slow; 0: none is (a FIFO no writer
		 * opened yet reads as its end): wait for one, a while
		 */
		int n = poll(&p, 1, r < 0 ? -1 : wait);

		if (n < 0 && errno == EINTR)
			continue;
		if (!n) {
			*err = fmt::format("{}: nothing to read within {} s (a FIFO or pipe with "
					   "no writer?); expected a trace file, or a stream whose "
					   "writer is running", path, kStreamWaitMs / 1000);
			close(fd);
			return false;
		}
		wait = -1;
		if (p.revents & POLLHUP && !(p.revents & POLLIN))
			break;
	}
	close(fd);
	return true;
}

/* The report text of a trace.dat's bytes: through a temporary file when it came from a stream. */
bool reportOfBytes(const std::string &path, const std::string &bytes, bool regular,
		   std::string *text, std::string *err)
{
	char tmp[] = "/tmp/pokelab-timeline-XXXXXX.dat";
	int fd;
	bool ok;

	if (regular)
		return reportOf(path, text, err);
	fd = mkstemps(tmp, 4);
	if (fd < 0) {
		*err = fmt::format("{}: {}", tmp, strerror(errno));
		return false;
	}
	ok = write(fd, bytes.data(), bytes.size()) == (ssize_t)bytes.size();
	close(fd);
	ok = ok && reportOf(tmp, text, err);
	unlink(tmp);
	return ok;
}

int runTimeline()
{
	std::vector<TraceEvent> ev;
	std::string err, text, bytes;
	unsigned int nr;
	kshim::OutputFile out;
	struct stat st;
	bool regular = !stat(opts.trace.c_str(), &st) && S_ISREG(st.st_mode);

	char a[PATH_MAX], b[PATH_MAX];

	if (regular && realpath(opts.trace.c_str(), a) && realpath(opts.out.c_str(), b) &&
	    !strcmp(a, b)) {
		fmt::print(stderr, "pokelab: --output {}: is the trace itself; expected "
			   "another file\n", opts.out);
		return kExitUsage;
	}
	if (!readTrace(opts.trace, &bytes, &err)) {
		fmt::print(stderr, "pokelab: timeline: {}\n", err);
		return kExitUsage;
	}
	if (isDat(bytes)) {
		bool ok = reportOfBytes(opts.trace, bytes, regular, &text, &err);

		/* a cut trace.dat can give trace-cmd nothing to report, and no error */
		if (ok && text.empty()) {
			ok = false;
			err = "trace-cmd report gives nothing";
		}
		if (!ok) {
			fmt::print(stderr, "pokelab: timeline: {}: truncated or corrupt trace.dat "
				   "({})\n", opts.trace, err);
			return kExitUsage;
		}
	} else {
		/* what the first bytes say it is, before reading it as report text */
		size_t n = std::min<size_t>(bytes.size(), 4096), i = 0;

		while (i < n && isspace((unsigned char)bytes[i]))
			i++;
		if (i < n && (bytes[i] == '{' || bytes[i] == '[')) {
			fmt::print(stderr, "pokelab: timeline: {}: JSON (a --trace-json file?), "
				   "which it does not read; expected trace-cmd report text or a "
				   "trace.dat\n", opts.trace);
			return kExitUsage;
		}
		if (memchr(bytes.data(), '\0', n) ||
		    (n >= 3 && !memcmp(bytes.data(), "\x17\x08\x44", 3))) {
			fmt::print(stderr, "pokelab: timeline: {}: binary, and not a whole "
				   "trace.dat (truncated or corrupt?); expected trace-cmd report "
				   "text or a trace.dat\n", opts.trace);
			return kExitUsage;
		}
		/* a text trace cut mid-line (a run killed as it wrote): its last line left out */
		size_t nl = bytes.rfind('\n');

		if (!bytes.empty() && bytes.back() != '\n') {
			std::string cut = bytes.substr(nl == std::string::npos ? 0 : nl + 1);

			fmt::print(stderr, "pokelab: timeline: warning: {}: ends mid-line (cut "
				   "short?): its last line, line {}, \"{}\", is not drawn\n",
				   opts.trace, std::count(bytes.begin(), bytes.end(), '\n') + 1,
				   cut.substr(0, 60));
			bytes.resize(nl == std::string::npos ? 0 : nl + 1);
		}
		text.swap(bytes);
	}
	std::istringstream mem(text);
	unsigned long lines = 0;

	if (!parseTraceReport(mem, &ev, &nr, &err, &lines)) {
		fmt::print(stderr, "pokelab: timeline: {}: {}; expected trace-cmd report text or a "
			   "trace.dat\n", opts.trace, err);
		return kExitUsage;
	}
	if (!out.open(opts.out, &err)) {
		fmt::print(stderr, "pokelab: --output {}: {}\n", opts.out, err);
		return kExitUsage;
	}
	/*
	 * The default trace_event= leaves out the per-trap event (a run whose
	 * CPUs run the sites traps hundreds of times a flip): say why a batch
	 * has no INT3 mark, and what to record to see them.
	 */
	std::string note;
	bool int3Phase = std::any_of(ev.begin(), ev.end(), [](const TraceEvent &e) {
		return e.type == TraceType::TextPokeBatch && e.target == kshim::TRACE_BATCH_INT3;
	});

	if (int3Phase && std::none_of(ev.begin(), ev.end(), [](const TraceEvent &e) {
		    return e.type == TraceType::Int3Emulate;
	    }))
		note = "no INT3 trap marked: the trace holds no pokelab:int3_emulate event (the "
		       "default trace_event= leaves it out; record with trace_event=ipi,csd,"
		       "text_poke_batch,int3_emulate to see the traps)";
	/* --title is the whole title; by default the command line, which names the trace */
	out.write(timelineSvg(ev, nr, opts.title.empty() ? commandLine() : opts.title, note));
	if (!out.commit(&err)) {
		fmt::print(stderr, "pokelab: timeline: {}\n", err);
		return 1;
	}
	fmt::print("timeline: {} events read, {} of them of the kinds it draws, on {} CPUs\n",
		   lines, ev.size(), nr);
	sayWrote(opts.out, "--output");
	return 0;
}

void addTimeline(CLI::App &app)
{
	t = app.add_subcommand("timeline", "Draw a trace (--trace text or .dat) as an SVG timeline: "
					   "a lane per CPU, batch phases, IPIs, INT3 traps");
	t->add_option("trace", opts.trace, "The trace: trace-cmd report text or a trace.dat")
		->required();
	t->add_option("-o,--output", opts.out, "The SVG to write")->required();
	t->add_option("--title", opts.title, "The picture's title (default: the command line)");
	addTimelineGapOption(t, "--gap");
	t->add_option("--max-marks", timelineMarkLimit,
		      "Past this many marks (IPIs, INT3 traps, flushes; those of one pixel column "
		      "merged) draw their density per lane and pixel column instead (default: 2500)")
		->check(wholeNumber(0, 100000000));
}

bool timelineParsed()
{
	return t && t->parsed();
}

CommandRegistrar timelineCommand({60, addTimeline, timelineParsed, runTimeline});

} /* namespace */

} /* namespace pokelab */
