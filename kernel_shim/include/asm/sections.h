/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Text section bounds.
 *
 * PORT: written fresh after include/asm-generic/sections.h (the noinstr
 * part; userspace: the executable's __executable_start and etext stand in
 * for _stext and _etext). Any thread; async-signal-safe.
 */
#pragma once

extern "C" const char __start_noinstr_text[] __attribute__((weak));
extern "C" const char __stop_noinstr_text[] __attribute__((weak));

#define __noinstr_text_start __start_noinstr_text
#define __noinstr_text_end __stop_noinstr_text

/* Port of is_kernel_noinstr_text(), include/linux/kallsyms.h */
static inline bool is_kernel_noinstr_text(unsigned long addr)
{
	return __noinstr_text_start && addr >= (unsigned long)__noinstr_text_start &&
	       addr < (unsigned long)__noinstr_text_end;
}

extern "C" const char __executable_start[];
extern "C" const char etext[];

/* Port of core_kernel_text(), kernel/extable.c: the program's own text (no init text) */
static inline bool core_kernel_text(unsigned long addr)
{
	return addr >= (unsigned long)__executable_start && addr < (unsigned long)etext;
}
