/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * instrument_atomic_read() / instrument_atomic_write(): the KASAN and KCSAN
 * checks noinstr code hands to an instrumentation_begin() region.
 *
 * PORT: written fresh after include/linux/instrumented.h, as a kernel
 * without CONFIG_KASAN and CONFIG_KCSAN builds it: kasan_check_*() and
 * kcsan_check_*() are empty, so these compile to nothing. userspace: no
 * KASAN or KCSAN (the sanitizer build, -Db_sanitize=address, checks the
 * accesses itself). Inline; any context.
 */
#pragma once

#include <cstddef>

static inline __attribute__((__always_inline__)) void instrument_atomic_read(const volatile void *v,
									    size_t size)
{
	(void)v;
	(void)size;
}

static inline __attribute__((__always_inline__)) void instrument_atomic_write(const volatile void *v,
									     size_t size)
{
	(void)v;
	(void)size;
}
