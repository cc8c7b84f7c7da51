/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The cross-modifying-code model (xmc): what each simulated CPU may fetch
 * from text that another CPU (or it) rewrites, after Intel SDM Vol. 3A
 * §8.1.3 and AMD APM Vol. 2 §7.6.1, and the rules a live patch must keep.
 *
 * It is a model, not a measurement: x86 hardware snoops code writes, so a
 * missing serialisation almost never shows in what a program computes. The
 * model assumes the worst the manuals allow and checks the protocol against
 * that. It is fed only by events recorded where they happen:
 *
 *  - every text byte written (address, old byte, new byte), from inside the
 *    write primitive (text_poke_memcpy() and text_poke_early()'s write);
 *  - every serialising instruction a CPU executes, which the machine
 *    records from inside the instruction's own wrapper (serialize(),
 *    iret_to_self(), cpuid_serialize() in asm/sync_core.h, and, with
 *    pokelab.eret=serialising, the return from the IPI and INT3 handlers:
 *    kernel_shim/cpu_events.h), and every membarrier SYNC_CORE round for
 *    the threads it covers; delivery of an interrupt or exception never
 *    serialises;
 *  - every entry into an extended quiescent state (the context-tracking
 *    RMW that leaves RCU's sight) and the first instrumentable fetch after
 *    leaving one (instrumentation_begin(), after the entry's flush);
 *  - the batch's own milestones: an operation begins and returns, its
 *    phase, the INT3 refs published and drained;
 *  - text becoming reachable (xmcTextPublish()) or being only the writer's
 *    (xmcTextPrivate()).
 *
 * The rules (docs/testing.md):
 *  R1 torn fetch: a CPU outside an EQS (every CPU, for noinstr text) may
 *     fetch, for each byte written since its last serialisation, the value
 *     it had then or any value written since. If some combination, decoded
 *     from an instruction boundary, is neither the old instruction, nor one
 *     starting with INT3, nor the new one (the operation's final bytes), it
 *     is a torn fetch.
 *  R2 stale after return: when an operation returns, every CPU that could
 *     still fetch a byte older than the operation's must be in an EQS with a
 *     deferred sync pending; at its first instrumentable fetch after the
 *     EQS, it must have serialised since.
 *  R3 orphaned INT3: when a CPU's INT3 refs are drained, it must no longer
 *     be able to fetch an INT3 the operation wrote and then removed; when an
 *     INT3 is written, the refs of every CPU that may fetch it are live.
 *  R4 the batch's own text: an INT3 batch writes only inside the sites it
 *     was given, and when it returns each site holds what its caller asked
 *     for (no INT3 left behind, no byte missing).
 *  R5 INT3 emulation: a CPU that trapped on a batch's INT3 resumes as if it
 *     had executed the site's old or new instruction (or at the site, to
 *     fetch it again): its instruction pointer, stack pointer and pushed
 *     return address, decoded from the bytes with Zydis, not taken from the
 *     handler's own tables.
 *  (R6-R8: docs/testing.md.)
 *  R9 waited cross-calls: a waited cross-call returns only after every
 *     online CPU of its mask, less the sender, that its condition did not
 *     skip has ended the function (kernel_shim/call_events.h's record).
 *
 * The writing CPU is itself a fetching CPU, except while it has IRQs off
 * around its own writes (it runs the patcher then, not the sites): its
 * check is made when it enables IRQs again.
 *
 * Threads: the write-side entry points are called by the one CPU that holds
 * text_mutex (or the boot CPU before the others run); the fetch-side ones
 * inline below by any CPU, in any context, including noinstr code and
 * signal handlers (they are call-free or call only async-signal-safe,
 * lock-free code).
 */
#pragma once

#include <cstddef>
#include <string>

#include <kernel_shim/cpu_events.h>
#include <linux/compiler.h>
#include <linux/threads.h>
#include <linux/types.h>

struct pt_regs;

namespace kshim {

/* Per-CPU state of the model, written by the CPU itself unless said otherwise. */
struct alignas(SMP_CACHE_BYTES) XmcCpu {
	/* What the model forgave this CPU at its first fetch (R2 at entry: one report). */
	u64 forgiven;
	/* May fetch instrumentable text: outside an EQS and past the entry's flush. */
	u8 fetching;
	/* The writer owes a check at its next IRQ enable (cpuEvents[].irqsOnCall) since: */
	u64 writerSince;	/* the write sequence when it wrote with IRQs off */
	/* Fresh fetch windows (SPSC ring: the CPU produces, the writer consumes). */
	u64 freshHead;
	u64 freshTail;
	u64 freshDropped;	/* windows the full ring could not take (counted as unchecked) */
	struct {
		u64 serial;
		u64 upTo;
	} fresh[16];
	/* R2 at the first instrumentable fetch, found in any context (see xmc.cpp). */
	u64 staleCount;
	u64 entryChecks;	/* first instrumentable fetches after an EQS */
	u64 staleIp;
	u64 staleSerial;
	u64 staleOpEnd;
	u8 staleHave;
};

extern XmcCpu xmcCpus[NR_CPUS];
/* Last write of the last operation that returned. */
extern u64 xmcLastOpEnd;
/* The model is on (pokelab.xmc=1, the default). */
extern bool xmcEnabled;

/*
 * Turn the model on or off while the machine runs, for bench model's side
 * by side timing of the same workload with and without it. The open
 * operation (if any) is closed and the CPUs' records taken first; the
 * per-CPU state the model keeps whether on or off (serialisations, EQS
 * fetching) stays, so the next operation is judged as if it had been on
 * throughout. Only between operations, by the writer (text_mutex held or
 * no text being written), task context. CPUs read the flag in signal
 * context: a relaxed store, so a trap that straddles the switch is judged
 * or not, never half.
 */
void xmcSetEnabled(bool on) noexcept;

/* Out of line: the first instrumentable fetch after an EQS. Async-signal-safe. */
void xmcFirstFetch(int cpu, unsigned long ip) noexcept;
/* The writer enabled IRQs with a check owed (cpu_events.h's irqsOnHook). Task context. */
void xmcWriterIrqsOn(int cpu) noexcept;

/*
 * The calling CPU enters an extended quiescent state (user, idle): from now
 * on it fetches only noinstr text until xmcInstrumentationBegin(). Called
 * right before the context-tracking RMW that leaves RCU's sight, so that a
 * remote CPU that sees the EQS also sees this. Inline, call-free,
 * async-signal-safe.
 */
static __always_inline void xmcEqsEnter(void)
{
	int cpu = tlsCpu;

	if (cpu >= 0) {
		__atomic_store_n(&xmcCpus[cpu].fetching, 0, __ATOMIC_RELAXED);
		cpuRecentEvent(CPU_EV_EQS_ENTER, 0, 0);
	}
}

/*
 * instrumentation_begin(): the calling CPU may run instrumentable code. The
 * first one after an EQS is the model's check point for that CPU (an
 * out-of-line, async-signal-safe call); the others cost one load.
 */
static __always_inline void xmcInstrumentationBegin(unsigned long ip)
{
	int cpu = tlsCpu;

	if (cpu >= 0 && unlikely(!__atomic_load_n(&xmcCpus[cpu].fetching, __ATOMIC_RELAXED)))
		xmcFirstFetch(cpu, ip);
}

/*
 * The return from an INT3 trap that a handler claimed: @before is the
 * register state the trap delivered (ip just past the INT3), @after the one
 * the return installs. Recorded for R5 on the calling CPU (a per-CPU ring;
 * a full ring drops the record and counts it), then cpuEret(). Reads the
 * word at each stack pointer. Out of line, lock-free, async-signal-safe;
 * CPU threads only.
 */
void xmcInt3Return(const struct pt_regs *before, const struct pt_regs *after) noexcept;

/*
 * exc_int3() on the calling CPU: a trap on the INT3 before @regs->ip
 * begins (the word at @regs->sp is kept for xmcInt3Claimed()), and ends
 * (whatever claimed it). Plain per-CPU stores; async-signal-safe.
 */
void xmcInt3Enter(const struct pt_regs *regs) noexcept;
void xmcInt3Exit() noexcept;

/*
 * R5 on a trap the die chain claimed (do_int3() returned true): @before is
 * the state the trap delivered, @after the one the handler resumes with.
 * The one such INT3 the model knows is the INT3 self-test's
 * (int3_selftest_asm, whose notifier must run "call int3_selftest_callee"
 * from its 5-byte slot; both found in the symbol table, not asked of the
 * code under test): resumed at the callee, 8 bytes below with the slot's
 * end pushed, the interrupted frame's top word untouched. A wrong one is
 * printed at once; while the machine boots it panics (exit 1) before the
 * handler returns to the wrong state. Async-signal-safe.
 */
void xmcInt3Claimed(const struct pt_regs *before, const struct pt_regs *after) noexcept;

/*
 * The batch's INT3 handler returned 0 for the trap on the INT3 at @site.
 * If the open batch armed that INT3 and has not removed it (and was not
 * asked to leave it: a probe's), R3 records a violation for this CPU and
 * this returns true; the caller prints xmcInt3DeclinedNote() before it
 * dies of the trap, if nothing else claims it. Lock-free,
 * async-signal-safe.
 */
bool xmcInt3Declined(unsigned long site) noexcept;
/*
 * The trap on the INT3 at @site goes unclaimed (an Oops follows): the
 * calling CPU's declined-trap violation, as one line on stderr. If none was
 * recorded, @site is looked for again among the armed INT3s for up to 50 ms
 * while it holds an INT3 (the writer feeds a write after its bytes are in
 * memory). Async-signal-safe.
 */
void xmcInt3DeclinedNote(unsigned long site) noexcept;

/*
 * R6, from the kernel TLB model (asm/tlbflush.h): CPU @cpu touched @ip in
 * [@start, @end), whose page tables changed at generation @gen and whose
 * flush returned, with a kernel TLB from generation @cpuGen. Kept per CPU
 * (the first one) until the model reports it at its next operation
 * boundary. Async-signal-safe.
 */
void xmcTlbStale(int cpu, unsigned long start, unsigned long end, u64 gen, u64 cpuGen,
		 unsigned long ip) noexcept;

/*
 * R8, the store→load rule: record that the calling CPU's @pair load had no
 * full fence after the pair's last store (kernel_shim/cpu_events.h), at
 * @ip. Kept per CPU (the first one) until the model reports it at its next
 * operation boundary. noinstr, call-free, async-signal-safe.
 */
void xmcFenceMissing(enum CpuFencePair pair, unsigned long ip) noexcept;

/*
 * R8 at a protocol's load: the calling CPU is about to make @pair's load
 * (the one x86-TSO would let pass the pair's store); it must have executed
 * a full fence since the store. One thread-local compare when it has.
 * Inline, noinstr-safe, async-signal-safe.
 */
static __always_inline void xmcFenceCheck(enum CpuFencePair pair)
{
	if (unlikely(!cpuFencedSince(pair))) {
		xmcFenceMissing(pair, _THIS_IP_);
		cpu_fence_mark[pair] = 0;	/* one report per store */
	}
}

/* ---- Write side: text_mutex holder (or the boot CPU), task context. ---- */

/*
 * A text write of @len bytes at @addr has just reached memory: @before is
 * what was there, @after what is there now. Called from inside the write
 * primitive. Unchanged bytes are not recorded; writes to hidden text
 * (xmcTextHidden()) are ignored. Checks R1 for every other CPU at once and
 * owes the writer its check at IRQ enable.
 */
void xmcTextWrite(const void *addr, const u8 *before, const u8 *after, size_t len) noexcept;

/*
 * smp_text_poke_batch_add() queued a site: @len bytes (at most 16) that
 * @addr is to hold once the batch returns. It is what the caller asked for,
 * so R1 can tell the new instruction from a torn one at every write of the
 * batch. Writes outside an INT3 batch are their own intent. @emulate, if
 * not NULL, is the instruction the caller asked the INT3 handler to
 * emulate in the bytes' place (smp_text_poke_batch_add()'s @emulate): R5
 * accepts a trap resumed as it.
 */
void xmcIntent(const void *addr, const void *bytes, size_t len,
	       const void *emulate = nullptr) noexcept;

/*
 * An operation: one smp_text_poke_batch_finish(), one text_poke_early(),
 * one pass. Writes outside any operation form an implicit one that ends at
 * the next sync round's return (or the next operation). @what names it in
 * reports (a string literal); @int3Batch says that R3 applies (the INT3
 * batch's refs protect its INT3s). At the end, R1 is decided for every
 * window seen, and R2 for every CPU.
 */
void xmcOpBegin(const char *what, bool int3Batch = false) noexcept;
void xmcOpEnd() noexcept;
/* The batch phase the next writes belong to (1 INT3, 2 tails, 3 first bytes). */
void xmcPhase(int phase) noexcept;
/* A sync round (smp_text_poke_sync_each_cpu*()) returned. */
void xmcSyncRoundDone() noexcept;
/*
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) returned: every
 * CPU thread but the caller has serialised against writes up to @seq
 * (read with cpuSerialiseBegin() before the call).
 */
void xmcMembarrierRound(u64 seq) noexcept;
/*
 * Where the INT3 handler's ref counts are, for R3 to read them: @percpu[cpu]
 * (NR_CPUS entries) and the one shared count @shared, and @global, the flag
 * the handler reads to pick between them (true: pokelab.refs=global, the
 * shared count). The model loads *@global at each check, so it follows a
 * switch between batches (text_poke_set_refs_mode()) without being told;
 * @global NULL means per-CPU counts. NULL forgets them. Boot, before any
 * CPU but 0 runs.
 */
void xmcInt3Refs(const int *const *percpu, const int *shared, const bool *global) noexcept;
/*
 * The batch's refs drain returned (every CPU's count dropped and waited
 * for): R3 reads every count (0, or a handler still holds a ref) and checks
 * that no CPU can fetch an INT3 the batch removed. Writer, task context.
 */
void xmcInt3RefsDrained() noexcept;

/*
 * Reachability of text, from its owner (an allocator, a loader, an image's
 * updater): the one thing the model cannot see in the bytes. Hidden text is
 * fetched by nobody (a module being laid out, fresh JIT memory, a free chunk
 * of a program pack): its writes are not recorded. Private text is fetched
 * only by @cpu. Publishing makes a range fetchable by every CPU, each of
 * which starts from the bytes there now. A range that overlaps one already
 * set splits it: what lies outside keeps its reachability. Task context.
 */
void xmcTextHidden(const void *start, size_t len) noexcept;
void xmcTextPrivate(const void *start, size_t len, int cpu) noexcept;
void xmcTextPublish(const void *start, size_t len) noexcept;

/*
 * [@start, @start + @len) is entered only through static call @key (a
 * dispatcher image's half: bpf_dispatcher_<name>_call). The model finds the
 * key's branches in the tables (its trampoline, its inline sites in
 * .static_call_sites) and reads their bytes itself: a CPU may fetch the
 * range only if one of them branched into it when the CPU last serialised,
 * or does now. Writing the half that no branch reaches (the idle half that
 * bpf_dispatcher_update() prepares) is then not judged against fetching
 * CPUs. What the model does not see: a CPU still running in a half its
 * branches have left (the synchronize_rcu() the updater owes before it
 * writes that half again). Task context.
 */
void xmcTextGate(const void *key, const void *start, size_t len) noexcept;

/*
 * R7, the tables (kernel_shim/xmc/tables.cpp). The checker reads the
 * program's __jump_table, static_call_sites, altinstructions and
 * trampolines from its section table and symbols itself; what it needs
 * from the port is the state they are read with, and when to look.
 */

/*
 * The CPU's feature words (boot_cpu_data.x86_capability, @words u32s) and
 * the X86_FEATURE_RETHUNK bit number, for the alternatives and the RET
 * forms. Boot, after the features are final.
 */
void xmcCpuCaps(const u32 *caps, unsigned int words, int rethunkFeature) noexcept;
/* jump_label_update(@key) returned: every site of @key (program, modules) as its table demands. */
void xmcKeyUpdated(const void *key) noexcept;
/* __static_call_update(@key) returned: its inline sites and trampoline as @key->func demands. */
void xmcStaticCallUpdated(const void *key) noexcept;
/*
 * static_call_init() linked and rewrote the program's sites: each as its
 * key demands (while the machine boots, a boot stage: xmcBootStage()).
 */
void xmcStaticCallsInitialised() noexcept;
/* Every site of every table, now (after boot, at a run's end; @when names it). Machine quiet. */
void xmcTablesCheck(const char *when) noexcept;

/*
 * The model at boot (kernel_shim/xmc/boot.cpp; docs/testing.md, "The
 * model at boot"). The tables a boot stage makes true, once it has run:
 */
enum : unsigned int {
	XMC_TABLE_STATIC_CALLS = 1u << 0,	/* static_call_sites and the trampolines */
	XMC_TABLE_ALTERNATIVES = 1u << 1,	/* altinstructions */
	XMC_TABLE_JUMP_LABELS = 1u << 2,	/* __jump_table */
	XMC_TABLES_ALL = 7u,
};
/*
 * Boot stage @stage (a function's name: "apply_alternatives") ended, and
 * made @tables true from now on: R7 over every table made true so far
 * (this stage's and the earlier ones'). A violation it finds, or any the
 * model reported while only the boot CPU runs, is a boot fault: every
 * report so far is printed, then a panic line, and the process exits with
 * status 1; the machine does not boot. Task context, the boot CPU.
 */
void xmcBootStage(const char *stage, unsigned int tables) noexcept;
/* The same check without the panic: the violations it reported. Tests. */
unsigned long xmcBootStageCheck(const char *stage, unsigned int tables) noexcept;

/* One section of a module as its loader laid it out. */
struct XmcSection {
	const char *name;
	unsigned long addr;
	unsigned long size;
};
/*
 * A module's sections as laid out, before anything can run its text: its
 * noinstr text (noinstr_text) counts as noinstr for R1 and R2 from now on;
 * its tables (__jump_table, static_call_sites) are checked once
 * xmcModuleLive() says its COMING notifiers linked them. Task context,
 * the loader.
 */
void xmcModuleTables(const void *mod, const char *name, const XmcSection *secs,
		     unsigned int n) noexcept;
/* The module's COMING notifiers ran: R7 on its tables from now on, and now. The loader. */
void xmcModuleLive(const void *mod) noexcept;
/*
 * The module is going: forget its tables and noinstr text. The loader,
 * before its GOING notifiers unlink its sites.
 */
void xmcModuleTablesGone(const void *mod) noexcept;

/*
 * Tests: what one operation may record, lowered to @bytes distinct bytes and
 * @writes writes (0: the model's own limits, 32768 and 16384), to show that
 * what does not fit goes unjudged, never judged wrongly. Machine quiet.
 */
namespace xmc {
void xmcTestCapacity(unsigned int bytes, unsigned int writes) noexcept;
}
using xmc::xmcTestCapacity;
/*
 * The boot parameter pokelab.xmc_capacity=N, the same for a run: the model
 * keeps at most N writes per operation (default and most 16384), so that a
 * test sees a PARTIAL verdict and what it says. 0 when not given.
 */
unsigned int xmcCapacityParam() noexcept;

/* End an open implicit operation and collect what other CPUs found. Task context. */
void xmcQuiesce() noexcept;

/*
 * Context tracking tells the model whether a CPU has a deferred sync that
 * runs before any instrumentable code at its next entry (R2's exemption).
 */
void xmcSetSyncPending(bool (*fn)(int cpu));

/*
 * R9, waited cross-calls (kernel_shim/call_events.h is the machine's record
 * of them): what the deferral policy in force is called, and the
 * functions it defers (by name, as the symbol table shows them:
 * "do_sync_core" for CT_WORK_SYNC, the kernel TLB flushes under v7 28-31).
 * A CPU that a waited call's condition skipped while it had deferred work
 * pending (xmcSetSyncPending()'s answer) counts as served only when the
 * call's function is one of them. @funcs NULL-terminated (NULL: none).
 * Boot, context tracking's init.
 */
void xmcSetDeferral(const char *policy, const char *const *funcs);

/*
 * Context tracking's state word of a CPU, for the reports' causes ("its
 * context-tracking state read user, RCU not watching, work SYNC"): @read
 * loads it (any thread, one atomic read), @describe says it in words (task
 * context). Boot, context tracking's init.
 */
void xmcSetCtState(int (*read)(int cpu), std::string (*describe)(int state));

/*
 * The INT3 handler took (@get) or put its ref on the count at @refs, which
 * now reads as loaded here: the CPU's recent events, and a count of 1 after
 * a take, an increment from zero, kept for the refs rules' causes. Plain
 * loads and stores; async-signal-safe (the SIGTRAP path).
 */
void xmcInt3RefOp(const int *refs, bool get) noexcept;

/*
 * Zeroed by boot() before its early hooks (with pokelab.xmc= and
 * pokelab.eret= applied); tests may zero it between cases. Task context,
 * machine quiet.
 */
void xmcReset() noexcept;

} /* namespace kshim */
