/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The program's symbols: what kallsyms gives the kernel (%pS in printk and
 * the traces, BUG reports, the noinstr check, the checker's reports).
 *
 * CUSTOM: kernel/kallsyms.c over the executable's own symbol table (local
 * symbols included), read once, and dladdr() for the rest.
 */
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kshim {

/*
 * %pS / %ps of an address as trace-cmd prints them: "name+0xoff" (@offset) or
 * "name", from the executable's symbol table (local symbols included), else
 * dladdr(); C++ names are demangled and shown without parameter lists or
 * "(anonymous namespace)::". Unknown: "0x<hex>". Task context; allocates.
 */
std::string traceSymbol(unsigned long addr, bool offset);

/* The start address and the name traceSymbol() shows for @addr; false when unknown. */
bool traceSymbolStart(unsigned long addr, unsigned long *start, std::string *name);

/* Every function of the executable's symbol table: start address and shown name, by address. */
std::vector<std::pair<unsigned long, std::string>> traceSymbolTable();

} /* namespace kshim */
