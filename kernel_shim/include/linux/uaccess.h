/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Copies from "user" memory.
 *
 * CUSTOM: include/linux/uaccess.h's strncpy_from_user(), for the system
 * calls pokelab models as functions (delete_module()): there is no user
 * address space, so the source is a plain pointer that is never faulted
 * on. Any thread; async-signal-safe.
 */
#pragma once

/*
 * Copy the string at @src into @dst, at most @count bytes. Returns its
 * length; @count if it did not end within @count bytes (then @dst is not
 * NUL-terminated), as the kernel's.
 */
static inline long strncpy_from_user(char *dst, const char *src, long count)
{
	long i;

	for (i = 0; i < count; i++) {
		dst[i] = src[i];
		if (!src[i])
			return i;
	}
	return count;
}
