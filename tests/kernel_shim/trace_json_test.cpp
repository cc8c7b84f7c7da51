// SPDX-License-Identifier: GPL-2.0-only
/*
 * Chrome trace-event JSON: parsed with nlohmann-json, it has one named
 * track per CPU, a handler slice for every CSD run, and every flow start
 * (csd_queue_cpu on the sender) has exactly one end (on the target).
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include <kernel_shim/cpu.h>
#include <kernel_shim/trace.h>
#include <linux/smp.h>

#include "booted.h"
#include <kernel_shim/trace_output.h>

namespace {

using nlohmann::json;

void jsonFunc(void *)
{
}

class TraceJsonTest : public pokelab::test::Booted
{
protected:
	void TearDown() override
	{
		kshim::traceStop();
		Booted::TearDown();
	}
};

/*
 * The JSON checker: "" when @doc has exactly one thread_name per CPU
 * 0..@nrCpus-1 (distinct names), every "s" flow id has exactly one "f" on
 * another CPU's track and vice versa, and @wantFlows flows; else what is wrong.
 */
std::string jsonProblems(const json &doc, unsigned int nrCpus, size_t wantFlows)
{
	std::map<int, std::string> names;
	std::map<unsigned long, int> starts, ends;
	std::map<unsigned long, unsigned int> startTid, endTid;
	std::string p;

	if (!doc.contains("traceEvents") || !doc["traceEvents"].is_array())
		return "no traceEvents array";
	for (const json &e : doc["traceEvents"]) {
		std::string ph = e.at("ph");

		if (ph == "M" && e.at("name") == "thread_name") {
			int tid = e.at("tid");

			if (names.count(tid))
				p += fmt::format("two thread_name for tid {}\n", tid);
			names[tid] = e.at("args").at("name");
		} else if (ph == "s") {
			starts[e.at("id")]++;
			startTid[e.at("id")] = e.at("tid");
		} else if (ph == "f") {
			ends[e.at("id")]++;
			endTid[e.at("id")] = e.at("tid");
		}
	}
	std::set<std::string> distinct;
	for (unsigned int cpu = 0; cpu < nrCpus; cpu++) {
		if (!names.count(cpu))
			p += fmt::format("no track for CPU {}\n", cpu);
		else
			distinct.insert(names[cpu]);
	}
	if (names.size() != nrCpus || distinct.size() != nrCpus)
		p += fmt::format("{} tracks, {} distinct names, for {} CPUs\n", names.size(),
				 distinct.size(), nrCpus);
	for (auto &[id, n] : starts)
		if (n != 1 || ends[id] != 1 || startTid[id] == endTid[id])
			p += fmt::format("flow {}: {} starts, {} ends\n", id, n, ends[id]);
	for (auto &[id, n] : ends)
		if (!starts.count(id))
			p += fmt::format("flow {}: end without start\n", id);
	if (starts.size() != wantFlows)
		p += fmt::format("{} flows, want {}\n", starts.size(), wantFlows);
	return p;
}

TEST_F(TraceJsonTest, OneTrackPerCpuAndEveryFlowEnds)
{
	kshim::TraceFilter all;
	static int dummy;
	const unsigned int rounds = 20;

	kshim::traceStart();
	for (unsigned int i = 0; i < rounds; i++)
		on_each_cpu(jsonFunc, &dummy, 1);
	kshim::traceStop();
	kshim::TraceSnapshot s = kshim::traceSnapshot();
	for (const kshim::TraceCpu &tc : s.cpus)
		ASSERT_EQ(tc.dropped, 0UL);

	json doc = json::parse(kshim::formatTraceJson(s, all));
	size_t remote = rounds * (nr_cpu_ids - 1);

	EXPECT_EQ(jsonProblems(doc, nr_cpu_ids, remote), "");

	/* a slice per handler run (remote and local), instants for every IPI sent */
	size_t slices = 0, instants = 0;
	for (const json &e : doc["traceEvents"]) {
		if (e["ph"] == "X" && e["cat"] == "csd_function") {
			slices++;
			EXPECT_EQ(e["name"], "jsonFunc");
			EXPECT_GE(e["dur"].get<double>(), 0.0);
		}
		if (e["ph"] == "i")
			instants++;
	}
	EXPECT_EQ(slices, rounds * nr_cpu_ids);
	EXPECT_EQ(instants, rounds);

	/* Broken variant: a flow end lost; the checker must say so. */
	json broken = doc;
	auto &ev = broken["traceEvents"];
	for (auto it = ev.begin(); it != ev.end(); ++it) {
		if ((*it)["ph"] == "f") {
			ev.erase(it);
			break;
		}
	}
	EXPECT_NE(jsonProblems(broken, nr_cpu_ids, remote).find("1 starts, 0 ends"),
		  std::string::npos);
	/* ... and a missing CPU track too. */
	broken = doc;
	auto &ev2 = broken["traceEvents"];
	for (auto it = ev2.begin(); it != ev2.end(); ++it) {
		if ((*it)["name"] == "thread_name" && (*it)["tid"] == 1) {
			ev2.erase(it);
			break;
		}
	}
	EXPECT_NE(jsonProblems(broken, nr_cpu_ids, remote).find("no track for CPU 1"),
		  std::string::npos);
}

TEST_F(TraceJsonTest, FilteredJsonKeepsTracksAndOnlyFlowsToTheList)
{
	kshim::TraceFilter f;
	std::string err;
	static int dummy;

	ASSERT_TRUE(kshim::parseTraceCpus("1", nr_cpu_ids, &f, &err)) << err;
	kshim::traceStart();
	for (int i = 0; i < 5; i++)
		on_each_cpu(jsonFunc, &dummy, 1);
	kshim::traceStop();

	json doc = json::parse(kshim::formatTraceJson(kshim::traceSnapshot(), f));

	EXPECT_EQ(jsonProblems(doc, nr_cpu_ids, 5), "");
	for (const json &e : doc["traceEvents"]) {
		if (e["ph"] == "f") {
			EXPECT_EQ(e["tid"], 1);
		}
	}
}

} /* namespace */
