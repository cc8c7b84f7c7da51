// SPDX-License-Identifier: GPL-2.0-only
/*
 * kmalloc() and kfree() on the C heap, with the fault injection and the
 * count of linux/slab.h.
 */
#include <atomic>
#include <cstdlib>

#include <linux/slab.h>

namespace {

std::atomic<unsigned long> failIn;	/* the allocation that fails, counted down; 0: none */
std::atomic<long> outstanding;

bool shouldFail()
{
	unsigned long n = failIn.load(std::memory_order_relaxed);

	while (n && !failIn.compare_exchange_weak(n, n - 1, std::memory_order_relaxed))
		;
	return n == 1;
}

void *counted(void *p)
{
	if (p)
		outstanding.fetch_add(1, std::memory_order_relaxed);
	return p;
}

} /* namespace */

void *kshim::slabAlloc(size_t size, bool zero)
{
	if (shouldFail())
		return nullptr;
	return counted(zero ? calloc(1, size) : malloc(size));
}

void kfree(const void *p)
{
	if (!p)
		return;
	outstanding.fetch_sub(1, std::memory_order_relaxed);
	free(const_cast<void *>(p));
}

namespace kshim {

void slabFailNth(unsigned long n) noexcept
{
	failIn.store(n, std::memory_order_relaxed);
}

long slabOutstanding() noexcept
{
	return outstanding.load(std::memory_order_relaxed);
}

} /* namespace kshim */
