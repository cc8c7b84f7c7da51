// SPDX-License-Identifier: GPL-2.0-only
/*
 * x86-64's part of module loading: relocations and the alternatives pass
 * over the module's own table (pokelab/module_load.h).
 */
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include <asm/alternative.h>
#include <linux/printk.h>
#include <pokelab/module_load.h>

/*
 * Port of __write_relocate_add() / apply_relocate_add(),
 * arch/x86/kernel/module.c, v6.16: each RELA entry of @relsec, applied to
 * the section it names. The loader writes the module's pages in place
 * (read-write until it goes live), so "write" is a memcpy.
 */
int apply_relocate_add(Elf64_Shdr *sechdrs, const char *strtab, unsigned int symindex,
		       unsigned int relsec, struct module *me)
{
	Elf64_Rela *rel = (Elf64_Rela *)sechdrs[relsec].sh_addr;
	static const u64 zero = 0;
	unsigned int i;
	u64 val = 0;

	(void)strtab;
	for (i = 0; i < sechdrs[relsec].sh_size / sizeof(*rel); i++) {
		size_t size;
		/* where to write, and the symbol it names (already relocated) */
		u8 *loc = (u8 *)sechdrs[sechdrs[relsec].sh_info].sh_addr + rel[i].r_offset;
		Elf64_Sym *sym = (Elf64_Sym *)sechdrs[symindex].sh_addr + ELF64_R_SYM(rel[i].r_info);

		val = sym->st_value + rel[i].r_addend;

		switch (ELF64_R_TYPE(rel[i].r_info)) {
		case R_X86_64_NONE:
			continue;
		case R_X86_64_64:
			size = 8;
			break;
		case R_X86_64_32:
			if (val != (u32)val)
				goto overflow;
			size = 4;
			break;
		case R_X86_64_32S:
			if ((s64)val != (s32)val)
				goto overflow;
			size = 4;
			break;
		case R_X86_64_PC32:
		case R_X86_64_PLT32:
			val -= (u64)loc;
			size = 4;
			break;
		case R_X86_64_PC64:
			val -= (u64)loc;
			size = 8;
			break;
		default:
			pr_err("{}: Unknown rela relocation: {}\n", me->name,
			       (unsigned long)ELF64_R_TYPE(rel[i].r_info));
			return -ENOEXEC;
		}

		/* RELA: the object's bytes there are zero; anything else is a broken object */
		if (memcmp(loc, &zero, size)) {
			pr_err("x86/modules: Invalid relocation target, existing value is nonzero "
			       "for type {}, loc {}, val {:#x}\n", (int)ELF64_R_TYPE(rel[i].r_info),
			       (void *)loc, val);
			return -ENOEXEC;
		}
		memcpy(loc, &val, size);
	}
	return 0;

overflow:
	pr_err("overflow in relocation type {} val {:#x}\n", (int)ELF64_R_TYPE(rel[i].r_info), val);
	pr_err("`{}' likely not compiled with -mcmodel=small -fno-pic\n", me->name);
	return -ENOEXEC;
}

/*
 * Port of module_finalize(), arch/x86/kernel/module.c, v6.16, for what
 * pokelab's modules carry: the alternatives, applied to the module's text
 * before anything runs it. userspace: no .retpoline_sites, .return_sites,
 * .call_sites, ENDBR seals, .smp_locks, ORC or ITS thunks; the section is
 * "altinstructions" (asm/alternative.h).
 */
int module_finalize(const Elf64_Ehdr *hdr, const Elf64_Shdr *sechdrs, struct module *me)
{
	const Elf64_Shdr *s, *alt = NULL;
	const char *secstrings = (const char *)hdr + sechdrs[hdr->e_shstrndx].sh_offset;

	(void)me;
	for (s = sechdrs; s < sechdrs + hdr->e_shnum; s++) {
		if (!strcmp("altinstructions", secstrings + s->sh_name))
			alt = s;
	}

	if (alt) {
		/* patch .text */
		void *aseg = (void *)alt->sh_addr;

		apply_alternatives((struct alt_instr *)aseg,
				   (struct alt_instr *)((char *)aseg + alt->sh_size));
	}
	return 0;
}
