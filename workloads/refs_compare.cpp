// SPDX-License-Identifier: GPL-2.0-only
/*
 * The bpf-stats scenario's measurement: refs=global against refs=percpu,
 * interleaved flip by flip on each machine.
 */
#include <algorithm>

#include <fmt/format.h>

#include <asm/text-patching.h>
#include <kernel_shim/boot.h>
#include <linux/bug.h>
#include <linux/mutex.h>
#include <pokelab/text_poke_stats.h>

#include <workloads/bpf_stats.h>
#include <workloads/refs_compare.h>

namespace pokelab {

bool RefsModeResult::ok() const
{
	return staleCalls == 0 && deadLoops == 0 && violations == 0 && sites == kNrBpfSites &&
	       smallSites == 2;
}

u64 medianOf(std::vector<u64> v)
{
	if (v.empty())
		return 0;
	std::sort(v.begin(), v.end());
	return v[v.size() / 2];
}

u64 maxOf(const std::vector<u64> &v)
{
	return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

bool refsClaimHolds(const RefsModeResult m[2], std::string *why)
{
	for (int i = 0; i < 2; i++) {
		const RefsModeResult &r = m[i];

		if (!r.ok()) {
			*why = fmt::format("refs={}: {} stale calls, {} dead loops, {} + {} sites, "
					   "{} model violations", r.mode, r.staleCalls,
					   r.deadLoops, r.sites, r.smallSites, r.violations);
			return false;
		}
		for (size_t f = 0; f < r.batchNs.size(); f++) {
			if (r.nrEntries[f] != kNrBpfSites || r.syncRounds[f] != 3 ||
			    r.smallEntries[f] != 2 || r.smallSyncRounds[f] != 3) {
				*why = fmt::format("refs={} flip {}: batches of {} and {} entries with "
						   "{} and {} sync rounds (want 164/2, 3 rounds)",
						   r.mode, f + 1, r.nrEntries[f], r.smallEntries[f],
						   r.syncRounds[f], r.smallSyncRounds[f]);
				return false;
			}
		}
	}
	if (m[0].refsXcpu <= m[1].refsXcpu) {
		*why = fmt::format("cross-CPU refs-line writes: global {} <= percpu {}",
				   m[0].refsXcpu, m[1].refsXcpu);
		return false;
	}
	if (m[1].refsXcpu > m[1].refsPatcherWrites) {
		*why = fmt::format("refs=percpu: {} cross-CPU writes exceed the patcher's {} "
				   "publish/drain writes", m[1].refsXcpu, m[1].refsPatcherWrites);
		return false;
	}
	return true;
}

int refsModeOfFlip(unsigned int flip)
{
	/* (pair parity) xor (place in the pair) */
	return (int)((flip / 2 + flip) % 2);
}

unsigned int refsPairs(const RefsModeResult m[2])
{
	return std::min(m[0].flips, m[1].flips);
}

unsigned int refsQuads(const RefsModeResult m[2])
{
	return refsPairs(m) / 2;
}

unsigned int refsMachines(unsigned int flips, unsigned int rounds)
{
	return std::max(1u, std::min(rounds, flips / 2));
}

namespace {

/* Flip @f of the machine's run @r, into its mode's @m. */
void accumulateFlip(RefsModeResult &m, const BpfStatsResult &r, size_t f)
{
	const BpfStatsFlip &c = r.flipCensus[f];

	m.flips++;
	m.batchNs.push_back(r.batchNs[f]);
	m.nrEntries.push_back(r.nrEntries[f]);
	m.syncRounds.push_back(r.syncRoundsPerBatch[f]);
	m.smallBatchNs.push_back(r.smallBatchNs[f]);
	m.smallEntries.push_back(r.smallEntries[f]);
	m.smallSyncRounds.push_back(r.smallSyncRoundsPerBatch[f]);
	m.flipLoopNs.push_back(c.loopNs);
	m.flipCalls.push_back(c.calls);
	m.int3Hits += c.int3Emulated;
	m.int3Ns += c.int3Ns;
	m.loopNs += c.loopNs;
	m.calls += c.calls;
	m.refsXcpu += c.refsXcpu;
	m.refsPatcherWrites += c.refsPatcherWrites;
	m.staleCalls += c.staleCalls;
	m.checkedCalls += c.checkedCalls;
	m.violations += c.xmc.violations;
	m.xmc += c.xmc;
}

/*
 * What belongs to the machine of @r rather than to one flip, into both
 * modes: its sites, its dead loops, and the stale calls and model
 * violations outside every flip window (boot's, the hot loops' start, a
 * batch turning the key back off after an interrupted run).
 */
void accumulateMachine(RefsModeResult m[2], const BpfStatsResult &r)
{
	unsigned long stale = r.staleCalls, violations = r.violations;

	for (const BpfStatsFlip &c : r.flipCensus) {
		stale -= std::min(stale, c.staleCalls);
		violations -= std::min(violations, c.xmc.violations);
	}
	for (int i = 0; i < 2; i++) {
		m[i].sites = r.sites;
		m[i].smallSites = r.smallSites;
		m[i].deadLoops += r.deadLoops;
		m[i].staleCalls += stale;
		m[i].violations += violations;
		m[i].xmc.violations += violations;
	}
}

} /* namespace */

int runRefsCompare(const RefsCompareConfig &cfg, RefsModeResult out[2], std::string *err)
{
	static const char *const modes[2] = {"global", "percpu"};
	unsigned int quads = cfg.flips / 2, rounds = refsMachines(cfg.flips, cfg.rounds);
	unsigned int pairsBefore = 0;

	out[0] = RefsModeResult{};
	out[1] = RefsModeResult{};
	out[0].mode = modes[0];
	out[1].mode = modes[1];
	for (unsigned int round = 0; round < rounds; round++) {
		/*
		 * The quads of this machine: an even share, the remainder in the
		 * first rounds, so that each machine starts a quad; with odd
		 * flips, the lone last pair runs at the end of the last machine.
		 */
		unsigned int pairs = 2 * (quads / rounds + (round < quads % rounds)) +
				     (round + 1 == rounds ? cfg.flips % 2 : 0);
		unsigned int flips = 2 * pairs, first = 2 * pairsBefore;
		int mode = refsModeOfFlip(first);
		std::string cmdline =
			fmt::format("nr_cpus={} pokelab.refs={}", cfg.cpus, modes[mode]);
		BpfStatsConfig bc;
		int ret;

		ret = kshim::boot(cmdline, err, cfg.quiet);
		if (ret)
			return ret;
		if (cfg.onBooted)
			cfg.onBooted(modes[mode]);
		if (cfg.onStage)
			cfg.onStage(fmt::format("refs=global/percpu interleaved ({} CPUs), "
						"round {}/{}", cfg.cpus, round + 1, rounds));
		bc.flips = flips;
		bc.smallKey = true;
		bc.stop = cfg.stop;
		bc.beforeFlip = [&](unsigned int f) {
			int busy;

			mode = refsModeOfFlip(first + f - 1);
			mutex_lock(&text_mutex);
			busy = text_poke_set_refs_mode(mode == 0);
			mutex_unlock(&text_mutex);
			/* between flips no batch is queued and every count is back to 0 */
			BUG_ON(busy);
			out[mode].machineLine = kshim::machineLine();
		};
		bc.onFlip = [&](unsigned int f, unsigned int, u64) {
			if (cfg.onFlip)
				cfg.onFlip(f, flips);
		};
		BpfStatsResult r = runBpfStats(bc);

		for (unsigned int f = 0; f < r.flips; f++)
			accumulateFlip(out[refsModeOfFlip(first + f)], r, f);
		accumulateMachine(out, r);
		pairsBefore += pairs;
		if (cfg.onShutdown)
			cfg.onShutdown(modes[mode]);
		kshim::shutdown();
		if (r.interrupted) {
			if (cfg.interrupted)
				*cfg.interrupted = true;
			return 0;
		}
	}
	return 0;
}

} /* namespace pokelab */
