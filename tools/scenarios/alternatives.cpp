// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab run alternatives (case 004): apply a few thousand alternative
 * sites with one sync_core() per site (text_poke_early(), upstream) and
 * with one sync_core() per pass under IRQs off (batched, pokelab's
 * experiment: never merged upstream, kernel-map.md 2.5), for every
 * serialising instruction the CPU offers, and set the saving beside the
 * case's 63 us (bare metal) and ~3 ms (KVM guest).
 */
#include <algorithm>
#include <ctime>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <asm/sync_core.h>
#include <kernel_shim/boot.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/xmc.h>
#include <kernel_shim/xmc_verdict.h>

#include <workloads/alt_pass.h>
#include <workloads/machine_notes.h>
#include "options.h"
#include "scenario.h"
#include "stop.h"

namespace pokelab::scenario {

namespace {

unsigned int optRepeats = 9;
unsigned long optSites;		/* 0: every generated site */

double medianUs(std::vector<u64> v)
{
	std::sort(v.begin(), v.end());
	return v[v.size() / 2] / 1000.0;
}

std::string fmtUs(double us)
{
	if (us >= 1000.0)
		return fmt::format("{:.2f} ms", us / 1000.0);
	return fmt::format("{:.1f} us", us);
}

int runAlternatives(const Common &common, unsigned int repeats)
{
	std::string err;
	Progress progress(common, "alternatives");
	struct Row {
		const char *name;
		bool present;
		double perSiteUs = 0, batchedUs = 0;
		double savingUs = 0;	/* median of the paired differences */
		double noiseUs = 0;	/* half the interquartile range of those differences */
		double aloneNs = 0;	/* one call on its own, no text write before it */
		bool measured = true;	/* false: a stop came before its first pass pair */
	};
	std::vector<Row> rows;
	const std::atomic<bool> *stop = pokelab::stopFlag();
	unsigned int passes = 0;
	unsigned long sites = 0;
	bool countsOk = true, bytesOk = true;
	std::string report;

	/*
	 * One CPU, as at alternative_instructions() time: the pass rewrites the
	 * program's own sites, which another CPU could be running.
	 */
	if (kshim::boot("nr_cpus=1", &err, common.quiet)) {
		fmt::print(stderr, "pokelab: {}\n", err);
		return 2;
	}
	report = reportHeader("004", "batching sync_core() in apply_alternatives()");

	for (const AltSyncFlavour &f : altSyncFlavours()) {
		Row r{f.name, f.present};
		std::vector<u64> perSite, batched;
		std::vector<u8> perSiteBytes, batchedBytes;

		if (!f.present) {
			rows.push_back(r);
			continue;
		}
		progress.stage(fmt::format("sync_core={}", f.name));
		for (unsigned int i = 0; i < repeats; i++) {
			/* SIGINT/SIGTERM/SIGHUP: the pass pair in progress completes */
			if (stop->load())
				break;
			/* Alternate the two variants so drift hits both alike. */
			AltPassResult a = altRunPass(false, f.fn);

			perSiteBytes = altPassBytes();
			AltPassResult b = altRunPass(true, f.fn);

			batchedBytes = altPassBytes();
			perSite.push_back(a.ns);
			batched.push_back(b.ns);
			sites = a.sites;
			if (a.syncs != a.sites || b.syncs != 1 || a.sites != b.sites)
				countsOk = false;
			if (perSiteBytes != batchedBytes)
				bytesOk = false;
			progress.step(i + 1, repeats);
			passes++;
		}
		/* stopped before this flavour's first pass pair: nothing to report for it */
		if (perSite.empty()) {
			r.measured = false;
			rows.push_back(r);
			continue;
		}
		{
			constexpr unsigned int calls = 2000;
			u64 t0 = kshim::clockNs();

			for (unsigned int k = 0; k < calls; k++)
				f.fn();
			r.aloneNs = (double)(kshim::clockNs() - t0) / calls;
		}
		r.perSiteUs = medianUs(perSite);
		r.batchedUs = medianUs(batched);
		{
			std::vector<double> d;

			for (size_t k = 0; k < perSite.size(); k++)
				d.push_back(((double)perSite[k] - (double)batched[k]) / 1000.0);
			std::sort(d.begin(), d.end());
			r.savingUs = d[d.size() / 2];
			r.noiseUs = (d[d.size() * 3 / 4] - d[d.size() / 4]) / 2;
		}
		rows.push_back(r);
	}
	progress.done();

	report += fmt::format("sites per pass: {} (own table {} + generated {}), every site "
			      "restored to the compiler's bytes before each pass; median of {} "
			      "passes{}\n\n",
			      sites, sites - altGeneratedSites(), altGeneratedSites(), repeats,
			      stop->load() ? " (fewer where interrupted)" : "");
	report += fmt::format("{:<14}{:>16}{:>16}{:>12}{:>14}{:>16}\n", "sync_core", "1 per site",
			      "1 per pass", "saving", "per site", "1 call alone");
	for (const Row &r : rows) {
		if (!r.present) {
			report += fmt::format("{:<14}not on this CPU (CPUID.7.0:EDX[14] clear)\n",
					      r.name);
			continue;
		}
		if (!r.measured) {
			report += fmt::format("{:<14}not run (interrupted)\n", r.name);
			continue;
		}
		double saving = r.savingUs;

		report += fmt::format("{:<14}{:>16}{:>16}{:>12}{:>11.0f} ns{:>13.0f} ns\n", r.name,
				      fmtUs(r.perSiteUs), fmtUs(r.batchedUs), fmtUs(saving),
				      saving * 1000.0 / (double)sites, r.aloneNs);
	}
	report += "\n";
	if (stop->load()) {
		fmt::print("{}run alternatives: interrupted after {} pass pairs ({}); no claim table "
			   "for an incomplete run\n", report, passes, pokelab::stopSignalName());
		kshim::shutdown();
		return pokelab::stopExitStatus();
	}

	auto saving = [&](const char *name) -> std::string {
		for (const Row &r : rows)
			if (r.present && std::string(r.name) == name)
				return fmt::format("{} ± {}", fmtUs(r.savingUs), fmtUs(r.noiseUs));
		return "n/a";
	};
	auto perSiteNs = [&](const char *name) -> std::string {
		for (const Row &r : rows)
			if (r.present && std::string(r.name) == name)
				return fmt::format("{:.0f} ns/site (alone x sites: {})",
						   r.savingUs * 1000.0 / (double)sites,
						   fmtUs(r.aloneNs * (double)sites / 1000.0));
		return "n/a";
	};
	double cpuidAloneNs = 0;

	for (const Row &r : rows)
		if (r.present && std::string(r.name) == "cpuid")
			cpuidAloneNs = r.aloneNs;
	std::string fastFlavour = kshim::cpuHasSerialize ? "serialize" : "iret_to_self";

	report += claimTable({
		{"saving, bare metal (no exit per sync)", "63 us",
		 fmt::format("{} ({})", saving(fastFlavour.c_str()), fastFlavour),
		 perSiteNs(fastFlavour.c_str())},
		{"saving, KVM guest (sync exits)", "~3 ms",
		 fmt::format("{} (cpuid)", saving("cpuid")), perSiteNs("cpuid")},
		{"sync_core() calls per pass", "1 per site -> 1",
		 fmt::format("{} -> 1", sites), countsOk ? "counts ok" : "COUNTS WRONG"},
		{"bytes after the pass", "identical",
		 bytesOk ? "identical" : "DIFFERENT", bytesOk ? "ok" : "MISMATCH"},
	});
	report += pokelab::alternativesMachineNote(kshim::detectMachine(), cpuidAloneNs, fastFlavour,
						   kshim::machineLine().find("poke alias") !=
								   std::string::npos
							   ? "alias"
							   : "procmem");
	kshim::xmcQuiesce();

	kshim::XmcStats x = kshim::xmcStats();

	report += fmt::format("\n{}\ncheck: sync_core() calls {}, bytes {}, {} model "
			      "violations -> {}\n", kshim::xmcVerdict(x),
			      countsOk ? "1 per site, then 1 per pass" : "NOT 1 per site, then 1",
			      bytesOk ? "identical" : "DIFFERENT", x.violations,
			      countsOk && bytesOk && !x.violations ? "PASS" : "FAIL");
	fmt::print("{}", report);
	kshim::shutdown();
	return countsOk && bytesOk && !x.violations ? 0 : 1;
}

int runAlternativesCli(const Common &common)
{
	if (optSites > altGeneratedSitesMax()) {
		fmt::print(stderr, "pokelab: --sites {}: expected 1..{} (generated sites)\n", optSites,
			   altGeneratedSitesMax());
		return 2;
	}
	altSetGeneratedSites(optSites ? optSites : altGeneratedSitesMax());
	return runAlternatives(common, optRepeats);
}

int (*setupAlternatives(CLI::App *sub))(const Common &)
{
	sub->add_option("--sites", optSites,
			"Generated sites to patch besides the program's own (default: all)")
		->check(wholeNumber(1, 1000000));
	sub->add_option("--repeats", optRepeats,
			"Passes per variant and flavour, their median reported (default: 9)")
		->check(wholeNumber(1, 1000));
	return runAlternativesCli;
}

int reproduceAlternatives(const Common &common)
{
	altSetGeneratedSites(altGeneratedSitesMax());
	return runAlternatives(common, 7);
}

ScenarioRegistrar alternativesRegistrar({
	"alternatives", "004",
	"apply_alternatives(): one sync_core() per site vs one per pass",
	setupAlternatives, reproduceAlternatives,
	"the pass runs on one CPU before any other runs the sites: no batch, no IPI, nothing on a "
	"second lane to draw (`pokelab explain apply-alternatives` shows it)"});

} /* namespace */

} /* namespace pokelab::scenario */
