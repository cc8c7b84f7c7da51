// SPDX-License-Identifier: GPL-2.0-only
/*
 * The BPF program pack: ROX pages cut into chunks, so that loading a program
 * costs no page-table change and no TLB flush (only a new pack's
 * set_memory_rox() and an empty pack's vfree() do).
 *
 * PORT: written fresh after kernel/bpf/core.c, v7.3 (see linux/filter.h).
 */
#include <bitset>
#include <cstring>
#include <list>
#include <random>

#include <asm/text-patching.h>
#include <kernel_shim/xmc.h>
#include <linux/bug.h>
#include <linux/execmem.h>
#include <linux/filter.h>
#include <linux/mutex.h>
#include <linux/slab.h>

namespace {

constexpr unsigned int kPage = 4096;

struct bpf_prog_pack {
	void *ptr;
	std::bitset<BPF_PROG_CHUNK_COUNT> bitmap;
};

DEFINE_MUTEX(pack_mutex);
std::list<bpf_prog_pack> pack_list;
/* userspace: get_random_u32_below()'s stream, seeded once (under pack_mutex) */
std::minstd_rand holeRandom(0x5eed);

unsigned int BPF_PROG_SIZE_TO_NBITS(u32 size)
{
	return (size + BPF_PROG_CHUNK_SIZE - 1) / BPF_PROG_CHUNK_SIZE;
}

/* bitmap_find_next_zero_area(): the first run of @nbits clear bits, or BPF_PROG_CHUNK_COUNT */
unsigned long find_zero_area(const bpf_prog_pack &p, unsigned int nbits)
{
	for (unsigned long pos = 0; pos + nbits <= BPF_PROG_CHUNK_COUNT; pos++) {
		unsigned int i = 0;

		while (i < nbits && !p.bitmap[pos + i])
			i++;
		if (i == nbits)
			return pos;
		pos += i;
	}
	return BPF_PROG_CHUNK_COUNT;
}

/* Port of alloc_new_pack(), kernel/bpf/core.c (v7.3) */
bpf_prog_pack *alloc_new_pack(bpf_jit_fill_hole_t bpf_fill_ill_insns)
{
	bpf_prog_pack pack;

	pack.ptr = bpf_jit_alloc_exec(BPF_PROG_PACK_SIZE);
	if (!pack.ptr)
		return NULL;
	bpf_fill_ill_insns(pack.ptr, BPF_PROG_PACK_SIZE);
	pack.bitmap.reset();
	/* set_vm_flush_reset_perms(): execmem_free()'s vfree() flushes (linux/execmem.h) */
	if (set_memory_rox((unsigned long)pack.ptr, BPF_PROG_PACK_SIZE / kPage)) {
		bpf_jit_free_exec(pack.ptr);
		return NULL;
	}
	pack_list.push_back(pack);
	return &pack_list.back();
}

} /* namespace */

/* Port of bpf_jit_alloc_exec(), kernel/bpf/core.c (v7.3) */
void *bpf_jit_alloc_exec(unsigned long size)
{
	return execmem_alloc(EXECMEM_BPF, size);
}

/* Port of bpf_jit_free_exec(), kernel/bpf/core.c (v7.3) */
void bpf_jit_free_exec(void *addr)
{
	execmem_free(addr);
}

/* Port of bpf_jit_fill_hole_with_zero(), kernel/bpf/core.c (v7.3) */
void bpf_jit_fill_hole_with_zero(void *area, unsigned int size)
{
	memset(area, 0, size);
}

/* Port of bpf_prog_pack_alloc(), kernel/bpf/core.c (v7.3) */
void *bpf_prog_pack_alloc(u32 size, bpf_jit_fill_hole_t bpf_fill_ill_insns)
{
	unsigned int nbits = BPF_PROG_SIZE_TO_NBITS(size);
	bpf_prog_pack *pack = NULL;
	unsigned long pos = 0;
	void *ptr = NULL;

	mutex_lock(&pack_mutex);
	if (size > BPF_PROG_PACK_SIZE) {
		/* userspace: execmem hands out one page; a larger program fails */
		goto out;
	}
	for (bpf_prog_pack &p : pack_list) {
		pos = find_zero_area(p, nbits);
		if (pos < BPF_PROG_CHUNK_COUNT) {
			pack = &p;
			goto found_free_area;
		}
	}

	pack = alloc_new_pack(bpf_fill_ill_insns);
	if (!pack)
		goto out;

	pos = 0;

found_free_area:
	for (unsigned int i = 0; i < nbits; i++)
		pack->bitmap.set(pos + i);
	ptr = (char *)pack->ptr + (pos << BPF_PROG_CHUNK_SHIFT);
	/* userspace: nobody has its address yet; the rest of the page keeps its state */
	kshim::xmcTextHidden(ptr, nbits * BPF_PROG_CHUNK_SIZE);

out:
	mutex_unlock(&pack_mutex);
	return ptr;
}

/* Port of bpf_prog_pack_free(), kernel/bpf/core.c (v7.3) */
void bpf_prog_pack_free(void *ptr, u32 size)
{
	bpf_prog_pack *pack = NULL;
	unsigned int nbits;
	unsigned long pos;

	mutex_lock(&pack_mutex);
	for (bpf_prog_pack &p : pack_list) {
		if (ptr >= p.ptr && (char *)p.ptr + BPF_PROG_PACK_SIZE > ptr) {
			pack = &p;
			break;
		}
	}

	if (WARN_ONCE(!pack, "bpf_prog_pack bug"))
		goto out;

	nbits = BPF_PROG_SIZE_TO_NBITS(size);
	pos = ((unsigned long)ptr - (unsigned long)pack->ptr) >> BPF_PROG_CHUNK_SHIFT;

	/* userspace: its owner is done with it (a grace period after detach) */
	kshim::xmcTextHidden(ptr, nbits * BPF_PROG_CHUNK_SIZE);
	WARN_ONCE(bpf_arch_text_invalidate(ptr, size),
		  "bpf_prog_pack bug: missing bpf_arch_text_invalidate?");

	for (unsigned int i = 0; i < nbits; i++)
		pack->bitmap.reset(pos + i);
	if (pack->bitmap.none()) {
		bpf_jit_free_exec(pack->ptr);
		pack_list.remove_if([pack](const bpf_prog_pack &p) { return &p == pack; });
	}
out:
	mutex_unlock(&pack_mutex);
}

/* Port of bpf_jit_binary_pack_alloc(), kernel/bpf/core.c (v7.3) */
struct bpf_binary_header *bpf_jit_binary_pack_alloc(unsigned int proglen, u8 **image_ptr,
						   unsigned int alignment,
						   struct bpf_binary_header **rw_header,
						   u8 **rw_image,
						   bpf_jit_fill_hole_t bpf_fill_ill_insns)
{
	struct bpf_binary_header *ro_header;
	u32 size, hole, start;

	WARN_ON(alignment & (alignment - 1) || alignment > BPF_IMAGE_ALIGNMENT);

	/* add 16 bytes for a random section of illegal instructions */
	size = (proglen + sizeof(*ro_header) + 16 + BPF_PROG_CHUNK_SIZE - 1) &
	       ~(BPF_PROG_CHUNK_SIZE - 1);

	/* userspace: no bpf_jit_charge_modmem() (no module memory limit) */
	ro_header = (struct bpf_binary_header *)bpf_prog_pack_alloc(size, bpf_fill_ill_insns);
	if (!ro_header)
		return NULL;

	/* kvmalloc(): a program's size is kmalloc()'s, no vmalloc area */
	*rw_header = (struct bpf_binary_header *)kmalloc(size, GFP_KERNEL);
	if (!*rw_header) {
		bpf_prog_pack_free(ro_header, size);
		return NULL;
	}

	/* Fill space with illegal/arch-dep instructions. */
	bpf_fill_ill_insns(*rw_header, size);
	(*rw_header)->size = size;

	hole = std::min<u32>(size - (proglen + sizeof(*ro_header)),
			     BPF_PROG_CHUNK_SIZE - sizeof(*ro_header));
	mutex_lock(&pack_mutex);
	start = (u32)(holeRandom() % hole) & ~(alignment - 1);	/* get_random_u32_below() */
	mutex_unlock(&pack_mutex);

	*image_ptr = &ro_header->image[start];
	*rw_image = &(*rw_header)->image[start];

	return ro_header;
}

/* Port of bpf_jit_binary_pack_finalize(), kernel/bpf/core.c (v7.3) */
int bpf_jit_binary_pack_finalize(struct bpf_binary_header *ro_header,
				 struct bpf_binary_header *rw_header)
{
	void *ptr;

	ptr = bpf_arch_text_copy(ro_header, rw_header, rw_header->size);

	kfree(rw_header);	/* kvfree() */

	if (!ptr) {
		bpf_prog_pack_free(ro_header, ro_header->size);
		return -EINVAL;
	}
	return 0;
}

/* Port of bpf_jit_binary_pack_free(), kernel/bpf/core.c (v7.3) */
void bpf_jit_binary_pack_free(struct bpf_binary_header *ro_header,
			      struct bpf_binary_header *rw_header)
{
	u32 size = ro_header->size;

	bpf_prog_pack_free(ro_header, size);
	kfree(rw_header);	/* kvfree() */
}

unsigned int bpfProgPacks()
{
	std::lock_guard<std::mutex> lk(pack_mutex.lock);

	return pack_list.size();
}

unsigned int bpfProgChunksUsed()
{
	std::lock_guard<std::mutex> lk(pack_mutex.lock);
	unsigned int n = 0;

	for (const bpf_prog_pack &p : pack_list)
		n += p.bitmap.count();
	return n;
}
