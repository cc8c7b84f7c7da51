/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Kernel integer types.
 *
 * CUSTOM: the fixed-width names ported code uses (include/linux/types.h),
 * mapped onto <cstdint>.
 */
#pragma once

/* The system's <linux/types.h> (__u32, ...) for system headers that want it. */
#include_next <linux/types.h>

#include <cstddef>
#include <cstdint>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef int64_t s64;

/* Kernel-style errno returns (0 or -EINVAL, ...) use <cerrno>'s values. */
#include <cerrno>
