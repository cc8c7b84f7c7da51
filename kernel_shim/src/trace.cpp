// SPDX-License-Identifier: GPL-2.0-only
/*
 * Per-CPU trace rings: the machine's stand-in for the ftrace ring buffer.
 *
 * Each CPU owns one ring of fixed-size TraceEvent slots. A writer (task
 * context or the IPI signal handler interrupting it on the same CPU)
 * reserves a slot with one fetch_add on the ring's head, fills it and
 * commits it with a release store of the session's generation number into
 * the slot. Nested writers simply take the next slots, so no lock and no
 * retry loop is needed. A reservation past the end is a drop: counted,
 * never waited for (the kernel's no-overwrite mode).
 *
 * Rings are allocated in traceStart() and never freed while the process
 * lives (a writer may still be inside one after traceStop()); a ring of the
 * wrong size is retired, not freed.
 */
#include <algorithm>
#include <cerrno>
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
#include <kernel_shim/trace.h>
#include <linux/bug.h>
#include <linux/preempt.h>
#include <linux/smp.h>

#define KSHIM_PRIVATE
#include "internal.h"

namespace kshim {

std::atomic<bool> traceOn{false};

namespace {

/* The kernel's default trace_buf_size (bytes per CPU). */
constexpr unsigned long kDefaultTraceBufSize = 1441792;

unsigned long traceBufSize = kDefaultTraceBufSize;

struct alignas(SMP_CACHE_BYTES) TraceRing {
	/* slots reserved: written + dropped + in flight */
	std::atomic<unsigned long> head{0};
	std::atomic<unsigned long> dropped{0};
	std::unique_ptr<TraceEvent[]> ev;
	size_t size = 0;
	char comm[16] = "";
};

std::unique_ptr<TraceRing> rings[NR_CPUS];
std::vector<std::unique_ptr<TraceRing>> retired;
std::atomic<u32> generation{0};
unsigned int traceNrCpus;

thread_local u32 tlsTid __attribute__((tls_model("initial-exec")));

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

int traceStart(size_t eventsPerCpu, std::string *err)
{
	unsigned int n = nr_cpu_ids;

	BUG_ON(!booted());
	BUG_ON(traceOn.load());
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
		std::unique_ptr<TraceRing> &r = rings[cpu];

		if (r && r->size != eventsPerCpu)
			retired.push_back(std::move(r));
		if (!r) {
			r = std::make_unique<TraceRing>();
			/* zeroed, so no slot carries a live generation number */
			r->ev.reset(new (std::nothrow) TraceEvent[eventsPerCpu]());
			if (!r->ev) {
				r.reset();
				if (err)
					*err = fmt::format("trace_buf_size={}: cannot allocate {} "
							   "bytes of trace ring for CPU {}",
							   traceBufSize,
							   eventsPerCpu * sizeof(TraceEvent), cpu);
				return -ENOMEM;
			}
			r->size = eventsPerCpu;
		}
		r->head.store(0, std::memory_order_relaxed);
		r->dropped.store(0, std::memory_order_relaxed);
		if (pthread_getname_np(cpuState(cpu).thread, r->comm, sizeof(r->comm)))
			snprintf(r->comm, sizeof(r->comm), "cpu%u", cpu);
		/* a comm must stay one awk field */
		for (char *p = r->comm; *p; p++)
			if (*p == ' ' || *p == '\t')
				*p = '_';
	}
	traceNrCpus = n;
	/* generation 0 marks never-written slots */
	if (generation.fetch_add(1, std::memory_order_relaxed) + 1 == 0)
		generation.fetch_add(1, std::memory_order_relaxed);
	/* Everything above is visible to a writer that sees the flag. */
	traceOn.store(true, std::memory_order_release);
	return 0;
}

void traceStop() noexcept
{
	traceOn.store(false, std::memory_order_release);
}

size_t traceRingSize() noexcept
{
	return rings[0] ? rings[0]->size : 0;
}

void traceRecord(TraceType type, int target, unsigned long callsite, unsigned long fn,
		 unsigned long csd, const struct cpumask *mask) noexcept
{
	int cpu = tlsCpu;
	TraceRing *r;
	unsigned long slot, depth;

	/* Pairs with the release in traceStart(): the rings and traceNrCpus are set up. */
	if (cpu < 0 || !traceOn.load(std::memory_order_acquire) ||
	    (unsigned int)cpu >= traceNrCpus)
		return;
	r = rings[cpu].get();
	slot = r->head.fetch_add(1, std::memory_order_relaxed);
	if (slot >= r->size) {
		r->dropped.fetch_add(1, std::memory_order_relaxed);
		return;
	}

	if (!tlsTid)
		tlsTid = (u32)syscall(SYS_gettid);
	CpuState &c = cpuState(cpu);
	TraceEvent &e = r->ev[slot];

	e.ts = clockNs();
	e.pid = tlsTid;
	e.cpu = (u16)cpu;
	e.type = type;
	depth = std::min<unsigned long>(preempt_count() & PREEMPT_MASK, 15);
	e.flags = (c.irqDisabled.load(std::memory_order_relaxed) ? TRACE_FLAG_IRQS_OFF : 0) |
		  (c.hardirq.load(std::memory_order_relaxed) ? TRACE_FLAG_HARDIRQ : 0) |
		  (depth << TRACE_PREEMPT_SHIFT);
	e.target = target < 0 ? cpu : target;
	e.callsite = callsite;
	e.fn = fn;
	e.csd = csd;
	if (mask)
		cpumask_copy(&e.mask, mask);
	else
		cpumask_clear(&e.mask);
	/* Commit: the reader sees the slot's fields once it sees the generation. */
	__atomic_store_n(&e.seq, generation.load(std::memory_order_relaxed), __ATOMIC_RELEASE);
}

TraceSnapshot traceSnapshot()
{
	TraceSnapshot s;
	u32 gen = generation.load(std::memory_order_relaxed);

	s.nrCpuIds = traceNrCpus;
	for (unsigned int cpu = 0; cpu < traceNrCpus; cpu++) {
		TraceRing *r = rings[cpu].get();
		TraceCpu tc;
		unsigned long head = r->head.load(std::memory_order_acquire);

		tc.cpu = cpu;
		tc.comm = r->comm;
		tc.dropped = r->dropped.load(std::memory_order_relaxed);
		head = std::min<unsigned long>(head, r->size);
		for (unsigned long i = 0; i < head; i++) {
			const TraceEvent &e = r->ev[i];

			/* A slot still being written (tracing stopped under it) is skipped. */
			if (__atomic_load_n(&e.seq, __ATOMIC_ACQUIRE) != gen)
				continue;
			s.events.push_back(e);
			tc.written++;
		}
		s.cpus.push_back(tc);
	}
	std::stable_sort(s.events.begin(), s.events.end(),
			 [](const TraceEvent &a, const TraceEvent &b) { return a.ts < b.ts; });
	return s;
}

} /* namespace kshim */
