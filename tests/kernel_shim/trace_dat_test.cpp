// SPDX-License-Identifier: GPL-2.0-only
/*
 * trace.dat: events of every type, on every CPU, with gaps that need the
 * ring buffer's time-extend records, runs that fill several pages, a
 * 70-CPU cpumask and drops, go through the trace.dat sink and the text
 * sink; Debian's trace-cmd must print exactly the text. A file written from
 * the same events with one timestamp moved by a microsecond must not match
 * (the comparison can fail). Needs trace-cmd (tools/install-deps.sh).
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <kernel_shim/trace.h>
#include <kernel_shim/trace_output.h>
#include <linux/smp.h>

#include "booted.h"

namespace {

using kshim::TraceEvent;
using kshim::TraceType;

class TraceDatTest : public pokelab::test::Booted
{
protected:
	void SetUp() override
	{
		Booted::SetUp();
		char tmpl[] = "/tmp/pokelab-dat-XXXXXX";
		ASSERT_NE(mkdtemp(tmpl), nullptr);
		dir_ = tmpl;
	}

	void TearDown() override
	{
		for (const char *f : {"/t.dat", "/t.txt", "/u.dat"})
			unlink((dir_ + f).c_str());
		rmdir(dir_.c_str());
		Booted::TearDown();
	}

	std::string dir_;
};

std::string readFile(const std::string &path)
{
	std::ifstream in(path);
	std::stringstream ss;

	ss << in.rdbuf();
	return ss.str();
}

/* trace-cmd report's output for @file, or "" with *@ok false. */
std::string report(const std::string &file, bool *ok)
{
	std::string cmd = "trace-cmd report '" + file + "' 2>&1", out;
	FILE *p = popen(cmd.c_str(), "r");
	char buf[4096];
	size_t n;

	*ok = p != nullptr;
	if (!p)
		return out;
	while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
		out.append(buf, n);
	*ok = pclose(p) == 0;
	return out;
}

TraceEvent ev(TraceType t, int cpu, u64 ts, int target = 0, unsigned long a = 0,
	      unsigned long b = 0, unsigned long c = 0)
{
	TraceEvent e{};

	e.type = t;
	e.cpu = (u16)cpu;
	e.pid = 4000 + cpu;
	e.ts = ts;
	e.target = target;
	e.callsite = a;
	e.fn = b;
	e.csd = c;
	e.flags = (u8)((cpu % 3) << kshim::TRACE_PREEMPT_SHIFT);
	return e;
}

void datTestFunc(void *)
{
}

/* Every type on every CPU; gaps of ns, of 200 ms and of seconds; drops on CPU 1. */
std::vector<TraceEvent> events()
{
	std::vector<TraceEvent> v;
	unsigned long site = (unsigned long)&smp_call_function_single + 8;
	unsigned long fn = (unsigned long)&datTestFunc;
	u64 ts = 5000ULL * 1000000000ULL + 123456789;

	for (unsigned int round = 0; round < 60; round++) {
		for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
			TraceEvent m = ev(TraceType::IpiSendCpumask, cpu, ts += 7, -1, site, fn);

			for (unsigned int c = 0; c < nr_cpu_ids; c += 1 + round % 3)
				cpumask_set_cpu(c, &m.mask);
			v.push_back(m);
			v.push_back(ev(TraceType::IpiSendCpu, cpu, ts += 11, (cpu + 1) % nr_cpu_ids,
				       site, fn));
			v.push_back(ev(TraceType::CsdQueueCpu, cpu, ts += 13, 0, site, fn,
				       0xffff888000001000UL + cpu));
			v.push_back(ev(TraceType::CsdFunctionEntry, cpu, ts += 1000, 0, 0, fn,
				       round % 2 ? 0 : 0x1230 + cpu));
			v.push_back(ev(TraceType::CsdFunctionExit, cpu, ts += 1, 0, 0, fn,
				       round % 2 ? 0 : 0x1230 + cpu));
			v.push_back(ev(TraceType::UserEnter, cpu, ts += 3));
			v.push_back(ev(TraceType::UserExit, cpu, ts += 5));
			v.push_back(ev(TraceType::TextPoke, cpu, ts += 17, 1 + round % 11, fn,
				       0x0123456789abcdefUL));
			v.push_back(ev(TraceType::TextPokeBatch, cpu, ts += 19, round % 6, 164));
			v.push_back(ev(TraceType::Int3Emulate, cpu, ts += 23, 0, fn, site));
			v.push_back(ev(TraceType::CtIdleEnter, cpu, ts += 29));
			v.push_back(ev(TraceType::CtIdleExit, cpu, ts += 31));
			v.push_back(ev(TraceType::CtWorkFlush, cpu, ts += 37, round % 4));
			if (cpu == 1 % nr_cpu_ids && round % 10 == 3)
				v.push_back(ev(TraceType::Lost, cpu, ts, 17 + round));
		}
		/* past 2^27 ns: the next event of every CPU needs a time-extend record */
		if (round % 7 == 0)
			ts += 200000000ULL;
		if (round == 30)
			ts += 3000000000ULL;
	}
	return v;
}

bool writeBoth(const std::vector<TraceEvent> &v, const std::string &dat, const std::string &txt,
	       std::string *err)
{
	kshim::TraceFilter all;
	std::vector<kshim::TraceCpu> cpus;

	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		kshim::TraceCpu c;

		c.cpu = cpu;
		c.comm = "cpu" + std::to_string(cpu);
		cpus.push_back(c);
	}
	std::vector<std::unique_ptr<kshim::TraceSink>> sinks;
	sinks.push_back(kshim::makeTraceSink(dat, kshim::TraceFormat::Dat, all, err));
	if (!txt.empty())
		sinks.push_back(kshim::makeTraceSink(txt, kshim::TraceFormat::Text, all, err));
	for (auto &s : sinks) {
		if (!s)
			return false;
		s->begin(cpus);
	}
	for (const TraceEvent &e : v)
		for (auto &s : sinks)
			s->event(e);
	for (auto &s : sinks)
		if (!s->finish(cpus, err))
			return false;
	return true;
}

TEST_F(TraceDatTest, TraceCmdPrintsExactlyTheText)
{
	std::string err;
	std::vector<TraceEvent> v = events();
	bool ok;

	ASSERT_EQ(system("command -v trace-cmd >/dev/null"), 0)
		<< "trace-cmd not found: run tools/install-deps.sh";
	ASSERT_TRUE(writeBoth(v, dir_ + "/t.dat", dir_ + "/t.txt", &err)) << err;
	std::string text = readFile(dir_ + "/t.txt");
	std::string r = report(dir_ + "/t.dat", &ok);

	ASSERT_TRUE(ok) << r;
	EXPECT_EQ(r, text);
	/* what the comparison covered */
	EXPECT_NE(text.find(" EVENTS DROPPED]"), std::string::npos);
	EXPECT_NE(text.find("cpumask=00000000,"), std::string::npos);
	EXPECT_NE(text.find("bytes=efcdab8967452301"), std::string::npos);
	EXPECT_NE(text.find("phase=first_bytes"), std::string::npos);
	EXPECT_NE(text.find("work=SYNC"), std::string::npos);
	EXPECT_NE(text.find("callsite=smp_call_function_single+0x8"), std::string::npos);
	EXPECT_GT(readFile(dir_ + "/t.dat").size(), 10u * 4096);

	/* broken variant: one event a microsecond late must show in trace-cmd's output */
	v[v.size() / 2].ts += 1000;
	ASSERT_TRUE(writeBoth(v, dir_ + "/u.dat", "", &err)) << err;
	EXPECT_NE(report(dir_ + "/u.dat", &ok), text);
}

/* A drop on a page that then fills: the stored count needs its 8 bytes of room. */
TEST_F(TraceDatTest, ALostCountFitsOnAFullPage)
{
	std::string err;
	std::vector<TraceEvent> v;
	u64 ts = 7000ULL * 1000000000ULL;
	bool ok;

	v.push_back(ev(TraceType::CtIdleEnter, 0, ts));
	v.push_back(ev(TraceType::Lost, 0, ts, 5));
	for (unsigned int i = 0; i < 600; i++)
		v.push_back(ev(TraceType::CtIdleEnter, 0, ts += 3));
	ASSERT_TRUE(writeBoth(v, dir_ + "/t.dat", dir_ + "/t.txt", &err)) << err;
	std::string r = report(dir_ + "/t.dat", &ok);

	ASSERT_TRUE(ok) << r;
	EXPECT_EQ(r, readFile(dir_ + "/t.txt"));
	EXPECT_NE(r.find("CPU:0 [5 EVENTS DROPPED]"), std::string::npos);
}

} /* namespace */
