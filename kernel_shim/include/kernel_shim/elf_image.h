/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The program's own ELF image: its section table, its symbols, and the bytes
 * its file holds, as the build left them (before any boot patched the text).
 * This is where the checker takes the kernel's tables from (__jump_table,
 * static_call_sites, altinstructions, the noinstr section), rather than from
 * what the code it checks says they hold.
 *
 * CUSTOM: the kernel has these from the linker (section bounds, kallsyms);
 * pokelab reads /proc/self/exe, mapped read-only once, on first use.
 *
 * All of these are task context (the first call maps and indexes the
 * file; later calls read it), any thread; not async-signal-safe.
 */
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace kshim {

/* Section @name of the executable: its run-time address and size; false when absent. */
bool elfProgramSection(const char *name, unsigned long *addr, unsigned long *size);

/*
 * The @len bytes the executable file holds for run-time address @addr (of a
 * loaded segment), into @out; false when @addr is in no segment's file
 * image (bss, a module, JIT memory).
 */
bool elfProgramBytes(unsigned long addr, void *out, size_t len);

/* The value of symbol @name (raw, as linked) in the executable's symbol table; 0 when absent. */
unsigned long elfProgramSymbol(const char *name);

/* Every symbol whose raw name starts with @prefix: (name, value), in table order. */
std::vector<std::pair<std::string, unsigned long>> elfProgramSymbols(const char *prefix);

} /* namespace kshim */
