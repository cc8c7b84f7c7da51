// SPDX-License-Identifier: GPL-2.0-only
/*
 * The NMI in the exit stub's window (kernel-map.md §4.6), replayed with the
 * interleaving forced. CPU 1, isolated, leaves for user mode; the hook
 * holds it after its store of kernel_cr3_loaded = 0 and before its switch
 * to the user CR3 until CPU 0 changed a kernel range and its flush
 * returned, then raises an NMI whose handler reads the range:
 *
 *	v7 as posted (nmi-paranoid-posted)	the fixed paranoid path
 *	CPU 1: kernel_cr3_loaded = 0		CPU 1: kernel_cr3_loaded = 0
 *	CPU 0: change; reads 0; no IPI		CPU 0: change; reads 0; no IPI
 *	CPU 1: <NMI> kernel CR3: nothing	CPU 1: <NMI> flag = 1; smp_mb(); flush
 *	CPU 1:   touches the range: stale	CPU 1:   touches the range: current
 *
 * The model's TLB rule must report the first and not the second.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <atomic>

#include <asm/nmi.h>
#include <asm/processor.h>
#include <asm/tlbflush.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/xmc.h>
#include <kernel_shim/xmc_verdict.h>
#include <linux/context_tracking.h>
#include <linux/execmem.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/vmalloc.h>
#include <pokelab/ct_entry.h>

#include "booted.h"
#include "stale_tlb.h"

namespace {

std::atomic<bool> inWindow, flushed, go, nmiRan;
std::atomic<int> flagInNmi{-1};
unsigned long range;

void nmiInExitWindow(unsigned int cpu, bool exit)
{
	u64 until = kshim::clockNs() + 50000000ull;

	if (cpu != 1 || !exit || !go.load())
		return;
	go.store(false);
	inWindow.store(true);
	while (!flushed.load() && kshim::clockNs() < until)
		cpu_relax();
	kshim::nmiSelf();
}

int touchInNmi(unsigned int, struct pt_regs *)
{
	if (smp_processor_id() != 1 || !range)
		return NMI_DONE;
	flagInNmi.store(*per_cpu_ptr(&kernel_cr3_loaded, 1));
	kshim::tlbTouch(range);
	nmiRan.store(true);
	return NMI_HANDLED;
}

class NmiReplay : public pokelab::test::Booted
{
protected:
	unsigned int cpus() const override { return 2; }

	void TearDown() override
	{
		pokelab::ptiWindowHook = nullptr;
		unregister_nmi_handler(NMI_LOCAL, "nmi_replay");
		range = 0;
		pokelab::test::Booted::TearDown();
	}

	/* Returns the number of stale-TLB violations the race produced. */
	unsigned long race()
	{
		void *page = execmem_alloc_rw(EXECMEM_MODULE_DATA, 4096);
		unsigned long before, nmis = kshim::nmiCount(1);

		EXPECT_NE(page, nullptr);
		if (!page)
			return 0;
		inWindow = flushed = go = nmiRan = false;
		flagInNmi = -1;
		EXPECT_EQ(register_nmi_handler(NMI_LOCAL, touchInNmi, 0, "nmi_replay"), 0);
		pokelab::ptiWindowHook = nmiInExitWindow;
		before = pokelab::test::staleTlbReports();

		kshim::cpuRun(1, [] {
			go.store(true);
			pokelab::ctReturnToUser();
			pokelab::ctEnterKernelForGood();
		});
		while (!inWindow.load())
			cpu_relax();
		range = (unsigned long)page;
		kshim::tlbKernelRangeCleared(range, range + 4096);
		flush_tlb_kernel_range_deferrable(range, range + 4096);
		flushed.store(true);
		kshim::cpuWait(1);
		pokelab::ptiWindowHook = nullptr;
		EXPECT_TRUE(nmiRan.load());
		EXPECT_EQ(kshim::nmiCount(1) - nmis, 1u);
		/* the NMI returned into the exit stub; CPU 1 then entered for good: the flag is 1 */
		EXPECT_EQ(*per_cpu_ptr(&kernel_cr3_loaded, 1), 1);

		unsigned long after = pokelab::test::staleTlbReports(range);

		range = 0;
		execmem_free(page);
		return after - before;
	}
};

class NmiFixed : public NmiReplay
{
protected:
	std::string extraParams() const override
	{
		return "nohz_full=1 pokelab.ct_defer=v7-tlbi";
	}
};

class NmiPosted : public NmiReplay
{
protected:
	std::string extraParams() const override
	{
		return "nohz_full=1 pokelab.ct_defer=v7-tlbi pokelab.busted=nmi-paranoid-posted";
	}
	bool xmcViolationsExpected() const override { return true; }
};

/* The fixed path without its smp_mb() (pokelab.busted=no-mb-nmi): R8 on the NMI's pair. */
class NmiNoMb : public NmiReplay
{
protected:
	std::string extraParams() const override
	{
		return "nohz_full=1 pokelab.ct_defer=v7-tlbi pokelab.busted=no-mb-nmi";
	}
	bool xmcViolationsExpected() const override { return true; }
};

TEST_F(NmiFixed, TheParanoidEntrySetsTheFlagAndFlushes)
{
	EXPECT_EQ(race(), 0u);
	/* the handler ran with the flag the paranoid entry set */
	EXPECT_EQ(flagInNmi.load(), 1);
}

TEST_F(NmiPosted, TheNmiInTheExitWindowTouchesAStaleTranslation)
{
	EXPECT_EQ(race(), 1u);
	EXPECT_EQ(flagInNmi.load(), 0);
}

/*
 * INVPCID, the flush's instruction where the CPU has it, is not among the
 * SDM's serialising instructions: between the NMI's store of
 * kernel_cr3_loaded and its flush's page-table reads only the smp_mb()
 * stands, and R8 must say so when it is gone.
 */
TEST_F(NmiNoMb, TheNmisStoreAndFlushNeedTheirFence)
{
	unsigned long n = 0;

	race();
	for (const kshim::XmcViolation &v : kshim::xmcViolations()) {
		if (v.rule != kshim::XmcRule::MissingFence)
			continue;
		n++;
		EXPECT_EQ(v.cpu, 1);
		EXPECT_EQ(v.pair, kshim::FENCE_PAIR_CR3_LOADED);
	}
	EXPECT_EQ(n, 1u);
}

/*
 * The whole story, in the entry's window (docs/reports/nmi-paranoid-entry.md):
 * a vmalloc()ed object's VA is freed, purged and handed out again while
 * isolated CPU 1 sits in user mode, its translation of the old page still
 * in its TLB; a new object is published at the same VA with
 * rcu_assign_pointer(); CPU 1 enters, and an NMI taken after its switch to
 * the kernel CR3 and before its store runs a handler on nmi_handle()'s
 * list that follows the pointer:
 *
 *	CPU 0 (housekeeping)			CPU 1 (nohz_full)
 *	p = vmalloc(); ...			reads p in a system call (TLB: p -> page A)
 *						exit: flag = 0; user CR3; user mode
 *	vfree(p): PTE cleared (XCHG), lazy
 *	vm_unmap_aliases(): purge, flush;
 *	  the gate reads CPU 1's flag: 0, skip
 *	q = vmalloc() == p (page B)
 *	q->v = 42; rcu_assign_pointer(gp, q)
 *						SYSCALL: kernel CR3 (NOFLUSH)
 *						<NMI> paranoid entry: kernel CR3
 *						  handler: rcu_dereference(gp) = p:
 *						  p -> page A, stale (posted)
 *
 * The posted paranoid entry does nothing on the kernel CR3: one stale TLB
 * report. The fixed one sets the flag, fences and flushes: none.
 */
struct nmi_obj {
	int v;
};

nmi_obj *gp;
std::atomic<bool> storyGo, storyArmed, storyRan;
std::atomic<int> storyValue;
unsigned long storyVa;

void nmiInEntryWindow(unsigned int cpu, bool exit)
{
	if (cpu != 1 || exit || !storyArmed.load())
		return;
	storyArmed.store(false);
	kshim::nmiSelf();
}

int rcuReaderInNmi(unsigned int, struct pt_regs *)
{
	nmi_obj *o;

	if (smp_processor_id() != 1)
		return NMI_DONE;
	o = rcu_dereference(gp);
	if (!o)
		return NMI_DONE;
	kshim::tlbTouch((unsigned long)o);	/* the load through o's translation */
	storyValue.store(o->v);
	storyRan.store(true);
	return NMI_HANDLED;
}

class NmiStory : public pokelab::test::Booted
{
protected:
	unsigned int cpus() const override { return 2; }

	void TearDown() override
	{
		pokelab::ptiWindowHook = nullptr;
		unregister_nmi_handler(NMI_LOCAL, "nmi_story");
		rcu_assign_pointer(gp, (nmi_obj *)nullptr);
		pokelab::test::Booted::TearDown();
	}

	/* Returns the stale-TLB reports the story produced at the reused VA. */
	unsigned long story()
	{
		nmi_obj *p, *q;
		unsigned long before;

		vm_unmap_aliases();	/* nothing lazy left by another test: p is the lowest free VA */
		p = (nmi_obj *)vmalloc(4096);

		EXPECT_NE(p, nullptr);
		if (!p)
			return 0;
		storyVa = (unsigned long)p;
		storyGo = storyArmed = storyRan = false;
		storyValue = 0;
		EXPECT_EQ(register_nmi_handler(NMI_LOCAL, rcuReaderInNmi, 0, "nmi_story"), 0);
		pokelab::ptiWindowHook = nmiInEntryWindow;
		before = pokelab::test::staleTlbReports();

		kshim::cpuRun(1, [] {
			kshim::tlbTouch(storyVa);	/* a system call used the old object */
			pokelab::ctReturnToUser();
			while (!storyGo.load())
				cpu_relax();		/* user mode */
			storyArmed.store(true);
			pokelab::ctSyscall(nullptr, nullptr);
			pokelab::ctEnterKernelForGood();
		});
		while (ct_state_cpu(1) != CT_STATE_USER)
			cpu_relax();
		vfree(p);
		vm_unmap_aliases();
		q = (nmi_obj *)vmalloc(4096);
		EXPECT_EQ(q, p) << "the purged VA is handed out again";
		q->v = 42;
		rcu_assign_pointer(gp, q);
		storyGo.store(true);
		kshim::cpuWait(1);
		pokelab::ptiWindowHook = nullptr;
		EXPECT_TRUE(storyRan.load());
		EXPECT_EQ(storyValue.load(), 42);

		unsigned long after = pokelab::test::staleTlbReports(storyVa);

		rcu_assign_pointer(gp, (nmi_obj *)nullptr);
		vfree(q);
		return after - before;
	}
};

class NmiStoryFixed : public NmiStory
{
protected:
	std::string extraParams() const override
	{
		return "nohz_full=1 pokelab.ct_defer=v7-tlbi";
	}
};

class NmiStoryPosted : public NmiStory
{
protected:
	std::string extraParams() const override
	{
		return "nohz_full=1 pokelab.ct_defer=v7-tlbi pokelab.busted=nmi-paranoid-posted";
	}
	bool xmcViolationsExpected() const override { return true; }
};

TEST_F(NmiStoryPosted, AnNmiReaderFollowsAnRcuPointerIntoAPurgedAndReusedVa)
{
	EXPECT_EQ(story(), 1u);
}

TEST_F(NmiStoryFixed, TheParanoidFlushCoversTheReusedVa)
{
	EXPECT_EQ(story(), 0u);
}

} /* namespace */
