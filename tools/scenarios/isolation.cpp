// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab run isolation: seed 003, the census of the context-tracking
 * IPI-deferral series' cover letter (v5 00/25, v7 00/31).
 *
 * Housekeeping CPUs run an rteval-like load, isolated (nohz_full) CPUs run a
 * user-mode loop with rare system calls; the same load runs on a machine
 * booted with pokelab.ct_defer=off and on one booted with ct_defer=v7, with
 * the ipi/csd tracepoints on. The census is the cover letter's own: the
 * trace, filtered to the isolated CPUs, written as trace-cmd text, and the
 * two awk pipelines run on it through /bin/sh.
 *
 *	CPU 0 (housekeeping)	 the "kernel build": in turn
 *	  static-key flip	   bpf_stats_enabled_key, 164 sites, 3 deferrable syncs
 *	  module load		   text_poke() a relocation into module text +
 *				   smp_text_poke_sync_each_cpu_deferrable();
 *				   module_enable_rox() -> flush_tlb_all();
 *				   unload -> flush_tlb_kernel_range()
 *	  BPF JIT		   allocate module text, text_poke() the program,
 *				   mprotect() it read-only -> flush_tlb_all();
 *				   free the previous image -> flush_tlb_kernel_range()
 *	CPUs 1..h-1		 "hackbench": synchronous smp_call_function_single()
 *				   messages to the next housekeeping CPU
 *	isolated CPUs		 user-mode loop, a system call every --syscall-ms
 *
 * The deferrable syncs (flips and module loads) run inside a "patching
 * window": the isolated CPUs enter no system call while a window is open and
 * acknowledge it from user mode before it patches (as the demo does), so
 * every deferrable round finds them in user mode and the v7 count of
 * do_sync_core CSDs is exactly 0. The TLB-flush IPIs, which the series does
 * not defer, come at any time.
 */
#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <asm/barrier.h>
#include <asm/text-patching.h>
#include <kernel_shim/boot.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/machine.h>
#include <kernel_shim/trace.h>
#include <kernel_shim/xmc.h>
#include <linux/context_tracking.h>
#include <linux/cpumask.h>
#include <linux/mutex.h>
#include <linux/smp.h>
#include <linux/threads.h>
#include <pokelab/ct_entry.h>
#include <pokelab/text_poke_stats.h>

#include "demo/bpf_prog.h"
#include "trace_output.h"
#include "scenario.h"

extern "C" char __executable_start[];

/*
 * The kernel-range TLB-flush IPI callbacks (arch/x86/mm/tlb.c). C linkage so
 * that the trace prints them under their kernel names.
 *
 * userspace: there is no kernel TLB to flush; the host kernel already shot
 * down its own TLB entries in the mprotect()/munmap() that made the IPI
 * necessary. The callbacks count, so the IPI and its handler are real and
 * only the flush instruction itself is missing.
 */
struct flush_tlb_info {
	unsigned long start;
	unsigned long end;
};

static std::atomic<unsigned long> tlbFlushAllRuns[NR_CPUS];
static std::atomic<unsigned long> tlbRangeFlushRuns[NR_CPUS];

/* Port of do_flush_tlb_all(), arch/x86/mm/tlb.c (the count stands in for __flush_tlb_all()) */
extern "C" void do_flush_tlb_all(void *info)
{
	(void)info;
	tlbFlushAllRuns[smp_processor_id()].fetch_add(1, std::memory_order_relaxed);
}

/* Port of do_kernel_range_flush(), arch/x86/mm/tlb.c (counted, see above) */
extern "C" void do_kernel_range_flush(void *info)
{
	struct flush_tlb_info *f = (struct flush_tlb_info *)info;

	/* userspace: one flush_tlb_one_kernel() per page, counted once per call */
	BUG_ON(f->end <= f->start);
	tlbRangeFlushRuns[smp_processor_id()].fetch_add(1, std::memory_order_relaxed);
}

namespace pokelab::scenario {

namespace {

/* arch/x86/mm/tlb.c: ranges above this many pages flush everything. */
constexpr unsigned long tlb_single_page_flush_ceiling = 33;
constexpr unsigned long kPage = 4096;

/* Port of flush_tlb_all(), arch/x86/mm/tlb.c */
void flush_tlb_all(void)
{
	on_each_cpu(do_flush_tlb_all, NULL, 1);
}

/* Port of flush_tlb_kernel_range(), arch/x86/mm/tlb.c (no INVLPGB, no lazy-TLB filtering) */
void flush_tlb_kernel_range(unsigned long start, unsigned long end)
{
	struct flush_tlb_info info = {start, end};

	if ((end - start) >> 12 > tlb_single_page_flush_ceiling)
		on_each_cpu(do_flush_tlb_all, NULL, 1);
	else
		on_each_cpu(do_kernel_range_flush, &info, 1);
}

/* Options (file-scope: the runner is a plain function pointer). */
struct Opts {
	unsigned int cpus = 4;
	unsigned int isolated = 0;	/* 0: the upper half */
	double seconds = 5.0;		/* per variant */
	unsigned int syscallMs = 5;	/* isolated CPUs' system call period */
	unsigned int intervalMs = 4;	/* pause between housekeeping operations */
	std::string traceDir;		/* keep the filtered traces here */
	std::string defer = "v7";	/* the policy compared with off */
} opts;

/* --------------------------------------------------------------------- */
/* Module text near the executable (the s32 rel_addr of a batch fits).     */

unsigned long modCursor;

/*
 * execmem_alloc() stand-in: one RW page within 1 GiB of the executable
 * (MAP_FIXED_NOREPLACE), in a window that starts 512 MiB from it: below a
 * PIE's text, above a non-PIE's (at 0x400000, with its brk heap right after
 * it). Returns NULL if no page there is free.
 */
void *module_text_alloc(void)
{
	unsigned long base = (unsigned long)__executable_start & ~((1ul << 21) - 1);
	bool below = base > (2ul << 30);
	unsigned long lo = below ? base - (1ul << 30) : base + (512ul << 20);
	unsigned long hi = below ? base - (512ul << 20) : base + (1ul << 30);

	if (!modCursor)
		modCursor = lo;
	for (unsigned int tries = 0; tries < 4096; tries++) {
		unsigned long hint = modCursor;
		void *p;

		modCursor += 16 * kPage;
		if (modCursor >= hi)
			modCursor = lo;
		p = mmap((void *)hint, kPage, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p == MAP_FAILED)
			continue;
		if (p != (void *)hint) {	/* a kernel without MAP_FIXED_NOREPLACE */
			munmap(p, kPage);
			continue;
		}
		/* Nothing runs it until the module (or program) goes live. */
		kshim::xmcTextHidden(p, kPage);
		return p;
	}
	return NULL;
}

/* vfree() of module text: unmap, then the lazy purge's kernel-range flush. */
void module_text_free(void *p)
{
	if (!p)
		return;
	BUG_ON(munmap(p, kPage));
	flush_tlb_kernel_range((unsigned long)p, (unsigned long)p + kPage);
}

/* set_memory_rox(): read-only + executable, then the cpa flush on every CPU. */
void set_memory_rox(void *p)
{
	BUG_ON(mprotect(p, kPage, PROT_READ | PROT_EXEC));
	/* userspace: cpa_flush() uses __cpa_flush_tlb for a few pages; see docs */
	flush_tlb_all();
}

/* "mov eax, imm32; ret", int3-padded as the BPF JIT pads: 16 bytes. */
void gen_ret_imm(u8 *buf, u32 imm)
{
	memset(buf, INT3_INSN_OPCODE, 16);
	buf[0] = 0xb8;
	memcpy(buf + 1, &imm, 4);
	buf[5] = RET_INSN_OPCODE;
}

/* --------------------------------------------------------------------- */
/* The load.                                                               */

std::atomic<bool> stopLoad;
unsigned int windowSeq;		/* odd while a deferrable-sync window is open */

struct alignas(64) IsoState {
	std::atomic<unsigned int> ack{0};
	std::atomic<unsigned long> syscalls{0};
	std::atomic<unsigned long> iterations{0};
};

struct alignas(64) HkState {
	std::atomic<unsigned long> messages{0};
	std::atomic<unsigned long> received{0};
};

struct Counts {
	unsigned long flips = 0, moduleLoads = 0, jits = 0, badRuns = 0, allocFail = 0;
};

u64 nowNs()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

void sleepMs(unsigned int ms)
{
	struct timespec ts = {0, (long)ms * 1000000L};

	nanosleep(&ts, nullptr);
}

/* A system call's kernel work: one bpf program (live-patched text). */
void isoSyscallBody(void *arg)
{
	pokelab::BpfCtx ctx{(unsigned long)arg};

	(void)pokelab::bpfProgs()[0](&ctx);
}

void isolatedLoop(IsoState *st, u64 periodNs)
{
	volatile unsigned long work = 0;
	unsigned long iters = 0, syscalls = 0;
	u64 next = nowNs() + periodNs;

	pokelab::ctReturnToUser();
	while (!stopLoad.load(std::memory_order_relaxed)) {
		unsigned int seq;

		for (int i = 0; i < 64; i++)	/* user-mode work, no kernel text */
			work = work + i;
		iters++;
		seq = smp_load_acquire(&windowSeq);
		if (seq & 1) {
			/* In user mode, and staying there until the window closes. */
			if (st->ack.load(std::memory_order_relaxed) != seq)
				st->ack.store(seq, std::memory_order_release);
			continue;
		}
		if (nowNs() >= next) {
			pokelab::ctSyscall(isoSyscallBody, nullptr);
			syscalls++;
			next = nowNs() + periodNs;
		}
	}
	pokelab::ctEnterKernelForGood();
	st->iterations.store(iters, std::memory_order_relaxed);
	st->syscalls.store(syscalls, std::memory_order_relaxed);
}

void hackbenchMsg(void *info)
{
	((HkState *)info)->received.fetch_add(1, std::memory_order_relaxed);
}

/* Messages to the next housekeeping CPU, synchronous, ~2000/s. */
void hackbenchLoop(int self, int peer, std::vector<HkState> *hk)
{
	unsigned long n = 0;

	while (!stopLoad.load(std::memory_order_relaxed)) {
		smp_call_function_single(peer, hackbenchMsg, &(*hk)[peer], 1);
		n++;
		struct timespec ts = {0, 500000};
		nanosleep(&ts, nullptr);
	}
	(*hk)[self].messages.store(n, std::memory_order_relaxed);
}

/* Open a patching window: every isolated CPU acknowledged it from user mode. */
void windowOpen(const struct cpumask *nohz, std::vector<IsoState> &iso)
{
	unsigned int seq = READ_ONCE(windowSeq) + 1;
	int cpu;

	WRITE_ONCE(windowSeq, seq);
	smp_mb();
	for_each_cpu(cpu, nohz)
		while (iso[cpu].ack.load(std::memory_order_acquire) != seq)
			std::this_thread::yield();
}

void windowClose(void)
{
	smp_store_release(&windowSeq, READ_ONCE(windowSeq) + 1);
}

void opFlip(const struct cpumask *nohz, std::vector<IsoState> &iso, Counts &c)
{
	windowOpen(nohz, iso);
	pokelab::bpf_stats_handler_write((int)(c.flips % 2 == 0));
	windowClose();
	c.flips++;
}

void opModuleLoad(const struct cpumask *nohz, std::vector<IsoState> &iso, Counts &c)
{
	u8 code[16];
	u32 reloc = 0x5eed0000u + (u32)(c.moduleLoads & 0xffff);
	void *text = module_text_alloc();

	if (!text) {
		c.allocFail++;
		return;
	}
	/* Unformed module: the loader copies its sections in. */
	gen_ret_imm(code, 0);
	memcpy(text, code, sizeof(code));
	set_memory_rox(text);	/* module_enable_rox() */

	/* write_relocate_add() on the live module: text_poke() + deferrable sync. */
	windowOpen(nohz, iso);
	mutex_lock(&text_mutex);
	text_poke((u8 *)text + 1, &reloc, sizeof(reloc));
	smp_text_poke_sync_each_cpu_deferrable();
	mutex_unlock(&text_mutex);
	windowClose();
	/* MODULE_STATE_LIVE: its code may run anywhere from now on. */
	kshim::xmcTextPublish(text, kPage);

	if (((u32(*)(void))text)() != reloc)
		c.badRuns++;
	module_text_free(text);	/* unload */
	c.moduleLoads++;
}

void opJit(void **prev, Counts &c)
{
	u8 code[16];
	u32 imm = 0xb9f00000u + (u32)(c.jits & 0xffff);
	void *image = module_text_alloc();

	if (!image) {
		c.allocFail++;
		return;
	}
	/* bpf_jit_binary_pack_finalize(): text_poke_copy() (no sync), then ROX. */
	gen_ret_imm(code, imm);
	mutex_lock(&text_mutex);
	text_poke(image, code, sizeof(code));
	mutex_unlock(&text_mutex);
	set_memory_rox(image);
	kshim::xmcTextPublish(image, kPage);	/* the program is attached: it may run */
	if (((u32(*)(void))image)() != imm)
		c.badRuns++;
	/* The program it replaces is freed. */
	module_text_free(*prev);
	*prev = image;
	c.jits++;
}

/* --------------------------------------------------------------------- */
/* One variant: boot, load, trace, census.                                 */

struct IsoCpu {
	int cpu = 0;
	unsigned long ipis = 0, ipiNs = 0, ipiMaxNs = 0;
	unsigned long flushes = 0, flushNs = 0, flushMaxNs = 0;
	unsigned long syscalls = 0, iterations = 0;
};

struct VariantResult {
	std::string policy;
	bool ok = false;		/* booted and ran */
	std::string machine;
	std::map<std::string, unsigned long> csd;	/* func -> count, from the pipeline */
	std::map<std::string, unsigned long> ipi;	/* callback -> count, from the pipeline */
	std::string csdRaw, ipiRaw;
	unsigned long csdEvents = 0, ipiEvents = 0;	/* counted in the snapshot, same filter */
	unsigned long dropped = 0, violations = 0;
	std::string xmcVerdict;		/* the cross-modifying-code model's, over the load */
	unsigned long syncRounds = 0;	/* text-patching sync rounds over the load */
	std::vector<std::string> violationLines;
	Counts ops;
	unsigned long messages = 0;
	std::vector<IsoCpu> iso;
};

/* Run @pipeline through /bin/sh; "N name" lines into @out, raw text into @raw. */
bool runPipeline(const std::string &pipeline, std::map<std::string, unsigned long> *out,
		 std::string *raw)
{
	FILE *f = popen(pipeline.c_str(), "r");
	char line[512];

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long n;
		char name[400];

		*raw += line;
		if (sscanf(line, "%lu %399s", &n, name) == 2)
			(*out)[name] += n;
	}
	return pclose(f) == 0;
}

std::string shellQuote(const std::string &s)
{
	std::string q = "'";

	for (char ch : s)
		q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
	return q + "'";
}

int runVariant(const Common &common, const char *policy, VariantResult *r, std::string *err)
{
	Progress prog(common, "isolation");
	std::string cmdline;
	unsigned int n = opts.cpus;
	unsigned int nIso = opts.isolated ? opts.isolated : n / 2;
	std::string nohzList = nIso == 1 ? fmt::format("{}", n - 1)
					 : fmt::format("{}-{}", n - nIso, n - 1);

	r->policy = policy;
	cmdline = fmt::format("nr_cpus={} nohz_full={} pokelab.ct_defer={}", n, nohzList, policy);
	prog.stage(fmt::format("ct_defer={}: boot ({})", policy, cmdline));
	if (kshim::boot(cmdline, err, common.quiet))
		return 2;
	r->machine = kshim::machineLine();

	const struct cpumask *nohz = kshim::nohzFullMask();
	std::vector<IsoState> iso(n);
	std::vector<HkState> hk(n);
	std::vector<int> hkCpus;
	TraceFilter filter;
	std::string ferr;

	for (unsigned int cpu = 0; cpu < n; cpu++)
		if (!cpumask_test_cpu(cpu, nohz))
			hkCpus.push_back(cpu);
	BUG_ON(!parseTraceCpus(nohzList, n, &filter, &ferr));

	pokelab::bpf_stats_handler_write(0);
	kshim::xmcQuiesce();

	kshim::XmcStats xmc0 = kshim::xmcStats();
	unsigned long rounds0 = textPokeStats().syncRounds;
	kshim::resetCpuStats();
	stopLoad.store(false);
	WRITE_ONCE(windowSeq, 0u);
	kshim::traceStart(65536);

	for (unsigned int cpu = 1; cpu < n; cpu++) {
		if (cpumask_test_cpu(cpu, nohz)) {
			kshim::cpuRun(cpu, [st = &iso[cpu]] {
				isolatedLoop(st, (u64)opts.syscallMs * 1000000ull);
			});
		} else {
			size_t i = 0;

			while (hkCpus[i] != (int)cpu)
				i++;
			int peer = hkCpus[(i + 1) % hkCpus.size()];
			kshim::cpuRun(cpu, [cpu, peer, h = &hk] { hackbenchLoop(cpu, peer, h); });
		}
	}

	/* CPU 0: the rteval-like patcher. */
	u64 t0 = nowNs(), dur = (u64)(opts.seconds * 1e9);
	void *jitPrev = nullptr;
	unsigned long op = 0;

	prog.stage(fmt::format("ct_defer={}: load", policy));
	/* At least one operation of each kind, however loaded the host is. */
	while (op < 3 || nowNs() - t0 < dur) {
		switch (op++ % 3) {
		case 0:
			opFlip(nohz, iso, r->ops);
			break;
		case 1:
			opModuleLoad(nohz, iso, r->ops);
			break;
		default:
			opJit(&jitPrev, r->ops);
			break;
		}
		prog.step((nowNs() - t0) / 1000000000ull, (unsigned long)opts.seconds);
		sleepMs(opts.intervalMs);
	}
	module_text_free(jitPrev);
	if (r->ops.flips % 2)
		opFlip(nohz, iso, r->ops);	/* leave the key as found */

	stopLoad.store(true);
	for (unsigned int cpu = 1; cpu < n; cpu++)
		kshim::cpuWait(cpu);
	kshim::traceStop();
	kshim::xmcQuiesce();
	{
		kshim::XmcStats x = kshim::xmcStats() - xmc0;
		std::vector<kshim::XmcViolation> log = kshim::xmcViolations();

		r->violations = x.violations;
		r->syncRounds = textPokeStats().syncRounds - rounds0;
		r->xmcVerdict = kshim::xmcVerdict(x);
		for (size_t i = xmc0.violations; i < log.size() && r->violationLines.size() < 3; i++)
			r->violationLines.push_back(kshim::xmcFormat(log[i]));
	}

	kshim::TraceSnapshot snap = kshim::traceSnapshot();

	for (const auto &tc : snap.cpus)
		r->dropped += tc.dropped;
	for (const auto &e : snap.events) {
		if (!traceEventSelected(e, filter))
			continue;
		if (e.type == kshim::TraceType::CsdQueueCpu)
			r->csdEvents++;
		else if (e.type == kshim::TraceType::IpiSendCpu ||
			 e.type == kshim::TraceType::IpiSendCpumask)
			r->ipiEvents++;
	}
	for (unsigned int cpu = 1; cpu < n; cpu++) {
		r->messages += hk[cpu].messages.load();
		if (!cpumask_test_cpu(cpu, nohz))
			continue;

		IsoCpu c;
		kshim::CpuStats cs = kshim::cpuStats(cpu);

		c.cpu = cpu;
		c.ipis = cs.irqHandled;
		c.ipiNs = cs.irqNs;
		c.ipiMaxNs = cs.irqMaxNs;
		c.flushes = ctWorkFlushed(cpu);
		c.flushNs = ctWorkFlushNs(cpu, &c.flushMaxNs);
		c.syscalls = iso[cpu].syscalls.load();
		c.iterations = iso[cpu].iterations.load();
		r->iso.push_back(c);
	}
	kshim::shutdown();

	/* The census: the filtered trace as text, and the cover letter's pipelines. */
	prog.stage(fmt::format("ct_defer={}: census", policy));
	std::string dir = opts.traceDir;
	bool tmpDir = dir.empty();

	if (tmpDir) {
		char tmpl[] = "/tmp/pokelab-isolation.XXXXXX";

		if (!mkdtemp(tmpl)) {
			*err = fmt::format("isolation: cannot create a temporary directory: {}",
					   strerror(errno));
			return 1;
		}
		dir = tmpl;
	}
	std::string file = dir + "/trace-" + policy + ".txt";

	if (!writeFileAtomic(file, formatTraceText(snap, filter), err))
		return 1;
	bool okCsd = runPipeline(fmt::format("grep csd_queue {} | awk '{{ print $(NF-1) }}' | "
					     "sort | uniq -c", shellQuote(file)),
				 &r->csd, &r->csdRaw);
	bool okIpi = runPipeline(fmt::format("grep callback {} | awk '{{ print $(NF) }}' | "
					     "sort | uniq -c", shellQuote(file)),
				 &r->ipi, &r->ipiRaw);
	if (tmpDir) {
		unlink(file.c_str());
		rmdir(dir.c_str());
	}
	/* grep exits 1 when nothing matched, and the pipeline with it: not an error. */
	(void)okCsd;
	(void)okIpi;
	r->ok = true;
	return 0;
}

unsigned long get(const std::map<std::string, unsigned long> &m, const std::string &k)
{
	auto it = m.find(k);

	return it == m.end() ? 0 : it->second;
}

std::string us(unsigned long ns)
{
	return fmt::format("{:.1f}", ns / 1000.0);
}

int report(const VariantResult &off, const VariantResult &v7)
{
	const std::string gscfi = "callback=generic_smp_call_function_single_interrupt+0x0";
	unsigned long syncOff = get(off.csd, "func=do_sync_core");
	unsigned long syncV7 = get(v7.csd, "func=do_sync_core");
	unsigned long allOff = get(off.csd, "func=do_flush_tlb_all");
	unsigned long allV7 = get(v7.csd, "func=do_flush_tlb_all");
	unsigned long rngOff = get(off.csd, "func=do_kernel_range_flush");
	unsigned long rngV7 = get(v7.csd, "func=do_kernel_range_flush");
	bool syncClaim = syncOff > 0 && syncV7 == 0;
	bool tlbClaim = allOff > 0 && allV7 > 0 && rngOff > 0 && rngV7 > 0;
	bool clean = off.violations == 0 && v7.violations == 0 && off.dropped == 0 &&
		     v7.dropped == 0 && off.ops.badRuns == 0 && v7.ops.badRuns == 0 &&
		     off.ops.allocFail == 0 && v7.ops.allocFail == 0;
	unsigned long sumCsdOff = 0, sumCsdV7 = 0, sumIpiOff = 0, sumIpiV7 = 0;
	bool consistent;

	for (const auto &[k, v] : off.csd)
		sumCsdOff += v;
	for (const auto &[k, v] : v7.csd)
		sumCsdV7 += v;
	for (const auto &[k, v] : off.ipi)
		sumIpiOff += v;
	for (const auto &[k, v] : v7.ipi)
		sumIpiV7 += v;
	/* The pipelines must count what the snapshot holds under the same filter. */
	consistent = sumCsdOff == off.csdEvents && sumCsdV7 == v7.csdEvents &&
		     sumIpiOff == off.ipiEvents && sumIpiV7 == v7.ipiEvents;

	std::string s = fmt::format("\n== seed 003: IPIs and CSDs to isolated CPUs, "
				    "ct_defer=off vs {} ==\n{}\n{}\n",
				    v7.policy, off.machine, v7.machine);
	s += fmt::format("pokelab: {:.1f} s per variant, {} CPUs, isolated CPUs in a user loop "
			 "with a system call every {} ms;\n"
			 "kernel: 3 h of rteval (kernel build + hackbench) on a Xeon E5-2699, "
			 "v6.14 vs v6.14 + v5.\n"
			 "Census of the trace filtered to the isolated CPUs (kernel: v6.14 / +v5; "
			 "pokelab: ct_defer=off / {}):\n\n",
			 opts.seconds, opts.cpus, opts.syscallMs, v7.policy);

	auto pair = [](unsigned long a, unsigned long b) { return fmt::format("{} / {}", a, b); };
	std::vector<std::vector<std::string>> rows = {
		{"IPI callback generic_smp_call_function_single_interrupt", "93 / 86",
		 pair(get(off.ipi, gscfi), get(v7.ipi, gscfi)),
		 "TLB-flush IPIs remain with v7"},
		{"IPI callback nohz_full_kick_func", "22 / 41", "- / -",
		 "not modelled: no tick, no nohz kicks"},
		{"csd_queue do_flush_tlb_all", "1456 / 1378", pair(allOff, allV7),
		 fmt::format("present in both: {}", allOff && allV7 ? "yes" : "NO")},
		{"csd_queue do_sync_core", "78 / 0", pair(syncOff, syncV7),
		 fmt::format("> 0 -> 0: {}", syncClaim ? "yes" : "NO")},
		{"csd_queue nohz_full_kick_func", "33 / 33", "- / -", "not modelled"},
		{"csd_queue do_kernel_range_flush", "26 / 0", pair(rngOff, rngV7),
		 fmt::format("v5 deferred it, v7 does not; present in both: {}",
			     rngOff && rngV7 ? "yes" : "NO")},
	};
	std::map<std::string, int> shown = {{"func=do_sync_core", 1},
					    {"func=do_flush_tlb_all", 1},
					    {"func=do_kernel_range_flush", 1}};
	std::map<std::string, int> extra;

	for (const auto &[k, v] : off.csd)
		if (!shown.count(k))
			extra[k] = 1;
	for (const auto &[k, v] : v7.csd)
		if (!shown.count(k))
			extra[k] = 1;
	for (const auto &[k, v] : extra)
		rows.push_back({"csd_queue " + k.substr(5), "-",
				pair(get(off.csd, k), get(v7.csd, k)), "other"});
	for (const auto &[k, v] : off.ipi)
		if (k != gscfi)
			rows.push_back({"IPI " + k, "-", pair(v, get(v7.ipi, k)), "other"});
	s += claimTable(rows);

	s += fmt::format("\n$ grep csd_queue trace-off.txt | awk '{{ print $(NF-1) }}' | sort | "
			 "uniq -c\n{}$ grep callback trace-off.txt | awk '{{ print $(NF) }}' | "
			 "sort | uniq -c\n{}",
			 off.csdRaw, off.ipiRaw);
	s += fmt::format("$ grep csd_queue trace-{0}.txt | awk '{{ print $(NF-1) }}' | sort | uniq "
			 "-c\n{1}$ grep callback trace-{0}.txt | awk '{{ print $(NF) }}' | sort | "
			 "uniq -c\n{2}",
			 v7.policy, v7.csdRaw, v7.ipiRaw);

	s += fmt::format("\nLoad on the housekeeping CPUs (off / {}): ", v7.policy);
	s += fmt::format("{} / {} static-key flips (164 sites), {} / {} module loads, {} / {} "
			 "BPF JIT images, {} / {} hackbench messages; module text allocation "
			 "failures {} / {}, JIT'd or relocated code returning a wrong value "
			 "{} / {}\n",
			 off.ops.flips, v7.ops.flips, off.ops.moduleLoads, v7.ops.moduleLoads,
			 off.ops.jits, v7.ops.jits, off.messages, v7.messages, off.ops.allocFail,
			 v7.ops.allocFail, off.ops.badRuns, v7.ops.badRuns);

	s += "\nosnoise-style interference on the isolated CPUs (durations in us; an IPI's time "
	     "includes a deferred flush its entry ran):\n";
	s += fmt::format("{:>8} {:>4} {:>9} {:>6} {:>10} {:>8} {:>14} {:>10} {:>8}\n", "ct_defer",
			 "CPU", "syscalls", "IPIs", "IPI total", "IPI max", "flushes@entry",
			 "flush tot", "flush max");
	for (const VariantResult *v : {&off, &v7})
		for (const IsoCpu &c : v->iso)
			s += fmt::format("{:>8} {:>4} {:>9} {:>6} {:>10} {:>8} {:>14} {:>10} "
					 "{:>8}\n", v->policy, c.cpu, c.syscalls, c.ipis,
					 us(c.ipiNs),
					 us(c.ipiMaxNs), c.flushes, us(c.flushNs),
					 us(c.flushMaxNs));

	s += fmt::format("\ncross-modifying-code model, ct_defer=off: {}\n", off.xmcVerdict);
	s += fmt::format("cross-modifying-code model, ct_defer={}: {}\n", v7.policy, v7.xmcVerdict);
	for (const VariantResult *v : {&off, &v7})
		for (const std::string &l : v->violationLines)
			s += l;
	s += fmt::format("sync rounds: {} / {}; trace events dropped: {} / {}; pipelines match the "
			 "snapshot: {}\n",
			 off.syncRounds, v7.syncRounds, off.dropped, v7.dropped,
			 consistent ? "yes" : "NO");
	s += "Not shown here: the 3 h scale (counts grow with --seconds), nohz_full kicks (no "
	     "tick), and absolute interference: the isolated CPUs share 2 PUs with the "
	     "housekeeping ones, so a duration includes any host preemption of the CPU thread.\n";
	bool pass = syncClaim && tlbClaim && clean && consistent;

	s += fmt::format("result: {}\n", pass ? "do_sync_core > 0 -> 0, TLB flushes kept: claim "
					      "reproduced"
					    : "claim NOT reproduced");
	fmt::print("{}", s);
	std::fflush(stdout);
	return pass ? 0 : 1;
}

int runBoth(const Common &common)
{
	VariantResult off, v7;
	std::string err;
	int ret;

	if (opts.isolated && opts.isolated > opts.cpus - 2) {
		fmt::print(stderr, "run isolation: --isolated {}: expected 1..{} (two CPUs stay "
				   "housekeeping)\n", opts.isolated, opts.cpus - 2);
		return 2;
	}
	if (opts.cpus / 2 < 1 || opts.cpus - (opts.isolated ? opts.isolated : opts.cpus / 2) < 2) {
		fmt::print(stderr, "run isolation: --cpus {}: expected at least 3\n", opts.cpus);
		return 2;
	}
	for (auto [policy, r] : {std::pair{"off", &off}, std::pair{opts.defer.c_str(), &v7}}) {
		ret = runVariant(common, policy, r, &err);
		if (ret) {
			fmt::print(stderr, "run isolation: {}\n", err);
			return ret;
		}
	}
	return report(off, v7);
}

int (*setup(CLI::App *sub))(const Common &)
{
	sub->add_option("--cpus", opts.cpus, "Simulated CPUs (the upper half isolated)")
		->check(CLI::Range(3u, (unsigned int)NR_CPUS));
	sub->add_option("--isolated", opts.isolated,
			"Isolated (nohz_full) CPUs, the highest-numbered (default: half)")
		->check(CLI::Range(1u, (unsigned int)NR_CPUS));
	sub->add_option("--seconds", opts.seconds, "Load duration per variant, seconds")
		->check(CLI::Validator(
			[](std::string &v) -> std::string {
				char *end;
				double d = strtod(v.c_str(), &end);

				/* NaN compares false with any bound: reject it explicitly */
				if (v.empty() || *end || !(d >= 0.1 && d <= 3600.0))
					return v + ": expected seconds from 0.1 to 3600";
				return "";
			},
			"0.1..3600"));
	sub->add_option("--syscall-ms", opts.syscallMs,
			"Isolated CPUs: one system call every this many ms")
		->check(CLI::Range(1u, 60000u));
	sub->add_option("--interval-ms", opts.intervalMs,
			"Housekeeping: pause between patching operations, ms")
		->check(CLI::Range(0u, 10000u));
	sub->add_option("--defer", opts.defer,
			"Policy compared with off (default v7; 'off' is the broken comparison "
			"the census check must reject)")
		->check(CLI::IsMember({"v7", "v5", "catchup", "off"}));
	sub->add_option("--trace-dir", opts.traceDir,
			"Keep the filtered traces as DIR/trace-off.txt and DIR/trace-v7.txt")
		->check(CLI::ExistingDirectory);
	return runBoth;
}

int reproduce(const Common &common)
{
	opts = Opts{};
	opts.cpus = 4;
	opts.seconds = 5.0;
	return runBoth(common);
}

const ScenarioRegistrar reg({"isolation", "003",
			     "the deferral series' census: IPIs and CSDs to isolated CPUs, "
			     "ct_defer=off vs v7",
			     setup, reproduce});

} /* namespace */

} /* namespace pokelab::scenario */
