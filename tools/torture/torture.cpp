// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab torture: rcutorture's shape for live text patching and the
 * IPI-deferral series.
 *
 *	housekeeping CPUs	each in turn: set a knob (a static key, a static
 *				call, a single poke; torture_text.h), send an IRQ
 *				to some CPU, or run every site for a while
 *	nohz_full CPUs		user-mode work, random system calls (some long,
 *				some that block and idle), IRQs from user and idle
 *	everywhere		delay injection (kernel_shim/torture.h)
 *
 * Every decision comes from a per-CPU stream keyed by (seed, CPU, index);
 * with --ops K each CPU makes exactly K and the run prints a digest of them.
 * The verdict is the cross-modifying-code model's (kernel_shim/xmc.h), the
 * knobs' end states and the console's (a WARNING: or BUG: report fails the
 * run, as in rcutorture's console scan): SUCCESS or FAILURE, exit 0 or 1;
 * 2 for bad input.
 */
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>
#include <tuple>
#include <thread>
#include <unistd.h>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <asm/nmi.h>
#include <asm/tlbflush.h>
#include <kernel_shim/boot.h>
#include <kernel_shim/busted.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/machine.h>
#include <kernel_shim/port_map.h>
#include <kernel_shim/plural.h>
#include <kernel_shim/sched.h>
#include <kernel_shim/sigsafe.h>
#include <kernel_shim/torture.h>
#include <kernel_shim/watchdog.h>
#include <kernel_shim/xmc.h>
#include <kernel_shim/xmc_verdict.h>
#include <linux/bug.h>
#include <linux/context_tracking.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/preempt.h>
#include <linux/rcupdate.h>
#include <linux/smp.h>
#include <pokelab/ct_entry.h>
#include <pokelab/text_poke_stats.h>

#include <kernel_shim/trace_record.h>

#include "command.h"
#include "boot_twin.h"
#include "options.h"
#include "stop.h"
#include "torture.h"
#include "torture_end.h"
#include "torture_jit.h"
#include "torture_mask.h"
#include "torture_run.h"
#include "torture_results.h"
#include "torture_text.h"
#include "torture/torture_module.h"
#include "timeline/timeline.h"

namespace pokelab::torture {

Options opts;
std::vector<CpuWork> work;
std::atomic<bool> stopAll;
std::atomic<unsigned long> violationsSeen;
unsigned long warnsAtBoot;
u64 seedUsed;
u64 runT0;
std::unique_ptr<kshim::TraceSink> timeline;
unsigned long nmisInInt3[NR_CPUS], nmisInIpi[NR_CPUS];

namespace {

constexpr unsigned int kDecisionStream = 0;	/* stream 1 is the delays' (torture.cpp) */
constexpr int kStatusSeconds = 10;
constexpr int kProgressSeconds = 2;	/* --ops: a progress line on stderr */
/* torture's own boot defaults, which its help (and --help-all's list) gives */
constexpr unsigned int kMinCpus = 4;	/* room for isolated CPUs beside housekeeping ones */
constexpr int kCsdlockDebug = 1;	/* a debug kernel, as rcutorture's */

CLI::App *cmd;

/* The @idx-th decision of @cpu, folded into its digest. */
u64 decide(int cpu, unsigned long idx)
{
	u64 d = kshim::tortureDraw(seedUsed, cpu, kDecisionStream, idx);
	CpuWork &w = work[cpu];

	w.digest = (w.digest ^ d) * 0x100000001b3ull + idx;
	w.decisions++;
	return d;
}

bool keepGoing(unsigned long idx)
{
	if (stopAll.load(std::memory_order_relaxed))
		return false;
	/* a quiescent state (the module writer's synchronize_rcu() waits for one), the time slice */
	cond_resched();
	return opts.ops ? idx < opts.ops : true;
}

/* A system call reads the JIT-like images through their translations (torture_jit.cpp). */
void touchRanges(u64 d)
{
	jitTouch(d);
}

/* An IRQ's work: instrumentable kernel code that reads the ranges and runs the sites. */
void irqWork(void *arg)
{
	touchRanges((unsigned long)arg);
	(void)runSites((unsigned long)arg);
}

/*
 * The NMI handler (a perf or watchdog handler's stand-in): it reads the
 * JIT-like images and runs the sites, wherever the NMI landed; inside the
 * INT3 or IPI handler, a few of them (runSomeSites()), as each may trap
 * again. Its draws come from a stream of its own (2), per CPU: no
 * decision of the run's.
 */
u64 nmiDraws[NR_CPUS];

int tortureNmiHandler(unsigned int, struct pt_regs *)
{
	int cpu = smp_processor_id();
	u64 d = kshim::tortureDraw(seedUsed, cpu, 2, nmiDraws[cpu]++);

	touchRanges(d);
	/* inside a handler, a few sites (each an INT3 while a batch is open); else all */
	if (pokelab::int3Nesting()) {
		nmisInInt3[cpu]++;
		(void)runSomeSites(d);
	} else if (in_hardirq() > HARDIRQ_OFFSET) {	/* the NMI's own, and an IPI's under it */
		nmisInIpi[cpu]++;
		(void)runSomeSites(d);
	} else {
		(void)runSites(d);
	}
	return NMI_HANDLED;
}

/* One housekeeping decision: a write, an IRQ to some CPU, or reads. */
void housekeepingStep(int cpu, u64 d)
{
	CpuWork &w = work[cpu];
	unsigned int what = d & 15;

	if (what < KnobNr) {
		setKnob((Knob)what, (unsigned int)(d >> 8));
		w.writes++;
		return;
	}
	if (what == KnobNr) {
		int target = (int)((d >> 8) % nr_cpu_ids);

		if (target != cpu && cpu_online(target)) {
			smp_call_function_single(target, irqWork, (void *)(uintptr_t)d, 0);
			w.irqs++;
		}
		return;
	}
	if (what == 15 && cpu == 0 && moduleWriterActive()) {
		moduleWriterStep(d);
		w.writes++;
		return;
	}
	if (what == KnobNr + 1 || what == KnobNr + 2) {
		jitReplace(d);	/* a page-table change and its lazy purge */
		w.remaps++;
		return;
	}
	for (unsigned int i = 0; i < 1 + ((d >> 8) & 7); i++)
		(void)runSites(d + i);
	w.reads++;
}

void housekeepingLoop(int cpu)
{
	for (unsigned long idx = 0; keepGoing(idx); idx++)
		housekeepingStep(cpu, decide(cpu, idx));
	work[cpu].done.store(true, std::memory_order_release);
}

/* A system call's kernel work: the sites, @n times; a long one spins in the kernel. */
struct SyscallArg {
	u64 d;
};

void syscallBody(void *arg)
{
	u64 d = ((SyscallArg *)arg)->d;

	touchRanges(d);
	if (((d >> 16) & 63) == 0) {
		/*
		 * A long one, up to 2 ms inside the kernel: rounds find the CPU
		 * watching, and it reads the ranges late, long after the entry's
		 * flush, and (one in four) takes an NMI half-way.
		 */
		u64 start = kshim::clockNs(), len = ((d >> 24) % 2000) * 1000;
		bool nmi = ((d >> 36) & 3) == 0;

		while (kshim::clockNs() < start + len) {
			touchRanges(d);
			(void)runSites(d);
			if (nmi && kshim::clockNs() >= start + len / 2) {
				kshim::nmiSelf();
				nmi = false;
			}
		}
		return;
	}
	for (unsigned int i = 0; i < ((d >> 13) & 3); i++)
		(void)runSites(d + i);
}

void blockingSyscallBody(void *arg)
{
	/* the task blocks: the CPU idles (an EQS IRQs can end) until it is woken */
	pokelab::ctIdleFor((((SyscallArg *)arg)->d >> 20) % 500 * 1000);
}

void isolatedLoop(int cpu)
{
	CpuWork &w = work[cpu];
	volatile unsigned long sink = 0;

	pokelab::ctReturnToUser();
	for (unsigned long idx = 0; keepGoing(idx); idx++) {
		u64 d = decide(cpu, idx);
		SyscallArg a{d};
		u64 until = kshim::clockNs() + ((d & 127) + 10) * 1000;

		/* user-mode work: no kernel text */
		while (kshim::clockNs() < until)
			for (int i = 0; i < 64; i++)
				sink = sink + i;
		switch ((d >> 10) & 7) {
		case 0:
		case 1:
		case 2:
		case 3:
			pokelab::ctSyscall(syscallBody, &a);
			w.syscalls++;
			break;
		case 4:
			pokelab::ctSyscall(blockingSyscallBody, &a);
			w.idles++;
			break;
		default:
			break;
		}
	}
	pokelab::ctEnterKernelForGood();
	w.done.store(true, std::memory_order_release);
}

/* Status: batches, text writes, INT3 emulated, IPIs, deferred flushes, violations. */
} /* namespace */

std::string counters()
{
	unsigned long int3 = 0, ipis = 0, flushes = 0, nmis = 0;

	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		int3 += pokelab::int3Emulated(cpu);
		ipis += kshim::cpuStats(cpu).ipiReceived;
		flushes += pokelab::ctWorkFlushed(cpu);
		nmis += kshim::nmiCount(cpu);
	}
	/* the port's own counts: they go on with the model off (pokelab.xmc=0) */
	return fmt::format("{}, {}, {} emulated, {}, {}, {}, {}, {}, {}",
			   kshim::nOf(pokelab::textPokeStats().batches, "batch", "batches"),
			   kshim::nOf(pokelab::textPokeStats().pokes, "text write"),
			   kshim::nOf(int3, "INT3"), kshim::nOf(ipis, "IPI"),
			   kshim::nOf(flushes, "deferred flush", "deferred flushes"),
			   kshim::nOf(kshim::tlbChanges(), "kernel-range remap"),
			   kshim::nOf(kshim::tlbTouches(), "range touch", "range touches"),
			   kshim::nOf(nmis, "NMI"),
			   kshim::nOf(kshim::xmcStats().violations, "violation"));
}

namespace {

void reportViolation(const kshim::XmcViolation &v)
{
	/* the first few in full, as they are found; the run stops soon after the first */
	if (violationsSeen.fetch_add(1) < opts.shown) {
		std::string text = kshim::xmcFormat(v);

		resultsFirstReport(text);
		fmt::print("{}", text);
		std::fflush(stdout);
	}
	stopAll.store(true);
}

/*
 * A crash (a BUG, an unclaimed INT3, a fatal signal) ends the run as a
 * FAILURE, on stdout and stderr, saying whether the model had seen it
 * coming. Runs last among the death hooks (after the model's note).
 */
void tortureDeathHook() noexcept
{
	kshim::SigSafeBuf b;

	b.str("torture: FAILURE (seed ").udec(seedUsed).str("): ")
		.str(kshim::xmcReported() ? "the model reported a violation before the crash above"
					  : "crashed (above); the model reported nothing before it")
		.str("\n");
	std::fflush(stdout);
	b.emit(1);
	b.emit(2);
	resultsCrash();
	_exit(1);
}

/*
 * The machine did not boot: the model found a fault at boot (a patch's:
 * the boot's own text wrong, the INT3 self-test emulated wrongly) and
 * panicked, its reports above. A FAILURE, as
 * any violation: the run's verdict line, last.
 */
void torturePanicNotifier() noexcept
{
	kshim::SigSafeBuf b;

	b.str("torture: FAILURE (seed ").udec(seedUsed).str("): the machine did not boot: the "
							    "model reported a fault at boot "
							    "(above)\n");
	std::fflush(stdout);
	b.emit(1);
	b.emit(2);
}

/*
 * A test module named by its build path and not built yet: `make demo`
 * builds the command alone; say what builds the module.
 */
CLI::Validator testModuleBuilt()
{
	return CLI::Validator(
		[](std::string &v) -> std::string {
			struct stat st;
			size_t at = v.find("tests/modules/");

			if (at == std::string::npos || !stat(v.c_str(), &st) || errno != ENOENT)
				return "";
			return fmt::format("{}: not built (make demo builds the command alone); "
					   "expected --module FILE.o: make check builds the test "
					   "modules, or ninja -C {} {}", v,
					   at ? v.substr(0, at - 1) : std::string("build"),
					   v.substr(at));
		},
		"");
}

/* --module's file, checked before the machine boots: an ELF file (the loader says the rest). */
CLI::Validator elfObject()
{
	return CLI::Validator(
		[](std::string &v) -> std::string {
			char magic[4] = {};
			FILE *f = std::fopen(v.c_str(), "rb");
			bool elf = f && std::fread(magic, 1, 4, f) == 4 &&
				   !memcmp(magic, "\x7f" "ELF", 4);

			if (f)
				std::fclose(f);
			if (!elf)
				return fmt::format("{}: not an ELF file; expected --module "
						   "FILE.o (an object built as tests/modules/ "
						   "builds)", v);
			return "";
		},
		"");
}

/* --violations: a whole number from 0, or all. */
CLI::Validator violationsShown()
{
	return CLI::Validator(
		[](std::string &v) -> std::string {
			if (v == "all" || wholeNumber(0, 1000000)(v).empty())
				return "";
			return fmt::format("{}: expected a whole number from 0 to 1000000, or all",
					   v);
		},
		"N|all");
}

std::string bustedHelp()
{
	unsigned int n;
	const kshim::BustedVariant *v = kshim::bustedVariants(&n);
	std::string s = "\nBUSTED variants (boot parameter pokelab.busted=NAME; each must end in "
			"FAILURE):\n";

	for (unsigned int i = 0; i < n; i++)
		s += fmt::format("  {:<20}  {}{}\n", v[i].name, v[i].what,
				 v[i].with ? fmt::format(" [with {}]", v[i].with) : "");
	s += "  (and --ct-defer v5 with --nohz-full: the v5 ct_set_cpu_work() bug)\n";
	return s;
}

/*
 * CPU 0's lines while the run goes on: the status line every 10 s on
 * stdout; with --ops, whose end no clock says, the decisions made so far
 * every 2 s on stderr.
 */
void statusLines(u64 t0, u64 now, u64 *next, u64 *nextProgress)
{
	if (now >= *next) {
		fmt::print("torture: {} s: {}\n", (now - t0) / 1000000000ull, counters());
		std::fflush(stdout);
		*next += kStatusSeconds * 1000000000ull;
	}
	if (opts.ops && now >= *nextProgress) {
		unsigned long made = 0, all = (unsigned long)work.size() * opts.ops;

		for (const CpuWork &w : work)
			made += w.decisions;
		fmt::print(stderr, "torture: {} s: {} of {} decisions ({}%)\n",
			   (now - t0) / 1000000000ull, made, all, made * 100 / all);
		*nextProgress = now + kProgressSeconds * 1000000000ull;
	}
}

int run()
{
	std::string cmdline, err;
	u64 t0, next, nextProgress, dur;
	unsigned int n;

	bool paramCpus = false, paramNohz = false;

	/*
	 * A debug kernel, as rcutorture's: CSD-lock debugging on, so that a
	 * cross-call stuck on a CPU is reported (and its IPI re-sent) instead of
	 * hanging the run. First, so that a csdlock_debug=0 given wins.
	 */
	cmdline = fmt::format("csdlock_debug={} ", kCsdlockDebug);
	/* The options win over the same boot parameters: they come last, and the last one counts. */
	for (const std::string &p : opts.params) {
		cmdline += p + " ";
		paramCpus |= p.rfind("nr_cpus=", 0) == 0;
		paramNohz |= p.rfind("nohz_full=", 0) == 0;
	}
	if (opts.ops && cmd->count("--duration")) {
		fmt::print(stderr, "pokelab: --ops {} and --duration {}: --ops ends the run after "
				   "exactly that many decisions per CPU; expected one of the two\n",
			   opts.ops, opts.duration);
		return 2;
	}
	if (opts.nohzFullSet && opts.nohzFull.empty()) {
		fmt::print(stderr, "pokelab: --nohz-full: empty CPU list; expected e.g. --nohz-full "
				   "2-3\n");
		return 2;
	}
	/* an option and its boot parameter, both given: neither silently wins */
	for (const auto &[opt, val, key] :
	     {std::tuple<const char *, std::string, const char *>{"--cpus", opts.cpus ?
								   std::to_string(opts.cpus) : "",
								   "nr_cpus"},
	      {"--nohz-full", opts.nohzFull, "nohz_full"},
	      {"--ct-defer", opts.ctDefer, "pokelab.ct_defer"}}) {
		err = pokelab::bootTwinConflict(opts.params, opt, val, key);
		if (!err.empty()) {
			fmt::print(stderr, "pokelab: {}\n", err);
			return 2;
		}
	}
	if (opts.cpus)
		cmdline += fmt::format("nr_cpus={}", opts.cpus);
	else if (!paramCpus)
		cmdline += fmt::format("nr_cpus={}",
				       std::max(kMinCpus, std::thread::hardware_concurrency()));
	seedUsed = opts.seedSet ? opts.seed : kshim::clockNs() % 1000000007ull;
	/* a policy without its CPUs: the seed places them (torture_mask.h); a list given wins */
	if (opts.nohzFull.empty() && !paramNohz && !opts.ctDefer.empty() && opts.ctDefer != "off")
		opts.nohzFull = seededNohzFull(seedUsed, cpusWanted(opts.cpus, opts.params,
			std::max(kMinCpus, std::thread::hardware_concurrency())));
	if (!opts.nohzFull.empty())
		cmdline += " nohz_full=" + opts.nohzFull;
	if (!opts.ctDefer.empty())
		cmdline += " pokelab.ct_defer=" + opts.ctDefer;
	/* the timeline's file is checked, and opened, before anything boots */
	timeline.reset();
	if (!opts.timeline.empty() &&
	    !(timeline = pokelab::makeTimelineSink(opts.timeline,
						   (u64)(opts.timelineWindow * 1e9),
						   pokelab::commandLine(), "", &err))) {
		fmt::print(stderr, "pokelab: --timeline {}: {}\n", opts.timeline, err);
		return 2;
	}
	/* the results file too: refused before the boot, not after the run */
	if (!opts.results.empty() && !resultsOpen(opts.results, &err)) {
		fmt::print(stderr, "pokelab: --results {}\n", err);
		return 2;
	}
	/* the console's WARN/BUG reports from the boot on count against the run */
	warnsAtBoot = kshim::warnCount();
	kshim::addPanicNotifier(torturePanicNotifier);
	if (kshim::boot(cmdline, &err, true)) {
		/* a value the user typed as an option is named as typed; a seeded list is not */
		fmt::print(stderr, "pokelab: {}\n", pokelab::inOptionWords(err, {
			{"--cpus", opts.cpus ? std::to_string(opts.cpus) : "", "nr_cpus"},
			{"--nohz-full", opts.nohzFullSet ? opts.nohzFull : "", "nohz_full"},
			{"--ct-defer", opts.ctDefer, "pokelab.ct_defer"}}));
		return 2;
	}
	n = nr_cpu_ids;
	/* the title: the command line, the seed it ran with, the machine it booted */
	if (timeline)
		pokelab::timelineSinkTitle(timeline.get(), fmt::format("{}, seed {}",
								       pokelab::commandLine(), seedUsed),
					   kshim::machineLine());
	if (timeline && (kshim::traceStart(0, &err, pokelab::timelineEvents()) ||
			 kshim::traceRecorderStart({timeline.get()}, 1000000, &err))) {
		kshim::shutdown();
		fmt::print(stderr, "pokelab: --timeline {}: {}\n", opts.timeline, err);
		return 1;
	}

	const struct cpumask *nohz = kshim::nohzFullMask();

	if (n < 2) {
		kshim::shutdown();
		fmt::print(stderr, "pokelab: nr_cpus={}: torture needs at least 2 CPUs (writers and "
				   "readers); expected nr_cpus=2..512\n", n);
		return 2;
	}
	if (cpumask_empty(nohz) && !opts.ctDefer.empty() && opts.ctDefer != "off")
		fmt::print(stderr, "pokelab: warning: --ct-defer {} only changes isolated CPUs, and "
				   "none is isolated: add --nohz-full LIST\n", opts.ctDefer);

	/* a lockup, a stuck signal or an overrun ends the run without its wedged CPUs */
	work = std::vector<CpuWork>(n);
	runT0 = kshim::clockNs();
	stopAll.store(false);
	pokelab::stopOrderly();	/* SIGINT/SIGTERM/SIGHUP end the run in order */
	endArm(&stopAll, finishForced);
	/* violations are printed as they are found from here on, the module's first load's too */
	violationsSeen.store(0);
	kshim::xmcSetReporter(reportViolation);
	/* what the model found while the machine booted (the tables after boot's patching) */
	for (const kshim::XmcViolation &v : kshim::xmcViolations())
		reportViolation(v);
	if (moduleWriterStart(opts.module, &err)) {
		kshim::xmcSetReporter(nullptr);
		kshim::shutdown();
		endDisarm();
		fmt::print(stderr, "pokelab: --module {}: {}\n", opts.module, err);
		return 2;
	}

	resultsBegin({seedUsed, opts.duration, opts.ops, n, opts.nohzFull, opts.ctDefer, opts.module,
		      opts.params, cmdline, kshim::machineLine()});
	fmt::print("{}\n", kshim::machineLine());
	fmt::print("torture: seed {}, {} CPUs ({}), {}\n", seedUsed, n,
		   cpumask_empty(nohz) ? "no nohz_full"
				       : "nohz_full=" + kshim::cpumaskPrintList(nohz),
		   opts.ops ? fmt::format("{} decisions per CPU", opts.ops)
			    : fmt::format("{} s", opts.duration));
	std::fflush(stdout);

	stopAll.store(violationsSeen.load() > 0);	/* a violation at the module's load stops it */
	resetKnobs();
	kshim::xmcQuiesce();
	kshim::addDeathHook(tortureDeathHook);
	kshim::tortureDelays(true, seedUsed);
	for (u64 &i : nmiDraws)
		i = 0;
	std::fill(std::begin(nmisInInt3), std::end(nmisInInt3), 0);
	std::fill(std::begin(nmisInIpi), std::end(nmisInIpi), 0);
	if (register_nmi_handler(NMI_LOCAL, tortureNmiHandler, 0, "torture"))
		fmt::print(stderr, "torture: no NMI handler slot: NMIs run no handler\n");
	kshim::tortureNmis(true);

	for (unsigned int cpu = 1; cpu < n; cpu++) {
		if (cpumask_test_cpu(cpu, nohz))
			kshim::cpuRun(cpu, [cpu] { isolatedLoop(cpu); });
		else
			kshim::cpuRun(cpu, [cpu] { housekeepingLoop(cpu); });
	}

	/* CPU 0: a housekeeping CPU that also keeps the time and the status line. */
	t0 = runT0 = kshim::clockNs();
	if (!opts.ops)
		endSetDeadline(t0 + (u64)opts.duration * 1000000000ull + endBoundNs());
	next = t0 + kStatusSeconds * 1000000000ull;
	nextProgress = t0 + kProgressSeconds * 1000000000ull;
	dur = (u64)opts.duration * 1000000000ull;
	for (unsigned long idx = 0; keepGoing(idx); idx++) {
		u64 now = kshim::clockNs();

		housekeepingStep(0, decide(0, idx));
		if ((!opts.ops && now - t0 >= dur) || pokelab::stopRequested())
			break;
		statusLines(t0, now, &next, &nextProgress);
	}
	work[0].done.store(true);
	if (!opts.ops || pokelab::stopRequested())
		stopAll.store(true);
	/* --ops: the other CPUs may still be at it; the status and progress lines go on */
	for (unsigned int cpu = 1; cpu < n; cpu++) {
		while (!work[cpu].done.load(std::memory_order_acquire)) {
			if (pokelab::stopRequested())
				stopAll.store(true);
			statusLines(t0, kshim::clockNs(), &next, &nextProgress);
			msleep(10);	/* a sleep: out of RCU, the kworker may run */
		}
		kshim::cpuWait(cpu);
	}
	if (opts.ops)
		stopAll.store(true);
	kshim::tortureDelays(false, seedUsed);
	kshim::tortureNmis(false);
	unregister_nmi_handler(NMI_LOCAL, "torture");
	std::vector<std::string> modBad = moduleWriterFinish();
	kshim::xmcQuiesce();
	/* every table's site as the keys, the calls and the features demand, at the end (R7) */
	kshim::xmcTablesCheck("the run's end");
	/* a forced end (torture_end.h) that has the summary exits; this one waits for it */
	if (!endClaim())
		for (;;)
			pause();
	int status = finishRun(End::InOrder, 0, modBad);

	endDone(status);
	kshim::xmcSetReporter(nullptr);
	kshim::shutdown();
	endDisarm();
	if (resultsWanted() && !resultsWrite(&err)) {
		fmt::print(stderr, "pokelab: {}\n", err);
		return 1;
	}
	return status;
}

/* --cpus's default, as its help and --help-all's nr_cpus= say it */
std::string minCpusText()
{
	return fmt::format("the PUs, at least {}", kMinCpus);
}

} /* namespace */

void addTortureCommand(CLI::App &app)
{
	cmd = app.add_subcommand("torture",
				 "Patch text from several CPUs while others run it, with delay "
				 "injection, and let the cross-modifying-code model judge (SUCCESS or "
				 "FAILURE)");
	cmd->add_option("--duration", opts.duration, "Seconds to run (default: 60)")
		->check(wholeNumber(1, 86400));
	cmd->add_option("--timeline", opts.timeline,
			"Draw the run's last --timeline-window seconds as an SVG timeline, "
			"violations marked (docs/timeline.md)")
		->check(outputFile("--timeline", "FILE.svg"));
	cmd->add_option("--timeline-window", opts.timelineWindow,
			"Seconds of the run the timeline keeps, the last ones (default: 1, not 10 "
			"as elsewhere: torture's CPUs write so many events that each second kept "
			"takes about 10 MB of memory on 4 CPUs)")
		->check(timelineWindowCheck());
	pokelab::addTimelineGapOption(cmd);
	cmd->add_option_function<unsigned long long>("--seed", [](unsigned long long v) {
			opts.seed = v;
			opts.seedSet = true;
		}, "Seed of every random decision, decimal (default: from the clock; printed). "
		   "It replays the decisions, not the threads' interleaving")
		->check(wholeNumber(0, ~0ull));
	cmd->add_option("--ops", opts.ops,
			"Exactly this many decisions per CPU, then stop and print their digest "
			"(not with --duration: the decisions end the run)")
		->check(wholeNumber(1, 1000000000));
	cmd->add_option("--cpus", opts.cpus,
			fmt::format("Simulated CPUs (default: {}, not at least 2 as in demo: room "
				    "for --ct-defer's isolated CPUs beside housekeeping ones); boot "
				    "parameter nr_cpus=", minCpusText()))
		->check(wholeNumber(2, 512));
	cmd->add_option_function<std::string>("--nohz-full", [](const std::string &v) {
			opts.nohzFull = v;
			opts.nohzFullSet = true;
		}, "Isolated CPUs (CPU list): user-mode loops; boot parameter nohz_full=; "
			"with --ct-defer and no list, the seed places them first, last or in "
			"the middle");
	cmd->add_option("--ct-defer", opts.ctDefer,
			"Deferral policy: off, v7 (the default with nohz_full), v7-tlbi (v7 + TLB "
			"flushes, RFC 28-31 in pokelab's corrected order), v8 (v8: pokelab's "
			"reconstruction of an RFC, not posted code), v5 (the bug), pokelab-catchup "
			"(pokelab's own); boot parameter pokelab.ct_defer=")
		->check(CLI::IsMember({"off", "v7", "v7-tlbi", "v8", "v5", "pokelab-catchup"}));
	cmd->add_option("--results", opts.results,
			"Append one JSON line for the run to FILE (JSON Lines: version, seed, "
			"options, verdict, first report, counts, replay command; docs/testing.md)")
		->check(outputFile("--results"));
	cmd->add_option_function<std::string>("--violations", [](const std::string &v) {
			opts.shown = v == "all" ? ~0UL : std::stoul(v);
		}, "Violations printed in full as they are found, a number or all (default: 3); "
		   "the rest are counted")
		->check(violationsShown());
	cmd->add_option("--module", opts.module,
			"A module writer: load and unload FILE.o (built like "
			"tests/modules/pokelab_test_mod.o) and flip its key while the CPUs run it; "
			"with pokelab_provider_mod.o, pokelab_consumer_mod.o and "
			"pokelab_init_mod.o beside it, those too")
		->check(testModuleBuilt())
		->check(inputFile("--module", "FILE.o"))
		->check(elfObject());
	cmd->add_option("params", opts.params,
			fmt::format("Boot parameters, kernel command-line style (pokelab.busted=NAME, "
				    "pokelab.sync=membarrier, pokelab.eret=serialising ...); "
				    "torture boots with csdlock_debug={} unless csdlock_debug={} is "
				    "given", (int)kCsdlockDebug, (int)!kCsdlockDebug));
	bootParamDefault(cmd, "nr_cpus", minCpusText());
	bootParamDefault(cmd, "csdlock_debug", fmt::format("{}, {}", (int)kCsdlockDebug,
							   kCsdlockDebug ? "on" : "off"));
	cmd->footer(bustedHelp());
}

bool tortureParsed()
{
	return cmd && cmd->parsed();
}

int runTorture()
{
	return run();
}

namespace {

const CommandRegistrar tortureCommand({40, addTortureCommand, tortureParsed, runTorture});

} /* namespace */

} /* namespace pokelab::torture */
