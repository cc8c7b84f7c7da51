// SPDX-License-Identifier: GPL-2.0-only
/*
 * The program's ELF image (kernel_shim/elf_image.h): /proc/self/exe, mapped
 * read-only for the life of the process, its sections, loaded segments and
 * symbols indexed once.
 */
#include <cstring>
#include <elf.h>
#include <fcntl.h>
#include <mutex>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>
#include <vector>

#include <kernel_shim/elf_image.h>

namespace kshim {

namespace {

struct Image {
	const char *base = nullptr;
	size_t size = 0;
	const Elf64_Ehdr *eh = nullptr;
	const Elf64_Shdr *sh = nullptr;
	const char *shstr = nullptr;
	std::unordered_map<std::string, unsigned long> syms;
	std::vector<std::pair<std::string, unsigned long>> symList;
};

std::once_flag imageOnce;
Image image;

bool inFile(size_t off, size_t len)
{
	return off <= image.size && len <= image.size - off;
}

void loadImage()
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	struct stat st;
	void *map;

	if (fd < 0)
		return;
	if (fstat(fd, &st) || (size_t)st.st_size < sizeof(Elf64_Ehdr)) {
		close(fd);
		return;
	}
	map = mmap(nullptr, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return;
	image.base = (const char *)map;
	image.size = st.st_size;
	image.eh = (const Elf64_Ehdr *)map;
	if (memcmp(image.eh->e_ident, ELFMAG, SELFMAG) || image.eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    image.eh->e_type != ET_EXEC ||
	    !inFile(image.eh->e_shoff, (size_t)image.eh->e_shnum * sizeof(Elf64_Shdr)) ||
	    !inFile(image.eh->e_phoff, (size_t)image.eh->e_phnum * sizeof(Elf64_Phdr)) ||
	    image.eh->e_shstrndx >= image.eh->e_shnum) {
		image.eh = nullptr;
		return;
	}
	image.sh = (const Elf64_Shdr *)(image.base + image.eh->e_shoff);
	if (!inFile(image.sh[image.eh->e_shstrndx].sh_offset, image.sh[image.eh->e_shstrndx].sh_size)) {
		image.eh = nullptr;
		return;
	}
	image.shstr = image.base + image.sh[image.eh->e_shstrndx].sh_offset;
	for (unsigned int i = 0; i < image.eh->e_shnum; i++) {
		const Elf64_Shdr &s = image.sh[i];

		if (s.sh_type != SHT_SYMTAB || s.sh_link >= image.eh->e_shnum)
			continue;
		const Elf64_Shdr &str = image.sh[s.sh_link];
		const Elf64_Sym *sym = (const Elf64_Sym *)(image.base + s.sh_offset);

		if (!inFile(s.sh_offset, s.sh_size) || !inFile(str.sh_offset, str.sh_size))
			continue;
		for (size_t k = 0; k < s.sh_size / sizeof(Elf64_Sym); k++) {
			if (!sym[k].st_value || !sym[k].st_name || sym[k].st_name >= str.sh_size)
				continue;
			std::string name = image.base + str.sh_offset + sym[k].st_name;

			image.symList.emplace_back(name, sym[k].st_value);
			image.syms.emplace(std::move(name), sym[k].st_value);
		}
	}
}

bool loaded()
{
	std::call_once(imageOnce, loadImage);
	return image.eh != nullptr;
}

} /* namespace */

bool elfProgramSection(const char *name, unsigned long *addr, unsigned long *size)
{
	if (!loaded())
		return false;
	for (unsigned int i = 0; i < image.eh->e_shnum; i++) {
		const Elf64_Shdr &s = image.sh[i];

		if (s.sh_name < image.sh[image.eh->e_shstrndx].sh_size &&
		    !strcmp(image.shstr + s.sh_name, name) && (s.sh_flags & SHF_ALLOC)) {
			*addr = s.sh_addr;
			*size = s.sh_size;
			return true;
		}
	}
	return false;
}

bool elfProgramBytes(unsigned long addr, void *out, size_t len)
{
	const Elf64_Phdr *ph;

	if (!loaded())
		return false;
	ph = (const Elf64_Phdr *)(image.base + image.eh->e_phoff);
	for (unsigned int i = 0; i < image.eh->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD || addr < ph[i].p_vaddr ||
		    addr + len > ph[i].p_vaddr + ph[i].p_filesz)
			continue;
		size_t off = ph[i].p_offset + (addr - ph[i].p_vaddr);

		if (!inFile(off, len))
			return false;
		memcpy(out, image.base + off, len);
		return true;
	}
	return false;
}

unsigned long elfProgramSymbol(const char *name)
{
	if (!loaded())
		return 0;
	auto it = image.syms.find(name);

	return it == image.syms.end() ? 0 : it->second;
}

std::vector<std::pair<std::string, unsigned long>> elfProgramSymbols(const char *prefix)
{
	std::vector<std::pair<std::string, unsigned long>> v;
	size_t n = strlen(prefix);

	if (!loaded())
		return v;
	for (const auto &s : image.symList)
		if (!s.first.compare(0, n, prefix))
			v.push_back(s);
	return v;
}

} /* namespace kshim */
