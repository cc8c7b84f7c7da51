// SPDX-License-Identifier: GPL-2.0-only
/*
 * Upstream's copy-then-publish patterns, with other CPUs running the code
 * around what is written: bpf_prog_pack's sub-page copies (a program
 * written into its chunk of a page whose other chunks are live) and
 * bpf_dispatcher_update()'s idle half (written while callers run the other
 * half, then switched to through the static call). The model must judge
 * neither copy (nobody can fetch what is written), and must judge a
 * dispatcher that writes the half its callers run (BUSTED
 * dispatcher-live-half) and a program published before it is written.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <sys/wait.h>
#include <unistd.h>
#include <cstring>
#include <vector>

#include <asm/text-patching.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/xmc.h>
#include <kernel_shim/xmc_verdict.h>
#include <linux/bpf.h>
#include <linux/filter.h>
#include <linux/rcupdate.h>

#include "booted.h"

DEFINE_BPF_DISPATCHER(pokelab_test);

namespace {

/* A JITed program: mov eax, @ret; ret, in a chunk of a pack. */
struct Prog {
	struct bpf_prog prog;
	struct bpf_binary_header *ro;
	unsigned int ret;
};

bool jit(Prog *p, unsigned int ret, bool publishFirst = false)
{
	struct bpf_binary_header *rw;
	u8 *image, *rw_image;

	p->ro = bpf_jit_binary_pack_alloc(6, &image, 1, &rw, &rw_image, jit_fill_hole);
	if (!p->ro)
		return false;
	rw_image[0] = 0xb8;
	memcpy(rw_image + 1, &ret, 4);
	rw_image[5] = 0xc3;
	if (publishFirst)	/* the bug: reachable before it is written */
		kshim::xmcTextPublish(p->ro, p->ro->size);
	if (bpf_jit_binary_pack_finalize(p->ro, rw))
		return false;
	kshim::xmcTextPublish(p->ro, p->ro->size);	/* attached: it may run */
	p->prog.bpf_func = (bpf_func_t)image;
	p->ret = ret;
	return true;
}

void unjit(Prog *p)
{
	bpf_jit_binary_pack_free(p->ro, NULL);
	p->ro = nullptr;
}

class BpfPack : public pokelab::test::Booted
{
protected:
	/* CPUs 1.. run @progs[0..n) until stop_, counting wrong results. */
	void runOthers(Prog *const *progs, unsigned int n, bool dispatch)
	{
		stop_ = false;
		wrong_ = 0;
		runs_ = 0;
		for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++)
			kshim::cpuRun(cpu, [this, progs, n, dispatch, cpu] {
				for (unsigned long i = cpu; !stop_.load(std::memory_order_relaxed); i++) {
					const Prog *p = progs[i % n];
					unsigned int r;

					rcu_read_lock();
					r = dispatch ? bpf_dispatcher_pokelab_test_func(
							       nullptr, nullptr, p->prog.bpf_func)
						     : p->prog.bpf_func(nullptr, nullptr);
					rcu_read_unlock();
					if (r != p->ret)
						wrong_++;
					runs_++;
					if (!(i % 64))
						rcu_quiescent_state();
				}
			});
		while (runs_.load() < 1000)
			;
	}

	void stopOthers()
	{
		stop_ = true;
		for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++)
			kshim::cpuWait(cpu);
	}

	std::atomic<bool> stop_{false};
	std::atomic<unsigned long> wrong_{0}, runs_{0};
};

TEST_F(BpfPack, ChunksOfALivePageAreWrittenUnjudged)
{
	Prog live, fresh;
	Prog *const run[] = {&live};

	ASSERT_TRUE(jit(&live, 0x1111));
	unsigned int packs = bpfProgPacks();

	runOthers(run, 1, false);
	for (unsigned int i = 0; i < 200; i++) {
		ASSERT_TRUE(jit(&fresh, 0x2000 + i));
		EXPECT_EQ(fresh.prog.bpf_func(nullptr, nullptr), 0x2000 + i);
		unjit(&fresh);
	}
	stopOthers();
	/* one pack: every program shared the live one's page */
	EXPECT_EQ(bpfProgPacks(), packs);
	EXPECT_EQ(wrong_.load(), 0u);
	unjit(&live);
}

TEST_F(BpfPack, AProgramPublishedBeforeItIsWrittenIsJudged)
{
	Prog live, early;
	Prog *const run[] = {&live};

	expectXmcViolations();
	ASSERT_TRUE(jit(&live, 0x1111));
	runOthers(run, 1, false);
	ASSERT_TRUE(jit(&early, 0x3333, true));
	stopOthers();
	kshim::xmcQuiesce();
	ASSERT_GT(kshim::xmcStats().violations, 0u);
	const kshim::XmcViolation v = kshim::xmcViolations()[0];

	EXPECT_NE(v.cpu, 0) << kshim::xmcFormat(v);
	EXPECT_GE(v.site, (unsigned long)early.ro);
	EXPECT_LT(v.site, (unsigned long)early.ro + early.ro->size) << kshim::xmcFormat(v);
	unjit(&early);
	unjit(&live);
}

class BpfDispatcher : public BpfPack
{
protected:
	void TearDown() override
	{
		/* detach what is left: the static call back at bpf_dispatcher_nop_func */
		for (Prog &p : progs_)
			if (p.ro)
				bpf_dispatcher_change_prog(BPF_DISPATCHER_PTR(pokelab_test), &p.prog,
							   NULL);
		for (Prog &p : progs_)
			if (p.ro)
				unjit(&p);
		BpfPack::TearDown();
	}

	/* Attach and detach programs while CPUs 1.. call them through the dispatcher. */
	void churn(unsigned int rounds)
	{
		Prog *run[8];

		progs_.resize(8);
		for (unsigned int i = 0; i < 8; i++) {
			ASSERT_TRUE(jit(&progs_[i], 0x4000 + i));
			run[i] = &progs_[i];
		}
		runOthers(run, 8, true);
		bool attached[8] = {};

		for (unsigned int r = 0; r < rounds; r++) {
			unsigned int i = (r * 5 + r / 8) % 8;

			bpf_dispatcher_change_prog(BPF_DISPATCHER_PTR(pokelab_test),
						   attached[i] ? &progs_[i].prog : NULL,
						   attached[i] ? NULL : &progs_[i].prog);
			attached[i] = !attached[i];
		}
		stopOthers();
		for (unsigned int i = 0; i < 8; i++)
			if (attached[i])
				bpf_dispatcher_change_prog(BPF_DISPATCHER_PTR(pokelab_test),
							   &progs_[i].prog, NULL);
	}

	std::vector<Prog> progs_;
};

TEST_F(BpfDispatcher, TheIdleHalfIsWrittenUnjudgedWhileCallersRunTheOther)
{
	kshim::XmcStats before = kshim::xmcStats();

	churn(24);
	kshim::xmcQuiesce();
	kshim::XmcStats x = kshim::xmcStats() - before;

	EXPECT_EQ(wrong_.load(), 0u);
	/* the halves' copies are recorded (2048 bytes each), judged only for who can reach them */
	EXPECT_GE(x.writes, 24u);
	EXPECT_GT(x.windows, 0u);
	EXPECT_EQ(x.violations, 0u);
}

/* BUSTED dispatcher-live-half: the copy goes into the half the static call points at. */
class BpfDispatcherLiveHalf : public BpfDispatcher
{
protected:
	std::string extraParams() const override { return "pokelab.busted=dispatcher-live-half"; }
	bool xmcViolationsExpected() const override { return true; }

public:
	void churnForDeathTest() { churn(24); }
};

/*
 * The callers really run the half being written, so one may execute a torn
 * instruction and die of it (the model's report is printed on the way
 * down, bug.cpp): in a death-test child, which either finishes and prints
 * the first violation after checking it names a caller of the image, or
 * crashes after the model had named the torn fetch.
 */
void liveHalfChild(BpfDispatcherLiveHalf *t)
{
	t->churnForDeathTest();
	kshim::xmcQuiesce();
	if (!kshim::xmcStats().violations)
		_exit(3);
	const kshim::XmcViolation v = kshim::xmcViolations()[0];
	unsigned long image = (unsigned long)BPF_DISPATCHER_PTR(pokelab_test)->image;

	if (v.cpu == 0 || v.site < image || v.site >= image + 4096)
		_exit(4);
	fprintf(stderr, "%s\n", kshim::xmcFormat(v).c_str());
	_exit(0);
}

bool finishedOrCrashed(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status) == 0 ||
		       WEXITSTATUS(status) == 1;	/* AddressSanitizer's SEGV report */
	return WIFSIGNALED(status);
}

TEST_F(BpfDispatcherLiveHalf, ModelNamesTheCallerOfTheHalfBeingWritten)
{
	EXPECT_EXIT(liveHalfChild(this), finishedOrCrashed,
		    "xmc: torn fetch: CPU [1-9][0-9]* at 0x[0-9a-f]+");
}

} /* namespace */
