// SPDX-License-Identifier: GPL-2.0-only
/*
 * The bpf_stats_enabled_key demo runner.
 *
 * CPU 0 flips the key; every other CPU runs all 164 programs in a loop.
 * The check: once smp_text_poke_batch_finish() has returned, no CPU may take
 * the old branch. CPU 0 publishes a flip sequence number, odd while a flip
 * patches and even once it is done (release after finish returned); a hot
 * loop that read an even number before a call and still reads it after a
 * call that took the other branch has seen stale text:
 *
 *	CPU0 (flip f)				CPU1 (hot loop)
 *	seq = 2f-1; smp_mb()
 *	static_key_slow_inc/dec()
 *	  ...three sync rounds...
 *	smp_store_release(seq, 2f)	----->	s = smp_load_acquire(seq) == 2f
 *						r = prog[i](ctx)  must take branch(2f)
 *						else stale, unless seq moved on meanwhile
 */
#include <atomic>
#include <chrono>
#include <ctime>
#include <thread>

#include <fmt/format.h>

#include <asm/barrier.h>
#include <asm/text-patching.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/machine.h>
#include <kernel_shim/sched.h>
#include <kernel_shim/xmc.h>
#include <kernel_shim/plural.h>
#include <kernel_shim/xmc_verdict.h>
#include <linux/context_tracking.h>
#include <linux/cpumask.h>
#include <linux/smp.h>
#include <pokelab/ct_entry.h>
#include <pokelab/text_poke_stats.h>

#include <workloads/bpf_prog.h>
#include <workloads/bpf_stats.h>
#include <workloads/small_key.h>

namespace pokelab {

namespace {

struct alignas(64) HotLoopState {
	std::atomic<unsigned long> calls{0};
	std::atomic<unsigned long> stale{0};
	std::atomic<unsigned long> checked{0};
	std::atomic<unsigned int> passSeq{0};	/* seq of the last full pass */
	std::atomic<u64> ns{0};
	std::atomic<bool> done{false};
};

unsigned int flipSeq;		/* odd: a flip is patching; even: stable */
std::atomic<bool> stopLoops;

/* The branch every call must take once @seq (even) is published. */
bool stateOfSeq(unsigned int seq)
{
	return (seq / 2) % 2 == 1;
}

void hotLoop(HotLoopState *st, bool smallKey)
{
	const BpfProgFn *progs = bpfProgs();
	const BpfProgFn *small = smallKeyProgs();
	BpfCtx ctx{(unsigned long)smp_processor_id()};
	unsigned long calls = 0, stale = 0, checked = 0;
	u64 t0 = kshim::clockNs();

	while (!stopLoops.load(std::memory_order_relaxed)) {
		unsigned int s1 = smp_load_acquire(&flipSeq);
		bool stable = !(s1 & 1);
		bool want = stateOfSeq(s1);

		/*
		 * One call through a site: count it, and check it once the flip is
		 * stable; every 4 calls, the host's time slice (kernel_shim/sched.h).
		 */
		auto account = [&](unsigned int r) {
			/* a call that trapped on an INT3 costs microseconds: check the slice often */
			if (!(++calls & 3))
				kshim::schedTick();
			if (!stable)
				return;
			checked++;
			if (unlikely(!!(r & kBpfRanWithStats) != want)) {
				/* Stale only if no new flip began since s1 was read. */
				smp_rmb();
				if (READ_ONCE(flipSeq) == s1)
					stale++;
			}
		};

		for (unsigned int i = 0; i < kNrBpfSites; i++)
			account(progs[i](&ctx));
		for (unsigned int i = 0; smallKey && i < kNrSmallKeySites; i++)
			account(small[i](&ctx));
		st->calls.store(calls, std::memory_order_relaxed);
		st->stale.store(stale, std::memory_order_relaxed);
		st->checked.store(checked, std::memory_order_relaxed);
		st->passSeq.store(s1, std::memory_order_release);
	}
	st->ns.store(kshim::clockNs() - t0, std::memory_order_relaxed);
	st->calls.store(calls, std::memory_order_relaxed);
	st->stale.store(stale, std::memory_order_relaxed);
	st->checked.store(checked, std::memory_order_relaxed);
	st->done.store(true, std::memory_order_release);
}

/*
 * An isolated CPU: user mode, with a system call after each flip (so that
 * it enters the kernel, and flushes deferred work, between flips). With
 * @inKernel it instead enters a system call when a flip starts and stays
 * inside until the flip is done.
 */
struct alignas(64) IsolatedState {
	std::atomic<unsigned int> ack{0};	/* last flip phase seen */
	std::atomic<unsigned long> syscalls{0};
	std::atomic<bool> done{false};
};

struct InKernelWait {
	IsolatedState *st;
	unsigned int phase;
};

void waitFlipInKernel(void *arg)
{
	InKernelWait *w = (InKernelWait *)arg;

	/* In the kernel now, watched by RCU: tell CPU 0, then sit out the flip. */
	w->st->ack.store(w->phase, std::memory_order_release);
	while (smp_load_acquire(&flipSeq) == w->phase) {
		cpu_relax();
		kshim::schedTick();
	}
}

void isolatedLoop(IsolatedState *st, bool inKernel)
{
	volatile unsigned long work = 0;
	unsigned int seen = 0;

	pokelab::ctReturnToUser();
	while (!stopLoops.load(std::memory_order_relaxed)) {
		unsigned int seq = smp_load_acquire(&flipSeq);

		/* user-mode work, no kernel text */
		for (int i = 0; i < 64; i++)
			work = work + i;
		kshim::schedTick();
		if (seq == seen)
			continue;
		seen = seq;
		if (seq & 1) {
			if (inKernel) {
				InKernelWait w{st, seq};

				pokelab::ctSyscall(waitFlipInKernel, &w);
				st->syscalls.fetch_add(1, std::memory_order_relaxed);
			} else {
				/* seen from user mode: the flip may patch now */
				st->ack.store(seq, std::memory_order_release);
			}
		} else {
			/* the flip is done: one system call, as a rare syscall would */
			pokelab::ctSyscall(nullptr, nullptr);
			st->syscalls.fetch_add(1, std::memory_order_relaxed);
			st->ack.store(seq, std::memory_order_release);
		}
	}
	pokelab::ctEnterKernelForGood();
	st->done.store(true, std::memory_order_release);
}

unsigned int sitesOfKey()
{
	return jump_label_nr_sites(&bpf_stats_enabled_key.key);
}

/* The census counters at a flip-window boundary (BpfStatsFlip), summed as it sums them. */
struct CensusMark {
	u64 ns = 0;
	BpfStatsFlip sum;
	unsigned int hotLoops = 0;
};

CensusMark censusMark(const std::vector<HotLoopState> &loops, const std::vector<bool> &dead,
		      const struct cpumask *nohz)
{
	CensusMark m;

	kshim::xmcQuiesce();
	m.sum.xmc = kshim::xmcStats();
	m.sum.refsPatcherWrites = refsPatcherWrites();
	for (unsigned int cpu = 0; cpu < loops.size(); cpu++) {
		m.sum.refsXcpu += refsCrossCpuWrites(cpu);
		m.sum.int3Emulated += int3Emulated(cpu);
		if (cpu == 0 || cpumask_test_cpu(cpu, nohz))
			continue;
		m.sum.int3Ns += int3HandlerNs(cpu);
		m.sum.calls += loops[cpu].calls.load(std::memory_order_relaxed);
		m.sum.staleCalls += loops[cpu].stale.load(std::memory_order_relaxed);
		m.sum.checkedCalls += loops[cpu].checked.load(std::memory_order_relaxed);
		m.hotLoops += !dead[cpu];
	}
	m.ns = kshim::clockNs();
	return m;
}

/* Flip @to - @from: one window of the census. */
BpfStatsFlip censusWindow(const CensusMark &from, const CensusMark &to)
{
	BpfStatsFlip f;

	f.refsXcpu = to.sum.refsXcpu - from.sum.refsXcpu;
	f.refsPatcherWrites = to.sum.refsPatcherWrites - from.sum.refsPatcherWrites;
	f.int3Emulated = to.sum.int3Emulated - from.sum.int3Emulated;
	f.int3Ns = to.sum.int3Ns - from.sum.int3Ns;
	f.loopNs = (to.ns - from.ns) * to.hotLoops;
	f.calls = to.sum.calls - from.sum.calls;
	f.staleCalls = to.sum.staleCalls - from.sum.staleCalls;
	f.checkedCalls = to.sum.checkedCalls - from.sum.checkedCalls;
	f.xmc = to.sum.xmc - from.sum.xmc;
	return f;
}

} /* namespace */

BpfStatsResult runBpfStats(const BpfStatsConfig &cfg)
{
	BpfStatsResult r;
	unsigned int n = nr_cpu_ids;
	std::vector<HotLoopState> loops(n);
	std::vector<IsolatedState> isolated(n);
	const struct cpumask *nohz = kshim::nohzFullMask();
	TextPokeStats before = textPokeStats();
	unsigned long patcher0 = refsPatcherWrites();
	std::vector<unsigned long> xcpu0(n);
	std::vector<u64> int3Ns0(n);

	for (unsigned int cpu = 0; cpu < n; cpu++) {
		xcpu0[cpu] = refsCrossCpuWrites(cpu);
		int3Ns0[cpu] = int3HandlerNs(cpu);
	}

	r.sites = sitesOfKey();
	r.flips = cfg.flips;
	r.isolation = !cpumask_empty(nohz);
	kshim::xmcQuiesce();

	kshim::XmcStats xmc0 = kshim::xmcStats();
	std::vector<unsigned long> viol0(n);

	for (unsigned int cpu = 0; cpu < n; cpu++)
		viol0[cpu] = kshim::xmcViolationsOn(cpu);

	/* Start from a disabled key, whatever an earlier run left. */
	bpf_stats_handler_write(0);
	small_key_write(0);
	r.smallSites = jump_label_nr_sites(&pokelab_small_key.key);
	WRITE_ONCE(flipSeq, 0u);
	stopLoops.store(false);
	for (unsigned int cpu = 1; cpu < n; cpu++) {
		if (cpumask_test_cpu(cpu, nohz))
			kshim::cpuRun(cpu, [st = &isolated[cpu], in = cfg.isolatedInKernel] {
				isolatedLoop(st, in);
			});
		else
			kshim::cpuRun(cpu, [st = &loops[cpu], sk = cfg.smallKey] {
				hotLoop(st, sk);
			});
	}

	std::vector<bool> dead(n, false);
	auto deadline = [] { return std::chrono::steady_clock::now() + std::chrono::seconds(10); };
	/* Wait until @done(cpu) for every live CPU of one kind (hot loop or isolated). */
	auto waitEach = [&](bool isolatedCpus, auto done) {
		for (unsigned int cpu = 1; cpu < n; cpu++) {
			auto until = deadline();

			if (cpumask_test_cpu(cpu, nohz) != isolatedCpus)
				continue;
			while (!dead[cpu] && !done(cpu)) {
				if (std::chrono::steady_clock::now() > until)
					dead[cpu] = true;
				std::this_thread::yield();
			}
		}
	};
	/* Every live hot loop completes a pass that began at @seq or later. */
	auto waitPasses = [&](unsigned int seq) {
		waitEach(false, [&](unsigned int cpu) {
			return loops[cpu].passSeq.load(std::memory_order_acquire) >= seq;
		});
	};
	/* Every isolated CPU acknowledged flip phase @seq. */
	auto waitIsolated = [&](unsigned int seq) {
		waitEach(true, [&](unsigned int cpu) {
			return isolated[cpu].ack.load(std::memory_order_acquire) == seq;
		});
	};

	waitPasses(0);
	unsigned int done = 0;
	CensusMark mark;

	for (unsigned int f = 1; f <= cfg.flips; f++) {
		if (cfg.stop && cfg.stop->load(std::memory_order_relaxed)) {
			r.interrupted = true;
			break;
		}
		/* one window per flip, each from where the last one ended */
		CensusMark next = censusMark(loops, dead, nohz);

		if (f > 1)
			r.flipCensus.push_back(censusWindow(mark, next));
		mark = next;
		if (cfg.beforeFlip)
			cfg.beforeFlip(f);
		done = f;
		WRITE_ONCE(flipSeq, 2 * f - 1);
		smp_mb();
		waitIsolated(2 * f - 1);

		bpf_stats_handler_write(f % 2);

		TextPokeStats s = textPokeStats();
		r.batchNs.push_back(s.lastBatchNs);
		r.syncRoundsPerBatch.push_back(s.lastSyncRounds);
		r.nrEntries.push_back(s.lastNrEntries);
		if (cfg.smallKey) {
			small_key_write(f % 2);

			TextPokeStats s2 = textPokeStats();
			r.smallBatchNs.push_back(s2.lastBatchNs);
			r.smallSyncRoundsPerBatch.push_back(s2.lastSyncRounds);
			r.smallEntries.push_back(s2.lastNrEntries);
		}
		smp_store_release(&flipSeq, 2 * f);
		if (cfg.onFlip)
			cfg.onFlip(f, s.lastNrEntries, s.lastBatchNs);

		waitPasses(2 * f);
		waitIsolated(2 * f);
	}
	if (done)
		r.flipCensus.push_back(censusWindow(mark, censusMark(loops, dead, nohz)));

	r.flips = done;
	/* Leave the key disabled. */
	if (done % 2) {
		WRITE_ONCE(flipSeq, 2 * done + 1);
		smp_mb();
		waitIsolated(2 * done + 1);
		bpf_stats_handler_write(0);
		small_key_write(0);
		smp_store_release(&flipSeq, 2 * done + 2);
		waitIsolated(2 * done + 2);
	}

	stopLoops.store(true);
	for (unsigned int cpu = 1; cpu < n; cpu++)
		if (!dead[cpu])
			kshim::cpuWait(cpu);
	kshim::xmcQuiesce();
	/* every table's site as the keys' counts and the features demand, at the run's end (R7) */
	kshim::xmcTablesCheck("the run's end");
	{
		kshim::XmcStats x = kshim::xmcStats();
		std::vector<kshim::XmcViolation> log = kshim::xmcViolations();

		r.xmc = x - xmc0;
		/* and what the model found while the machine booted: a wrong site after boot */
		r.xmc.violations = x.violations;
		r.violations = r.xmc.violations;
		/* the log keeps the first ones since boot */
		for (size_t i = 0; i < log.size() && r.violationLines.size() < 3; i++)
			r.violationLines.push_back(kshim::xmcFormat(log[i]));
	}

	TextPokeStats after = textPokeStats();
	r.batches = after.batches - before.batches;
	r.syncRounds = after.syncRounds - before.syncRounds;
	r.refsPatcherWrites = refsPatcherWrites() - patcher0;

	for (unsigned int cpu = 0; cpu < n; cpu++) {
		BpfStatsCpu c;
		kshim::CpuStats cs = kshim::cpuStats(cpu);

		c.cpu = cpu;
		c.pu = kshim::cpuPu(cpu);
		c.ipiReceived = cs.ipiReceived;
		c.ipiSent = cs.ipiSent;
		c.int3Emulated = int3Emulated(cpu);
		c.syncCoreRuns = syncCoreRuns(cpu);
		c.syncsDeferred = syncsDeferred(cpu);
		c.deferredFlushed = ctWorkFlushed(cpu);
		c.violations = kshim::xmcViolationsOn(cpu) - viol0[cpu];
		c.int3Ns = int3HandlerNs(cpu) - int3Ns0[cpu];
		c.refsXcpu = refsCrossCpuWrites(cpu) - xcpu0[cpu];
		r.refsXcpu += c.refsXcpu;
		if (cpumask_test_cpu(cpu, nohz)) {
			IsolatedState &st = isolated[cpu];

			c.isolated = true;
			c.died = dead[cpu] || !st.done.load(std::memory_order_acquire);
			c.syscalls = st.syscalls.load();
			if (c.died)
				r.deadLoops++;
		} else if (cpu > 0) {
			HotLoopState &st = loops[cpu];

			c.hotLoop = true;
			/* a stop before the first flip may come before a loop's first call */
			c.died = dead[cpu] || !st.done.load(std::memory_order_acquire) ||
				 (st.calls.load() == 0 && !(r.interrupted && !done));
			c.calls = st.calls.load();
			c.loopNs = st.ns.load();
			c.nsPerCall = c.calls ? (double)c.loopNs / c.calls : 0;
			r.staleCalls += st.stale.load();
			r.checkedCalls += st.checked.load();
			if (c.died)
				r.deadLoops++;
		}
		r.cpus.push_back(c);
	}
	return r;
}

std::string formatBpfStats(const BpfStatsResult &r)
{
	std::string s;
	std::vector<u64> sorted = r.batchNs;
	unsigned int exactly3 = 0;

	std::sort(sorted.begin(), sorted.end());
	for (unsigned int rounds : r.syncRoundsPerBatch)
		exactly3 += rounds == 3;

	s += fmt::format("\nbpf_stats_enabled_key: {} sites, {} flips, {} batches, {} sync rounds "
			 "({} of {} flip batches with exactly 3){}\n",
			 r.sites, r.flips, r.batches, r.syncRounds, exactly3,
			 r.syncRoundsPerBatch.size(),
			 r.flips % 2 ? "; the extra batch turned the key back off" : "");
	if (!sorted.empty())
		s += fmt::format("batch latency: median {} us, max {} us\n",
				 sorted[sorted.size() / 2] / 1000, sorted.back() / 1000);
	s += fmt::format("\n{:>4} {:>4} {:>10} {:>10} {:>14} {:>12} {:>8}\n", "CPU", "PU",
			 "IPIs recv", "IPIs sent", "INT3 emulated", "calls", "ns/call");
	for (const BpfStatsCpu &c : r.cpus) {
		std::string calls = c.hotLoop ? fmt::format("{}", c.calls) : "-";
		std::string ns = c.hotLoop ? fmt::format("{:.1f}", c.nsPerCall) : "-";

		s += fmt::format("{:>4} {:>4} {:>10} {:>10} {:>14} {:>12} {:>8}{}\n", c.cpu, c.pu,
				 c.ipiReceived, c.ipiSent, c.int3Emulated, calls, ns,
				 c.died ? "  DIED" : "");
	}
	if (r.isolation) {
		s += fmt::format("\nisolation (ct_defer={}):\n{:>4} {:>9} {:>10} {:>14} {:>14} {:>14} "
				 "{:>11} {:>9}\n",
				 ct_defer_policy_name(ct_defer_policy), "CPU", "role", "IPIs recv",
				 "do_sync_core", "syncs deferred", "flushed@entry", "violations",
				 "syscalls");
		for (const BpfStatsCpu &c : r.cpus) {
			const char *role = c.cpu == 0 ? "patcher" : c.isolated ? "nohz_full" : "hot loop";

			s += fmt::format("{:>4} {:>9} {:>10} {:>14} {:>14} {:>14} {:>11} {:>9}\n",
					 c.cpu, role, c.ipiReceived, c.syncCoreRuns,
					 c.syncsDeferred, c.deferredFlushed, c.violations,
					 c.isolated ? fmt::format("{}", c.syscalls) : "-");
		}
	}
	s += "\n";
	for (const std::string &v : r.violationLines)
		s += v;
	if (r.interrupted && !r.flips) {
		s += fmt::format("check: interrupted before the first flip: no batch to check; {}\n"
				 "verdict: NOTHING CHECKED (interrupted before the first flip)\n",
				 kshim::xmcVerdict(r.xmc));
		return s;
	}
	if (r.staleChecked())
		s += fmt::format("check: stale calls: {} of {} calls checked after finish returned, "
				 "{} loop threads died, {} sites found -> {}\n",
				 r.staleCalls, r.checkedCalls, r.deadLoops, r.sites,
				 r.staleCalls || r.deadLoops || r.sites != kNrBpfSites ? "FAIL"
										: "PASS");
	else
		s += fmt::format("check: stale calls: no CPU ran the sites (every CPU but 0 is "
				 "nohz_full, or the hot loops died) -> NOTHING CHECKED\n");
	s += fmt::format("check: sync rounds: {} in {} batches{}, {} -> {}\n",
			 r.syncRounds, r.batches,
			 r.batches > r.syncRoundsPerBatch.size()
				 ? fmt::format(" ({} flip batches and the one that turned the key "
					       "back off)", r.syncRoundsPerBatch.size())
				 : std::string(),
			 r.syncRoundsOk() ? "3 each" : "not 3 each",
			 r.syncRoundsOk() ? "PASS" : "FAIL");
	s += fmt::format("check: {}\n", kshim::xmcVerdict(r.xmc));
	/* a run cut short is no PASS: what it found stays a FAIL, the rest is INTERRUPTED */
	if (r.interrupted && r.ok()) {
		s += fmt::format("verdict: INTERRUPTED after {}: none on the flips not made\n",
				 r.flips == 1 ? std::string("1 flip") : fmt::format("{} flips",
										    r.flips));
		return s;
	}
	if (r.ok() && r.xmc.lost) {
		/* what was lost and what would make it whole, in torture's words */
		s += fmt::format("verdict: PASS, PARTIAL: the model judged all but {} past its "
				 "capacity: {}; {}\n", kshim::nOf(r.xmc.lost, "window or value",
								   "windows or values"),
				 kshim::xmcLostCauses(r.xmc), kshim::xmcPartialHint(r.xmc));
		return s;
	}
	/* nothing failed, but a check had nothing to judge, or its judge was turned off */
	bool clean = r.staleCalls == 0 && r.deadLoops == 0 && r.violations == 0 &&
		     r.syncRoundsOk();
	s += fmt::format("verdict: {}\n",
			 r.ok() ? "PASS"
			 : clean && !r.staleChecked()
				 ? "NOTHING CHECKED (the stale-call check had no calls)"
			 : clean && !kshim::xmcEnabled && r.sites == kNrBpfSites
				 ? "NOTHING CHECKED (the model is off: pokelab.xmc=0; stale calls and "
				   "sync rounds passed)"
				 : "FAIL");
	return s;
}

} /* namespace pokelab */
