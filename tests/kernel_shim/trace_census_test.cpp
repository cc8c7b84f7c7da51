// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tracepoints and trace-cmd text: the cover letter's census pipelines, run
 * through /bin/sh on pokelab's text trace, print the counts the machine's
 * own counters give; a full ring drops and counts instead of blocking;
 * --trace-cpus keeps only events aimed at the listed CPUs.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <unistd.h>

#include <kernel_shim/cpu.h>
#include <kernel_shim/trace.h>
#include <linux/cpumask.h>
#include <linux/smp.h>

#include "booted.h"
#include <workloads/bpf_stats.h>
#include <kernel_shim/trace_output.h>

std::atomic<unsigned long> traceTestRemoteB{0};

/* A plain, external name, as kernel functions are (func=trace_test_func_b). */
void trace_test_func_b(void *info)
{
	if (smp_processor_id() != *(int *)info)
		traceTestRemoteB.fetch_add(1, std::memory_order_relaxed);
}

namespace {

std::atomic<unsigned long> remoteA{0};

/* File-local: resolved from .symtab, not the dynamic table (func=censusFuncA). */
void censusFuncA(void *info)
{
	if (smp_processor_id() != *(int *)info)
		remoteA.fetch_add(1, std::memory_order_relaxed);
}

std::string tempPath(const std::string &name)
{
	return fmt::format("{}/pokelab-trace-{}-{}", ::testing::TempDir(), getpid(), name);
}

/* The text with each run of spaces made one (trace-cmd pads the event name). */
std::string squeeze(const std::string &t)
{
	std::string o;

	for (char c : t)
		if (c != ' ' || o.empty() || o.back() != ' ')
			o += c;
	return o;
}

/* trace-cmd report -l's latency flags of an event: irqs-off, hardirq, preempt depth. */
std::string latency(const kshim::TraceEvent &e)
{
	std::string l = ".....";

	if (e.flags & kshim::TRACE_FLAG_IRQS_OFF)
		l[0] = 'd';
	if (e.flags & kshim::TRACE_FLAG_HARDIRQ)
		l[2] = 'h';
	if (e.flags >> kshim::TRACE_PREEMPT_SHIFT)
		l[3] = "0123456789abcdef"[e.flags >> kshim::TRACE_PREEMPT_SHIFT];
	return l;
}

/* Is there an event of @type on @cpu with latency flags @want? */
bool hasFlags(const kshim::TraceSnapshot &s, kshim::TraceType type, int cpu, const char *want)
{
	for (const kshim::TraceEvent &e : s.events)
		if (e.type == type && e.cpu == cpu && latency(e) == want)
			return true;
	return false;
}

std::string readFile(const std::string &path)
{
	std::ifstream in(path);
	std::stringstream ss;

	ss << in.rdbuf();
	return ss.str();
}

/* Run @cmd through /bin/sh and parse `uniq -c` output into key -> count. */
std::map<std::string, unsigned long> uniqCounts(const std::string &cmd)
{
	std::map<std::string, unsigned long> m;
	FILE *p = popen(cmd.c_str(), "r");
	char line[512];

	if (!p)
		return m;
	while (fgets(line, sizeof(line), p)) {
		unsigned long n;
		char key[400];

		if (sscanf(line, " %lu %399s", &n, key) == 2)
			m[key] += n;
	}
	pclose(p);
	return m;
}

/* The cover letter's two census pipelines on @file. */
std::map<std::string, unsigned long> ipiCensus(const std::string &file)
{
	return uniqCounts(fmt::format("grep callback '{}' | awk '{{ print $(NF) }}' | sort | "
				      "uniq -c", file));
}

std::map<std::string, unsigned long> csdCensus(const std::string &file)
{
	return uniqCounts(fmt::format("grep csd_queue '{}' | awk '{{ print $(NF-1) }}' | sort | "
				      "uniq -c", file));
}

/*
 * The census checker: "" when the pipelines on @file print exactly @ipis
 * IPIs (all to generic_smp_call_function_single_interrupt) and @csds per
 * function, else what differs.
 */
std::string censusMismatch(const std::string &file, unsigned long ipis,
			   const std::map<std::string, unsigned long> &csds)
{
	std::map<std::string, unsigned long> wantIpi;
	std::string diff;

	if (ipis)
		wantIpi["callback=generic_smp_call_function_single_interrupt+0x0"] = ipis;
	auto cmp = [&](const char *what, const std::map<std::string, unsigned long> &got,
		       const std::map<std::string, unsigned long> &want) {
		if (got == want)
			return;
		diff += fmt::format("{} census differs:", what);
		for (auto &[k, v] : want)
			diff += fmt::format(" want {} {}", v, k);
		for (auto &[k, v] : got)
			diff += fmt::format(" got {} {}", v, k);
		diff += "\n";
	};
	cmp("IPI", ipiCensus(file), wantIpi);
	cmp("CSD", csdCensus(file), csds);
	return diff;
}

class TraceCensusTest : public pokelab::test::Booted
{
protected:
	void TearDown() override
	{
		kshim::traceStop();
		Booted::TearDown();
	}

	/*
	 * On-each-cpu rounds from CPU 0, single-target calls from CPU 1 to CPU
	 * 2 at the same time (so some CSDs ride an IPI already pending), and
	 * async rounds. Returns when every call has run.
	 */
	void workload(unsigned int rounds)
	{
		static int sender0 = 0, sender1 = 1;
		std::atomic<bool> stop{false};
		struct cpumask one;

		if (nr_cpu_ids > 2)
			kshim::cpuRun(1, [&] {
				for (unsigned int i = 0; i < rounds; i++)
					smp_call_function_single(2, trace_test_func_b, &sender1, 1);
			});
		for (unsigned int i = 0; i < rounds; i++) {
			on_each_cpu(censusFuncA, &sender0, 1);
			on_each_cpu(trace_test_func_b, &sender0, 0);
		}
		cpumask_clear(&one);
		cpumask_set_cpu(nr_cpu_ids - 1, &one);
		on_each_cpu_mask(&one, censusFuncA, &sender0, true);
		if (nr_cpu_ids > 2)
			kshim::cpuWait(1);
		/* the async calls are done once a waiting round has passed every CPU */
		on_each_cpu(censusFuncA, &sender0, 1);
	}
};

TEST_F(TraceCensusTest, CensusPipelinesMatchTheMachineCounters)
{
	kshim::TraceFilter all;
	std::string file = tempPath("census.txt"), err;

	remoteA = 0;
	traceTestRemoteB = 0;
	kshim::TraceCounters before = kshim::readTraceCounters();
	kshim::traceStart();
	workload(40);
	kshim::traceStop();
	kshim::TraceCounters c = kshim::readTraceCounters() - before;
	kshim::TraceSnapshot s = kshim::traceSnapshot();

	for (const kshim::TraceCpu &tc : s.cpus)
		ASSERT_EQ(tc.dropped, 0UL) << "CPU " << tc.cpu;
	ASSERT_TRUE(kshim::writeFileAtomic(file, kshim::formatTraceText(s, all), &err)) << err;
	EXPECT_NE(access((file + ".tmp").c_str(), F_OK), 0) << "the .tmp file was left behind";

	/* The machine's counters are what the census is checked against. */
	EXPECT_EQ(c.csdQueued, remoteA.load() + traceTestRemoteB.load());
	EXPECT_GT(c.ipiSendCpu, 0UL);
	if (nr_cpu_ids > 2) {
		EXPECT_GT(c.ipiSendCpumask, 0UL);
	}
	std::map<std::string, unsigned long> csds = {
		{"func=censusFuncA", remoteA.load()},
		{"func=trace_test_func_b", traceTestRemoteB.load()},
	};
	EXPECT_EQ(censusMismatch(file, c.ipiSendCpu + c.ipiSendCpumask, csds), "");

	/* Line shapes, as trace-cmd prints them. */
	std::string text = squeeze(readFile(file));
	EXPECT_NE(text.find("callsite=on_each_cpu_cond_mask+0x"), std::string::npos);
	EXPECT_NE(text.find(": csd_function_entry: func=censusFuncA, csd=0x"), std::string::npos);
	EXPECT_NE(text.find(": csd_function_exit: func=trace_test_func_b, csd=0x"),
		  std::string::npos);
	/* the local call runs with csd NULL, printed as the C library prints %p of NULL */
	EXPECT_NE(text.find(": csd_function_entry: func=censusFuncA, csd=(nil)"),
		  std::string::npos);
	/* queued with preemption off; the local call runs with IRQs off */
	EXPECT_TRUE(hasFlags(s, kshim::TraceType::CsdQueueCpu, 0, "...1."));
	EXPECT_TRUE(hasFlags(s, kshim::TraceType::CsdFunctionEntry, 0, "d..1."));
	/* the remote ones in the IPI handler */
	EXPECT_TRUE(hasFlags(s, kshim::TraceType::CsdFunctionEntry, 1, "d.h.."));
	unlink(file.c_str());
}

TEST_F(TraceCensusTest, CensusCheckerFiresOnALostEvent)
{
	kshim::TraceFilter all;
	std::string file = tempPath("broken.txt"), err;

	remoteA = 0;
	traceTestRemoteB = 0;
	kshim::TraceCounters before = kshim::readTraceCounters();
	kshim::traceStart();
	workload(5);
	kshim::traceStop();
	kshim::TraceCounters c = kshim::readTraceCounters() - before;
	kshim::TraceSnapshot s = kshim::traceSnapshot();
	std::map<std::string, unsigned long> csds = {
		{"func=censusFuncA", remoteA.load()},
		{"func=trace_test_func_b", traceTestRemoteB.load()},
	};

	/* Broken variant: lose one csd_queue_cpu and one IPI event. */
	bool lostCsd = false, lostIpi = false;
	for (auto it = s.events.begin(); it != s.events.end();) {
		if (!lostCsd && it->type == kshim::TraceType::CsdQueueCpu) {
			it = s.events.erase(it);
			lostCsd = true;
		} else if (!lostIpi && it->type == kshim::TraceType::IpiSendCpu) {
			it = s.events.erase(it);
			lostIpi = true;
		} else {
			++it;
		}
	}
	ASSERT_TRUE(lostCsd && lostIpi);
	ASSERT_TRUE(kshim::writeFileAtomic(file, kshim::formatTraceText(s, all), &err)) << err;
	std::string diff = censusMismatch(file, c.ipiSendCpu + c.ipiSendCpumask, csds);
	EXPECT_NE(diff.find("IPI census differs"), std::string::npos) << diff;
	EXPECT_NE(diff.find("CSD census differs"), std::string::npos) << diff;
	unlink(file.c_str());
}

TEST_F(TraceCensusTest, DemoRunnerCensusMatchesCounters)
{
	kshim::TraceFilter all;
	pokelab::BpfStatsConfig cfg;
	std::string file = tempPath("demo.txt"), err;

	cfg.flips = 2;
	kshim::TraceCounters before = kshim::readTraceCounters();
	kshim::traceStart();
	pokelab::BpfStatsResult r = pokelab::runBpfStats(cfg);
	kshim::traceStop();
	kshim::TraceCounters c = kshim::readTraceCounters() - before;
	kshim::TraceSnapshot s = kshim::traceSnapshot();

	ASSERT_TRUE(r.ok());
	ASSERT_GT(c.csdQueued, 0UL);
	ASSERT_TRUE(kshim::writeFileAtomic(file, kshim::formatTraceText(s, all), &err)) << err;
	/* text_poke's sync rounds: every CSD is do_sync_core */
	EXPECT_EQ(censusMismatch(file, c.ipiSendCpu + c.ipiSendCpumask,
				 {{"func=do_sync_core", c.csdQueued}}), "");
	unlink(file.c_str());
}

TEST_F(TraceCensusTest, FullRingDropsAndCountsInsteadOfBlocking)
{
	const unsigned int rounds = 30, n = nr_cpu_ids;
	static int sender0 = 0;

	kshim::traceStart(16);
	ASSERT_EQ(kshim::traceRingSize(), 16U);
	for (unsigned int i = 0; i < rounds; i++)
		on_each_cpu(censusFuncA, &sender0, 1);
	kshim::traceStop();
	kshim::TraceSnapshot s = kshim::traceSnapshot();

	/*
	 * Every event is either written or dropped: CPU 0 queues n-1 CSDs, sends
	 * one IPI and runs the function locally (entry+exit) per round; each
	 * other CPU runs it once (entry+exit).
	 */
	for (const kshim::TraceCpu &tc : s.cpus) {
		unsigned long want = tc.cpu == 0 ? rounds * ((n - 1) + 1 + 2) : rounds * 2;

		EXPECT_EQ(tc.written, 16UL) << "CPU " << tc.cpu;
		EXPECT_EQ(tc.written + tc.dropped, want) << "CPU " << tc.cpu;
	}
	/* every CPU's 16 events, and a Lost mark with its drops after them */
	std::vector<unsigned long> lost(n), seen(n);
	for (const kshim::TraceEvent &e : s.events) {
		if (e.type == kshim::TraceType::Lost) {
			EXPECT_EQ(seen[e.cpu], 16UL) << "Lost mark before CPU " << e.cpu << "'s events";
			lost[e.cpu] += e.target;
		} else {
			seen[e.cpu]++;
		}
	}
	for (const kshim::TraceCpu &tc : s.cpus) {
		EXPECT_EQ(seen[tc.cpu], 16UL) << "CPU " << tc.cpu;
		EXPECT_EQ(lost[tc.cpu], tc.dropped) << "CPU " << tc.cpu;
	}

	/* A fresh session starts empty. */
	kshim::traceStart(16);
	kshim::traceStop();
	s = kshim::traceSnapshot();
	EXPECT_TRUE(s.events.empty());
	for (const kshim::TraceCpu &tc : s.cpus)
		EXPECT_EQ(tc.dropped, 0UL);
}

/* The --trace-cpus checker: lines that an event aimed outside @cpus produced. */
unsigned int filterViolations(const std::string &text, const struct cpumask *cpus)
{
	std::istringstream in(text);
	std::string line;
	unsigned int bad = 0;

	while (std::getline(in, line)) {
		unsigned int cpu;
		size_t p;

		if ((p = line.find(": csd_queue_cpu: cpu=")) != std::string::npos ||
		    (p = line.find(": ipi_send_cpu: cpu=")) != std::string::npos) {
			sscanf(line.c_str() + line.find("cpu=", p), "cpu=%u", &cpu);
			bad += !cpumask_test_cpu(cpu, cpus);
		} else if (line.find(": csd_function_") != std::string::npos) {
			sscanf(line.c_str() + line.find('[') + 1, "%u", &cpu);
			bad += !cpumask_test_cpu(cpu, cpus);
		} else if ((p = line.find("cpumask=")) != std::string::npos) {
			std::string want = kshim::traceBitmask(cpus);
			std::string got = line.substr(p + 8, line.find(' ', p) - p - 8);
			/* the shown mask must lie within the list: got & ~list == 0 */
			for (size_t i = 0; i < got.size() && i < want.size(); i++) {
				if (got[i] == ',')
					continue;
				unsigned int g = std::stoul(got.substr(i, 1), nullptr, 16);
				unsigned int w = std::stoul(want.substr(i, 1), nullptr, 16);
				bad += (g & ~w) != 0;
			}
		}
	}
	return bad;
}

TEST_F(TraceCensusTest, TraceCpusKeepsOnlyEventsAimedAtTheList)
{
	kshim::TraceFilter f, all;
	std::string err;
	static int sender0 = 0;
	unsigned int last = nr_cpu_ids - 1;

	ASSERT_TRUE(kshim::parseTraceCpus(fmt::format("{}", last), nr_cpu_ids, &f, &err)) << err;
	kshim::traceStart();
	for (int i = 0; i < 10; i++)
		on_each_cpu(censusFuncA, &sender0, 1);
	kshim::traceStop();
	kshim::TraceSnapshot s = kshim::traceSnapshot();
	std::string text = squeeze(kshim::formatTraceText(s, f));
	std::string full = squeeze(kshim::formatTraceText(s, all));

	EXPECT_EQ(filterViolations(text, &f.cpus), 0U) << text;
	/* broken variant: the unfiltered trace violates the filter */
	EXPECT_GT(filterViolations(full, &f.cpus), 0U);

	/* 10 CSDs to the last CPU, each run there once; mask IPIs shown as that CPU alone */
	auto count = [&](const std::string &needle) {
		size_t n = 0;
		for (size_t p = 0; (p = text.find(needle, p)) != std::string::npos; p++)
			n++;
		return n;
	};
	EXPECT_EQ(count(fmt::format(": csd_queue_cpu: cpu={} ", last)), 10U);
	EXPECT_EQ(count(": csd_queue_cpu: "), 10U);
	EXPECT_EQ(count(": csd_function_entry: "), 10U);
	EXPECT_EQ(count(": csd_function_exit: "), 10U);
	if (nr_cpu_ids > 2) {
		EXPECT_EQ(count(fmt::format("cpumask={} ", kshim::traceBitmask(&f.cpus))), 10U);
	} else {
		EXPECT_EQ(count(fmt::format(": ipi_send_cpu: cpu={} ", last)), 10U);
	}

	/* bad lists are refused with one line naming the value */
	EXPECT_FALSE(kshim::parseTraceCpus("3-1", nr_cpu_ids, &f, &err));
	EXPECT_NE(err.find("'3-1'"), std::string::npos) << err;
	EXPECT_FALSE(kshim::parseTraceCpus("", nr_cpu_ids, &f, &err));
	EXPECT_FALSE(kshim::parseTraceCpus(fmt::format("{}", nr_cpu_ids), nr_cpu_ids, &f, &err));
	EXPECT_FALSE(kshim::parseTraceCpus("abc", 0, &f, &err));
	EXPECT_EQ(err.find('\n'), std::string::npos);
}

} /* namespace */

namespace {

/* Events with no target CPU pass --trace-cpus by the CPU that wrote them, not by a field. */
TEST(TraceFilterTest, EventsWithoutATargetGoByTheirWriter)
{
	kshim::TraceFilter f;
	std::string err;
	kshim::TraceEvent batch{}, user{}, poke{};

	ASSERT_TRUE(kshim::parseTraceCpus("2-3", 0, &f, &err)) << err;
	batch.type = kshim::TraceType::TextPokeBatch;
	batch.cpu = 0;
	batch.target = kshim::TRACE_BATCH_TAILS;	/* 2: not a CPU */
	user.type = kshim::TraceType::UserEnter;
	user.cpu = 3;
	user.target = 0;				/* the dummy field */
	poke.type = kshim::TraceType::TextPoke;
	poke.cpu = 2;
	poke.target = 1;				/* len */
	EXPECT_FALSE(kshim::traceEventSelected(batch, f));
	EXPECT_TRUE(kshim::traceEventSelected(user, f));
	EXPECT_TRUE(kshim::traceEventSelected(poke, f));
}

} /* namespace */
