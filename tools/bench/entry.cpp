// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench entry: an isolated CPU's system call, entry and exit with an empty
 * body, under each deferral policy, as ratios to off: what the entry
 * sequence of each revision costs (v7: the state RMW and its work check;
 * v7-tlbi: plus the kernel_cr3_loaded store, an smp_mb() and the kernel
 * TLB flush; v8, pokelab's reconstruction of an RFC, not posted code: plus
 * the serialisation that stands in for the CR3 write).
 * Each iteration boots one machine per policy (nr_cpus=2 nohz_full=1) and
 * times --rounds calls on CPU 1; the policies alternate, so that drift hits
 * them alike. The TLB flush is the model's bookkeeping (a few loads and
 * stores), so only the relative cost of the sequence carries over to a
 * kernel; the v7 cover letter's getpid figures are beside it in
 * docs/reproduction.md.
 *
 * The kernel-mode NMI row: under v7-tlbi, CPU 1 (nohz_full) raises NMIs on
 * itself inside a system call, on the kernel CR3 with kernel_cr3_loaded at
 * 1, through the fixed paranoid entry (pokelab's: it flushes the kernel
 * TLB on every such NMI of a nohz_full CPU) and through the posted one
 * (pokelab.busted=nmi-paranoid-posted: nothing on the kernel CR3), and
 * counts the flushes each took (docs/reports/nmi-paranoid-entry.md). The
 * flush is the model's bookkeeping: the row shows the path's own cost,
 * not INVPCID's or the TLB refills after it.
 */
#include <atomic>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <kernel_shim/boot.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/machine.h>
#include <kernel_shim/cpu.h>
#include <pokelab/ct_entry.h>

#include "../stop.h"
#include "bench.h"

namespace pokelab::bench {

namespace {

const char *const kPolicies[] = {"off", "v7", "v7-tlbi", "v8"};
constexpr unsigned int kNrPolicies = 4;

std::atomic<u64> syscallNs;
unsigned int syscallRounds;

void emptyBody(void *)
{
}

/*
 * Boot @policy (and @extra, the user's other boot parameters), time @rounds
 * empty system calls on the isolated CPU 1; ns per call or < 0.
 */
double timeEntry(const char *policy, const std::string &extra, unsigned int rounds,
		 std::string *machine)
{
	std::string err;

	if (kshim::boot(fmt::format("nr_cpus=2 nohz_full=1 pokelab.ct_defer={}{}", policy, extra),
			&err, true)) {
		fmt::print(stderr, "pokelab: bench entry: {}\n", err);
		return -1;
	}
	*machine = kshim::machineLine();
	syscallRounds = rounds;
	kshim::cpuRun(1, [] {
		pokelab::ctReturnToUser();
		for (unsigned int i = 0; i < syscallRounds / 10 + 1; i++)
			pokelab::ctSyscall(emptyBody, nullptr);	/* warm-up */
		u64 t0 = kshim::clockNs();
		for (unsigned int i = 0; i < syscallRounds; i++)
			pokelab::ctSyscall(emptyBody, nullptr);
		syscallNs.store(kshim::clockNs() - t0);
		pokelab::ctEnterKernelForGood();
	});
	kshim::cpuWait(1);
	kshim::shutdown();
	return (double)syscallNs.load() / rounds;
}

std::atomic<u64> nmiNs;
std::atomic<unsigned long> nmiFlushes;
unsigned int nmiRounds;

/* Inside a system call on CPU 1: @nmiRounds NMIs, timed, and the kernel TLB flushes they took. */
void nmiBody(void *)
{
	unsigned long f0 = pokelab::ctEntryTlbFlushes(1);

	for (unsigned int i = 0; i < nmiRounds / 10 + 1; i++)
		kshim::nmiSelf();	/* warm-up */
	f0 = pokelab::ctEntryTlbFlushes(1);
	u64 t0 = kshim::clockNs();
	for (unsigned int i = 0; i < nmiRounds; i++)
		kshim::nmiSelf();
	nmiNs.store(kshim::clockNs() - t0);
	nmiFlushes.store(pokelab::ctEntryTlbFlushes(1) - f0);
}

/*
 * Boot v7-tlbi with the fixed (@posted false) or the posted paranoid entry;
 * time @rounds kernel-mode NMIs on isolated CPU 1. ns per NMI or < 0;
 * *@flushes: kernel TLB flushes per NMI.
 */
double timeKernelNmi(bool posted, unsigned int rounds, double *flushes)
{
	std::string err;

	if (kshim::boot(fmt::format("nr_cpus=2 nohz_full=1 pokelab.ct_defer=v7-tlbi{}",
				    posted ? " pokelab.busted=nmi-paranoid-posted" : ""),
			&err, true)) {
		fmt::print(stderr, "pokelab: bench entry: {}\n", err);
		return -1;
	}
	nmiRounds = rounds;
	kshim::cpuRun(1, [] {
		pokelab::ctReturnToUser();
		pokelab::ctSyscall(nmiBody, nullptr);
		pokelab::ctEnterKernelForGood();
	});
	kshim::cpuWait(1);
	kshim::shutdown();
	*flushes = (double)nmiFlushes.load() / rounds;
	return (double)nmiNs.load() / rounds;
}

int benchEntry(const BenchOptions &o)
{
	unsigned int rounds = roundsOr(o, 20000);
	std::vector<double> ns[kNrPolicies], ratio[kNrPolicies];
	std::vector<double> nmiFixed, nmiPosted, nmiRatio;
	double flushFixed = 0, flushPosted = 0;
	std::string machine;
	HostLoadMeter meter;
	HostLoad host;

	std::string extra, bad = o.cpus ? fmt::format("--cpus {}", o.cpus) : "";

	/* Boot parameters go to every machine, but those that would change the comparison. */
	for (const std::string &p : o.params) {
		if (!p.rfind("nr_cpus=", 0) || !p.rfind("nohz_full=", 0) ||
		    !p.rfind("pokelab.ct_defer=", 0))
			bad = bad.empty() ? p : bad;
		extra += " " + p;
	}
	if (!bad.empty()) {
		fmt::print(stderr, "pokelab: bench entry boots its own machines (nr_cpus=2 "
			   "nohz_full=1, one per policy); it takes --iters, --rounds and other boot "
			   "parameters (csdlock_debug=1 ...), not {}\n", bad);
		return 2;
	}
	fmt::print("bench entry: {} iterations; each boots a machine per policy and times {} "
		   "empty system calls on isolated CPU 1\n", o.iters, rounds);
	for (unsigned int it = 0; it < o.iters; it++) {
		double t[kNrPolicies];
		std::string line;

		if (stopRequested()) {
			fmt::print("Interrupted after {} of {} iterations ({})\n", it, o.iters,
				   stopSignalName());
			break;
		}
		for (unsigned int k = 0; k < kNrPolicies; k++) {
			/* alternate the order: forwards on even iterations, backwards on odd */
			unsigned int p = it % 2 ? kNrPolicies - 1 - k : k;

			t[p] = timeEntry(kPolicies[p], extra, rounds, &machine);
			if (t[p] < 0)
				return 1;
		}
		for (unsigned int p = 0; p < kNrPolicies; p++) {
			ns[p].push_back(t[p]);
			ratio[p].push_back(t[p] / t[0]);
			line += fmt::format("{}{} {:7.1f}ns", p ? ", " : "", kPolicies[p], t[p]);
		}
		/* the kernel-mode NMI pair, alternating as the policies */
		double nf, np;

		if (it % 2) {
			np = timeKernelNmi(true, rounds / 4 + 1, &flushPosted);
			nf = timeKernelNmi(false, rounds / 4 + 1, &flushFixed);
		} else {
			nf = timeKernelNmi(false, rounds / 4 + 1, &flushFixed);
			np = timeKernelNmi(true, rounds / 4 + 1, &flushPosted);
		}
		if (nf < 0 || np < 0)
			return 1;
		nmiFixed.push_back(nf);
		nmiPosted.push_back(np);
		nmiRatio.push_back(nf / np);
		line += fmt::format("; kernel-mode NMI, fixed {:.1f}ns, posted {:.1f}ns", nf, np);
		fmt::print("Iter {:3}: {}\n", it, line);
		meter.sample();
	}
	host = meter.finish();
	if (ns[0].empty()) {
		fmt::print("Summary: entry not measured (interrupted)\n");
		return 0;
	}
	fmt::print("{}\n{}\n", machine, host.line());
	for (unsigned int p = 0; p < kNrPolicies; p++) {
		Stat s = stat(ns[p]), r = stat(ratio[p]);
		PairStat ps;

		fmt::print("Summary: ct_defer={:<8} {:7.1f} ± {:5.1f}ns per system call, {:.3f} ± "
			   "{:.3f} x off (median ± MAD)\n", kPolicies[p], s.median, s.mad,
			   r.median, r.mad);
		if (!p)
			continue;
		ps.ours = s;
		ps.raw = stat(ns[0]);
		ps.ratio = r;
		ps.host = host;
		fmt::print("{}", unjudgedLine(ps));
		addRow(o, fmt::format("entry: syscall under ct_defer={} / off", kPolicies[p]), ps,
		       "-", true);
	}
	fmt::print("(ct_defer=v8: pokelab's reconstruction of an RFC, not posted code)\n");
	{
		Stat f = stat(nmiFixed), q = stat(nmiPosted), r = stat(nmiRatio);
		PairStat ps;

		fmt::print("Summary: kernel-mode NMI on nohz_full CPU 1 (v7-tlbi): fixed paranoid "
			   "entry {:7.1f} ± {:5.1f}ns ({:.2f} kernel TLB flushes per NMI), posted "
			   "{:7.1f} ± {:5.1f}ns ({:.2f}), {:.3f} ± {:.3f} x posted (median ± MAD)\n",
			   f.median, f.mad, flushFixed, q.median, q.mad, flushPosted, r.median,
			   r.mad);
		ps.ours = f;
		ps.raw = q;
		ps.ratio = r;
		ps.host = host;
		fmt::print("{}", unjudgedLine(ps));
		addRow(o, "entry: kernel-mode NMI, fixed paranoid entry / posted", ps, "-", true);
	}
	return 0;
}

BenchRegistrar entryBench({"entry", "an isolated CPU's system call under off, v7, v7-tlbi and "
			   "v8 (the deferral series' entry sequences; v8: pokelab's reconstruction "
			   "of an RFC, not posted code), as ratios to off; and a kernel-mode NMI "
			   "through the fixed paranoid entry against the posted one",
			   benchEntry});

} /* namespace */

} /* namespace pokelab::bench */
