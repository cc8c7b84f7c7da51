// SPDX-License-Identifier: GPL-2.0-only
/*
 * The recorder against real writers: every CPU writes numbered events
 * (task context and, nested, its IPI handler) while the recorder drains
 * every 20 us; each event must reach the sink exactly once, in each CPU's
 * order, in timestamp order across CPUs, and written + dropped must be
 * what was fired. A recorder whose next round is 10 s away still hands
 * everything out when it is stopped.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include <kernel_shim/cpu.h>
#include <kernel_shim/trace.h>
#include <kernel_shim/trace_record.h>
#include <linux/smp.h>

#include "booted.h"

namespace {

using kshim::TraceEvent;
using kshim::TraceType;

/* A sink that keeps what it is given. */
class Collect : public kshim::TraceSink
{
public:
	void begin(const std::vector<kshim::TraceCpu> &) override {}
	void event(const TraceEvent &e) override { got.push_back(e); }
	bool finish(const std::vector<kshim::TraceCpu> &, std::string *) override { return true; }

	std::vector<TraceEvent> got;
};

class TraceRecordTest : public pokelab::test::Booted
{
protected:
	void TearDown() override
	{
		kshim::traceStop();
		if (kshim::traceRecorderRunning())
			kshim::traceRecorderStop();
		Booted::TearDown();
	}
};

constexpr unsigned int kPerCpu = 20000;
std::atomic<unsigned int> nested[NR_CPUS];

/* The IPI handler writes too: nested in whatever the CPU was writing. */
void writeNested(void *)
{
	unsigned int cpu = smp_processor_id();

	trace_pokelab_ct_work_flush(0x40000000u + nested[cpu]++);
}

TEST_F(TraceRecordTest, EveryEventOnceInOrder)
{
	Collect sink;
	std::string err;
	unsigned int n = nr_cpu_ids;

	for (unsigned int cpu = 0; cpu < n; cpu++)
		nested[cpu] = 0;
	ASSERT_EQ(kshim::traceStart(0, nullptr, kshim::traceBit(TraceType::CtWorkFlush)), 0);
	ASSERT_EQ(kshim::traceRecorderStart({&sink}, 20000, &err), 0) << err;
	for (unsigned int cpu = 1; cpu < n; cpu++)
		kshim::cpuRun(cpu, [] {
			for (unsigned int i = 0; i < kPerCpu; i++)
				trace_pokelab_ct_work_flush(i);
		});
	/* CPU 0 writes too, and interrupts the others with IPIs that write */
	for (unsigned int i = 0; i < kPerCpu; i++) {
		trace_pokelab_ct_work_flush(i);
		if (i % 500 == 0)
			on_each_cpu(writeNested, nullptr, 1);
	}
	for (unsigned int cpu = 1; cpu < n; cpu++)
		kshim::cpuWait(cpu);
	kshim::traceStop();
	std::vector<kshim::TraceCpu> cpus = kshim::traceRecorderStop();

	std::vector<unsigned int> next(n, 0), nextNested(n, 0);
	std::vector<unsigned long> lost(n, 0), seen(n, 0);
	u64 lastTs = 0;
	for (const TraceEvent &e : sink.got) {
		ASSERT_LT(e.cpu, n);
		if (e.type == TraceType::Lost) {
			lost[e.cpu] += e.target;
			continue;
		}
		ASSERT_EQ(e.type, TraceType::CtWorkFlush);
		EXPECT_GE(e.ts, lastTs) << "out of time order on CPU " << e.cpu;
		lastTs = e.ts;
		seen[e.cpu]++;
		unsigned int v = e.target;
		if (v & 0x40000000u) {
			EXPECT_GE(v & 0xffffff, nextNested[e.cpu]) << "nested event again, CPU " << e.cpu;
			nextNested[e.cpu] = (v & 0xffffff) + 1;
		} else {
			/* a CPU's own events in order, none twice (drops leave gaps) */
			EXPECT_GE(v, next[e.cpu]) << "event again or out of order, CPU " << e.cpu;
			next[e.cpu] = v + 1;
		}
	}
	for (const kshim::TraceCpu &c : cpus) {
		unsigned long fired = kPerCpu + nested[c.cpu].load();

		EXPECT_EQ(c.written, seen[c.cpu]) << "CPU " << c.cpu;
		EXPECT_EQ(c.dropped, lost[c.cpu]) << "CPU " << c.cpu;
		EXPECT_EQ(c.written + c.dropped, fired) << "CPU " << c.cpu;
	}
}

TEST_F(TraceRecordTest, StopHandsOutWhatARoundNeverCameFor)
{
	Collect sink;
	std::string err;

	ASSERT_EQ(kshim::traceStart(0, nullptr, kshim::traceBit(TraceType::CtWorkFlush)), 0);
	/* the first round is 10 s away: only the stop's final round reads the rings */
	ASSERT_EQ(kshim::traceRecorderStart({&sink}, 10000000000UL, &err), 0) << err;
	for (unsigned int i = 0; i < 1000; i++)
		trace_pokelab_ct_work_flush(i);
	kshim::traceStop();
	std::vector<kshim::TraceCpu> cpus = kshim::traceRecorderStop();

	ASSERT_EQ(sink.got.size(), 1000u);
	EXPECT_EQ(cpus[0].written, 1000u);
	for (unsigned int i = 0; i < 1000; i++)
		EXPECT_EQ(sink.got[i].target, (int)i);
}

} /* namespace */
