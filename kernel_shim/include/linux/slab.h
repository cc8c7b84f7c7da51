/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Kernel memory allocation.
 *
 * CUSTOM: the interface of include/linux/slab.h that ported code uses
 * (kmalloc(), kzalloc(), kfree(), and v7.0's kmalloc_obj()/kzalloc_obj(),
 * which take a type or an expression and return a pointer of its type), on
 * the C heap: the GFP flags are accepted and ignored (the host's malloc()
 * neither sleeps nor reclaims). For plain C structures only: nothing is
 * constructed or destroyed. Task context; not async-signal-safe (malloc()).
 */
#pragma once

#include <cstdlib>

typedef unsigned int gfp_t;

#define GFP_KERNEL	0x0u
#define GFP_ATOMIC	0x1u

static inline void *kmalloc(size_t size, gfp_t flags)
{
	(void)flags;
	return malloc(size);
}

static inline void *kzalloc(size_t size, gfp_t flags)
{
	(void)flags;
	return calloc(1, size);
}

static inline void kfree(const void *p)
{
	free(const_cast<void *>(p));
}

namespace kshim {

/* What kmalloc_obj() returns: converts to a pointer of whatever it is assigned to. */
struct SlabObj {
	void *p;

	template<typename T>
	operator T *() const
	{
		return static_cast<T *>(p);
	}
};

} /* namespace kshim */

/* One object the size of @what (a type or an expression); the flags may be omitted. */
#define kmalloc_obj(what, ...) (kshim::SlabObj{malloc(sizeof(what))})
#define kzalloc_obj(what, ...) (kshim::SlabObj{calloc(1, sizeof(what))})
