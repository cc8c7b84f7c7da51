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
 * Port of module_finalize(), arch/x86/kernel/module.c, v7.3: the module's
 * retpolines and returns (a module built with the thunks, as
 * docs/static_calls.md's objects are), then its alternatives, all applied
 * before anything runs its text, as the boot does for the program's.
 * userspace: no ORC, IBT or CFI seals, call-depth thunks or ITS thunks;
 * the sections are pokelab-objtool's names, without the leading dot
 * (asm/alternative.h, docs/static_calls.md).
 */
int module_finalize(const Elf_Ehdr *hdr, const Elf_Shdr *sechdrs, struct module *me)
{
	const Elf_Shdr *s, *alt = NULL,
		*retpolines = NULL, *returns = NULL;	/* userspace: the tables pokelab has */
	const char *secstrings = (const char *)hdr + sechdrs[hdr->e_shstrndx].sh_offset;	/* userspace: cast */

	for (s = sechdrs; s < sechdrs + hdr->e_shnum; s++) {
		/* userspace: pokelab-objtool's section names */
		if (!strcmp("altinstructions", secstrings + s->sh_name))
			alt = s;
		/* userspace: no ORC tables */
		if (!strcmp("retpoline_sites", secstrings + s->sh_name))	/* userspace: name */
			retpolines = s;
		if (!strcmp("return_sites", secstrings + s->sh_name))	/* userspace: name */
			returns = s;
		/* userspace: no call-depth, CFI or IBT tables */

	}

	(void)me;	/* userspace: no ITS thunks to give the module (its_init_mod()) */

	/* userspace: no FineIBT (apply_fineibt()) */

	if (retpolines) {
		void *rseg = (void *)retpolines->sh_addr;
		apply_retpolines((s32 *)rseg, (s32 *)((char *)rseg + retpolines->sh_size));	/* userspace: casts */
	}

	/* userspace: no ITS (its_fini_mod()) */

	if (returns) {
		void *rseg = (void *)returns->sh_addr;
		apply_returns((s32 *)rseg, (s32 *)((char *)rseg + returns->sh_size));	/* userspace: casts */
	}
	/* userspace: no call-depth tracking (callthunks_patch_module_calls()) */

	if (alt) {
		/* the alternatives */
		void *aseg = (void *)alt->sh_addr;
		apply_alternatives((struct alt_instr *)aseg,
				   (struct alt_instr *)((char *)aseg + alt->sh_size));	/* userspace: casts */
	}
	/* userspace: no ENDBR seals, no ORC unwind tables */

	return 0;
}
