/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Kernel memory allocation.
 *
 * CUSTOM: the interface of include/linux/slab.h that ported code uses
 * (kmalloc(), kzalloc(), kfree(), and v7.0's kmalloc_obj()/kzalloc_obj(),
 * which take a type or an expression and return a pointer of its type), on
 * the C heap (kernel_shim/kernel/slab.cpp): the GFP flags are accepted and
 * ignored (the host's malloc() neither sleeps nor reclaims). For plain C
 * structures only: nothing is constructed or destroyed. As CONFIG_FAILSLAB,
 * a test can make allocations fail (kshim::slabFailNth()), and the shim
 * counts the objects outstanding, so that a test sees a leak without a
 * sanitizer. Task context; not async-signal-safe (malloc()).
 */
#pragma once

#include <cstdlib>

typedef unsigned int gfp_t;

#define GFP_KERNEL	0x0u
#define GFP_ATOMIC	0x1u

namespace kshim {

/*
 * What kmalloc(), kzalloc() and kmalloc_obj() return: converts to a pointer
 * of whatever it is assigned to, as C converts a void * (userspace: C++ has
 * no implicit conversion from void *, and kernel code written for C, a
 * kernel-tree patch's among it, assigns kzalloc() to a typed pointer).
 */
struct SlabObj {
	void *p;

	template<typename T>
	operator T *() const
	{
		return static_cast<T *>(p);
	}
};

/* The allocations themselves: NULL when out of memory (or failed on purpose). */
void *slabAlloc(size_t size, bool zero);

} /* namespace kshim */

/* NULL when out of memory (or failed on purpose); zeroed for kzalloc(). */
static inline kshim::SlabObj kmalloc(size_t size, gfp_t flags)
{
	(void)flags;
	return kshim::SlabObj{kshim::slabAlloc(size, false)};
}

static inline kshim::SlabObj kzalloc(size_t size, gfp_t flags)
{
	(void)flags;
	return kshim::SlabObj{kshim::slabAlloc(size, true)};
}

/* NULL is a no-op. */
void kfree(const void *p);

/* One object the size of @what (a type or an expression); the flags may be omitted. */
#define kmalloc_obj(what, ...) kmalloc(sizeof(what), GFP_KERNEL)
#define kzalloc_obj(what, ...) kzalloc(sizeof(what), GFP_KERNEL)

namespace kshim {

/*
 * Fault injection: the @n-th kmalloc()/kzalloc() from now fails (1: the
 * next one); 0 turns it off. Any thread.
 */
void slabFailNth(unsigned long n) noexcept;
/* Objects kmalloc()ed/kzalloc()ed and not yet kfree()d, process-wide. Any thread. */
long slabOutstanding() noexcept;

} /* namespace kshim */
