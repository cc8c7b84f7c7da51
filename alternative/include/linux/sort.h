/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * sort(): the kernel's in-place heapsort of an array, with a compare and an
 * optional swap callback.
 *
 * PORT: written fresh after lib/sort.c (v7.3: the bottom-up heapsort that
 * pops two elements per round), so that a table sorted through it ends in
 * the order the kernel's sort() leaves it, equal elements included (the
 * sort is not stable). jump_label_sort_entries() sorts __jump_table with
 * it. The reentrant sort_r() and the cond_resched() of sort_nonatomic()
 * are left out: nothing here sorts with a context or for long.
 *
 * userspace: header-only, C++ (void * arithmetic through char *; the
 * <cstdint> types, so that the header stands on the C++ library alone).
 */
#pragma once

#include <cstddef>
#include <cstdint>

typedef int (*cmp_func_t)(const void *a, const void *b);
typedef void (*swap_func_t)(void *a, void *b, int size);

namespace sort_detail {

/* Can elements of @size at @base be swapped @align bytes at a time? */
static inline bool is_aligned(const void *base, size_t size, unsigned char align)
{
	unsigned char lsbits = (unsigned char)size;

	/* x86 has efficient unaligned access: the base's alignment does not matter */
	(void)base;
	return (lsbits & (align - 1)) == 0;
}

static inline void swap_words_64(void *a, void *b, size_t n)
{
	char *pa = (char *)a, *pb = (char *)b;

	do {
		uint64_t t;

		n -= 8;
		__builtin_memcpy(&t, pa + n, 8);
		__builtin_memcpy(pa + n, pb + n, 8);
		__builtin_memcpy(pb + n, &t, 8);
	} while (n);
}

static inline void swap_words_32(void *a, void *b, size_t n)
{
	char *pa = (char *)a, *pb = (char *)b;

	do {
		uint32_t t;

		n -= 4;
		__builtin_memcpy(&t, pa + n, 4);
		__builtin_memcpy(pa + n, pb + n, 4);
		__builtin_memcpy(pb + n, &t, 4);
	} while (n);
}

static inline void swap_bytes(void *a, void *b, size_t n)
{
	char *pa = (char *)a, *pb = (char *)b;

	do {
		char t = pa[--n];

		pa[n] = pb[n];
		pb[n] = t;
	} while (n);
}

enum builtin_swap { SWAP_CALLBACK, SWAP_WORDS_64, SWAP_WORDS_32, SWAP_BYTES };

static inline void do_swap(void *a, void *b, size_t size, swap_func_t swap_func,
			   enum builtin_swap builtin)
{
	switch (builtin) {
	case SWAP_WORDS_64:
		swap_words_64(a, b, size);
		break;
	case SWAP_WORDS_32:
		swap_words_32(a, b, size);
		break;
	case SWAP_BYTES:
		swap_bytes(a, b, size);
		break;
	case SWAP_CALLBACK:
		swap_func(a, b, (int)size);
		break;
	}
}

/*
 * The parent of the element at byte offset @i, with @lsbit the lowest set
 * bit of @size: (i - size) / 2 rounded down to a multiple of @size,
 * without a division by @size.
 */
static inline size_t parent(size_t i, unsigned int lsbit, size_t size)
{
	i -= size;
	i -= size & -(i & lsbit);
	return i / 2;
}

} /* namespace sort_detail */

/*
 * Sort @num elements of @size bytes at @base into ascending order by
 * @cmp_func; @swap_func exchanges two of them (for elements that hold
 * self-relative offsets), or is NULL for a plain exchange of their bytes.
 * O(n log n) compares, no allocation, not stable.
 */
static inline void sort(void *base, size_t num, size_t size, cmp_func_t cmp_func,
			swap_func_t swap_func)
{
	using namespace sort_detail;
	char *b0 = (char *)base;
	/* byte offsets rather than indexes: no multiplication in the loop */
	size_t n = num * size, a = (num / 2) * size;
	const unsigned int lsbit = size & -size;
	size_t shift = 0;
	enum builtin_swap builtin = SWAP_CALLBACK;

	if (!a)		/* fewer than two elements, or none of any size */
		return;

	if (!swap_func) {
		if (is_aligned(base, size, 8))
			builtin = SWAP_WORDS_64;
		else if (is_aligned(base, size, 4))
			builtin = SWAP_WORDS_32;
		else
			builtin = SWAP_BYTES;
	}

	/*
	 * [a, n) is a max-heap, [n, num * size) is sorted and holds the
	 * largest elements, and a <= b <= c <= d <= n wherever they are used.
	 */
	for (;;) {
		size_t b, c, d;

		if (a) {
			/* building the heap: sift the next element down */
			a -= size << shift;
		} else if (n > 3 * size) {
			/*
			 * Sorting: move the root to the end, then the larger of
			 * its two children, and sift down whatever took that
			 * child's place.
			 */
			n -= size;
			do_swap(b0, b0 + n, size, swap_func, builtin);
			shift = cmp_func(b0 + size, b0 + 2 * size) <= 0;
			a = size << shift;
			n -= size;
			do_swap(b0 + a, b0 + n, size, swap_func, builtin);
		} else {
			/* at most three left: finished below */
			break;
		}

		/*
		 * Bottom-up sift-down: follow the larger child to a leaf (one
		 * compare per level), then climb back to where the element
		 * at @a belongs, and rotate it into place.
		 */
		for (b = a; c = 2 * b + size, (d = c + size) < n;)
			b = cmp_func(b0 + c, b0 + d) > 0 ? c : d;
		if (d == n)	/* a last leaf without a sibling */
			b = c;

		while (b != a && cmp_func(b0 + a, b0 + b) >= 0)
			b = parent(b, lsbit, size);
		c = b;
		while (b != a) {
			b = parent(b, lsbit, size);
			do_swap(b0 + b, b0 + c, size, swap_func, builtin);
		}
	}

	/* two or three left, the root the largest: put it last, order the rest */
	n -= size;
	do_swap(b0, b0 + n, size, swap_func, builtin);
	if (n == size * 2 && cmp_func(b0, b0 + size) > 0)
		do_swap(b0, b0 + size, size, swap_func, builtin);
}
