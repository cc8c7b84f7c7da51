/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * EXPORT_SYMBOL(): the symbols a module may use.
 *
 * PORT: written fresh after include/linux/export.h: each export is a
 * struct kernel_symbol in a table section ("ksymtab"; userspace: a C
 * identifier, so GNU ld gives it __start_/__stop_ bounds, and absolute
 * addresses where the kernel stores PREL32 offsets). The module loader
 * (module/main.cpp) resolves a module's undefined symbols against this
 * table and the tables of the modules already loaded, and nothing else: a
 * module that calls an unexported function fails to load ("Unknown
 * symbol"), as in the kernel.
 *
 * Export only symbols with C linkage (extern "C" functions, or variables
 * at global scope): the module's reference is to the unmangled name.
 */
#pragma once

struct kernel_symbol {
	unsigned long value;
	const char *name;
};

#define __EXPORT_SYMBOL(sym, id)						\
	static const struct kernel_symbol __ksymtab_##id			\
		__attribute__((__used__, __section__("ksymtab"), __aligned__(8))) = {	\
		(unsigned long)&(sym), #sym,					\
	}

#define EXPORT_SYMBOL(sym) __EXPORT_SYMBOL(sym, sym)
#define EXPORT_SYMBOL_GPL(sym) EXPORT_SYMBOL(sym)

extern "C" const struct kernel_symbol __start_ksymtab[] __attribute__((weak));
extern "C" const struct kernel_symbol __stop_ksymtab[] __attribute__((weak));
