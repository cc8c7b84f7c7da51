// SPDX-License-Identifier: GPL-2.0-only
/*
 * Live text patching: text_poke(), the three-phase INT3 batch and its trap
 * handler.
 *
 * Port of arch/x86/kernel/alternative.c, v7.3 (the text_poke and
 * smp_text_poke_* parts), with the deferral series v7 25/31.
 *
 * Deviations (each marked "userspace:" below):
 *  - text_poke() writes through /proc/self/mem instead of a temporary mm:
 *    the kernel-side mapping the write goes through is private to the
 *    syscall and gone when it returns, and the program's executable mapping
 *    stays read-only (no mapping is ever writable and executable);
 *  - _stext is the start of the executable (__executable_start);
 *  - the per-CPU counters and the batch timing feed pokelab's reports;
 *  - decoding uses Zydis (asm/insn.h) and reads only the bytes given;
 *  - one-line calls feed the cross-modifying-code model (kshim::xmc*():
 *    the bytes each write changed, the batch's phases, its INT3 refs) and
 *    inject torture delays; BUSTED() switches put plausible wrong patches
 *    in at their call sites (kernel_shim/busted.h).
 */
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <string>
#include <unistd.h>

#include <fmt/format.h>

#include <asm/cpufeature.h>
#include <asm/insn.h>
#include <asm/nops.h>
#include <asm/sections.h>
#include <asm/sync_core.h>
#include <asm/text-patching.h>
#include <kernel_shim/boot.h>
#include <kernel_shim/busted.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/machine.h>
#include <kernel_shim/port_map.h>
#include <kernel_shim/sigsafe.h>
#include <kernel_shim/symbols.h>
#include <kernel_shim/torture.h>
#include <kernel_shim/watchdog.h>
#include <kernel_shim/xmc.h>
#include <linux/atomic.h>
#include <linux/context_tracking_work.h>
#include <linux/execmem.h>
#include <linux/irqflags.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/smp.h>
#include <trace/events/pokelab.h>
#include <pokelab/alt_test.h>
#include <pokelab/bug_switches.h>
#include <pokelab/text_poke_stats.h>
#include <sys/syscall.h>

#include <pokelab/text_alias.h>
#include "text_poke_array.h"
#include <linux/membarrier.h>

/*
 * userspace: the kernel's helpers of linux/minmax.h, linux/mm.h and
 * linux/compiler.h that the shim's headers lack, for the ports below.
 */
#ifndef min_t
#define min_t(type, x, y)	std::min<type>((x), (y))
#endif
#ifndef offset_in_page
#define offset_in_page(p)	((unsigned long)(p) & (PAGE_SIZE - 1))
#endif
#ifndef OPTIMIZER_HIDE_VAR
#define OPTIMIZER_HIDE_VAR(var)	__asm__ ("" : "=r" (var) : "0" (var))
#endif

DEFINE_MUTEX(text_mutex);

/* The 64-bit NOP table, 1..11 bytes, one array, x86_nops[n] pointing into it. */
static const unsigned char x86nops[] = {
	0x90,
	0x66, 0x90,
	0x0f, 0x1f, 0x00,
	0x0f, 0x1f, 0x40, 0x00,
	0x0f, 0x1f, 0x44, 0x00, 0x00,
	0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00,
	0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00,
	0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x66, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00,
};

const unsigned char * const x86_nops[ASM_NOP_MAX + 1] = {
	NULL,
	x86nops,
	x86nops + 1,
	x86nops + 1 + 2,
	x86nops + 1 + 2 + 3,
	x86nops + 1 + 2 + 3 + 4,
	x86nops + 1 + 2 + 3 + 4 + 5,
	x86nops + 1 + 2 + 3 + 4 + 5 + 6,
	x86nops + 1 + 2 + 3 + 4 + 5 + 6 + 7,
	x86nops + 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8,
	x86nops + 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9,
	x86nops + 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 + 10,
};

/* Counters for pokelab's reports (not in the kernel). */
static struct {
	unsigned long batches;
	unsigned long syncRounds;
	unsigned long pokes;
	unsigned int lastNrEntries;
	u64 lastBatchNs;
	unsigned int lastSyncRounds;
	unsigned long implicitFlushes;
} poke_stats;

/* Test-only bug switches and hooks (pokelab/bug_switches.h); all off. */
struct pokelab_bug_switches pokelab_bugs;
struct pokelab_test_hooks pokelab_hooks;

void pokelabBugsReset(void)
{
	pokelab_bugs = {};
	pokelab_hooks = {};
	pokelab::batchAfterPhase1Probe = nullptr;
	pokelab::batchPhaseHook = nullptr;
	pokelab::int3AfterRefProbe = nullptr;
}

void (*pokelab::batchAfterPhase1Probe)(void);
void (*pokelab::int3AfterRefProbe)(unsigned long ip) noexcept;
void (*pokelab::batchPhaseHook)(int phase);

/*
 * pokelab.refs=percpu|global: per-CPU refs (v6.16, after E. Dumazet's 2025
 * change) or the single shared count of v6.15 and before (bp_desc.refs);
 * the boot parameter sets it before any CPU but 0 runs, and
 * text_poke_set_refs_mode() switches it between batches (text_mutex held,
 * every count 0), so the INT3 handler reads it with READ_ONCE().
 * pokelab.sync=ipi|membarrier: the back-end of smp_text_poke_sync_each_cpu(),
 * set at boot only.
 */
static bool text_poke_refs_global;
static bool text_poke_sync_membarrier;
static bool text_poke_sync_membarrier_param;
/* pokelab.poke=alias|procmem: the writer of the program's own text (text_alias.h) */
static bool text_poke_alias_param = true;
static DEFINE_PER_CPU(unsigned long, int3_emulated);
static DEFINE_PER_CPU(unsigned long, sync_core_runs);	/* do_sync_core() on this CPU */
static DEFINE_PER_CPU(unsigned long, syncs_deferred);	/* syncs deferred to this CPU's entry */

/* userspace: /proc/self/mem, opened at boot; the writable alias of all text */
static int text_poke_fd = -1;

/*
 * userspace: text_poke_memcpy()'s write. @dst is the text address itself.
 * The program's own text is written through its rw- memfd view
 * (text_alias.h), the part of text_poke_mm; other text (execmem pages), and
 * all of it with pokelab.poke=procmem, by pwrite() on /proc/self/mem, which
 * makes the host kernel write the page through its own mapping. Each
 * chunk's old and new bytes go to the cross-modifying-code model once they
 * are in memory.
 */
static void text_poke_alias_write(void *dst, const void *src, size_t len)
{
	size_t done = 0;

	while (done < len) {
		u8 before[256];
		unsigned long at = (unsigned long)dst + done;
		/* one page at a time: a view maps one page (text_poke_copy() spans two) */
		size_t n = std::min({len - done, sizeof(before), 4096 - (at & 4095)});
		size_t chunk = 0;

		memcpy(before, (const char *)dst + done, n);
		if (pokelab::textAliasWrite((char *)dst + done, (const char *)src + done, n))
			chunk = n;
		while (chunk < n) {
			ssize_t r = pwrite(text_poke_fd, (const char *)src + done + chunk, n - chunk,
					   (off_t)((unsigned long)dst + done + chunk));
			if (r < 0 && errno == EINTR)
				continue;
			BUG_ON(r <= 0);
			chunk += r;
		}
		kshim::xmcTextWrite((const char *)dst + done, before, (const u8 *)src + done, n);
		trace_pokelab_text_poke((const char *)dst + done, (const char *)src + done, n);
		done += n;
	}
}

/* userspace: text_poke_memset()'s fill: memset() cannot reach the alias, a filled buffer can */
static void text_poke_alias_fill(void *dst, int c, size_t len)
{
	u8 buf[256];
	size_t done = 0;

	memset(buf, c, sizeof(buf));
	while (done < len) {
		size_t n = std::min(len - done, sizeof(buf));

		text_poke_alias_write((char *)dst + done, buf, n);
		done += n;
	}
}

/* Port of text_poke_memcpy(), arch/x86/kernel/alternative.c, v7.3 */
static void text_poke_memcpy(void *dst, const void *src, size_t len)
{
	text_poke_alias_write(dst, src, len);	/* userspace: no LASS; through the alias */
}

/* Port of text_poke_memset(), arch/x86/kernel/alternative.c, v7.3 */
static void text_poke_memset(void *dst, const void *src, size_t len)
{
	int c = *(const int *)src;

	text_poke_alias_fill(dst, c, len);	/* userspace: no LASS; through the alias */
}

typedef void text_poke_f(void *dst, const void *src, size_t len);

/* Port of __text_poke(), arch/x86/kernel/alternative.c, v7.3 */
static void *__text_poke(text_poke_f func, void *addr, const void *src, size_t len)
{
	/* userspace: no struct page, PTE or temporary mm: @func writes through the alias */

	unsigned long flags;

	BUG_ON(text_poke_fd < 0);	/* userspace: the alias writer, opened at boot */
	BUG_ON(len > 2 * PAGE_SIZE);	/* userspace: the two pages the two PTEs would map */

	local_irq_save(flags);

	func(addr, src, len);	/* userspace: @func finds @addr's alias itself */
	__atomic_fetch_add(&poke_stats.pokes, 1, __ATOMIC_RELAXED);	/* userspace: report */

	/*
	 * userspace: the CR3 write of unuse_temporary_mm() is what serialises
	 * this CPU in the kernel; a return from pwrite() need not (SYSRET is
	 * not serialising), so sync_core() stands in for it here. It is a
	 * compiler barrier too. No TLB entry of the alias is left to flush.
	 */
	sync_core();

	if (func == text_poke_memcpy) {
		/* What we read back must be what we wrote (text_poke_set() checks nothing). */
		BUG_ON(memcmp(addr, src, len));
	}

	local_irq_restore(flags);
	torture_delay(kshim::TortureDelay::TextWrite);	/* userspace: between a batch's writes */
	return addr;
}

/* Port of text_poke(), arch/x86/kernel/alternative.c */
void *text_poke(void *addr, const void *opcode, size_t len)
{
	lockdep_assert_held(&text_mutex);

	return __text_poke(text_poke_memcpy, addr, opcode, len);
}

/* Port of text_poke_kgdb(), arch/x86/kernel/alternative.c */
void *text_poke_kgdb(void *addr, const void *opcode, size_t len)
{
	return __text_poke(text_poke_memcpy, addr, opcode, len);
}

/* Port of text_poke_copy_locked(), arch/x86/kernel/alternative.c, v7.3 */
void *text_poke_copy_locked(void *addr, const void *opcode, size_t len, bool core_ok)
{
	unsigned long start = (unsigned long)addr;
	size_t patched = 0;

	if (WARN_ON_ONCE(!core_ok && core_kernel_text(start)))
		return NULL;

	while (patched < len) {
		unsigned long ptr = start + patched;
		size_t s;

		s = min_t(size_t, PAGE_SIZE * 2 - offset_in_page(ptr), len - patched);

		/* userspace: the cast, C++ has no arithmetic on void * */
		__text_poke(text_poke_memcpy, (void *)ptr, (const char *)opcode + patched, s);
		patched += s;
	}
	return addr;
}

/* Port of text_poke_copy(), arch/x86/kernel/alternative.c */
void *text_poke_copy(void *addr, const void *opcode, size_t len)
{
	mutex_lock(&text_mutex);
	addr = text_poke_copy_locked(addr, opcode, len, false);
	mutex_unlock(&text_mutex);
	return addr;
}

/* Port of text_poke_set(), arch/x86/kernel/alternative.c, v7.3 */
void *text_poke_set(void *addr, int c, size_t len)
{
	unsigned long start = (unsigned long)addr;
	size_t patched = 0;

	if (WARN_ON_ONCE(core_kernel_text(start)))
		return NULL;

	mutex_lock(&text_mutex);
	while (patched < len) {
		unsigned long ptr = start + patched;
		size_t s;

		s = min_t(size_t, PAGE_SIZE * 2 - offset_in_page(ptr), len - patched);

		__text_poke(text_poke_memset, (void *)ptr, (void *)&c, s);
		patched += s;
	}
	mutex_unlock(&text_mutex);
	return addr;
}

/* userspace: text_poke_early()'s tail before 0160a5454e54: IRQs on, then the sync */
static void text_poke_early_replay_0160a5454e54(unsigned long flags, bool loading)
{
	local_irq_restore(flags);
	sync_core();
	pokelab_text_poke_early_synced();
	if (!loading)
		kshim::xmcOpEnd();
}

/*
 * Port of text_poke_early(), arch/x86/kernel/alternative.c, v7.3: a write
 * nothing else can be running, then sync_core() before an interrupt may
 * run it. Module text skips the sync only once the module is on the
 * lookups (is_module_text_address(): not while MODULE_STATE_UNFORMED), so
 * a module's alternatives, retpolines and returns, applied while it is
 * still being formed, are serialised as the program's are.
 */
void text_poke_early(void *addr, const void *opcode, size_t len)
{
	unsigned long flags;

	if (boot_cpu_has(X86_FEATURE_NX) &&
	    is_module_text_address((unsigned long)addr)) {
		/*
		 * Module text that nothing can fetch yet (not executable, so
		 * not even speculatively): a plain copy will do.
		 */
		memcpy(addr, opcode, len);
	} else {
		/*
		 * userspace: a module still being loaded is read-write and
		 * hidden from the model: it is copied in place, outside any
		 * operation of the model's (which another CPU's batch may have
		 * open), since the alias writer the program's text needs
		 * belongs to whoever holds text_mutex, which an early write
		 * does not take.
		 */
		bool loading = kshim::moduleTextLoading((unsigned long)addr);

		/* userspace: one operation for the model */
		if (!loading)
			kshim::xmcOpBegin("text_poke_early");
		local_irq_save(flags);
		/* userspace: the program's text is never writable: through the alias */
		if (loading)
			memcpy(addr, opcode, len);
		else
			text_poke_memcpy(addr, opcode, len);
		pokelab_text_poke_early_written();	/* userspace: test hook */
		/* userspace: bug replay, the order before 0160a5454e54 (IRQs on, then sync) */
		if (unlikely(pokelab_alt_bugs.irq_before_sync_0160a5454e54))
			return text_poke_early_replay_0160a5454e54(flags, loading);
		sync_core();
		pokelab_text_poke_early_synced();	/* userspace: test hook */
		local_irq_restore(flags);
		/* userspace: the model's operation ends */
		if (!loading)
			kshim::xmcOpEnd();

		/* No CLFLUSH for a faster recovery: some VIA CPUs hang on it. */
	}
}

/*
 * userspace: pokelab's experiment of case 004 (batched sync_core() in
 * apply_alternatives(), never merged): the write half of text_poke_early()
 * alone. The caller has IRQs off and owes a sync_core() followed by
 * pokelab_text_poke_early_synced().
 */
void pokelab_text_poke_early_write(void *addr, const void *opcode, size_t len)
{
	text_poke_memcpy(addr, opcode, len);
	pokelab_text_poke_early_written();
}

/* Port of do_sync_core(), arch/x86/kernel/alternative.c, v7.3 */
/* Not static: dladdr() names it in the CSD trace. */
void do_sync_core(void *info __maybe_unused)
{
	if (!BUSTED(EMPTY_DO_SYNC_CORE))	/* userspace: BUSTED, the IPI that serialises nothing */
		sync_core();
	this_cpu_inc(sync_core_runs);	/* userspace: report counter */
}

/*
 * Port of do_sync_core_defer_cond(), arch/x86/kernel/alternative.c
 * (deferral series v7, 25/31): IPI a CPU only if it cannot take the sync as
 * deferred work at its next kernel entry.
 */
static bool do_sync_core_defer_cond(int cpu, void *info)
{
	(void)info;
	if (ct_set_cpu_work(cpu, CT_WORK_SYNC)) {
		/* userspace: report counter, written by the sender for the target */
		__atomic_fetch_add(per_cpu_ptr(&syncs_deferred, cpu), 1, __ATOMIC_RELAXED);
		return false;
	}
	return true;
}

/* Port of __smp_text_poke_sync_each_cpu(), arch/x86/kernel/alternative.c (series v7) */
static void __smp_text_poke_sync_each_cpu(smp_cond_func_t cond_func)
{
	__atomic_fetch_add(&poke_stats.syncRounds, 1, __ATOMIC_RELAXED);	/* userspace */
	if (text_poke_sync_membarrier) {
		/*
		 * userspace: pokelab.sync=membarrier. The host kernel IPIs every
		 * CPU running a thread of ours and serialises each before it
		 * next runs user code. It cannot defer, and it serialises the
		 * other threads, not the caller: the caller runs its own
		 * sync_core(), as on_each_cpu() would run do_sync_core() here.
		 *
		 * It cannot stand in for the sync IPI alone. The kernel's sync
		 * also waits for every CPU to leave its INT3 handler (IRQs are
		 * off there); membarrier returns while a CPU that executed one
		 * of the batch's INT3s has yet to run its handler:
		 *
		 *	CPU0 (finish)			CPU1
		 *					execute INT3 (SIGTRAP queued)
		 *	phase 3: first byte written
		 *	membarrier(SYNC_CORE) returns
		 *	drain: refs = 0, batch gone
		 *					handler: no ref -> Oops: int3
		 *
		 * So the membarrier round ends with kick_all_cpus_sync(): its
		 * empty IPI reaches CPU1 only after the SIGTRAP handler (a
		 * synchronous signal is delivered first, and the handler runs
		 * with the IPI signal blocked), as the kernel's IPI would.
		 */
		u64 seq = kshim::cpuSerialiseBegin();

		BUG_ON(syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0));
		kshim::xmcMembarrierRound(seq);
		sync_core();
		kick_all_cpus_sync();
		kshim::xmcSyncRoundDone();
		return;
	}
	on_each_cpu_cond(cond_func, do_sync_core, NULL, 1);
	kshim::xmcSyncRoundDone();	/* userspace: a bare text_poke()'s operation ends here */
}

/* Port of smp_text_poke_sync_each_cpu(), arch/x86/kernel/alternative.c, v7.3 */
void smp_text_poke_sync_each_cpu(void)
{
	/*
	 * userspace: on_each_cpu(do_sync_core, NULL, 1) through the helper
	 * that holds pokelab.sync=membarrier's back-end, the round count and
	 * the model's end of a round (no cond: every CPU gets the IPI)
	 */
	__smp_text_poke_sync_each_cpu(NULL);
}

/* Port of smp_text_poke_sync_each_cpu_deferrable(), arch/x86/kernel/alternative.c (series v7) */
void smp_text_poke_sync_each_cpu_deferrable(void)
{
	__smp_text_poke_sync_each_cpu(do_sync_core_defer_cond);
}

/* Port of text_opcode_size(), arch/x86/include/asm/text-patching.h, v7.3 */
int text_opcode_size(u8 opcode)
{
	int size = 0;

#define __CASE(insn)	\
	case insn##_INSN_OPCODE: size = insn##_INSN_SIZE; break

	switch (opcode) {
	__CASE(INT3);
	__CASE(RET);
	__CASE(CALL);
	__CASE(JMP32);
	__CASE(JMP8);
	}

#undef __CASE

	return size;
}

/* Port of __text_gen_insn(), arch/x86/include/asm/text-patching.h, v7.3 */
void __text_gen_insn(void *buf, u8 opcode, const void *addr, const void *dest, int size)
{
	union text_poke_insn *insn = (union text_poke_insn *)buf;	/* userspace: C++ cast */

	BUG_ON(size < text_opcode_size(opcode));

	/* Keep the compiler from folding the code addresses into constants. */
	OPTIMIZER_HIDE_VAR(insn);
	OPTIMIZER_HIDE_VAR(addr);
	OPTIMIZER_HIDE_VAR(dest);

	insn->opcode = opcode;

	if (size > 1) {
		/* userspace: addr + size as a sum of longs, C++ has no arithmetic on void * */
		insn->disp = (long)dest - (long)(addr) - size;
		if (size == 2) {
			/* A JMP8 whose target does not fit a signed byte cannot exist. */
			BUG_ON((insn->disp >> 31) != (insn->disp >> 7));
		}
	}
}

/* Port of text_gen_insn(), arch/x86/include/asm/text-patching.h */
void *text_gen_insn(u8 opcode, const void *addr, const void *dest)
{
	static union text_poke_insn insn; /* not reentrant: text_mutex */

	__text_gen_insn(&insn, opcode, addr, dest, text_opcode_size(opcode));
	return &insn.text;
}

/* userspace: not static, the legacy-descriptor replay (replay_legacy_desc.cpp) reads it too */
struct smp_text_poke_array text_poke_array;

static DEFINE_PER_CPU(atomic_t, text_poke_array_refs);
/* userspace: pokelab.refs=global, the v6.15 bp_desc.refs (one count shared by all CPUs) */
static atomic_t text_poke_array_refs_global;

/*
 * userspace: false-sharing census (not in the kernel). For each refs cache
 * line, the CPU that wrote it last (one cache-line slot per line, written
 * with an atomic exchange, so the census shares lines the way the refs
 * do); a write whose previous writer was another CPU is a cross-CPU write,
 * counted per writing CPU. Line NR_CPUS-1's slot stands for the global count
 * (pokelab.refs=global); the per-CPU count of CPU c is line c. Signal-safe:
 * plain atomics on static storage.
 */
static DEFINE_PER_CPU(int, text_poke_refs_writer);
static DEFINE_PER_CPU(unsigned long, text_poke_refs_xcpu);	/* by the writing CPU */
static unsigned long text_poke_refs_patcher_writes;	/* publish + drain, by the patcher */

#define TEXT_POKE_REFS_GLOBAL_LINE (NR_CPUS - 1)

static __always_inline void text_poke_refs_written(int line)
{
	int me = raw_smp_processor_id();
	int prev = __atomic_exchange_n(per_cpu_ptr(&text_poke_refs_writer, line), me,
				       __ATOMIC_RELAXED);

	if (prev >= 0 && prev != me)
		this_cpu_inc(text_poke_refs_xcpu);
}

static __always_inline int text_poke_refs_this_line(void)
{
	return READ_ONCE(text_poke_refs_global) ? TEXT_POKE_REFS_GLOBAL_LINE
						: raw_smp_processor_id();
}

static __always_inline atomic_t *text_poke_refs_this_cpu(void)
{
	if (READ_ONCE(text_poke_refs_global))
		return &text_poke_array_refs_global;
	return this_cpu_ptr(&text_poke_array_refs);
}

/* Port of try_get_text_poke_array(), arch/x86/kernel/alternative.c */
static __always_inline bool try_get_text_poke_array(void)
{
	/* userspace: refs=global follows try_get_desc() of v6.15 */
	atomic_t *refs = text_poke_refs_this_cpu();

	if (!raw_atomic_inc_not_zero(refs))
		return false;
	kshim::xmcInt3RefOp(&refs->counter, true);	/* userspace: the model's record */
	text_poke_refs_written(text_poke_refs_this_line());	/* userspace: census */

	return true;
}

/* Port of put_text_poke_array(), arch/x86/kernel/alternative.c */
static __always_inline void put_text_poke_array(void)
{
	/* userspace: refs=global follows put_desc() of v6.15 */
	atomic_t *refs = text_poke_refs_this_cpu();

	/* Our reads of the array are done before the ref goes; pairs with the drain in finish. */
	smp_mb__before_atomic();
	if (!BUSTED(REFS_LEAK_PUT)) {	/* userspace: BUSTED, the decrement lost */
		raw_atomic_dec(refs);
		kshim::xmcInt3RefOp(&refs->counter, false);	/* userspace: the model's record */
	}
	text_poke_refs_written(text_poke_refs_this_line());	/* userspace: census */
}

/*
 * userspace: the two halves of the batch's refs, kept out of
 * smp_text_poke_batch_finish() so that it reads as upstream's: publish
 * sets every CPU's count (or, refs=global, v6.15's one shared count) to 1
 * with release; drain drops the batch's own and waits for handlers still
 * holding one. Both feed the false-sharing census; at the drain's return
 * the cross-modifying-code model reads the counts themselves (R3).
 */

/*
 * Port of smp_text_poke_batch_finish()'s refs publish loop,
 * arch/x86/kernel/alternative.c, v7.3 (port-patch takes hunks of that loop here)
 */
static void text_poke_array_refs_publish(void)
{
	unsigned int i;

	/* userspace: refs=global, v6.15's one shared count */
	if (READ_ONCE(text_poke_refs_global)) {
		atomic_set_release(&text_poke_array_refs_global, 1);
		text_poke_refs_written(TEXT_POKE_REFS_GLOBAL_LINE);
		text_poke_refs_patcher_writes++;
		return;
	}
	for_each_possible_cpu(i) {
		atomic_set_release(per_cpu_ptr(&text_poke_array_refs, i), 1);
		text_poke_refs_written(i);	/* userspace: census */
		text_poke_refs_patcher_writes++;	/* userspace: census */
	}
}

/*
 * Port of smp_text_poke_batch_finish()'s refs drain loop,
 * arch/x86/kernel/alternative.c, v7.3 (port-patch takes hunks of that loop here)
 */
static void text_poke_array_refs_drain(void)
{
	unsigned int i;

	/* The acquire pairs with smp_mb__before_atomic() in put_text_poke_array(). */
	/* userspace: refs=global, v6.15's one shared count */
	if (READ_ONCE(text_poke_refs_global)) {
		bool last;

		last = atomic_dec_and_test(&text_poke_array_refs_global);
		text_poke_refs_written(TEXT_POKE_REFS_GLOBAL_LINE);
		text_poke_refs_patcher_writes++;
		if (!last && !BUSTED(REFS_NO_WAIT))	/* userspace: BUSTED, no wait */
			atomic_cond_read_acquire(&text_poke_array_refs_global, !VAL);
		kshim::xmcInt3RefsDrained();	/* the model reads the counts */
		return;
	}
	for_each_possible_cpu(i) {
		atomic_t *refs = per_cpu_ptr(&text_poke_array_refs, i);

		if (unlikely(!atomic_dec_and_test(refs)) &&
		    !BUSTED(REFS_NO_WAIT))	/* userspace: BUSTED */
			atomic_cond_read_acquire(refs, !VAL);
		text_poke_refs_written(i);	/* userspace: census, of the dec above */
		text_poke_refs_patcher_writes++;	/* userspace: census */
	}
	kshim::xmcInt3RefsDrained();	/* the model reads the counts */
}

/* userspace: the cross-call of text_poke_set_refs_mode(); its arrival is the point */
static void text_poke_refs_mode_kick(void *info __maybe_unused)
{
}

/*
 * userspace: not in the kernel, whose refs are fixed at build time. Switch
 * the INT3 refs between the per-CPU counts and v6.15's shared one between
 * batches, so that one machine can interleave the two (run bpf-stats); see
 * asm/text-patching.h for the contract.
 */
int text_poke_set_refs_mode(bool global)
{
	unsigned int i;

	lockdep_assert_held(&text_mutex);
	if (text_poke_array.nr_entries)
		return -EBUSY;
	if (global == READ_ONCE(text_poke_refs_global))
		return 0;
	/* The last drain waited for every handler's put: each count is back to 0. */
	if (atomic_read(&text_poke_array_refs_global))
		return -EBUSY;
	for_each_possible_cpu(i)
		if (atomic_read(per_cpu_ptr(&text_poke_array_refs, i)))
			return -EBUSY;
	WRITE_ONCE(text_poke_refs_global, global);

	/*
	 * A handler reads the mode more than once (get, census, put), and one
	 * entered before the switch (a probe's INT3, which no batch's sync
	 * waited for) may still be running with the old mode:
	 *
	 *	CPU0 (this, then the next batch)	CPU1 (in the handler)
	 *						refs = old mode's count
	 *	mode = new
	 *	publish the new mode's counts
	 *	write INT3 at the site		----->	inc_not_zero(old count): 0,
	 *						the trap declined
	 *
	 * Wait for every such handler: the IPI signal is blocked inside the
	 * SIGTRAP handler, so a CPU runs this cross-call only once it has
	 * left any handler entered before the store. The cross-call's
	 * barriers order the store before every later handler's read.
	 */
	on_each_cpu(text_poke_refs_mode_kick, NULL, 1);
	kshim::setMachineAttr("refs", global ? "global" : "percpu");
	return 0;
}

/* userspace: explain's probe, inside the handler with its ref held (text_poke_stats.h) */
static __always_inline void pokelab_int3_after_ref_probe(struct pt_regs *regs)
{
	if (unlikely(pokelab::int3AfterRefProbe))
		pokelab::int3AfterRefProbe(regs->ip);
}

void text_poke_count_int3_emulated(void)
{
	this_cpu_inc(int3_emulated);
}

/*
 * userspace: where each CPU's INT3 handler last took its ref, and when, for
 * the soft-lockup watchdog's report of a drain that never ends (the refs'
 * namer below); with refs=global, the CPU that took the shared count last.
 * Signal-safe: per-CPU stores and a vDSO clock read.
 */
static DEFINE_PER_CPU(unsigned long, text_poke_refs_taken_ip);
static DEFINE_PER_CPU(u64, text_poke_refs_taken_ns);
static int text_poke_refs_global_taker = -1;

static void text_poke_refs_taken(unsigned long ip)
{
	this_cpu_write(text_poke_refs_taken_ip, ip);
	this_cpu_write(text_poke_refs_taken_ns, kshim::clockNs());
	WRITE_ONCE(text_poke_refs_global_taker, raw_smp_processor_id());
}

/*
 * Port of smp_text_poke_int3_handler(), arch/x86/kernel/alternative.c, v7.3.
 * Runs in the SIGTRAP handler: nothing here allocates, locks, logs, or runs
 * code that a batch could be patching.
 */
int smp_text_poke_int3_handler(struct pt_regs *regs)
{
	struct smp_text_poke_loc *tpl;
	int ret = 0;
	char *ip;	/* userspace: char *, C++ has no arithmetic on void * */

	/* userspace: test-only legacy descriptor mode, see poke_int3_handler() */
	if (unlikely(pokelab_bugs.legacy_desc))
		return poke_int3_handler(regs);

	if (user_mode(regs))
		return 0;

	/*
	 * We trapped on an INT3 of a batch, so the refs store that preceded
	 * it must be visible too:
	 *
	 *	CPU0 (smp_text_poke_batch_finish)	CPU1 (trap)
	 *	refs[all] = 1 (release)
	 *	smp_wmb()
	 *	write INT3			----->	execute INT3
	 *						smp_rmb()
	 *						inc_not_zero(refs[CPU1])
	 */
	smp_rmb();

	torture_delay(kshim::TortureDelay::Int3BeforeRef);	/* userspace: torture delay point */
	if (!try_get_text_poke_array())
		return 0;
	text_poke_refs_taken(regs->ip);	/* userspace: the soft-lockup report's holder */
	torture_delay(kshim::TortureDelay::Int3AfterRef);	/* userspace: torture delay point */
	pokelab_int3_after_ref_probe(regs);	/* userspace: explain's probe */

	/* The trap reports the byte after the INT3. */
	ip = (char *)regs->ip - INT3_INSN_SIZE;	/* userspace: C++ cast */

	/* A one-site batch needs no search. */
	if (unlikely(text_poke_array.nr_entries > 1)) {
		tpl = (struct smp_text_poke_loc *)__inline_bsearch(
			ip, text_poke_array.vec,
			text_poke_array.nr_entries - BUSTED(HANDLER_MISS_LAST), /* userspace: BUSTED */
			sizeof(struct smp_text_poke_loc), patch_cmp);
		if (!tpl)
			goto out_put;
	} else {
		tpl = text_poke_array.vec;
		if (text_poke_addr(tpl) != ip)
			goto out_put;
	}

	ip += tpl->len;

	switch (tpl->opcode) {
	case INT3_INSN_OPCODE:
		/* The new byte is an INT3 of somebody else's: not ours to consume. */
		goto out_put;

	case RET_INSN_OPCODE:
		int3_emulate_ret(regs);
		break;

	case CALL_INSN_OPCODE:
		/* userspace: BUSTED, no return address pushed */
		if (BUSTED(CALL_AS_JMP)) {
			int3_emulate_jmp(regs, (long)ip + tpl->disp);
			break;
		}
		int3_emulate_call(regs, (long)ip, (long)ip + tpl->disp);
		break;

	case JMP32_INSN_OPCODE:
	case JMP8_INSN_OPCODE:
		int3_emulate_jmp(regs, (long)ip + tpl->disp);
		break;

	case 0x70 ... 0x7f: /* Jcc */
		int3_emulate_jcc(regs, tpl->opcode & 0xf, (long)ip, tpl->disp);
		break;

	default:
		BUG();
	}

	text_poke_count_int3_emulated();	/* userspace: report counter */
	ret = 1;

out_put:
	torture_delay(kshim::TortureDelay::Int3BeforePut);	/* userspace */
	put_text_poke_array();
	return ret;
}

/*
 * userspace: pokelab's hooks around the batch, kept out of
 * smp_text_poke_batch_finish()'s steps, as tracepoints would be: the
 * report's timing and sync-round count, the cross-modifying-code model's
 * operation and phases, and the test-only legacy-descriptor replay, which
 * publishes before the refs and tears down after the last sync.
 */
static struct {
	u64 t0;
	unsigned long rounds0;
} batch_hook;

static void trace_text_poke_batch_begin(struct bp_patching_desc *stack_desc)
{
	batch_hook.t0 = kshim::clockNs();
	batch_hook.rounds0 = __atomic_load_n(&poke_stats.syncRounds, __ATOMIC_RELAXED);
	kshim::xmcOpBegin("smp_text_poke_batch_finish", true);
	trace_pokelab_text_poke_batch(text_poke_array.nr_entries, kshim::TRACE_BATCH_BEGIN);
	if (unlikely(pokelab_bugs.legacy_desc))
		bp_desc_publish(stack_desc);
}

static void trace_text_poke_phase(int phase)
{
	kshim::xmcPhase(phase);
	trace_pokelab_text_poke_batch(text_poke_array.nr_entries, phase);
	if (unlikely(pokelab::batchPhaseHook))
		pokelab::batchPhaseHook(phase);
}

static void trace_text_poke_batch_synced(void)
{
	if (unlikely(pokelab_bugs.legacy_desc))
		bp_desc_teardown();
}

static void trace_text_poke_batch_end(void)
{
	poke_stats.lastNrEntries = text_poke_array.nr_entries;
	poke_stats.lastBatchNs = kshim::clockNs() - batch_hook.t0;
	poke_stats.lastSyncRounds =
		__atomic_load_n(&poke_stats.syncRounds, __ATOMIC_RELAXED) - batch_hook.rounds0;
	__atomic_fetch_add(&poke_stats.batches, 1, __ATOMIC_RELAXED);
	trace_pokelab_text_poke_batch(text_poke_array.nr_entries, kshim::TRACE_BATCH_DONE);
	/* the batch returns: the model checks every CPU */
	kshim::xmcOpEnd();
}

/*
 * userspace: the kernel builds without -Wsign-compare, and the batch's loops
 * compare as upstream's do (an unsigned index against the int nr_entries,
 * an int index against a size_t length).
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"

/*
 * Port of smp_text_poke_batch_finish(), arch/x86/kernel/alternative.c, v7.3,
 * with the deferral series v7 25/31: the syncs may be deferred (cond) unless
 * the batch touches noinstr text.
 */
void smp_text_poke_batch_finish(void)
{
	unsigned char int3 = INT3_INSN_OPCODE;
	smp_cond_func_t cond = do_sync_core_defer_cond;	/* series v7 25/31: deferrable syncs */
	unsigned int i;
	int do_sync;
	/* userspace: the efd608fa7403 replay's descriptor lives in this frame, as in v5.6 */
	struct bp_patching_desc stack_desc;

	if (!text_poke_array.nr_entries)
		return;

	lockdep_assert_held(&text_mutex);
	trace_text_poke_batch_begin(&stack_desc);	/* userspace */

	/*
	 * Publish the array before any INT3 can be hit: a handler that gets a
	 * ref sees every entry. Pairs with the full barrier of
	 * raw_atomic_inc_not_zero() in try_get_text_poke_array().
	 */
	text_poke_array_refs_publish();	/* userspace: the per-CPU loop, or refs=global */

	/*
	 * Thousands of sites (function tracing) take a while; with the kernel's
	 * debugging on, long enough for the soft-lockup watchdog. Finish runs
	 * every 256 sites added: let other tasks in here, and report a caller
	 * that holds preemption or interrupts off.
	 */
	cond_resched();

	/* The refs stores before the INT3 writes; pairs with smp_rmb() in the handler. */
	smp_wmb();

	/* Phase 1: an INT3 on the first byte of every site. */
	trace_text_poke_phase(1);	/* userspace */
	for (i = 0; i < text_poke_array.nr_entries; i++) {
		void *addr = text_poke_addr(&text_poke_array.vec[i]);	/* series v7 25/31 */

		/*
		 * series v7 25/31: a CPU entering the kernel runs noinstr code
		 * before it can flush deferred work: a batch touching noinstr
		 * text, the kernel's or a module's, must reach every CPU now.
		 */
		if ((is_kernel_noinstr_text((unsigned long)addr) ||
		     (is_module_noinstr_text_address((unsigned long)addr) &&
		      !BUSTED(DEFER_MODULE_NOINSTR))) && /* userspace: BUSTED */
		    !BUSTED(DEFER_NOINSTR)) /* userspace: BUSTED */
			cond = NULL;

		text_poke_array.vec[i].old = *(u8 *)text_poke_addr(&text_poke_array.vec[i]);
		text_poke(text_poke_addr(&text_poke_array.vec[i]), &int3, INT3_INSN_SIZE);
	}

	if (!BUSTED(NO_SYNC_1))	/* userspace: BUSTED */
		__smp_text_poke_sync_each_cpu(cond);	/* series v7 25/31: deferrable */

	/* userspace: test-only hook, holds the batch with every INT3 armed */
	if (unlikely(pokelab::batchAfterPhase1Probe))
		pokelab::batchAfterPhase1Probe();

	/* Phase 2: every byte but the first, behind the INT3. */
	trace_text_poke_phase(2);	/* userspace */
	for (do_sync = 0, i = 0; i < text_poke_array.nr_entries; i++) {
		/* userspace: no old[] bytes: only perf_event_text_poke() reads them */

		u8 _new[TEXT_POKE_MAX_OPCODE_SIZE + 1];
		const u8 *new_insn = text_poke_array.vec[i].text; /* "new" is a C++ keyword */
		int len = text_poke_array.vec[i].len;

		if (len - INT3_INSN_SIZE > 0) {
			/* userspace: no copy of the old tail, as above */

			/* Jcc.d32: the 0x0f escape goes back in front */
			if (len == 6) {
				_new[0] = 0x0f;
				memcpy(_new + 1, new_insn, 5);
				new_insn = _new;
			}

			/* userspace: BUSTED, the new first byte goes in before its tail */
			if (BUSTED(FIRST_BYTE_FIRST))
				text_poke(text_poke_addr(&text_poke_array.vec[i]), new_insn,
					  INT3_INSN_SIZE);

			/* userspace: BUSTED, an off-by-one past the tail (a Jcc.d32's _new has no more) */
			if (BUSTED(TAIL_OVERRUN) && len < TEXT_POKE_MAX_OPCODE_SIZE + 1)
				len++;

			/* userspace: the cast, C++ has no arithmetic on void * */
			text_poke((char *)text_poke_addr(&text_poke_array.vec[i]) + INT3_INSN_SIZE,
				  new_insn + INT3_INSN_SIZE, len - INT3_INSN_SIZE);

			do_sync++;
		}
		/* userspace: no perf_event_text_poke(): pokelab has no perf ring to feed */
	}

	if (do_sync && !BUSTED(NO_SYNC_2)) {	/* userspace: BUSTED */
		/* Only needed if some site had a tail. */
		__smp_text_poke_sync_each_cpu(cond);	/* series v7 25/31: deferrable */
	}

	/* Phase 3: the first byte, which removes the INT3. */
	trace_text_poke_phase(3);	/* userspace */
	for (do_sync = 0, i = 0; i < text_poke_array.nr_entries; i++) {
		u8 byte = text_poke_array.vec[i].text[0];

		/* userspace: BUSTED, an off-by-one that leaves the last site's INT3 */
		if (BUSTED(PHASE3_SKIP_LAST) && i + 1 == (unsigned int)text_poke_array.nr_entries)
			break;

		if (text_poke_array.vec[i].len == 6)
			byte = 0x0f;

		/* A site whose new first byte is INT3 keeps the INT3 we put there. */
		if (byte == INT3_INSN_OPCODE)
			continue;

		text_poke(text_poke_addr(&text_poke_array.vec[i]), &byte, INT3_INSN_SIZE);
		do_sync++;
	}

	/* userspace: BUSTED, the handlers' refs go before the sync that waits for them */
	if (BUSTED(REFS_DRAIN_EARLY))
		text_poke_array_refs_drain();

	if (do_sync && !BUSTED(NO_SYNC_3))	/* userspace: BUSTED */
		__smp_text_poke_sync_each_cpu(cond);	/* series v7 25/31: deferrable */

	trace_text_poke_batch_synced();	/* userspace */

	/*
	 * Drop our refs and wait for handlers still holding one. Once phase 3
	 * removed the INT3s, its sync already waited for every handler, so
	 * this only spins when a new first byte is itself INT3.
	 */
	torture_delay(kshim::TortureDelay::BeforeRefsDrain);	/* userspace: delay point */
	if (!BUSTED(REFS_DRAIN_EARLY))	/* userspace: BUSTED */
		text_poke_array_refs_drain();	/* userspace: the per-CPU loop, or refs=global */

	trace_text_poke_batch_end();	/* userspace */

	/* Every handler is done with the array. */
	text_poke_array.nr_entries = 0;
}

/*
 * userspace: the kernel's BUG_ON()s in __smp_text_poke_batch_add() say only
 * file:line; ours first name the site and its bytes.
 */
void text_poke_bad_insn(const void *addr, const void *bytes, size_t len, const char *why)
{
	kshim::SigSafeBuf b;

	b.str("text_poke: bad instruction at ").hex((unsigned long)addr).str(" (bytes ")
		.hexBytes(bytes, len).str("): ").str(why).str("\n");
	b.emit();
}

#define TEXT_POKE_BUG_ON(cond, addr, bytes, len, why) do {		\
	if (unlikely(cond)) {						\
		text_poke_bad_insn(addr, bytes, len, why);		\
		BUG_ON(cond);						\
	}								\
} while (0)

/* Port of __smp_text_poke_batch_add(), arch/x86/kernel/alternative.c, v7.3 */
/* userspace: not static, the bug replays (replay_text_poke.cpp) call it too */
void __smp_text_poke_batch_add(void *addr, const void *opcode, size_t len,
				      const void *emulate)
{
	struct smp_text_poke_loc *tpl;
	struct insn insn;
	int ret, i = 0;

	/*
	 * userspace: the kernel has no such check (a full array is the
	 * caller's job, see smp_text_poke_batch_add()); ours stands in for the
	 * page fault that writing vec[256] caused before 2aebf5ee43bf.
	 */
	if (unlikely(text_poke_array.nr_entries >= (int)TEXT_POKE_ARRAY_MAX)) {
		text_poke_bad_insn(addr, opcode, len, "text_poke: array overflow");
		BUG();
	}

	tpl = &text_poke_array.vec[text_poke_array.nr_entries++];
	/* userspace: what the caller asked for, for the model */
	kshim::xmcIntent(addr, opcode, len, emulate);

	if (len == 6)
		i = 1;
	memcpy((void *)tpl->text, (const u8 *)opcode + i, len - i);	/* userspace: C++ cast */
	if (!emulate)
		emulate = opcode;

	/* userspace: decode only the @len bytes we were given */
	ret = insn_decode(&insn, emulate, len, INSN_MODE_KERN);
	/* userspace: a BUG_ON() that names the site first, as do the others below */
	TEXT_POKE_BUG_ON(ret < 0, addr, emulate, len, "cannot decode");

	/* userspace: the kernel's s32 offset from _stext must hold our address too */
	BUG_ON((char *)addr - _stext > INT_MAX || (char *)addr - _stext < INT_MIN);
	tpl->rel_addr = (char *)addr - _stext;	/* userspace: C++ cast */
	tpl->len = len;
	tpl->opcode = insn.opcode.bytes[0];

	if (is_jcc32(&insn)) {
		/* Jcc.d32 is kept as its Jcc.d8 opcode; len == 6 tells them apart. */
		tpl->opcode = insn.opcode.bytes[1] - 0x10;
	}

	switch (tpl->opcode) {
	case RET_INSN_OPCODE:
	case JMP32_INSN_OPCODE:
	case JMP8_INSN_OPCODE:
		/* Nothing runs after these, so the rest may be INT3 padding, and only that. */
		/* userspace: TEXT_POKE_BUG_ON(), as above */
		for (i = insn.length; i < len; i++)
			TEXT_POKE_BUG_ON(tpl->text[i] != INT3_INSN_OPCODE, addr, opcode, len,
					 "RET/JMP padded with something other than INT3");
		break;

	default:
		/* userspace: TEXT_POKE_BUG_ON(), as above */
		TEXT_POKE_BUG_ON(len != insn.length, addr, emulate, len,
				 "length differs from the instruction's");
	}

	switch (tpl->opcode) {
	case INT3_INSN_OPCODE:
	case RET_INSN_OPCODE:
		break;

	case CALL_INSN_OPCODE:
	case JMP32_INSN_OPCODE:
	case JMP8_INSN_OPCODE:
	case 0x70 ... 0x7f: /* Jcc */
		tpl->disp = insn.immediate.value;
		break;

	default: /* a NOP, or nothing we can emulate */
		switch (len) {
		case 2: /* NOP2, emulated as JMP8 +0 */
			/* userspace: TEXT_POKE_BUG_ON(), as above */
			TEXT_POKE_BUG_ON(memcmp(emulate, x86_nops[len], len), addr, emulate, len,
					 "not NOP2");
			tpl->opcode = JMP8_INSN_OPCODE;
			tpl->disp = 0;
			break;

		case 5: /* NOP5, emulated as JMP32 +0 */
			/* userspace: TEXT_POKE_BUG_ON(), as above */
			TEXT_POKE_BUG_ON(memcmp(emulate, x86_nops[len], len), addr, emulate, len,
					 "not NOP5");
			tpl->opcode = JMP32_INSN_OPCODE;
			tpl->disp = 0;
			break;

		default:
			/* Only NOP2 and NOP5 can be emulated (as JMP +0). */
			/* userspace: the site named before the BUG(), as above */
			text_poke_bad_insn(addr, emulate, len, "no emulation for this instruction");
			BUG();
		}
		break;
	}
}

#pragma GCC diagnostic pop

/* Port of text_poke_addr_ordered(), arch/x86/kernel/alternative.c, v7.3 */
static bool text_poke_addr_ordered(void *addr)
{
	WARN_ON_ONCE(!addr);

	if (!text_poke_array.nr_entries)
		return true;

	/* The handler bisects the array: an address below the last one breaks the order. */
	if (text_poke_addr(text_poke_array.vec + text_poke_array.nr_entries - 1) > addr)
		return false;

	return true;
}

/* Port of smp_text_poke_batch_add(), arch/x86/kernel/alternative.c, v7.3 */
void smp_text_poke_batch_add(void *addr, const void *opcode, size_t len, const void *emulate)
{
	/* userspace: the braces hold the implicit flushes' count, for the batch-rule tests */
	if (text_poke_array.nr_entries == TEXT_POKE_ARRAY_MAX || !text_poke_addr_ordered(addr)) {
		poke_stats.implicitFlushes++;
		smp_text_poke_batch_finish();
	}
	/* userspace: bug replay, the strict length check of before 26c44b776dba */
	if (unlikely(pokelab_bugs.strict_len_26c44b776dba))
		return __smp_text_poke_batch_add_pre_26c44b776dba(addr, opcode, len, emulate);
	__smp_text_poke_batch_add(addr, opcode, len, emulate);
}

/* Port of smp_text_poke_single(), arch/x86/kernel/alternative.c (after 2aebf5ee43bf) */
void smp_text_poke_single(void *addr, const void *opcode, size_t len, const void *emulate)
{
	/* userspace: bug replay, c8976ade0c1b's unchecked append */
	if (unlikely(pokelab_bugs.unchecked_single_poke_2aebf5ee43bf))
		return smp_text_poke_single_pre_2aebf5ee43bf(addr, opcode, len, emulate);
	smp_text_poke_batch_add(addr, opcode, len, emulate);
	smp_text_poke_batch_finish();
}

namespace pokelab {

TextPokeStats textPokeStats() noexcept
{
	return TextPokeStats{
		__atomic_load_n(&poke_stats.batches, __ATOMIC_RELAXED),
		__atomic_load_n(&poke_stats.syncRounds, __ATOMIC_RELAXED),
		__atomic_load_n(&poke_stats.pokes, __ATOMIC_RELAXED),
		poke_stats.lastNrEntries,
		poke_stats.lastBatchNs,
		poke_stats.lastSyncRounds,
		poke_stats.implicitFlushes,
		(unsigned int)text_poke_array.nr_entries,
		READ_ONCE(text_poke_refs_global),
		text_poke_sync_membarrier,
	};
}

unsigned long syncCoreRuns(int cpu) noexcept
{
	return __atomic_load_n(per_cpu_ptr(&sync_core_runs, cpu), __ATOMIC_RELAXED);
}

unsigned long syncsDeferred(int cpu) noexcept
{
	return __atomic_load_n(per_cpu_ptr(&syncs_deferred, cpu), __ATOMIC_RELAXED);
}

unsigned long refsCrossCpuWrites(int cpu) noexcept
{
	return __atomic_load_n(per_cpu_ptr(&text_poke_refs_xcpu, cpu), __ATOMIC_RELAXED);
}

unsigned long refsPatcherWrites() noexcept
{
	return __atomic_load_n(&text_poke_refs_patcher_writes, __ATOMIC_RELAXED);
}

int int3RefsNow(int cpu) noexcept
{
	if (READ_ONCE(text_poke_refs_global))
		return atomic_read(&text_poke_array_refs_global);
	return atomic_read(per_cpu_ptr(&text_poke_array_refs, cpu));
}

unsigned long int3Emulated(int cpu) noexcept
{
	return __atomic_load_n(per_cpu_ptr(&int3_emulated, cpu), __ATOMIC_RELAXED);
}

void resetTextPokeStats() noexcept
{
	unsigned int cpu;

	poke_stats = {};
	for (cpu = 0; cpu < NR_CPUS; cpu++) {
		__atomic_store_n(per_cpu_ptr(&int3_emulated, cpu), 0, __ATOMIC_RELAXED);
		__atomic_store_n(per_cpu_ptr(&sync_core_runs, cpu), 0, __ATOMIC_RELAXED);
		__atomic_store_n(per_cpu_ptr(&syncs_deferred, cpu), 0, __ATOMIC_RELAXED);
		__atomic_store_n(per_cpu_ptr(&text_poke_refs_writer, cpu), -1, __ATOMIC_RELAXED);
		__atomic_store_n(per_cpu_ptr(&text_poke_refs_xcpu, cpu), 0, __ATOMIC_RELAXED);
	}
	text_poke_refs_patcher_writes = 0;
	resetInt3HandlerNs();
}

} /* namespace pokelab */

namespace {

/*
 * userspace: the soft-lockup watchdog's namer for a wait on the INT3 refs
 * (kernel_shim/watchdog.h): which CPU's count it is, and where that CPU's
 * handler took it. Runs on the watchdog thread.
 */
bool text_poke_refs_namer(const char *, const volatile void *addr, kshim::WaitHolder *h)
{
	int cpu = -1;
	unsigned int i;

	if (addr == &text_poke_array_refs_global.counter) {
		cpu = READ_ONCE(text_poke_refs_global_taker);
		h->what = "text_poke_array_refs_global (refs=global)";
	} else {
		for (i = 0; i < nr_cpu_ids && cpu < 0; i++)
			if (addr == &per_cpu_ptr(&text_poke_array_refs, i)->counter)
				cpu = (int)i;
		if (cpu < 0)
			return false;
		h->what = fmt::format("text_poke_array_refs of CPU#{}", cpu);
	}
	h->cpu = cpu;
	if (cpu < 0) {
		h->detail = "no INT3 handler has taken it since boot";
		return true;
	}
	unsigned long ip = __atomic_load_n(per_cpu_ptr(&text_poke_refs_taken_ip, cpu),
					   __ATOMIC_RELAXED);
	u64 ns = __atomic_load_n(per_cpu_ptr(&text_poke_refs_taken_ns, cpu), __ATOMIC_RELAXED);

	h->detail = ip ? fmt::format("CPU#{}'s INT3 handler, {}, took it for the site at {} "
				     "[{:#x}] {:.1f} s ago; its put_text_poke_array() is the "
				     "port's {}",
				     cpu, kshim::portFunction("smp_text_poke_int3_handler"),
				     kshim::traceSymbol(ip - INT3_INSN_SIZE, true),
				     ip - INT3_INSN_SIZE, (kshim::clockNs() - ns) / 1e9,
				     kshim::portWhere("put_text_poke_array")
					     ?: "alternative/alternative.cpp")
		       : fmt::format("CPU#{}'s INT3 handler has taken no ref since boot", cpu);
	return true;
}

kshim::WaitNamerRegistrar text_poke_refs_namer_reg(text_poke_refs_namer);

/* Boot: open the writable alias and zero the counters, before any CPU but 0 runs. */
int poking_init(std::string &err)
{
	/* arch/x86/mm/init.c: execmem's ROX cache is refilled with INT3 by text_poke_set() */
	kshim::execmemSetFill([](void *p, size_t n) { text_poke_set(p, INT3_INSN_OPCODE, n); });
	if (text_poke_fd < 0) {
		text_poke_fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
		if (text_poke_fd < 0) {
			err = std::string("text_poke: cannot open /proc/self/mem for writing: ") +
			      strerror(errno);
			return -errno;
		}
	}
	{
		std::string note;
		const char *writer = pokelab::textAliasInit(text_poke_alias_param, note);

		if (!note.empty())
			fprintf(stderr, "pokelab: pokelab.poke=alias: cannot move the text onto a "
				"memfd (%s); writing through /proc/self/mem\n", note.c_str());
		kshim::setMachineAttr("poke", writer);
	}
	text_poke_array.nr_entries = 0;
	pokelab::resetTextPokeStats();
	{
		/* userspace: where the handler's refs are, for the model to read (R3) */
		static const int *refs[NR_CPUS];

		for (unsigned int i = 0; i < NR_CPUS; i++)
			refs[i] = &per_cpu_ptr(&text_poke_array_refs, i)->counter;
		kshim::xmcInt3Refs(refs, &text_poke_array_refs_global.counter,
				   &text_poke_refs_global);
	}

	/*
	 * userspace: pokelab.sync=membarrier registers for the SYNC_CORE
	 * command here, on CPU 0 before the other CPUs start; a host kernel
	 * that refuses it leaves the IPI back-end in place, and says so.
	 */
	text_poke_sync_membarrier = false;
	if (text_poke_sync_membarrier_param) {
		if (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE,
			    0, 0) == 0) {
			text_poke_sync_membarrier = true;
		} else {
			fprintf(stderr, "pokelab: pokelab.sync=membarrier: the host kernel refused "
				"MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE (%s); "
				"falling back to ipi\n", strerror(errno));
		}
	}
	kshim::setMachineAttr("sync", text_poke_sync_membarrier ? "membarrier" : "ipi");
	kshim::setMachineAttr("refs", text_poke_refs_global ? "global" : "percpu");
	return 0;
}

kshim::BootHookRegistrar pokingInitHook({"poking_init", kshim::BootStage::Early, poking_init});

int set_refs_param(const char *val, std::string &err)
{
	if (val && !strcmp(val, "percpu")) {
		text_poke_refs_global = false;
		return 0;
	}
	if (val && !strcmp(val, "global")) {
		text_poke_refs_global = true;
		return 0;
	}
	err = std::string("pokelab.refs=") + (val ? val : "") +
	      ": unknown mode; accepted: pokelab.refs=percpu|global";
	return -EINVAL;
}

int set_sync_param(const char *val, std::string &err)
{
	if (val && !strcmp(val, "ipi")) {
		text_poke_sync_membarrier_param = false;
		return 0;
	}
	if (val && !strcmp(val, "membarrier")) {
		text_poke_sync_membarrier_param = true;
		return 0;
	}
	err = std::string("pokelab.sync=") + (val ? val : "") +
	      ": unknown back-end; accepted: pokelab.sync=ipi|membarrier";
	return -EINVAL;
}

kshim::BootParamRegistrar refsParam({
	"pokelab.refs", set_refs_param, [] { text_poke_refs_global = false; },
	"pokelab.refs=percpu|global: INT3 handler refcount, per-CPU (v6.16) or one shared (v6.15)",
});

int set_poke_param(const char *val, std::string &err)
{
	if (val && (!strcmp(val, "alias") || !strcmp(val, "procmem"))) {
		text_poke_alias_param = !strcmp(val, "alias");
		return 0;
	}
	err = std::string("pokelab.poke=") + (val ? val : "") +
	      ": unknown writer; accepted: pokelab.poke=alias|procmem";
	return -EINVAL;
}

kshim::BootParamRegistrar pokeParam({
	"pokelab.poke", set_poke_param, [] { text_poke_alias_param = true; },
	"pokelab.poke=alias|procmem: write the program's text through a memfd view (default) or "
	"/proc/self/mem (once moved at a boot, the text stays on the memfd; execmem pages always "
	"use their view)",
});

kshim::BootParamRegistrar syncParam({
	"pokelab.sync", set_sync_param, [] { text_poke_sync_membarrier_param = false; },
	"pokelab.sync=ipi|membarrier: back-end of smp_text_poke_sync_each_cpu()",
});

} /* namespace */
