// SPDX-License-Identifier: GPL-2.0-only
/*
 * The trace recorder thread. See trace_record.h.
 *
 * The merge needs a watermark W such that no event not yet read can have
 * a timestamp below W: then everything read with ts < W can go out in
 * order. A writer reserves its slot before it reads the clock, so for
 * each CPU:
 *
 *	recorder round k			CPU n
 *	now_k = clock				reserve pos (CAS head)
 *	read head, copy committed slots		ts = clock, commit
 *
 * if a round finds no slot reserved and uncommitted (everything up to head
 * was read), any later event of CPU n reserves after that read of head,
 * so reads the clock after now_k: CPU n's bound is now_k. Both clock reads
 * are ordered against the loads around them: the writer's reserve is a
 * locked CAS and the vDSO reads the TSC behind an LFENCE; the recorder
 * puts an LFENCE after its clock read, so the head load cannot pass it. A CPU with a
 * slot still being written keeps the bound of its last clean round. W is
 * the least bound over the CPUs. The thread is not a CPU: it has no
 * tlsCpu, takes no IPIs and, like every thread, has the stop signals
 * blocked (tools/stop.h).
 */
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <cstring>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include <kernel_shim/clock.h>
#include <kernel_shim/trace_record.h>
#include <linux/bug.h>

namespace kshim {

namespace {

struct Recorder {
	std::thread thread;
	std::atomic<bool> stop{false};
	std::mutex lock;		/* for the wake-up on stop only */
	std::condition_variable wake;
	std::vector<TraceSink *> sinks;
	unsigned long intervalNs = 1000000;
	unsigned int nrCpus = 0;
	std::vector<u64> bound;			/* per CPU: no unread event before this */
	std::vector<TraceEvent> staged;		/* read, not yet handed out */
	std::vector<TraceEvent> batch;
	bool running = false;
};

Recorder rec;

/* One round: drain every ring, hand out what is below the watermark (everything if @all). */
void recorderRound(bool all)
{
	u64 now = clockNs();
	u64 w = ~0ULL;

	/* no load below starts before the TSC read above */
	__builtin_ia32_lfence();
	rec.batch.clear();
	for (unsigned int cpu = 0; cpu < rec.nrCpus; cpu++) {
		if (!traceDrainCpu(cpu, rec.batch, all))
			rec.bound[cpu] = now;
		w = std::min(w, rec.bound[cpu]);
	}
	if (all)
		w = ~0ULL;
	if (!rec.batch.empty()) {
		/* per CPU in ring order; stable, so a CPU's Lost mark stays after its events */
		std::stable_sort(rec.batch.begin(), rec.batch.end(), traceBefore);
		size_t old = rec.staged.size();

		rec.staged.insert(rec.staged.end(), rec.batch.begin(), rec.batch.end());
		std::inplace_merge(rec.staged.begin(), rec.staged.begin() + old, rec.staged.end(),
				   traceBefore);
	}
	size_t n = 0;

	while (n < rec.staged.size() && rec.staged[n].ts < w)
		n++;
	if (all)
		n = rec.staged.size();
	for (size_t i = 0; i < n; i++)
		for (TraceSink *s : rec.sinks)
			s->event(rec.staged[i]);
	rec.staged.erase(rec.staged.begin(), rec.staged.begin() + n);
}

void recorderThread()
{
	std::unique_lock<std::mutex> l(rec.lock);

	while (!rec.stop.load(std::memory_order_acquire)) {
		/* a stop cuts the wait short: the final round runs at once */
		rec.wake.wait_for(l, std::chrono::nanoseconds(rec.intervalNs),
				  [] { return rec.stop.load(std::memory_order_acquire); });
		if (rec.stop.load(std::memory_order_acquire))
			break;
		l.unlock();
		recorderRound(false);
		l.lock();
	}
}

} /* namespace */

int traceRecorderStart(const std::vector<TraceSink *> &sinks, unsigned long intervalNs,
		       std::string *err)
{
	BUG_ON(rec.running);
	BUG_ON(intervalNs < 10000);
	rec.sinks = sinks;
	rec.intervalNs = intervalNs;
	std::vector<TraceCpu> cpus = traceCpus();
	rec.nrCpus = cpus.size();
	rec.bound.assign(rec.nrCpus, 0);
	rec.staged.clear();
	rec.stop.store(false);
	for (TraceSink *s : rec.sinks)
		s->begin(cpus);
	try {
		rec.thread = std::thread(recorderThread);
	} catch (const std::system_error &e) {
		if (err)
			*err = fmt::format("cannot start the trace recorder thread: {}", e.what());
		return -EAGAIN;
	}
	pthread_setname_np(rec.thread.native_handle(), "trace-recorder");
	rec.running = true;
	return 0;
}

std::vector<TraceCpu> traceRecorderStop()
{
	BUG_ON(!rec.running);
	{
		std::lock_guard<std::mutex> l(rec.lock);

		rec.stop.store(true, std::memory_order_release);
	}
	rec.wake.notify_one();
	rec.thread.join();
	rec.running = false;
	/* tracing is off and the CPUs are quiet: the rest goes out in order */
	recorderRound(true);
	rec.sinks.clear();
	std::vector<TraceEvent>().swap(rec.staged);
	return traceCpus();
}

bool traceRecorderRunning()
{
	return rec.running;
}

} /* namespace kshim */
