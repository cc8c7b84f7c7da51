// SPDX-License-Identifier: GPL-2.0-only
/*
 * Addresses to names, the kernel's kallsyms: %pS / %ps as trace-cmd
 * prints them ("name+0xoff", "name"), for the traces, BUG reports, the noinstr
 * check and the checker.
 *
 * userspace: the kernel looks names up in kallsyms. Here the executable's
 * own ELF symbol table (.symtab, which also holds file-local functions that
 * -rdynamic leaves out of the dynamic table) is read once from
 * /proc/self/exe; anything outside it (libc, liburcu) goes to dladdr1().
 * Runs at output time in task context, never in the write path.
 */
#include <algorithm>
#include <cstring>
#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <mutex>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <kernel_shim/symbols.h>

namespace kshim {

namespace {

struct Sym {
	unsigned long addr;
	unsigned long size;
	std::string name;	/* raw (possibly mangled) */
};

std::once_flag symsOnce;
std::vector<Sym> syms;

void loadExeSymbols()
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return;
	if (fstat(fd, &st) || (size_t)st.st_size < sizeof(Elf64_Ehdr)) {
		close(fd);
		return;
	}
	void *map = mmap(nullptr, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return;

	const char *base = (const char *)map;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;

	/* The binaries are -no-pie, so symbol values are run-time addresses. */
	if (!memcmp(eh->e_ident, ELFMAG, SELFMAG) && eh->e_ident[EI_CLASS] == ELFCLASS64 &&
	    eh->e_type == ET_EXEC &&
	    eh->e_shoff + (size_t)eh->e_shnum * sizeof(Elf64_Shdr) <= (size_t)st.st_size) {
		const Elf64_Shdr *sh = (const Elf64_Shdr *)(base + eh->e_shoff);

		for (unsigned int i = 0; i < eh->e_shnum; i++) {
			if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum)
				continue;
			const Elf64_Shdr &strh = sh[sh[i].sh_link];
			const Elf64_Sym *s = (const Elf64_Sym *)(base + sh[i].sh_offset);
			size_t n = sh[i].sh_size / sizeof(Elf64_Sym);

			if (sh[i].sh_offset + sh[i].sh_size > (size_t)st.st_size ||
			    strh.sh_offset + strh.sh_size > (size_t)st.st_size)
				continue;
			for (size_t k = 0; k < n; k++) {
				if (ELF64_ST_TYPE(s[k].st_info) != STT_FUNC || !s[k].st_value ||
				    s[k].st_name >= strh.sh_size)
					continue;
				syms.push_back({s[k].st_value, s[k].st_size,
						base + strh.sh_offset + s[k].st_name});
			}
		}
	}
	munmap(map, st.st_size);
	std::sort(syms.begin(), syms.end(),
		  [](const Sym &a, const Sym &b) { return a.addr < b.addr; });
}

/* Demangled, without the parameter list, cv/ref qualifiers or "(anonymous namespace)::". */
std::string prettyName(const char *raw)
{
	std::string s = raw;
	int status = 0;

	if (raw[0] == '_' && raw[1] == 'Z') {
		char *d = abi::__cxa_demangle(raw, nullptr, nullptr, &status);

		if (d && !status) {
			s = d;
			/* cut the outermost parameter list: the last balanced (...) */
			size_t end = s.rfind(')');
			if (end != std::string::npos) {
				int depth = 0;

				for (size_t i = end + 1; i-- > 0;) {
					if (s[i] == ')')
						depth++;
					else if (s[i] == '(' && --depth == 0) {
						s.erase(i);
						break;
					}
				}
			}
		}
		free(d);
	}
	for (size_t p; (p = s.find("(anonymous namespace)::")) != std::string::npos;)
		s.erase(p, strlen("(anonymous namespace)::"));
	/* a template function's demangled name starts with its return type: cut it */
	if (s.find("operator") == std::string::npos) {
		size_t cut = std::string::npos;
		int depth = 0;

		for (size_t i = 0; i < s.size(); i++) {
			if (s[i] == '<' || s[i] == '(')
				depth++;
			else if (s[i] == '>' || s[i] == ')')
				depth--;
			else if (s[i] == ' ' && !depth)
				cut = i;
		}
		if (cut != std::string::npos)
			s.erase(0, cut + 1);
	}
	/* one awk field, like a kernel symbol */
	std::replace(s.begin(), s.end(), ' ', '_');
	return s;
}

} /* namespace */

bool traceSymbolStart(unsigned long addr, unsigned long *start, std::string *name)
{
	std::call_once(symsOnce, loadExeSymbols);

	auto it = std::upper_bound(syms.begin(), syms.end(), addr,
				   [](unsigned long a, const Sym &s) { return a < s.addr; });
	if (it != syms.begin()) {
		--it;
		/* a zero-size symbol only matches its own address */
		if (addr < it->addr + std::max(it->size, 1UL)) {
			*start = it->addr;
			*name = prettyName(it->name.c_str());
			return true;
		}
	}

	Dl_info info;
	const ElfW(Sym) *sym = nullptr;

	if (dladdr1((void *)addr, &info, (void **)&sym, RTLD_DL_SYMENT) && info.dli_sname && sym &&
	    addr < (unsigned long)info.dli_saddr + std::max<unsigned long>(sym->st_size, 1)) {
		*start = (unsigned long)info.dli_saddr;
		*name = prettyName(info.dli_sname);
		return true;
	}
	return false;
}

std::vector<std::pair<unsigned long, std::string>> traceSymbolTable()
{
	std::vector<std::pair<unsigned long, std::string>> v;

	std::call_once(symsOnce, loadExeSymbols);
	v.reserve(syms.size());
	for (const Sym &s : syms)
		v.emplace_back(s.addr, prettyName(s.name.c_str()));
	return v;
}

std::string traceSymbol(unsigned long addr, bool offset)
{
	unsigned long start;
	std::string name;

	if (!traceSymbolStart(addr, &start, &name))
		return fmt::format("{:#x}", addr);
	return offset ? fmt::format("{}+{:#x}", name, addr - start) : name;
}

} /* namespace kshim */
