/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pokelab torture's JIT-like images: kernel memory the TLB model watches,
 * allocated, read and freed through the real callers of the lazy vmap
 * purge (torture_jit.cpp).
 */
#pragma once

#include <linux/types.h>

namespace pokelab::torture {

/*
 * One housekeeping decision: replace one image (unpublish the old one,
 * wait for its readers, free it by vfree() alone, vfree() +
 * vm_unmap_aliases(), or vfree() + an execmem image freed by
 * execmem_free(); vmalloc() the next, write it, publish it). Task context
 * on a CPU; sleeps.
 */
void jitReplace(u64 d);

/* Read every live image through its translation (tlbTouch()). Any context, lock-free. */
void jitTouch(u64 d);

} /* namespace pokelab::torture */
