/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * BPF programs' executable memory: the program pack allocator and the JIT's
 * binary headers.
 *
 * PORT: written fresh after include/linux/filter.h and kernel/bpf/core.c
 * (bpf_prog_pack_alloc(), bpf_prog_pack_free(), bpf_jit_binary_pack_*()),
 * v7.3. A pack is one page of EXECMEM_BPF memory (PAGE_KERNEL on x86-64, no
 * ROX cache), filled with INT3 by the JIT's hole filler and made ROX by the
 * pack itself with set_memory_rox(), cut into 64-byte chunks; programs are
 * written into their chunks with bpf_arch_text_copy() (text_poke_copy(),
 * no sync). userspace: BPF_PROG_PACK_SIZE is a page, not a PMD (execmem
 * hands out one page at a time), so a pack holds 64 chunks, not 32768.
 *
 * Cross-modifying-code model: a chunk is hidden from the model from its
 * allocation until its owner publishes it (kshim::xmcTextPublish(), the
 * program attached) or gates it (kshim::xmcTextGate(), a dispatcher's
 * image), and hidden again when freed; the rest of the page keeps its own
 * reachability (kernel_shim/xmc.h).
 *
 * Task context (the pack mutex; set_memory_rox() flushes every CPU); never
 * from a signal handler.
 */
#pragma once

#include <cstddef>

#include <linux/types.h>

/* userspace: one page (the kernel's is PMD_SIZE on x86-64) */
#define BPF_PROG_PACK_SIZE	4096u
#define BPF_PROG_CHUNK_SHIFT	6
#define BPF_PROG_CHUNK_SIZE	(1u << BPF_PROG_CHUNK_SHIFT)
#define BPF_PROG_CHUNK_COUNT	(BPF_PROG_PACK_SIZE / BPF_PROG_CHUNK_SIZE)
#define BPF_IMAGE_ALIGNMENT	8

struct bpf_insn;

/* A JIT image's header: its size in bytes, header included, then the code. */
struct bpf_binary_header {
	u32 size;
	u8 image[] __attribute__((aligned(BPF_IMAGE_ALIGNMENT)));
};

typedef unsigned int (*bpf_func_t)(const void *ctx, const struct bpf_insn *insnsi);

/* What pokelab needs of a program: its JITed entry and a reference count. */
struct bpf_prog {
	bpf_func_t bpf_func;
	const struct bpf_insn *insnsi;
	int refcnt;
};

/* Fill @size bytes at @area with instructions that trap (x86: INT3). */
typedef void (*bpf_jit_fill_hole_t)(void *area, unsigned int size);

/* A hole filler of zeros (the dispatcher's image, whose halves it writes whole). */
void bpf_jit_fill_hole_with_zero(void *area, unsigned int size);
/* x86's filler, arch/x86/net/bpf_jit_comp.c jit_fill_hole(): INT3s. */
void jit_fill_hole(void *area, unsigned int size);

/*
 * @size bytes (rounded up to chunks) of ROX program memory from a pack, or
 * NULL; more than a pack: pages of their own, filled and made ROX. The
 * chunk is hidden from the model. Task context; may flush every CPU (a new
 * pack's set_memory_rox()).
 */
void *bpf_prog_pack_alloc(u32 size, bpf_jit_fill_hole_t bpf_fill_ill_insns);
/*
 * Give back what bpf_prog_pack_alloc(@size) returned: INT3 over it
 * (bpf_arch_text_invalidate()), and the pack freed (vfree(), a flush) when
 * it is empty. The caller's program is unreachable (an RCU grace period
 * after detach). Task context.
 */
void bpf_prog_pack_free(void *ptr, u32 size);

/*
 * The JIT's pair of images: a ROX one in a pack (*@image_ptr, its program's
 * entry, at a random offset within the first chunk) and a read-write copy
 * to JIT into (*@rw_header, *@rw_image), filled by @bpf_fill_ill_insns.
 * Returns the ROX header, or NULL. Task context.
 */
struct bpf_binary_header *bpf_jit_binary_pack_alloc(unsigned int proglen, u8 **image_ptr,
						   unsigned int alignment,
						   struct bpf_binary_header **rw_header,
						   u8 **rw_image,
						   bpf_jit_fill_hole_t bpf_fill_ill_insns);
/*
 * Copy the read-write image into the ROX one (bpf_arch_text_copy(), no
 * sync: nobody runs it yet) and free the read-write one. 0 or -errno (the
 * ROX image freed). Task context.
 */
int bpf_jit_binary_pack_finalize(struct bpf_binary_header *ro_header,
				 struct bpf_binary_header *rw_header);
/* Free both images of a program that is no longer reachable. Task context. */
void bpf_jit_binary_pack_free(struct bpf_binary_header *ro_header,
			      struct bpf_binary_header *rw_header);

/*
 * arch/x86/net/bpf_jit_comp.c: write @len bytes of @src at @dst in ROX text
 * (text_poke_copy(), no sync); @dst, or an error pointer. Fill @len bytes at
 * @dst with INT3 (text_poke_set()); 0 or -EINVAL. Task context (text_mutex).
 */
void *bpf_arch_text_copy(void *dst, void *src, size_t len);
int bpf_arch_text_invalidate(void *dst, size_t len);

/* kernel/bpf/core.c: EXECMEM_BPF memory (read-write on x86-64) and its free. Task context. */
void *bpf_jit_alloc_exec(unsigned long size);
void bpf_jit_free_exec(void *addr);

/* Packs and chunks in use (tests, the census). Task context. */
unsigned int bpfProgPacks();
unsigned int bpfProgChunksUsed();
