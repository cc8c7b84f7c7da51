// SPDX-License-Identifier: GPL-2.0-only
/*
 * The bpf-stats scenario's measurement: refs=global against refs=percpu,
 * one machine per mode, alternated.
 */
#include <algorithm>

#include <fmt/format.h>

#include <kernel_shim/boot.h>
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

namespace {

void accumulate(RefsModeResult &m, const BpfStatsResult &r)
{
	auto append = [](auto &to, const auto &from) { to.insert(to.end(), from.begin(), from.end()); };

	m.sites = r.sites;
	m.smallSites = r.smallSites;
	m.flips += r.flips;
	append(m.batchNs, r.batchNs);
	append(m.nrEntries, r.nrEntries);
	append(m.syncRounds, r.syncRoundsPerBatch);
	append(m.smallBatchNs, r.smallBatchNs);
	append(m.smallEntries, r.smallEntries);
	append(m.smallSyncRounds, r.smallSyncRoundsPerBatch);
	m.refsXcpu += r.refsXcpu;
	m.refsPatcherWrites += r.refsPatcherWrites;
	m.staleCalls += r.staleCalls;
	m.checkedCalls += r.checkedCalls;
	m.deadLoops += r.deadLoops;
	m.violations += r.violations;
	m.xmc += r.xmc;
	for (const BpfStatsCpu &c : r.cpus) {
		m.int3Hits += c.int3Emulated;	/* since boot: one run per machine */
		if (!c.hotLoop)
			continue;
		m.int3Ns += c.int3Ns;
		m.loopNs += c.loopNs;
		m.calls += c.calls;
	}
}

} /* namespace */

int runRefsCompare(const RefsCompareConfig &cfg, RefsModeResult out[2], std::string *err)
{
	static const char *const modes[2] = {"global", "percpu"};
	unsigned int rounds = std::max(1u, std::min(cfg.rounds, cfg.flips));

	out[0] = RefsModeResult{};
	out[1] = RefsModeResult{};
	out[0].mode = modes[0];
	out[1].mode = modes[1];
	for (unsigned int round = 0; round < rounds; round++) {
		/* The flips of this round: an even share, the remainder in the first rounds. */
		unsigned int flips = cfg.flips / rounds + (round < cfg.flips % rounds);

		for (int m = 0; m < 2; m++) {
			/* Alternate the order too, so neither mode always runs first. */
			int mode = (round % 2) ? 1 - m : m;
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
				cfg.onStage(fmt::format("refs={} ({} CPUs), round {}/{}", modes[mode],
							cfg.cpus, round + 1, rounds));
			bc.flips = flips;
			bc.smallKey = true;
			bc.stop = cfg.stop;
			bc.onFlip = [&](unsigned int f, unsigned int, u64) {
				if (cfg.onFlip)
					cfg.onFlip(f, flips);
			};
			BpfStatsResult r = runBpfStats(bc);

			out[mode].machineLine = kshim::machineLine();
			accumulate(out[mode], r);
			if (cfg.onShutdown)
				cfg.onShutdown(modes[mode]);
			kshim::shutdown();
			if (r.interrupted) {
				if (cfg.interrupted)
					*cfg.interrupted = true;
				return 0;
			}
		}
	}
	return 0;
}

} /* namespace pokelab */
