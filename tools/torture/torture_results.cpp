// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab torture --results FILE (torture_results.h): one JSON line per run.
 *
 * FILE is append-only JSON Lines, so that a campaign's runs, or a person's
 * runs over a week, accumulate in one file a merge reads. It is the one
 * output of the tools that is not written whole and renamed into place
 * (kernel_shim/trace/output_file.cpp): a rename would drop the lines of a
 * run that appended meanwhile. What that rule guarantees is kept another
 * way:
 *
 *	never half-written	each record is one write(2) of the whole line
 *				under flock(LOCK_EX); a short write (ENOSPC) is
 *				truncated away before the lock is dropped, so
 *				every line a reader sees is whole
 *	never followed		O_NOFOLLOW|O_NONBLOCK, then fstat(): a symlink,
 *				FIFO, device or directory is refused
 *	never clobbered		an existing file must be empty or begin with a
 *				torture record and end with a newline; anything
 *				else is refused before the machine boots
 *
 * A run that crashes still leaves its line: the start of the record is
 * rendered after the boot, and the death hook appends it with the verdict
 * FAILURE and "crash": true using write(2) only. A run killed outright
 * (SIGKILL, a second Ctrl-C) leaves none; tools/campaign records that as a
 * lost run.
 */
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <asm/tlbflush.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/xmc.h>
#include <kernel_shim/xmc_verdict.h>
#include <linux/context_tracking.h>
#include <linux/cpumask.h>
#include <pokelab/text_poke_stats.h>

#include "pokelab_git.h"
#include "wrote.h"
#include "torture_results.h"

namespace pokelab::torture {

namespace {

/* A replay command's word made only of these needs no quotes. */
constexpr const char *kUnquoted = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
				  "_-+=.,/:@%";

/* The first line of every record: what tools/campaign and resultsOpen() recognise. */
constexpr const char *kFormat = "pokelab-torture-result/1";

int fd = -1;
std::string path;
std::string head;		/* the record up to its last field's ",", from resultsBegin() */
std::string line;		/* the whole record, from resultsEnd() */
std::atomic<bool> begun, written;
u64 t0;				/* resultsBegin()'s clock */
char firstReport[1024];		/* for the crash path: filled once, before any crash */
std::atomic<size_t> firstLen;
std::atomic<bool> firstTaken;

const char *kindOf(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISLNK(m) ? "a symbolic link" :
	       S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" : "a device";
}

/* Is @f's file empty, or torture's (its first line a record, its last byte a newline)? */
bool ours(int f, off_t size, std::string *why)
{
	static char buf[65536];
	char last;
	ssize_t n;
	char *nl;

	/* a size of 0 may be a pseudo-file's (/proc, /sys): empty only if nothing reads */
	if (size == 0) {
		n = pread(f, buf, 1, 0);
		if (n == 0)
			return true;
		*why = n < 0 ? strerror(errno)
			     : "a pseudo-file (its size reads 0, yet it has content: /proc or /sys?)";
		return false;
	}
	n = pread(f, buf, sizeof(buf), 0);
	if (n <= 0) {
		*why = n < 0 ? strerror(errno) : "cannot read it";
		return false;
	}
	nl = (char *)memchr(buf, '\n', n);
	nlohmann::json j = nlohmann::json::parse(buf, nl ? nl : buf + n, nullptr, false);
	if (!j.is_object() || !j.contains("format") || !j["format"].is_string() ||
	    j["format"].get<std::string>().rfind("pokelab-torture-result/", 0) != 0) {
		*why = "its first line is not a torture result record";
		return false;
	}
	if (pread(f, &last, 1, size - 1) != 1 || last != '\n') {
		*why = "its last line is incomplete";
		return false;
	}
	return true;
}

/* @s for a shell: as it is, or in single quotes (each ' as '\'') */
std::string shellWord(const std::string &s)
{
	std::string q = "'";

	if (!s.empty() && s.find_first_not_of(kUnquoted) == std::string::npos)
		return s;
	for (char c : s)
		q += c == '\'' ? std::string("'\\''") : std::string(1, c);
	return q + "'";
}

} /* namespace */

bool resultsOpen(const std::string &p, std::string *err)
{
	struct stat st;
	std::string why;

	if (!lstat(p.c_str(), &st) && !S_ISREG(st.st_mode)) {
		*err = fmt::format("{}: {}; results are appended to a regular file, so give a "
				   "file path", p, kindOf(st.st_mode));
		return false;
	}
	fd = open(p.c_str(), O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
		  0644);
	if (fd < 0) {
		int e = errno;
		std::string dir = p.find('/') == std::string::npos ? "." : p.substr(0, p.rfind('/'));

		/* ENOENT from a directory that is there: it takes no new files (/proc, /sys) */
		if (e == ENOENT && !stat(dir.empty() ? "/" : dir.c_str(), &st) && S_ISDIR(st.st_mode))
			why = fmt::format("its directory, {}, takes no new files",
					  dir.empty() ? "/" : dir);
		*err = fmt::format("{}: {}; expected --results FILE (a file torture appends "
				   "to)", p, e == ELOOP ? "a symbolic link"
				   : !why.empty() ? why.c_str() : strerror(e));
		return false;
	}
	/* checked again on what was opened: nothing swapped in between is used */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    (flock(fd, LOCK_SH), !ours(fd, st.st_size, &why))) {
		*err = fmt::format("{}: {}; expected a new file or one torture --results "
				   "wrote", p, why.empty() ? kindOf(st.st_mode) : why.c_str());
		close(fd);
		fd = -1;
		return false;
	}
	flock(fd, LOCK_UN);
	path = p;
	return true;
}

bool resultsWanted()
{
	return fd >= 0;
}

void resultsBegin(const ResultsRun &r)
{
	nlohmann::ordered_json j, o, argv;
	char host[HOST_NAME_MAX + 1] = "", exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *mod;
	time_t now = time(nullptr);
	struct tm tm;
	char when[32];

	if (fd < 0)
		return;
	/* after the check: realpath() allocates, and a run without --results records nothing */
	mod = r.module.empty() ? nullptr : realpath(r.module.c_str(), nullptr);
	gethostname(host, sizeof(host) - 1);
	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	exe[n > 0 ? n : 0] = 0;
	/* the replay: the same program, seed, CPU count and options; no outputs */
	argv = {n > 0 ? exe : "pokelab", "torture", "--seed", std::to_string(r.seed)};
	if (r.ops)
		argv.insert(argv.end(), {"--ops", std::to_string(r.ops)});
	else
		argv.insert(argv.end(), {"--duration", std::to_string(r.duration)});
	argv.insert(argv.end(), {"--cpus", std::to_string(r.cpus)});
	if (!r.nohzFull.empty())
		argv.insert(argv.end(), {"--nohz-full", r.nohzFull});
	if (!r.ctDefer.empty())
		argv.insert(argv.end(), {"--ct-defer", r.ctDefer});
	if (mod || !r.module.empty())
		argv.insert(argv.end(), {"--module", mod ? mod : r.module});
	/* nr_cpus= is --cpus above, the count it booted: both would be refused if they differ */
	for (const std::string &p : r.params)
		if (p.rfind("nr_cpus=", 0))
			argv.push_back(p);

	o["duration"] = r.ops ? nlohmann::ordered_json() : nlohmann::ordered_json(r.duration);
	o["ops"] = r.ops ? nlohmann::ordered_json(r.ops) : nlohmann::ordered_json();
	o["cpus"] = r.cpus;
	o["nohz_full"] = r.nohzFull;
	o["ct_defer"] = r.ctDefer;
	o["module"] = mod ? mod : r.module;
	o["params"] = r.params;
	free(mod);

	j["format"] = kFormat;
	j["version"] = POKELAB_VERSION;
	j["git"] = POKELAB_GIT;
	j["host"] = host;
	j["start"] = when;
	j["seed"] = r.seed;
	j["options"] = o;
	j["boot"] = r.boot;
	j["machine"] = r.machine;
	j["argv"] = argv;
	{
		std::string replay;

		for (const auto &a : argv)
			replay += (replay.empty() ? "" : " ") + shellWord(a.get<std::string>());
		j["replay"] = replay;
	}
	/* "{...}" less its "}": the fields the end adds follow a "," */
	head = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
	head.back() = ',';
	t0 = kshim::clockNs();
	begun.store(true, std::memory_order_release);
}

void resultsFirstReport(const std::string &text)
{
	std::string first = text.substr(0, text.find('\n'));
	size_t n = std::min(first.size(), sizeof(firstReport) - 1);

	if (firstTaken.exchange(true))
		return;
	memcpy(firstReport, first.data(), n);
	firstLen.store(n, std::memory_order_release);
}

void resultsEnd(const char *verdict, const std::string &reason, const std::string &first,
		unsigned long decisions, unsigned long warns, double secs, int exitStatus)
{
	nlohmann::ordered_json j, c;
	unsigned long int3 = 0, ipis = 0, flushes = 0, nmis = 0;
	kshim::XmcStats x = kshim::xmcStats();

	if (!begun.load(std::memory_order_acquire))
		return;
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		int3 += pokelab::int3Emulated(cpu);
		ipis += kshim::cpuStats(cpu).ipiReceived;
		flushes += pokelab::ctWorkFlushed(cpu);
		nmis += kshim::nmiCount(cpu);
	}
	/* the status line's counts, the model's and the run's */
	c["batches"] = pokelab::textPokeStats().batches;
	c["text_writes"] = pokelab::textPokeStats().pokes;
	c["int3_emulated"] = int3;
	c["ipis"] = ipis;
	c["deferred_flushes"] = flushes;
	c["remaps"] = kshim::tlbChanges();
	c["range_touches"] = kshim::tlbTouches();
	c["nmis"] = nmis;
	c["violations"] = x.violations;
	c["model_events"] = x.events();
	c["decisions"] = decisions;
	c["console_reports"] = warns;

	j["verdict"] = verdict;
	j["reason"] = reason;
	/* the first violation as reported, else the caller's line */
	j["first_report"] = firstLen.load() && strcmp(verdict, "SUCCESS")
				    ? std::string(firstReport, firstLen.load())
				    : first;
	j["crash"] = false;
	j["model"] = !kshim::xmcEnabled ? "off" : x.violations ? "FAIL" :
		     x.writes ? "PASS" : "NOTHING CHECKED";
	j["counts"] = c;
	j["duration_s"] = (double)(long)(secs * 1000) / 1000;
	j["exit"] = exitStatus;
	line = head + j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).substr(1) +
	       "\n";
}

namespace {

/*
 * Append @iov (@n parts, @len bytes in all) as one write under the file's
 * lock: a short write is cut back off, so no reader ever sees half a line.
 * Uses only system calls: the crash path's too.
 */
bool appendLocked(struct iovec *iov, int n, size_t len, int *error) noexcept
{
	struct stat st;
	off_t at = -1;		/* where our line begins */
	ssize_t w;
	bool ok;

	while (flock(fd, LOCK_EX) && errno == EINTR)
		;
	if (!fstat(fd, &st)) {
		char last = '\n';

		at = st.st_size;
		/* someone else's unlocked line left without its newline: ours starts its own */
		if (at > 0 && pread(fd, &last, 1, at - 1) == 1 && last != '\n' &&
		    write(fd, "\n", 1) == 1)
			at++;
	}
	do
		w = writev(fd, iov, n);
	while (w < 0 && errno == EINTR);
	ok = w == (ssize_t)len;
	*error = ok ? 0 : w < 0 ? errno : ENOSPC;
	/* a short write (ENOSPC, EDQUOT): cut back to where the line began */
	if (!ok && w > 0 && at >= 0) {
		int r = ftruncate(fd, at);

		(void)r;
	}
	if (ok && fsync(fd))
		*error = errno, ok = false;
	flock(fd, LOCK_UN);
	return ok;
}

/* @s as a JSON string's contents: quotes, backslashes and control bytes escaped. */
size_t jsonEscape(char *out, size_t room, const char *s, size_t n) noexcept
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	for (size_t i = 0; i < n && o + 6 < room; i++) {
		unsigned char ch = s[i];

		if (ch == '"' || ch == '\\') {
			out[o++] = '\\';
			out[o++] = ch;
		} else if (ch < 0x20) {
			memcpy(out + o, "\\u00", 4);
			out[o + 4] = hex[ch >> 4];
			out[o + 5] = hex[ch & 15];
			o += 6;
		} else {
			out[o++] = ch;
		}
	}
	return o;
}

size_t append(char *out, size_t o, size_t room, const char *s) noexcept
{
	size_t n = strlen(s);

	if (o + n >= room)
		return o;
	memcpy(out + o, s, n);
	return o + n;
}

} /* namespace */

bool resultsWrite(std::string *err)
{
	struct iovec iov;
	int error;

	if (fd < 0 || line.empty() || written.exchange(true))
		return true;
	iov = {line.data(), line.size()};
	if (!appendLocked(&iov, 1, line.size(), &error)) {
		*err = fmt::format("--results {}: the record was not written: {}", path,
				   strerror(error));
		return false;
	}
	/* the record is in place, whole: named as every written file is (wrote.h) */
	pokelab::sayWrote(path, "--results");
	return true;
}

void resultsCrash() noexcept
{
	static char tail[4096];
	struct iovec iov[2];
	u64 ms;
	size_t o = 0, n;
	int error;
	char num[24];
	bool reported = kshim::xmcReported();

	if (fd < 0 || !begun.load(std::memory_order_acquire) || written.exchange(true))
		return;
	o = append(tail, o, sizeof(tail), "\"verdict\":\"FAILURE\",\"reason\":\"");
	o = append(tail, o, sizeof(tail),
		   reported ? "the model reported a violation before the crash"
			    : "crashed; the model reported nothing before it");
	o = append(tail, o, sizeof(tail), "\",\"first_report\":\"");
	n = firstLen.load(std::memory_order_acquire);
	o += jsonEscape(tail + o, sizeof(tail) - o - 256, firstReport, n);
	o = append(tail, o, sizeof(tail), "\",\"crash\":true,\"reported_before_crash\":");
	o = append(tail, o, sizeof(tail), reported ? "true" : "false");
	o = append(tail, o, sizeof(tail), ",\"duration_s\":");
	ms = (kshim::clockNs() - t0) / 1000000;
	/* "S.mmm", by hand: no printf on the way down */
	n = 0;
	do
		num[n++] = '0' + ms % 10, ms /= 10;
	while (ms || n < 4);
	for (size_t i = n; i-- > 0;) {
		tail[o++] = num[i];
		if (i == 3)
			tail[o++] = '.';
	}
	o = append(tail, o, sizeof(tail), ",\"exit\":1}\n");
	iov[0] = {head.data(), head.size()};
	iov[1] = {tail, o};
	(void)appendLocked(iov, 2, head.size() + o, &error);
}

} /* namespace pokelab::torture */
