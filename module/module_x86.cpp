// SPDX-License-Identifier: GPL-2.0-only
/*
 * x86-64's part of module loading: relocations and the alternatives pass
 * over the module's own table (pokelab/module_load.h).
 */
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include <asm/alternative.h>
#include <asm/text-patching.h>
#include <linux/mutex.h>
#include <linux/printk.h>
#include <pokelab/module_load.h>

/* arch/x86/kernel/module.c: its debugging output, compiled out */
/* Port of DEBUGP(), arch/x86/kernel/module.c, v7.3 */
#define DEBUGP(fmt, ...)	do { } while (0)

/*
 * Port of __write_relocate_add(), arch/x86/kernel/module.c, v7.3: each
 * RELA entry of @relsec, applied (or, for livepatch, cleared) with @write
 */
static int __write_relocate_add(Elf64_Shdr *sechdrs,
		   const char *strtab __maybe_unused,
		   unsigned int symindex,
		   unsigned int relsec,
		   struct module *me,
		   void *(*write)(void *dest, const void *src, size_t len),
		   bool apply)
{
	unsigned int i;
	Elf64_Rela *rel = (Elf64_Rela *)sechdrs[relsec].sh_addr;	/* userspace: C++ cast */
	Elf64_Sym *sym;
	void *loc;
	u64 val;
	u64 zero = 0ULL;

	DEBUGP("%s relocate section %u to %u\n",
	       apply ? "Applying" : "Clearing",
	       relsec, sechdrs[relsec].sh_info);

	for (i = 0; i < sechdrs[relsec].sh_size / sizeof(*rel); i++) {
		size_t size;

		/* where the value goes */
		loc = (char *)sechdrs[sechdrs[relsec].sh_info].sh_addr	/* userspace: C++ cast */
			+ rel[i].r_offset;

		/* the symbol it names, resolved by simplify_symbols() */
		sym = (Elf64_Sym *)sechdrs[symindex].sh_addr
			+ ELF64_R_SYM(rel[i].r_info);

		DEBUGP("type %d st_value %Lx r_addend %Lx loc %Lx\n",
		       (int)ELF64_R_TYPE(rel[i].r_info),
		       sym->st_value, rel[i].r_addend, (u64)loc);

		val = sym->st_value + rel[i].r_addend;

		switch (ELF64_R_TYPE(rel[i].r_info)) {
		case R_X86_64_NONE:
			continue;  /* nothing to write */
		case R_X86_64_64:
			size = 8;
			break;
		case R_X86_64_32:
			if (val != (u32)val)	/* userspace: the same, without the aliasing */
				goto overflow;
			size = 4;
			break;
		case R_X86_64_32S:
			if ((s64)val != (s32)val)	/* userspace: the same, without the aliasing */
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
			/* userspace: fmt's format */
			pr_err("{}: Unknown rela relocation: {}\n",
			       me->name, (unsigned long)ELF64_R_TYPE(rel[i].r_info));
			return -ENOEXEC;
		}

		if (apply) {
			if (memcmp(loc, &zero, size)) {
				/* userspace: fmt's format */
				pr_err("x86/modules: Invalid relocation target, existing value is "
				       "nonzero for sec {}, idx {}, type {}, loc {:#x}, val {:#x}\n",
				       relsec, i, (int)ELF64_R_TYPE(rel[i].r_info),
				       (unsigned long)loc, val);
				return -ENOEXEC;
			}
			write(loc, &val, size);
		} else {
			if (memcmp(loc, &val, size)) {
				/* userspace: fmt's format */
				pr_warn("x86/modules: Invalid relocation target, existing value does "
					"not match expected value for sec {}, idx {}, type {}, loc "
					"{:#x}, val {:#x}\n",
					relsec, i, (int)ELF64_R_TYPE(rel[i].r_info),
					(unsigned long)loc, val);
				return -ENOEXEC;
			}
			write(loc, &zero, size);
		}
	}
	return 0;

overflow:
	/* userspace: fmt's format */
	pr_err("overflow in relocation type {} val {:#x} sec {} idx {}\n",
	       (int)ELF64_R_TYPE(rel[i].r_info), val, relsec, i);
	/* userspace: fmt's format; pokelab's modules are -mcmodel=small (docs/modules.md) */
	pr_err("`{}' likely not compiled with -mcmodel=small\n",
	       me->name);
	return -ENOEXEC;
}

/*
 * Port of write_relocate_add(), arch/x86/kernel/module.c, v7.3, with the
 * deferral series v7 25/31 (v6 24/29): a module being formed is written in
 * place; a live one (livepatch) with text_poke(), then a sync that an
 * isolated CPU in user mode takes at its next kernel entry.
 */
static int write_relocate_add(Elf64_Shdr *sechdrs,
			      const char *strtab,
			      unsigned int symindex,
			      unsigned int relsec,
			      struct module *me,
			      bool apply)
{
	int ret;
	bool early = me->state == MODULE_STATE_UNFORMED;
	void *(*write)(void *, const void *, size_t) = memcpy;

	if (!early) {
		write = text_poke;
		mutex_lock(&text_mutex);
	}

	ret = __write_relocate_add(sechdrs, strtab, symindex, relsec, me,
				   write, apply);

	if (!early) {
		smp_text_poke_sync_each_cpu_deferrable();	/* series v7 25/31: deferrable */
		mutex_unlock(&text_mutex);
	}

	return ret;
}

/* Port of apply_relocate_add(), arch/x86/kernel/module.c, v7.3 */
int apply_relocate_add(Elf64_Shdr *sechdrs,
		   const char *strtab,
		   unsigned int symindex,
		   unsigned int relsec,
		   struct module *me)
{
	return write_relocate_add(sechdrs, strtab, symindex, relsec, me, true);
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
