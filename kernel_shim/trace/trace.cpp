// SPDX-License-Identifier: GPL-2.0-only
/*
 * Per-CPU trace rings: the machine's stand-in for the ftrace ring buffer.
 *
 * Each CPU owns one circular ring of fixed-size TraceEvent slots, with two
 * positions that only grow: head (reserved by writers) and tail (freed by
 * the one reader). A writer (task context, or the IPI or INT3 signal
 * handler interrupting it on the same CPU) reserves position @pos with a
 * compare-and-swap of head, provided the ring is not full
 * (pos - tail < size), fills slot pos % size and commits it with a release
 * store of the tag pos + 1. A nested writer simply takes the next
 * position; the outer one's CAS then fails once and retries. A full ring
 * drops the event and counts it, never waiting (the kernel's no-overwrite
 * mode).
 *
 * The reader copies slots in position order while their tag says they are
 * committed, then releases them with a store of tail:
 *
 *	writer (CPU n)				reader (recorder)
 *	pos = head; t = tail (acquire)		copy slot[t % size] ... slot[p - 1]
 *	  pairs with the reader's release ->	tail = p (release)
 *	CAS head pos -> pos + 1
 *	fill slot, tag = pos + 1 (release) ->	sees tag == pos + 1 (acquire), copies
 *
 * so a writer never overwrites a slot the reader is still copying, and the
 * reader never copies a slot before its fields are written. Positions are
 * never reset while the process lives, so a tag is never reused and a slot
 * left from an earlier session never passes for a new one.
 *
 * Rings are allocated in traceStart() and never freed while the process
 * lives (a writer may still be inside one after traceStop()); a ring of the
 * wrong size is retired, not freed.
 */
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <new>
#include <string>
#include <mutex>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include <kernel_shim/boot.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/trace.h>
#include <linux/bug.h>
#include <linux/preempt.h>
#include <linux/smp.h>


namespace kshim {

namespace {

/* The kernel's default trace_buf_size (bytes per CPU). */
constexpr unsigned long kDefaultTraceBufSize = 1441792;

unsigned long traceBufSize = kDefaultTraceBufSize;

struct alignas(SMP_CACHE_BYTES) TraceRing {
	/* written by this CPU's writers */
	std::atomic<unsigned long> head{0};
	std::atomic<unsigned long> dropped{0};
	/* written by the reader */
	alignas(SMP_CACHE_BYTES) std::atomic<unsigned long> tail{0};
	unsigned long droppedRead = 0;	/* drops already reported by a Lost mark */
	unsigned long droppedBase = 0;	/* the drop counter at traceStart() */
	unsigned long written = 0;	/* events read out this session */
	u64 lastTs = 0;			/* the last event read out */
	std::unique_ptr<TraceEvent[]> ev;
	size_t size = 0;
	char comm[16] = "";
};

/*
 * A late writer of an earlier session may still load its CPU's pointer:
 * rings are published with a release store and never freed (a ring of the
 * wrong size is retired, not freed), so it sees the old ring or the new one.
 */
std::atomic<TraceRing *> rings[NR_CPUS];
std::vector<std::unique_ptr<TraceRing>> owned;
unsigned int traceNrCpus;

thread_local u32 tlsTid __attribute__((tls_model("initial-exec")));

const std::vector<TraceEventInfo> eventTypes = {
	{TraceType::IpiSendCpu, "ipi", "ipi_send_cpu", true},
	{TraceType::IpiSendCpumask, "ipi", "ipi_send_cpumask", true},
	{TraceType::CsdQueueCpu, "csd", "csd_queue_cpu", true},
	{TraceType::CsdFunctionEntry, "csd", "csd_function_entry", true},
	{TraceType::CsdFunctionExit, "csd", "csd_function_exit", true},
	{TraceType::UserEnter, "context_tracking", "user_enter", false},
	{TraceType::UserExit, "context_tracking", "user_exit", false},
	{TraceType::TextPoke, "pokelab", "text_poke", false},
	{TraceType::TextPokeBatch, "pokelab", "text_poke_batch", true},
	{TraceType::Int3Emulate, "pokelab", "int3_emulate", false},
	{TraceType::CtIdleEnter, "pokelab", "ct_idle_enter", false},
	{TraceType::CtIdleExit, "pokelab", "ct_idle_exit", false},
	{TraceType::CtWorkFlush, "pokelab", "ct_work_flush", false},
};

u32 defaultEvents()
{
	u32 m = 0;

	for (const TraceEventInfo &t : eventTypes)
		if (t.byDefault)
			m |= traceBit(t.type);
	return m;
}

u32 eventsWanted = defaultEvents();

/* Port of the trace_event= boot parameter's list syntax, kernel/trace/trace_events.c */
int setTraceEvent(const char *val, std::string &err)
{
	std::string list = val ? val : "";
	u32 m = 0;
	size_t pos = 0;

	if (list.empty())
		goto bad;
	while (pos <= list.size()) {
		size_t comma = list.find(',', pos);
		std::string item = list.substr(pos, comma == std::string::npos ? std::string::npos
									 : comma - pos);
		std::string sys, ev;
		size_t colon = item.find(':');
		bool hit = false;

		pos = comma == std::string::npos ? list.size() + 1 : comma + 1;
		if (item.empty())
			goto bad;
		if (colon == std::string::npos) {
			ev = item;
		} else {
			sys = item.substr(0, colon);
			ev = item.substr(colon + 1);
		}
		for (const TraceEventInfo &t : eventTypes) {
			/* a bare word names an event or a whole system, as in the kernel */
			if (colon == std::string::npos) {
				if (ev != "*" && ev != t.name && ev != t.system)
					continue;
			} else if ((!sys.empty() && sys != "*" && sys != t.system) ||
				   (!ev.empty() && ev != "*" && ev != t.name)) {
				continue;
			}
			m |= traceBit(t.type);
			hit = true;
		}
		if (!hit) {
			val = nullptr;
			list = item;
			goto bad;
		}
	}
	eventsWanted = m;
	return 0;
bad:
	{
		std::string names;

		for (const TraceEventInfo &t : eventTypes)
			names += fmt::format("{}{}:{}", names.empty() ? "" : ", ", t.system, t.name);
		err = fmt::format("trace_event: {} '{}'; expected trace_event=SYSTEM:EVENT[,...] "
				  "(SYSTEM:*, and SYSTEM or EVENT alone, allowed) of {}",
				  val ? "bad list" : "no such event", list, names);
	}
	return -EINVAL;
}

BootParamRegistrar traceEventParam({
	"trace_event", setTraceEvent, [] { eventsWanted = defaultEvents(); },
	"trace_event=SYSTEM:EVENT[,...]: events to record (default: "
	"ipi:*,csd:*,pokelab:text_poke_batch)",
});

/* Port of the trace_buf_size= boot parameter (memparse() suffixes K, M, G), kernel/trace/trace.c */
int setTraceBufSize(const char *val, std::string &err)
{
	char *end;
	unsigned long v;

	if (!val || !*val)
		goto bad;
	errno = 0;
	v = strtoul(val, &end, 10);
	if (errno || end == val)
		goto bad;
	switch (*end) {
	case 'G': case 'g':
		v <<= 10;
		[[fallthrough]];
	case 'M': case 'm':
		v <<= 10;
		[[fallthrough]];
	case 'K': case 'k':
		v <<= 10;
		end++;
		break;
	default:
		break;
	}
	if (*end || v < sizeof(TraceEvent) || v > (1UL << 32))
		goto bad;
	traceBufSize = v;
	return 0;
bad:
	err = fmt::format("trace_buf_size: bad value '{}'; expected trace_buf_size=BYTES per CPU "
			  "(optional K/M/G suffix, {}..4G)", val ? val : "", sizeof(TraceEvent));
	return -EINVAL;
}

BootParamRegistrar traceBufSizeParam({
	"trace_buf_size", setTraceBufSize, [] { traceBufSize = kDefaultTraceBufSize; },
	"trace_buf_size=BYTES: per-CPU trace ring size (K/M/G suffix allowed)",
});

} /* namespace */

const std::vector<TraceEventInfo> &traceEventTypes()
{
	return eventTypes;
}

u32 traceEventsWanted() noexcept
{
	return eventsWanted;
}

int traceStart(size_t eventsPerCpu, std::string *err, u32 events)
{
	unsigned int n = nr_cpu_ids;

	BUG_ON(!booted());
	BUG_ON(traceEnabled.load());
	if (!eventsPerCpu)
		eventsPerCpu = traceBufSize / sizeof(TraceEvent);

	/* The rings are zeroed, so they are really backed: refuse more than half the RAM. */
	unsigned long long want = (unsigned long long)eventsPerCpu * sizeof(TraceEvent) * n;
	unsigned long long ram = (unsigned long long)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE);
	if (want > ram / 2) {
		if (err)
			*err = fmt::format("trace_buf_size={}: {} CPUs x {} bytes = {} MiB of trace "
					   "rings, more than half of this machine's {} MiB; use a "
					   "smaller trace_buf_size= (bytes per CPU, K/M/G)",
					   traceBufSize, n, eventsPerCpu * sizeof(TraceEvent),
					   want >> 20, ram >> 20);
		return -ENOMEM;
	}

	for (unsigned int cpu = 0; cpu < n; cpu++) {
		TraceRing *r = rings[cpu].load(std::memory_order_relaxed);

		if (!r || r->size != eventsPerCpu) {
			auto fresh = std::make_unique<TraceRing>();

			/* zeroed, so no slot carries a live commit tag */
			fresh->ev.reset(new (std::nothrow) TraceEvent[eventsPerCpu]());
			if (!fresh->ev) {
				if (err)
					*err = fmt::format("trace_buf_size={}: cannot allocate {} "
							   "bytes of trace ring for CPU {}",
							   traceBufSize,
							   eventsPerCpu * sizeof(TraceEvent), cpu);
				return -ENOMEM;
			}
			fresh->size = eventsPerCpu;
			r = fresh.get();
			owned.push_back(std::move(fresh));
			rings[cpu].store(r, std::memory_order_release);
		}
		/* What an earlier session left unread is discarded, not reported. */
		r->tail.store(r->head.load(std::memory_order_relaxed), std::memory_order_relaxed);
		r->droppedBase = r->droppedRead = r->dropped.load(std::memory_order_relaxed);
		r->written = 0;
		r->lastTs = 0;
		if (pthread_getname_np(cpuThread(cpu), r->comm, sizeof(r->comm)))
			snprintf(r->comm, sizeof(r->comm), "cpu%u", cpu);
		/* a comm must stay one awk field */
		for (char *p = r->comm; *p; p++)
			if (*p == ' ' || *p == '\t')
				*p = '_';
	}
	traceNrCpus = n;
	/* Everything above is visible to a writer that sees its event enabled. */
	traceProbe = traceRecord;
	traceEnabled.store(events ? events : eventsWanted, std::memory_order_release);
	return 0;
}

void traceStop() noexcept
{
	traceEnabled.store(0, std::memory_order_release);
}

size_t traceRingSize() noexcept
{
	TraceRing *r = rings[0].load(std::memory_order_acquire);

	return r ? r->size : 0;
}

void traceRecord(TraceType type, int target, unsigned long callsite, unsigned long fn,
		 unsigned long csd, const struct cpumask *mask) noexcept
{
	int cpu = tlsCpu;
	TraceRing *r;
	unsigned long pos, depth;

	/* Pairs with the release in traceStart(): the rings and traceNrCpus are set up. */
	if (cpu < 0 || !(traceEnabled.load(std::memory_order_acquire) & traceBit(type)) ||
	    (unsigned int)cpu >= traceNrCpus)
		return;
	/* pairs with the release in traceStart(): the ring is set up */
	r = rings[cpu].load(std::memory_order_acquire);
	pos = r->head.load(std::memory_order_relaxed);
	do {
		/* Pairs with the release of tail in traceDrainCpu(): that slot is read out. */
		if (pos - r->tail.load(std::memory_order_acquire) >= r->size) {
			r->dropped.fetch_add(1, std::memory_order_relaxed);
			return;
		}
	} while (!r->head.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed));

	if (!tlsTid)
		tlsTid = (u32)syscall(SYS_gettid);
	TraceEvent &e = r->ev[pos % r->size];

	e.ts = clockNs();
	e.pid = tlsTid;
	e.cpu = (u16)cpu;
	e.type = type;
	depth = std::min<unsigned long>(preempt_count() & PREEMPT_MASK, 15);
	e.flags = (cpuIrqsDisabled(cpu) ? TRACE_FLAG_IRQS_OFF : 0) |
		  (cpuInHardirq(cpu) ? TRACE_FLAG_HARDIRQ : 0) |
		  (depth << TRACE_PREEMPT_SHIFT);
	e.target = target < 0 ? cpu : target;
	e.callsite = callsite;
	e.fn = fn;
	e.csd = csd;
	if (mask)
		cpumask_copy(&e.mask, mask);
	else
		cpumask_clear(&e.mask);
	/* Commit: pairs with the acquire in traceDrainCpu(). */
	__atomic_store_n(&e.seq, (u64)pos + 1, __ATOMIC_RELEASE);
}

bool traceDrainCpu(unsigned int cpu, std::vector<TraceEvent> &out, bool final)
{
	TraceRing *r = cpu < traceNrCpus ? rings[cpu].load(std::memory_order_acquire) : nullptr;
	unsigned long t, h, d, gaps = 0;

	if (!r)
		return false;
	/*
	 * Drops first: a drop needs a full ring, so those counted here came
	 * after every event reserved before the head read below, and before
	 * every event reserved after it. The Lost mark goes after what this
	 * drain reads.
	 */
	d = r->dropped.load(std::memory_order_relaxed);
	t = r->tail.load(std::memory_order_relaxed);
	h = r->head.load(std::memory_order_acquire);
	for (; t != h; t++) {
		const TraceEvent &e = r->ev[t % r->size];

		if (__atomic_load_n(&e.seq, __ATOMIC_ACQUIRE) != (u64)t + 1) {
			/* tracing is off and the CPUs quiet: a slot never committed is lost */
			if (final) {
				gaps++;
				continue;
			}
			break;
		}
		out.push_back(e);
		r->lastTs = std::max(r->lastTs, e.ts);
		r->written++;
	}
	/* The copies are done: the writers may reuse these slots. */
	r->tail.store(t, std::memory_order_release);
	if (gaps)
		r->dropped.fetch_add(gaps, std::memory_order_relaxed);
	d += gaps;

	if (d != r->droppedRead) {
		TraceEvent lost{};

		lost.ts = r->lastTs;
		lost.cpu = (u16)cpu;
		lost.type = TraceType::Lost;
		lost.target = (int)std::min<unsigned long>(d - r->droppedRead, INT_MAX);
		r->droppedRead += lost.target;
		out.push_back(lost);
	}
	return t != h;
}

std::vector<TraceCpu> traceCpus()
{
	std::vector<TraceCpu> v;

	for (unsigned int cpu = 0; cpu < traceNrCpus; cpu++) {
		TraceRing *r = rings[cpu].load(std::memory_order_acquire);
		TraceCpu tc;

		tc.cpu = cpu;
		tc.comm = r->comm;
		tc.written = r->written;
		tc.dropped = r->dropped.load(std::memory_order_relaxed) - r->droppedBase;
		v.push_back(tc);
	}
	return v;
}

TraceSnapshot traceSnapshot()
{
	TraceSnapshot s;

	s.nrCpuIds = traceNrCpus;
	for (unsigned int cpu = 0; cpu < traceNrCpus; cpu++)
		traceDrainCpu(cpu, s.events, true);
	s.cpus = traceCpus();
	std::stable_sort(s.events.begin(), s.events.end(), traceBefore);
	return s;
}

} /* namespace kshim */
