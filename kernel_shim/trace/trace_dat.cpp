// SPDX-License-Identifier: GPL-2.0-only
/*
 * trace.dat, version 6, as trace-cmd 3.1 reads it (trace-cmd.dat.v6(5)):
 * the file header, the kernel's header_page and header_event formats, the
 * event formats, a kallsyms table, the cmdlines, per-CPU statistics and
 * one run of ring-buffer pages per CPU.
 *
 * CUSTOM: the kernel's ring-buffer pages (kernel/trace/ring_buffer.c) are
 * rebuilt here from pokelab's events: a page is a u64 timestamp, a u64
 * commit (bytes of data; bit 31: events were lost before this page, bit
 * 30: their count is stored after the data) and the events, each a 32-bit
 * header (type_len:5 = payload length / 4, time_delta:27 from the previous
 * event) and its payload; a delta that does not fit in 27 bits is carried
 * by a time-extend event (type_len 30) first. Payloads start with the
 * kernel's common fields. Pages of a CPU go to a scratch file during the
 * run; finish() writes the header (which needs every symbol and pid seen)
 * and copies the pages in behind it.
 *
 * The ipi, csd and context_tracking events have the kernel's fields and
 * print formats (include/trace/events/ipi.h, csd.h, context_tracking.h);
 * pokelab's own carry formats of their own (docs/tracing.md).
 */
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <unistd.h>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include <linux/cpumask.h>

#include "trace_dat.h"

namespace kshim {

namespace {

constexpr unsigned int kPageSize = 4096;
constexpr unsigned int kPageHeader = 16;	/* u64 timestamp, u64 commit */
constexpr unsigned int kPageData = kPageSize - kPageHeader;
constexpr u64 kMissedEvents = 1ULL << 31;
constexpr u64 kMissedStored = 1ULL << 30;
constexpr unsigned int kTypeTimeExtend = 30;
constexpr unsigned int kTsBits = 27;
constexpr unsigned int kEventIdBase = 1000;

/* The largest payload (ipi_send_cpumask of NR_CPUS bits) fits a small record (type_len <= 28). */
static_assert(32 + (NR_CPUS + 63) / 64 * 8 <= 28 * 4, "a payload needs type_len 0 records");

/* The kernel's trace_entry flags (include/linux/trace_events.h) */
constexpr u8 kFlagIrqsOff = 0x01;
constexpr u8 kFlagHardirq = 0x08;

struct Field {
	const char *decl;	/* "unsigned int cpu" */
	unsigned int offset, size;
	bool sign;
};

struct Format {
	TraceType type;
	std::vector<Field> fields;
	unsigned int size;	/* fixed part of the payload, common fields included */
	const char *print;
};

const std::vector<Format> &formats()
{
	static const std::vector<Format> f = {
		{TraceType::IpiSendCpu,
		 {{"unsigned int cpu", 8, 4, false},
		  {"void * callsite", 16, 8, false},
		  {"void * callback", 24, 8, false}},
		 32,
		 "\"cpu=%u callsite=%pS callback=%pS\", REC->cpu, REC->callsite, "
		 "REC->callback"},
		{TraceType::IpiSendCpumask,
		 {{"__data_loc cpumask_t[] cpumask", 8, 4, false},
		  {"void * callsite", 16, 8, false},
		  {"void * callback", 24, 8, false}},
		 32,
		 "\"cpumask=%s callsite=%pS callback=%pS\", __get_bitmask(cpumask), "
		 "REC->callsite, REC->callback"},
		{TraceType::CsdQueueCpu,
		 {{"unsigned int cpu", 8, 4, false},
		  {"void * callsite", 16, 8, false},
		  {"void * func", 24, 8, false},
		  {"void * csd", 32, 8, false}},
		 40,
		 "\"cpu=%u callsite=%pS func=%ps csd=%p\", REC->cpu, REC->callsite, "
		 "REC->func, REC->csd"},
		{TraceType::CsdFunctionEntry,
		 {{"void * func", 8, 8, false}, {"void * csd", 16, 8, false}},
		 24,
		 "\"func=%ps, csd=%p\", REC->func, REC->csd"},
		{TraceType::CsdFunctionExit,
		 {{"void * func", 8, 8, false}, {"void * csd", 16, 8, false}},
		 24,
		 "\"func=%ps, csd=%p\", REC->func, REC->csd"},
		{TraceType::UserEnter, {{"int dummy", 8, 4, true}}, 12, "\"%s\", \"\""},
		{TraceType::UserExit, {{"int dummy", 8, 4, true}}, 12, "\"%s\", \"\""},
		{TraceType::TextPoke,
		 {{"void * addr", 8, 8, false},
		  {"unsigned int len", 16, 4, false},
		  {"unsigned int shown", 20, 4, false},
		  {"unsigned char bytes[8]", 24, 8, false}},
		 32,
		 "\"addr=%pS len=%u bytes=%s\", REC->addr, REC->len, "
		 "__print_hex_str(REC->bytes, REC->shown)"},
		{TraceType::TextPokeBatch,
		 {{"unsigned int nr_entries", 8, 4, false}, {"int phase", 12, 4, true}},
		 16,
		 "\"nr_entries=%u phase=%s\", REC->nr_entries, __print_symbolic(REC->phase, "
		 "{ 0, \"begin\" }, { 1, \"int3\" }, { 2, \"tails\" }, { 3, \"first_bytes\" }, "
		 "{ 4, \"done\" })"},
		{TraceType::Int3Emulate,
		 {{"void * addr", 8, 8, false}, {"void * to", 16, 8, false}},
		 24,
		 "\"addr=%pS to=%pS\", REC->addr, REC->to"},
		{TraceType::CtIdleEnter, {{"int dummy", 8, 4, true}}, 12, "\"%s\", \"\""},
		{TraceType::CtIdleExit, {{"int dummy", 8, 4, true}}, 12, "\"%s\", \"\""},
		{TraceType::CtWorkFlush,
		 {{"unsigned int work", 8, 4, false}},
		 12,
		 "\"work=%s\", __print_flags(REC->work, \"|\", { 1, \"SYNC\" })"},
	};
	return f;
}

const Format *formatOf(TraceType t)
{
	for (const Format &f : formats())
		if (f.type == t)
			return &f;
	return nullptr;
}

const TraceEventInfo &infoOf(TraceType t)
{
	for (const TraceEventInfo &i : traceEventTypes())
		if (i.type == t)
			return i;
	return traceEventTypes().front();
}

unsigned int eventId(TraceType t)
{
	return kEventIdBase + (unsigned int)t;
}

std::string formatText(const Format &f)
{
	std::string s = fmt::format("name: {}\nID: {}\nformat:\n", infoOf(f.type).name,
				    eventId(f.type));

	s += "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	     "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	     "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	     "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";
	for (const Field &fl : f.fields)
		s += fmt::format("\tfield:{};\toffset:{};\tsize:{};\tsigned:{};\n", fl.decl,
				 fl.offset, fl.size, fl.sign ? 1 : 0);
	s += fmt::format("\nprint fmt: {}\n", f.print);
	return s;
}

template <typename T> void put(std::string &s, T v)
{
	s.append((const char *)&v, sizeof(v));
}

template <typename T> void poke(u8 *p, unsigned int off, T v)
{
	memcpy(p + off, &v, sizeof(v));
}

/* One CPU's pages: the one being filled and the scratch file of those done. */
struct CpuPages {
	int fd = -1;
	u8 page[kPageSize];
	unsigned int used = 0;		/* data bytes in the page */
	u64 pageTs = 0, lastTs = 0;
	u64 lostNext = 0;		/* drops to mark on the next page */
	u64 lostThis = 0;		/* drops marked on this page */
	unsigned long pages = 0;
	unsigned long events = 0;
};

class DatSink : public TraceSink
{
public:
	DatSink(const TraceFilter &f) : f_(f) {}

	bool open(const std::string &path, std::string *err)
	{
		dir_ = outputDir(path);
		return out_.open(path, err);
	}

	void begin(const std::vector<TraceCpu> &cpus) override
	{
		cpus_.resize(cpus.size());
		comm_.clear();
		for (const TraceCpu &c : cpus)
			comm_.push_back(c.comm);
	}

	void event(const TraceEvent &e) override
	{
		if (e.cpu >= cpus_.size() || !err_.empty())
			return;
		CpuPages &c = cpus_[e.cpu];

		if (e.type == TraceType::Lost) {
			if (c.used)
				flushPage(c);
			c.lostNext += e.target;
			return;
		}
		if (!traceEventSelected(e, f_))
			return;
		u8 rec[128];
		unsigned int len = payload(e, rec);

		append(c, e.ts, rec, len);
		c.events++;
		pids_.emplace(e.pid, e.cpu);
	}

	bool finish(const std::vector<TraceCpu> &cpus, std::string *err) override
	{
		for (CpuPages &c : cpus_)
			if (c.used || c.lostNext)
				flushPage(c);
		if (!err_.empty()) {
			*err = err_;
			out_.abort();
			return false;
		}
		std::string h = header(cpus);
		u64 off = h.size() + 10 + 16 * cpus_.size();

		off = (off + kPageSize - 1) / kPageSize * kPageSize;
		h.append("flyrecord", 10);
		for (const CpuPages &c : cpus_) {
			put<u64>(h, c.pages ? off : 0);
			put<u64>(h, c.pages * kPageSize);
			off += c.pages * kPageSize;
		}
		h.resize((h.size() + kPageSize - 1) / kPageSize * kPageSize, '\0');
		out_.write(h);
		for (CpuPages &c : cpus_) {
			if (c.fd < 0)
				continue;
			if (!copyIn(c)) {
				*err = fmt::format("cannot write '{}': {}", out_.path(),
						   strerror(errno));
				out_.abort();
				return false;
			}
			close(c.fd);
			c.fd = -1;
		}
		return out_.commit(err);
	}

	~DatSink() override
	{
		for (CpuPages &c : cpus_)
			if (c.fd >= 0)
				close(c.fd);
	}

private:
	/* The event's payload in the kernel's layout; returns its length, a multiple of 4. */
	unsigned int payload(const TraceEvent &e, u8 *p)
	{
		const Format *f = formatOf(e.type);
		unsigned int len = f->size;
		u8 flags = (e.flags & TRACE_FLAG_IRQS_OFF ? kFlagIrqsOff : 0) |
			   (e.flags & TRACE_FLAG_HARDIRQ ? kFlagHardirq : 0);

		memset(p, 0, 128);
		poke<u16>(p, 0, (u16)eventId(e.type));
		poke<u8>(p, 2, flags);
		poke<u8>(p, 3, e.flags >> TRACE_PREEMPT_SHIFT);
		poke<s32>(p, 4, (s32)e.pid);
		switch (e.type) {
		case TraceType::IpiSendCpu:
			poke<u32>(p, 8, e.target);
			addr(p, 16, e.callsite);
			addr(p, 24, e.fn);
			break;
		case TraceType::IpiSendCpumask: {
			struct cpumask m;
			unsigned int bytes = (nr_cpu_ids + 63) / 64 * 8;

			if (f_.active)
				cpumask_and(&m, &e.mask, &f_.cpus);
			else
				cpumask_copy(&m, &e.mask);
			poke<u32>(p, 8, (bytes << 16) | len);
			addr(p, 16, e.callsite);
			addr(p, 24, e.fn);
			memcpy(p + len, cpumask_bits(&m), bytes);
			len += bytes;
			break;
		}
		case TraceType::CsdQueueCpu:
			poke<u32>(p, 8, e.target);
			addr(p, 16, e.callsite);
			addr(p, 24, e.fn);
			poke<u64>(p, 32, e.csd);
			break;
		case TraceType::CsdFunctionEntry:
		case TraceType::CsdFunctionExit:
			addr(p, 8, e.fn);
			poke<u64>(p, 16, e.csd);
			break;
		case TraceType::TextPoke:
			addr(p, 8, e.callsite);
			poke<u32>(p, 16, e.target);
			poke<u32>(p, 20, std::min(e.target, 8));
			poke<u64>(p, 24, e.fn);
			break;
		case TraceType::TextPokeBatch:
			poke<u32>(p, 8, (u32)e.callsite);
			poke<s32>(p, 12, e.target);
			break;
		case TraceType::Int3Emulate:
			addr(p, 8, e.callsite);
			addr(p, 16, e.fn);
			break;
		case TraceType::CtWorkFlush:
			poke<u32>(p, 8, e.target);
			break;
		default:
			break;
		}
		return (len + 3) & ~3u;
	}

	void addr(u8 *p, unsigned int off, unsigned long a)
	{
		poke<u64>(p, off, a);
		if (a)
			addrs_.insert(a);
	}

	void append(CpuPages &c, u64 ts, const u8 *rec, unsigned int len)
	{
		u64 delta = c.used ? ts - c.lastTs : 0;
		bool extend = delta >> kTsBits;
		unsigned int need = 4 + len + (extend ? 8 : 0);
		unsigned int room = kPageData - (c.lostNext || c.lostThis ? 8 : 0);

		if (c.used + need > room) {
			flushPage(c);
			delta = 0;
			extend = false;
			need = 4 + len;
		}
		if (!c.used) {
			c.pageTs = ts;
			c.lostThis = c.lostNext;
			c.lostNext = 0;
		}
		u8 *d = c.page + kPageHeader + c.used;

		if (extend) {
			poke<u32>(d, 0, kTypeTimeExtend | (u32)((delta & ((1u << kTsBits) - 1)) << 5));
			poke<u32>(d, 4, (u32)(delta >> kTsBits));
			d += 8;
			c.used += 8;
			delta = 0;
		}
		poke<u32>(d, 0, (len / 4) | (u32)(delta << 5));
		memcpy(d + 4, rec, len);
		c.used += 4 + len;
		c.lastTs = ts;
	}

	void flushPage(CpuPages &c)
	{
		u64 commit = c.used;

		if (!c.used) {
			/* drops with no later event: an empty page that carries them */
			c.lostThis = c.lostNext;
			c.lostNext = 0;
			c.pageTs = c.lastTs;
		}
		if (c.lostThis) {
			commit |= kMissedEvents | kMissedStored;
			poke<u64>(c.page, kPageHeader + c.used, c.lostThis);
		}
		poke<u64>(c.page, 0, c.pageTs);
		poke<u64>(c.page, 8, commit);
		memset(c.page + kPageHeader + c.used + (c.lostThis ? 8 : 0), 0,
		       kPageData - c.used - (c.lostThis ? 8 : 0));
		if (c.fd < 0 && (c.fd = scratchFile(dir_, &err_)) < 0)
			return;
		for (size_t done = 0; done < kPageSize;) {
			ssize_t r = ::write(c.fd, c.page + done, kPageSize - done);

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				err_ = fmt::format("cannot write '{}': {}", out_.path(),
						   strerror(r < 0 ? errno : ENOSPC));
				return;
			}
			done += r;
		}
		c.pages++;
		c.used = 0;
		c.lostThis = 0;
	}

	bool copyIn(CpuPages &c)
	{
		static char buf[1 << 20];

		if (lseek(c.fd, 0, SEEK_SET))
			return false;
		for (;;) {
			ssize_t r = read(c.fd, buf, sizeof(buf));

			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				return false;
			if (!r)
				return true;
			if (!out_.write(buf, r))
				return false;
		}
	}

	std::string header(const std::vector<TraceCpu> &cpus)
	{
		std::string h("\x17\x08\x44tracing", 10);
		std::string s;

		h.append("6", 2);
		put<u8>(h, 0);		/* little endian */
		put<u8>(h, 8);		/* long */
		put<u32>(h, kPageSize);

		h.append("header_page", 12);
		s = fmt::format("\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
				"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
				"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
				"\tfield: char data;\toffset:16;\tsize:{};\tsigned:1;\n", kPageData);
		put<u64>(h, s.size());
		h += s;
		h.append("header_event", 13);
		s = "# compressed entry header\n"
		    "\ttype_len    :    5 bits\n"
		    "\ttime_delta  :   27 bits\n"
		    "\tarray       :   32 bits\n\n"
		    "\tpadding     : type == 29\n"
		    "\ttime_extend : type == 30\n"
		    "\ttime_stamp : type == 31\n"
		    "\tdata max type_len  == 28\n";
		put<u64>(h, s.size());
		h += s;

		put<u32>(h, 0);		/* no ftrace-internal event formats */

		std::map<std::string, std::vector<const Format *>> systems;
		for (const Format &f : formats())
			systems[infoOf(f.type).system].push_back(&f);
		put<u32>(h, systems.size());
		for (auto &[sys, fs] : systems) {
			h.append(sys.c_str(), sys.size() + 1);
			put<u32>(h, fs.size());
			for (const Format *f : fs) {
				s = formatText(*f);
				put<u64>(h, s.size());
				h += s;
			}
		}

		/*
		 * kallsyms, as /proc/kallsyms lines: the executable's functions
		 * (libtraceevent ends a symbol where the next one starts), and
		 * those of the libraries that the events point into.
		 */
		std::map<unsigned long, std::string> syms;
		for (auto &[a, n] : traceSymbolTable())
			syms.emplace(a, n);
		for (unsigned long a : addrs_) {
			unsigned long start;
			std::string name;

			if (traceSymbolStart(a, &start, &name))
				syms.emplace(start, name);
		}
		s.clear();
		for (auto &[a, n] : syms)
			s += fmt::format("{:016x} T {}\n", a, n);
		put<u32>(h, s.size());
		h += s;

		put<u32>(h, 0);		/* no trace_printk formats */

		s.clear();
		for (auto &[pid, cpu] : pids_)
			s += fmt::format("{} {}\n", pid, cpu < comm_.size() ? comm_[cpu] : "<...>");
		put<u64>(h, s.size());
		h += s;

		put<u32>(h, cpus_.size());
		h.append("options  ", 10);
		for (size_t i = 0; i < cpus_.size(); i++) {
			/* per_cpu/cpuN/stats, as trace-cmd record stores them (report --stat) */
			unsigned long written = i < cpus.size() ? cpus[i].written : 0;
			unsigned long dropped = i < cpus.size() ? cpus[i].dropped : 0;

			/* no-overwrite mode: drops are "dropped events", never overruns */
			s = fmt::format("CPU: {}\nentries: 0\noverrun: 0\ncommit overrun: 0\n"
					"bytes: {}\ndropped events: {}\nread events: {}\n", i,
					cpus_[i].pages * kPageSize, dropped, written);
			put<u16>(h, 2);		/* TRACECMD_OPTION_CPUSTATS */
			put<u32>(h, s.size() + 1);
			h.append(s.c_str(), s.size() + 1);
		}
		put<u16>(h, 0);
		return h;
	}

	TraceFilter f_;
	OutputFile out_;
	std::string dir_, err_;
	std::vector<CpuPages> cpus_;
	std::vector<std::string> comm_;
	std::unordered_set<unsigned long> addrs_;
	std::map<u32, u16> pids_;
};

} /* namespace */

/*
 * The kernel stores a cpumask field as nr_cpu_ids bits in longs;
 * libtraceevent prints it in 32-bit words, most significant first, each
 * as 8 hex digits, separated by commas.
 */
std::string traceBitmask(const struct cpumask *m)
{
	unsigned int words = (nr_cpu_ids + 63) / 64 * 2;
	std::string s;

	for (unsigned int w = words; w-- > 0;) {
		u32 v = (u32)(cpumask_bits(m)[w / 2] >> (32 * (w % 2)));

		s += fmt::format("{}{:08x}", s.empty() ? "" : ",", v);
	}
	return s;
}

std::string traceBatchPhaseName(int phase)
{
	static const char *const names[] = {"begin", "int3", "tails", "first_bytes", "done"};

	if (phase >= 0 && phase < 5)
		return names[phase];
	return fmt::format("{:#x}", phase);
}

std::string traceCtWorkName(int work)
{
	std::string s;
	unsigned int w = work;

	if (w & 1) {
		s = "SYNC";
		w &= ~1u;
	}
	if (w)
		s += fmt::format("{}{:#x}", s.empty() ? "" : "|", w);
	return s;
}

std::unique_ptr<TraceSink> makeDatSink(const std::string &path, const TraceFilter &f,
				       std::string *err)
{
	auto sink = std::make_unique<DatSink>(f);

	if (!sink->open(path, err))
		return nullptr;
	return sink;
}

} /* namespace kshim */
