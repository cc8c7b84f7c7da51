// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab run isolation's load (isolation_load.h; the picture is in
 * isolation.cpp): the isolated CPUs' user-mode loop, the housekeeping
 * CPUs' messages, CPU 0's patching operations inside their windows, and
 * the two probes that run after the census.
 */
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include <asm/barrier.h>
#include <asm/tlbflush.h>
#include <asm/text-patching.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/cpu.h>
#include <kernel_shim/sched.h>
#include <kernel_shim/xmc.h>
#include <linux/context_tracking.h>
#include <linux/cpumask.h>
#include <linux/execmem.h>
#include <linux/filter.h>
#include <linux/smp.h>
#include <linux/vmalloc.h>
#include <pokelab/ct_entry.h>
#include <pokelab/module_load.h>
#include <pokelab/text_poke_stats.h>

#include <workloads/bpf_prog.h>
#include "isolation_load.h"

namespace pokelab::scenario::isolation {

/* "mov eax, imm32; ret", int3-padded as the BPF JIT pads: 16 bytes. */
static void gen_ret_imm(u8 *buf, u32 imm)
{
	memset(buf, INT3_INSN_OPCODE, 16);
	buf[0] = 0xb8;
	memcpy(buf + 1, &imm, 4);
	buf[5] = RET_INSN_OPCODE;
}

std::atomic<bool> stopLoad;
unsigned int windowSeq;		/* odd while a deferrable-sync window is open */

/* A system call's kernel work: one bpf program (live-patched text). */
static void isoSyscallBody(void *arg)
{
	pokelab::BpfCtx ctx{(unsigned long)arg};

	(void)pokelab::bpfProgs()[0](&ctx);
}

void isolatedLoop(IsoState *st, u64 periodNs)
{
	volatile unsigned long work = 0;
	unsigned long iters = 0, syscalls = 0;
	u64 next = kshim::clockNs() + periodNs;

	pokelab::ctReturnToUser();
	while (!stopLoad.load(std::memory_order_relaxed)) {
		unsigned int seq;

		for (int i = 0; i < 64; i++)	/* user-mode work, no kernel text */
			work = work + i;
		kshim::schedTick();
		iters++;
		seq = smp_load_acquire(&windowSeq);
		if (seq & 1) {
			/* In user mode, and staying there until the window closes. */
			if (st->ack.load(std::memory_order_relaxed) != seq)
				st->ack.store(seq, std::memory_order_release);
			continue;
		}
		if (kshim::clockNs() >= next) {
			pokelab::ctSyscall(isoSyscallBody, nullptr);
			syscalls++;
			next = kshim::clockNs() + periodNs;
		}
	}
	pokelab::ctEnterKernelForGood();
	st->iterations.store(iters, std::memory_order_relaxed);
	st->syscalls.store(syscalls, std::memory_order_relaxed);
}

static void hackbenchMsg(void *info)
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
		kshim::sleepForNs(500000);
	}
	(*hk)[self].messages.store(n, std::memory_order_relaxed);
}

/*
 * The kernel-side probe, after the census: an isolated CPU sits inside a
 * system call, running the live-patched sites, while CPU 0 flips the key
 * twice. The deferral series must IPI it (it is in the kernel); v5's
 * ct_set_cpu_work() records the work for it instead and skips the IPI, and
 * the cross-modifying-code model sees the CPU run text it never synced.
 */
static std::atomic<int> probeState;	/* 0 idle, 1 inside the system call, 2 let it return */

static void probeBody(void *)
{
	pokelab::BpfCtx ctx{0};

	probeState.store(1, std::memory_order_release);
	while (probeState.load(std::memory_order_acquire) != 2) {
		(void)pokelab::bpfProgs()[0](&ctx);
		kshim::schedTick();
	}
}

void runProbe(int cpu, VariantResult *r)
{
	unsigned long ipis = kshim::cpuStats(cpu).ipiReceived;

	probeState.store(0);
	kshim::cpuRun(cpu, [] {
		pokelab::ctReturnToUser();
		pokelab::ctSyscall(probeBody, nullptr);
		pokelab::ctEnterKernelForGood();
	});
	while (probeState.load(std::memory_order_acquire) != 1)
		std::this_thread::yield();
	for (int i = 0; i < 2; i++) {
		pokelab::bpf_stats_handler_write(i == 0);
		r->probeFlips++;
	}
	probeState.store(2, std::memory_order_release);
	kshim::cpuWait(cpu);
	r->probeCpu = cpu;
	r->probeIpis = kshim::cpuStats(cpu).ipiReceived - ipis;
}

/*
 * The idle probe: the isolated CPU goes idle (ct_idle_enter(); it stays on
 * the kernel CR3, so kernel_cr3_loaded stays 1) while CPU 0 flips the key
 * and a vfree() + vm_unmap_aliases() flushes a kernel range. v7 defers
 * the syncs to the idle CPU but IPIs the flush; v7-tlbi the same (the flush
 * gate reads 1); v8 gates both on kernel_cr3_loaded and IPIs both: the
 * series' known cost of idle, shown apart from the census.
 */
static std::atomic<bool> idleProbeWake;

void runIdleProbe(int cpu, VariantResult *r)
{
	kshim::CpuStats cs0 = kshim::cpuStats(cpu);
	unsigned long sync0 = pokelab::syncCoreRuns(cpu);
	unsigned long tlb0 = kshim::tlbFlushAllRuns(cpu) + kshim::tlbRangeFlushRuns(cpu);
	u64 until = kshim::clockNs() + 2000000000ull;

	idleProbeWake.store(false);
	kshim::cpuRun(cpu, [] { pokelab::ctIdleUntil(&idleProbeWake); });
	while (ct_state_cpu(cpu) != CT_STATE_IDLE && kshim::clockNs() < until)
		std::this_thread::yield();
	for (int i = 0; i < 2; i++)
		pokelab::bpf_stats_handler_write(i == 0);
	vfree(vmalloc(4096));
	vm_unmap_aliases();
	idleProbeWake.store(true);
	kshim::cpuWait(cpu);
	r->idleIpis = kshim::cpuStats(cpu).ipiReceived - cs0.ipiReceived;
	r->idleSyncIpis = pokelab::syncCoreRuns(cpu) - sync0;
	r->idleTlbIpis = kshim::tlbFlushAllRuns(cpu) + kshim::tlbRangeFlushRuns(cpu) - tlb0;
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

/* Close it, once a drain_vmap_work a vfree() inside it queued has flushed (on the kworker). */
void windowClose(void)
{
	kshim::vmapDrainFlush();
	smp_store_release(&windowSeq, READ_ONCE(windowSeq) + 1);
}

void opFlip(const struct cpumask *nohz, std::vector<IsoState> &iso, IsolationOps &c)
{
	windowOpen(nohz, iso);
	pokelab::bpf_stats_handler_write((int)(c.flips % 2 == 0));
	windowClose();
	c.flips++;
}

void opModuleLoad(const struct cpumask *nohz, std::vector<IsoState> &iso, IsolationOps &c)
{
	u8 code[16];
	u32 reloc = 0x5eed0000u + (u32)(c.moduleLoads & 0xffff);
	/*
	 * copy_module_from_user(): the .ko's bytes in a vmalloc() buffer,
	 * which free_copy() gives back (lazily: a vmap area to purge) once
	 * the module is laid out.
	 */
	void *ko = vmalloc(4096);
	/* module_memory_alloc(): text from the ROX cache, data and rodata read-write */
	void *text = execmem_alloc(EXECMEM_MODULE_TEXT, 4096);
	void *data = execmem_alloc(EXECMEM_MODULE_DATA, 4096);
	void *rodata = execmem_alloc(EXECMEM_MODULE_DATA, 4096);

	if (!ko || !text || !data || !rodata) {
		vfree(ko);
		execmem_free(text);
		execmem_free(data);
		execmem_free(rodata);
		c.allocFail++;
		return;
	}
	/* Unformed module: the loader copies its sections in (text through text_poke_copy()). */
	gen_ret_imm(code, 0);
	memcpy(ko, code, sizeof(code));
	text_poke_copy(text, ko, sizeof(code));
	memcpy(data, &reloc, sizeof(reloc));

	/*
	 * A relocation of the live module (livepatch's klp_apply_section_relocs()):
	 * apply_relocate_add() -> write_relocate_add(), text_poke() and the
	 * deferrable sync (module/module_x86.cpp). Its section headers: the
	 * text, the symbol table (one absolute symbol, the immediate's value)
	 * and one R_X86_64_32 into "mov eax, imm32".
	 */
	Elf64_Sym syms[2] = {};
	Elf64_Rela rela = {};
	Elf64_Shdr sechdrs[4] = {};
	struct module mod = {};

	syms[1].st_shndx = SHN_ABS;
	syms[1].st_value = reloc;
	rela.r_offset = 1;
	rela.r_info = ELF64_R_INFO(1, R_X86_64_32);
	sechdrs[1].sh_addr = (Elf64_Addr)text;
	sechdrs[2].sh_addr = (Elf64_Addr)syms;
	sechdrs[3].sh_addr = (Elf64_Addr)&rela;
	sechdrs[3].sh_size = sizeof(rela);
	sechdrs[3].sh_info = 1;
	mod.state = MODULE_STATE_LIVE;
	strcpy(mod.name, "isolation");

	windowOpen(nohz, iso);
	vfree(ko);	/* free_copy(): lazy, in the window (it may queue the drain) */
	if (apply_relocate_add(sechdrs, "", 2, 3, &mod))
		c.badRuns++;
	windowClose();
	/* MODULE_STATE_LIVE: its code may run anywhere from now on. */
	kshim::xmcTextPublish(text, 4096);

	if (((u32(*)(void))text)() != reloc)
		c.badRuns++;
	/*
	 * Unload, free_mod_mem(): the text goes back to the ROX cache under
	 * INT3 (no flush); each data region is a vfree() with
	 * VM_FLUSH_RESET_PERMS, whose flush also purges the lazily freed
	 * vmalloc areas: the first usually spans the vmalloc space
	 * (do_flush_tlb_all), the second is its own page (do_kernel_range_flush).
	 * In a window too: a CPU inside a system call would rightly get the IPI.
	 */
	execmem_free(text);
	windowOpen(nohz, iso);
	execmem_free(data);
	execmem_free(rodata);
	windowClose();
	c.moduleLoads++;
}

void opJit(struct bpf_binary_header **prev, IsolationOps &c)
{
	u32 imm = 0xb9f00000u + (u32)(c.jits & 0xffff);
	struct bpf_binary_header *ro, *rw;
	u8 *image, *rw_image;

	/* bpf_int_jit_compile(): a chunk of a ROX pack, a read-write buffer to JIT into */
	ro = bpf_jit_binary_pack_alloc(16, &image, 1, &rw, &rw_image, jit_fill_hole);
	if (!ro) {
		c.allocFail++;
		return;
	}
	gen_ret_imm(rw_image, imm);
	/* bpf_jit_binary_pack_finalize(): text_poke_copy() (no sync), the buffer freed */
	if (bpf_jit_binary_pack_finalize(ro, rw)) {
		c.allocFail++;
		return;
	}
	kshim::xmcTextPublish(ro, ro->size);	/* the program is attached: it may run */
	if (((u32(*)(void))image)() != imm)
		c.badRuns++;
	/* The program it replaces is freed: bpf_prog_pack_free(), INT3 over its chunk. */
	if (*prev)
		bpf_jit_binary_pack_free(*prev, NULL);
	*prev = ro;
	c.jits++;
}

/*
 * A make -j's processes come and go: each fork's kernel stack is a
 * vmalloc() area (CONFIG_VMAP_STACK, 16 KiB), each exit's a lazy vfree()
 * (the per-CPU stack cache aside). Four exits pass lazy_max_pages, and
 * free_vmap_area_noflush() queues drain_vmap_work on this CPU's kworker.
 */
void opExit(const struct cpumask *nohz, std::vector<IsoState> &iso, IsolationOps &c)
{
	void *stack[4];

	for (void *&s : stack)
		s = vmalloc(16384);	/* copy_process(): alloc_thread_stack_node() */
	windowOpen(nohz, iso);
	for (void *s : stack)
		vfree(s);		/* do_exit() ... free_thread_stack() */
	windowClose();
	c.exits++;
}

} /* namespace pokelab::scenario::isolation */
