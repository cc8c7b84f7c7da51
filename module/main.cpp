// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab's module loader (pokelab/module_load.h, docs/modules.md).
 *
 * Port of load_module() and its steps, kernel/module/main.c, v7.3, and
 * find_kallsyms_symbol_value(), kernel/module/kallsyms.c, in the order
 * upstream runs them:
 *
 *	elf_validity_cache_copy()	the header and section table are sane
 *	early_mod_check()		no live module of that name
 *	layout_and_allocate()		module_mark_ro_after_init(), then
 *					layout_sections(): each SHF_ALLOC section
 *					to a memory type, core or init (".init*");
 *					move_module(): each type's pages, copied
 *	add_unformed_module()		on the list, MODULE_STATE_UNFORMED
 *	find_module_sections()		ksymtab, __jump_table, static_call_sites
 *	simplify_symbols()		undefined ones from the program's exports
 *					and the loaded modules' (resolve_symbol(),
 *					which records the use: ref_module())
 *	apply_relocations()		apply_relocate_add() (module_x86.cpp)
 *	post_relocation()		module_finalize(): the alternatives
 *	complete_formation()		no duplicate exports; text ROX, COMING
 *	prepare_coming_module()		notifiers: jump labels, static calls
 *	do_init_module()		init_module(), MODULE_STATE_LIVE; the init
 *					memory cleared from the module and freed
 *					after a grace period (do_free_init())
 *
 * userspace:
 *  - the object comes from a file path (finit_module(2) without the fd),
 *    its name from the file name (no .modinfo or this_module section);
 *  - no signatures, versions, namespaces, license flags, parameters,
 *    sysfs, livepatch, ftrace, constructors, per-CPU sections or kmemleak;
 *    module rodata stays writable (upstream's set_memory_ro() is a direct
 *    flush like set_memory_rox(), see docs/context_tracking.md);
 *  - module memory is read-write pages (execmem_alloc_rw() never takes
 *    the ROX cache here, linux/execmem.h), and the text types are made ROX
 *    with set_memory_rox() before the module goes live
 *    (module_enable_text_rox()); the relocations and the alternatives
 *    write it in place before that;
 *  - struct module is allocated apart from the module's memory (upstream:
 *    the .gnu.linkonce.this_module section), and kallsyms reads the
 *    object's own symbol table, which the loader keeps.
 */
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <sys/stat.h>
#include <vector>

#include <fmt/format.h>

#include <kernel_shim/xmc.h>
#include <linux/bug.h>
#include <linux/execmem.h>
#include <linux/export.h>
#include <linux/jump_label.h>
#include <linux/llist.h>
#include <linux/module.h>
#include <linux/printk.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/static_call.h>
#include <linux/workqueue.h>
#include <pokelab/module_calls.h>
#include <pokelab/module_load.h>

#include "internal.h"
#include "loader.h"

namespace {

constexpr unsigned long kPage = 4096;

#define PAGE_SHIFT	12
#define PAGE_ALIGN(x)	(((x) + kPage - 1) & ~(kPage - 1))

/* kernel/module/internal.h: what the loader knows while it loads */
struct load_info {
	const char *name;
	/* userspace: the module apart from its memory (upstream: this_module's copy) */
	struct module *mod;
	Elf_Ehdr *hdr;
	unsigned long len;
	Elf_Shdr *sechdrs;
	char *secstrings, *strtab;
	struct {
		unsigned int sym, str;
	} index;
	/* userspace: the object (kallsyms keeps reading it), its name, one line for the caller */
	std::vector<u8> image;
	std::string namebuf;
	std::string *err;
};

struct loader_priv {
	std::vector<u8> image;
	/* kallsyms: only the core symbols, once the init memory is gone (do_init_module()) */
	std::atomic<bool> core_kallsyms;
};

/*
 * After elf_validity_cache_copy(), kernel/module/main.c: pokelab's checks
 * of the header, the sections and the symbol table, and each section's
 * address in the copy (rewrite_section_headers()'s)
 */
/* Port of elf_validity_cache_copy(), kernel/module/main.c, v7.3 */
int elf_validity_cache_copy(load_info *info, int flags __maybe_unused)
{
	const size_t len = info->image.size();
	Elf64_Ehdr *hdr = (Elf64_Ehdr *)info->image.data();

	if (len < sizeof(*hdr) || memcmp(hdr->e_ident, ELFMAG, SELFMAG) ||
	    hdr->e_ident[EI_CLASS] != ELFCLASS64 || hdr->e_type != ET_REL ||
	    hdr->e_machine != EM_X86_64 || hdr->e_shentsize != sizeof(Elf64_Shdr)) {
		*info->err = "not a relocatable x86-64 ELF object (ET_REL, EM_X86_64)";
		return -ENOEXEC;
	}
	if (hdr->e_shoff >= len || hdr->e_shnum * sizeof(Elf64_Shdr) > len - hdr->e_shoff ||
	    hdr->e_shstrndx >= hdr->e_shnum) {
		*info->err = "section header table out of the file";
		return -ENOEXEC;
	}
	info->hdr = hdr;
	info->len = len;
	info->sechdrs = (Elf64_Shdr *)(info->image.data() + hdr->e_shoff);
	for (unsigned int i = 1; i < hdr->e_shnum; i++) {
		Elf64_Shdr *s = &info->sechdrs[i];

		if (s->sh_type != SHT_NOBITS &&
		    (s->sh_offset > len || s->sh_size > len - s->sh_offset)) {
			*info->err = fmt::format("section {} out of the file", i);
			return -ENOEXEC;
		}
		/* every section's address is where it lies in the image, until moved */
		s->sh_addr = (Elf64_Addr)(info->image.data() + s->sh_offset);
	}
	info->secstrings = (char *)info->image.data() + info->sechdrs[hdr->e_shstrndx].sh_offset;

	/* exactly one symbol table, and its string table */
	info->index.sym = 0;
	for (unsigned int i = 1; i < hdr->e_shnum; i++) {
		if (info->sechdrs[i].sh_type != SHT_SYMTAB)
			continue;
		if (info->index.sym) {
			*info->err = "more than one symbol table";
			return -ENOEXEC;
		}
		info->index.sym = i;
		info->index.str = info->sechdrs[i].sh_link;
	}
	if (!info->index.sym || info->index.str >= hdr->e_shnum) {
		*info->err = "no symbol table";
		return -ENOEXEC;
	}
	info->strtab = (char *)info->sechdrs[info->index.str].sh_addr;
	return 0;
}

/* Port of find_sec(), kernel/module/main.c, v7.3 */
unsigned int find_sec(const struct load_info *info, const char *name)
{
	unsigned int i;

	for (i = 1; i < info->hdr->e_shnum; i++) {
		Elf_Shdr *shdr = &info->sechdrs[i];
		/* not SHF_ALLOC: not the module's */
		if ((shdr->sh_flags & SHF_ALLOC)
		    && strcmp(info->secstrings + shdr->sh_name, name) == 0)
			return i;
	}
	return 0;
}

/* Port of section_objs(), kernel/module/main.c, v7.3: the section @name and its count of objects */
void *section_objs(const struct load_info *info,
		   const char *name,
		   size_t object_size,
		   unsigned int *num)
{
	unsigned int sec = find_sec(info, name);

	/* section 0: address 0, size 0 */
	*num = info->sechdrs[sec].sh_size / object_size;
	return (void *)info->sechdrs[sec].sh_addr;
}

/* Port of verify_exported_symbols(), kernel/module/main.c, v7.3: module_mutex held */
int verify_exported_symbols(struct module *mod)
{
	const struct kernel_symbol *s;
	for (s = mod->syms; s < mod->syms + mod->num_syms; s++) {
		struct find_symbol_arg fsa = {
			.name	= kernel_symbol_name(s),
			.gplok	= true,
		};
		if (find_symbol(&fsa)) {
			/* userspace: fmt's format */
			pr_err("{}: exports duplicate symbol {} (owned by {})\n",
				mod->name, kernel_symbol_name(s),
				module_name(fsa.owner));
			return -ENOEXEC;
		}
	}
	return 0;
}

/*
 * Port of resolve_symbol(), kernel/module/main.c, v7.3: the export @name,
 * with @mod's use of its module recorded (ref_module()); NULL if none,
 * ERR_PTR(-EBUSY) while that module's init runs
 */
const struct kernel_symbol *resolve_symbol(struct module *mod,
					   const struct load_info *info __maybe_unused,
					   const char *name,
					   char ownername[])
{
	struct find_symbol_arg fsa = {
		.name	= name,
		.gplok	= true,	/* userspace: no taints */
		.warn	= true,
	};
	int err;

	/* userspace: no sched_annotate_sleep() */

	mutex_lock(&module_mutex);
	if (!find_symbol(&fsa))
		goto unlock;

	/* userspace: no license flags, taints, versions or namespaces */

	err = ref_module(mod, fsa.owner);
	if (err) {
		fsa.sym = (const struct kernel_symbol *)ERR_PTR(err);	/* userspace: C++ cast */
		goto getname;
	}

getname:
	/* copied under the lock: the owner may go once it is dropped */
	strscpy(ownername, module_name(fsa.owner), MODULE_NAME_LEN);
unlock:
	mutex_unlock(&module_mutex);
	return fsa.sym;
}

/*
 * Port of resolve_symbol_wait(), kernel/module/main.c, v7.3: a module in
 * its init exports what it has only once it is live; wait up to 30 s
 */
const struct kernel_symbol *
resolve_symbol_wait(struct module *mod,
		    const struct load_info *info,
		    const char *name)
{
	const struct kernel_symbol *ksym;
	char owner[MODULE_NAME_LEN] = "";	/* userspace: named even if none was found */

	if (wait_event_interruptible_timeout(module_wq,
			!IS_ERR(ksym = resolve_symbol(mod, info, name, owner))
			|| PTR_ERR(ksym) != -EBUSY,
					     30 * HZ) <= 0) {
		/* userspace: fmt's format */
		pr_warn("{}: gave up waiting for init of module {}.\n",
			mod->name, owner);
	}
	return ksym;
}

/*
 * Port of ignore_undef_symbol(), kernel/module/main.c, v7.3: an assembler may
 * leave an unreferenced _GLOBAL_OFFSET_TABLE_ in an x86-64 object.
 */
bool ignore_undef_symbol(Elf_Half emachine, const char *name)
{
	if (emachine == EM_386 || emachine == EM_X86_64)
		return !strcmp(name, "_GLOBAL_OFFSET_TABLE_");
	return false;
}

/* Port of simplify_symbols(), kernel/module/main.c, v7.3: each symbol's value its address */
int simplify_symbols(struct module *mod, const struct load_info *info)
{
	Elf_Shdr *symsec = &info->sechdrs[info->index.sym];
	Elf_Sym *sym = (Elf_Sym *)symsec->sh_addr;	/* userspace: C++ cast */
	unsigned long secbase;
	unsigned int i;
	int ret = 0;
	const struct kernel_symbol *ksym;

	for (i = 1; i < symsec->sh_size / sizeof(Elf_Sym); i++) {
		const char *name = info->strtab + sym[i].st_name;

		switch (sym[i].st_shndx) {
		case SHN_COMMON:
			/* LTO's are harmless */
			if (!strncmp(name, "__gnu_lto", 9))
				break;

			/* -fno-common leaves none */
			pr_debug("Common symbol: %s\n", name);
			/* userspace: the message goes back to the caller */
			*info->err = fmt::format("{}: please compile with -fno-common", name);
			ret = -ENOEXEC;
			break;

		case SHN_ABS:
			/* its value is its address */
			pr_debug("Absolute symbol: 0x%08lx %s\n",
				 (long)sym[i].st_value, name);
			break;

		case SHN_LIVEPATCH:
			/* livepatch resolves them (pokelab has none) */
			break;

		case SHN_UNDEF:
			ksym = resolve_symbol_wait(mod, info, name);
			/* resolved */
			if (ksym && !IS_ERR(ksym)) {
				sym[i].st_value = kernel_symbol_value(ksym);
				break;
			}

			/* weak, or ignored: 0 */
			if (!ksym &&
			    (ELF_ST_BIND(sym[i].st_info) == STB_WEAK ||
			     ignore_undef_symbol(info->hdr->e_machine, name)))
				break;

			ret = PTR_ERR(ksym) ?: -ENOENT;
			/* userspace: the message goes back to the caller */
			*info->err = fmt::format("Unknown symbol {} (err {})", name, ret);
			break;

		default:
			if (sym[i].st_shndx >= info->hdr->e_shnum) {
				/* userspace: the message goes back to the caller */
				*info->err = fmt::format("Symbol {} has an invalid section "
							 "index {} (max {})", name,
							 sym[i].st_shndx, info->hdr->e_shnum - 1);
				ret = -ENOEXEC;
				break;
			}

			/* userspace: no per-CPU section */

			secbase = info->sechdrs[sym[i].st_shndx].sh_addr;
			sym[i].st_value += secbase;
			break;
		}
	}

	return ret;
}

/* Port of apply_relocate(), include/linux/moduleloader.h: x86-64 has no REL */
int apply_relocate(Elf_Shdr *sechdrs __maybe_unused, const char *strtab __maybe_unused,
		   unsigned int symindex __maybe_unused, unsigned int relsec __maybe_unused,
		   struct module *me)
{
	pr_err("module {}: REL relocation unsupported\n", me->name);
	return -ENOEXEC;
}

/* Port of apply_relocations(), kernel/module/main.c, v7.3 */
int apply_relocations(struct module *mod, const struct load_info *info)
{
	unsigned int i;
	int err = 0;

	/* each relocation section, applied to the section it names */
	for (i = 1; i < info->hdr->e_shnum; i++) {
		unsigned int infosec = info->sechdrs[i].sh_info;

		/* not a valid relocation section? */
		if (infosec >= info->hdr->e_shnum)
			continue;

		/* userspace: no per-CPU section: only the allocated ones */
		if (!(info->sechdrs[infosec].sh_flags & SHF_ALLOC))
			continue;

		/* userspace: no livepatch relocations */
		if (info->sechdrs[i].sh_type == SHT_REL)
			err = apply_relocate(info->sechdrs, info->strtab,
					     info->index.sym, i, mod);
		else if (info->sechdrs[i].sh_type == SHT_RELA)
			err = apply_relocate_add(info->sechdrs, info->strtab,
						 info->index.sym, i, mod);
		if (err < 0)
			break;
	}
	return err;
}

/* Port of arch_mod_section_prepend(), kernel/module/main.c, v7.3 (x86: the weak one) */
unsigned int arch_mod_section_prepend(struct module *mod __maybe_unused,
				      unsigned int section __maybe_unused)
{
	/* nothing in front of the sections */
	return 0;
}

/* Port of module_get_offset_and_type(), kernel/module/main.c, v7.3 */
long module_get_offset_and_type(struct module *mod, enum mod_mem_type type,
				Elf_Shdr *sechdr, unsigned int section)
{
	long offset;
	long mask = ((unsigned long)(type) & SH_ENTSIZE_TYPE_MASK) << SH_ENTSIZE_TYPE_SHIFT;

	mod->mem[type].size += arch_mod_section_prepend(mod, section);
	offset = ALIGN(mod->mem[type].size, sechdr->sh_addralign ?: 1);
	mod->mem[type].size = offset + sechdr->sh_size;

	WARN_ON_ONCE(offset & mask);
	return offset | mask;
}

/* Port of module_init_section(), kernel/module/main.c, v7.3 (x86: the weak one) */
bool module_init_section(const char *name)
{
	return strstarts(name, ".init");
}

/* Port of module_init_layout_section(), kernel/module/main.c, v7.3 */
bool module_init_layout_section(const char *sname)
{
	/* userspace: CONFIG_MODULE_UNLOAD: .exit sections are core */

	return module_init_section(sname);
}

/*
 * series v7 25/31: a module's noinstr text is a memory type of its own
 * (MOD_NOINSTR_TEXT); userspace: pokelab's section name for it
 */
enum mod_mem_type module_noinstr_type(enum mod_mem_type type, const char *sname)
{
	return type == MOD_TEXT && !strcmp(sname, "noinstr_text") ? MOD_NOINSTR_TEXT : type;
}

/* Port of __layout_sections(), kernel/module/main.c, v7.3 */
void __layout_sections(struct module *mod, struct load_info *info, bool is_init)
{
	unsigned int m, i;

	/*
	 * Per memory class: the section flags it must have, and the flags
	 * it must not have.
	 */
	static const unsigned long masks[][2] = {
		{ SHF_EXECINSTR | SHF_ALLOC, ARCH_SHF_SMALL },
		{ SHF_ALLOC, SHF_WRITE | ARCH_SHF_SMALL },
		{ SHF_RO_AFTER_INIT | SHF_ALLOC, ARCH_SHF_SMALL },
		{ SHF_WRITE | SHF_ALLOC, ARCH_SHF_SMALL },
		{ ARCH_SHF_SMALL | SHF_ALLOC, 0 }
	};
	static const int core_m_to_mem_type[] = {
		MOD_TEXT,
		MOD_RODATA,
		MOD_RO_AFTER_INIT,
		MOD_DATA,
		MOD_DATA,
	};
	static const int init_m_to_mem_type[] = {
		MOD_INIT_TEXT,
		MOD_INIT_RODATA,
		MOD_INVALID,
		MOD_INIT_DATA,
		MOD_INIT_DATA,
	};

	for (m = 0; m < ARRAY_SIZE(masks); ++m) {
		/* userspace: C++ cast */
		enum mod_mem_type type = (enum mod_mem_type)(is_init ? init_m_to_mem_type[m] :
							     core_m_to_mem_type[m]);

		for (i = 0; i < info->hdr->e_shnum; ++i) {
			Elf_Shdr *s = &info->sechdrs[i];
			const char *sname = info->secstrings + s->sh_name;

			if ((s->sh_flags & masks[m][0]) != masks[m][0]
			    || (s->sh_flags & masks[m][1])
			    || s->sh_entsize != ~0UL
			    || is_init != module_init_layout_section(sname))
				continue;

			if (WARN_ON_ONCE(type == MOD_INVALID))
				continue;

			/* userspace: no codetags */

			/* series v7 25/31: noinstr text to MOD_NOINSTR_TEXT */
			s->sh_entsize = module_get_offset_and_type(mod,
						module_noinstr_type(type, sname), s, i);
			pr_debug("\t%s\n", sname);
		}
	}
}

/*
 * Port of layout_sections(), kernel/module/main.c, v7.3: each SHF_ALLOC
 * section's memory type and offset there, in its sh_entsize (text,
 * rodata, ro_after_init, data; the core's, then the init's), and each
 * type's size
 */
void layout_sections(struct module *mod, struct load_info *info)
{
	unsigned int i;

	for (i = 0; i < info->hdr->e_shnum; i++)
		info->sechdrs[i].sh_entsize = ~0UL;

	pr_debug("Core section allocation order for %s:\n", mod->name);
	__layout_sections(mod, info, false);

	pr_debug("Init section allocation order for %s:\n", mod->name);
	__layout_sections(mod, info, true);
}

/*
 * Port of module_mark_ro_after_init(), kernel/module/strict_rwx.c: the
 * sections written only while the module is formed (the jump table's init
 * marks, the static-call sites' sort) go to MOD_RO_AFTER_INIT
 */
void module_mark_ro_after_init(const Elf_Ehdr *hdr, Elf_Shdr *sechdrs,
			       const char *secstrings)
{
	/* userspace: pokelab-objtool's name for .static_call_sites */
	static const char *const ro_after_init[] = {
		".data..ro_after_init",
		"__jump_table",
		"static_call_sites",
	};
	int i, j;

	for (i = 1; i < hdr->e_shnum; i++) {
		Elf_Shdr *shdr = &sechdrs[i];

		for (j = 0; j < (int)ARRAY_SIZE(ro_after_init); j++) {
			if (strcmp(secstrings + shdr->sh_name,
				   ro_after_init[j]) == 0) {
				shdr->sh_flags |= SHF_RO_AFTER_INIT;
				break;
			}
		}
	}
}

/* Port of module_memory_alloc(), kernel/module/main.c, v7.3 */
int module_memory_alloc(struct module *mod, enum mod_mem_type type)
{
	unsigned int size = PAGE_ALIGN(mod->mem[type].size);
	enum execmem_type execmem_type;
	void *ptr;

	mod->mem[type].size = size;

	if (mod_mem_type_is_data(type))
		execmem_type = EXECMEM_MODULE_DATA;
	else
		execmem_type = EXECMEM_MODULE_TEXT;

	ptr = execmem_alloc_rw(execmem_type, size);
	if (!ptr)
		return -ENOMEM;

	/* userspace: not from the ROX cache (linux/execmem.h): never is_rox; no kmemleak */

	memset(ptr, 0, size);
	mod->mem[type].base = ptr;

	return 0;
}

/* Port of move_module(), kernel/module/main.c, v7.3: allocate each type, copy the sections in */
int move_module(struct module *mod, struct load_info *info)
{
	int i, ret;
	enum mod_mem_type t = MOD_MEM_NUM_TYPES;
	/* userspace: no codetags */

	for_each_mod_mem_type(type) {
		if (!mod->mem[type].size) {
			mod->mem[type].base = NULL;
			continue;
		}

		ret = module_memory_alloc(mod, type);
		if (ret) {
			t = type;
			goto out_err;
		}
	}

	/* each SHF_ALLOC section to its place */
	pr_debug("Final section addresses for %s:\n", mod->name);
	for (i = 0; i < info->hdr->e_shnum; i++) {
		void *dest;
		Elf_Shdr *shdr = &info->sechdrs[i];
		/* userspace: no codetags, which need the name */

		if (!(shdr->sh_flags & SHF_ALLOC))
			continue;

		/* userspace: no codetags */
		{
			/* userspace: C++ casts */
			enum mod_mem_type type = (enum mod_mem_type)(shdr->sh_entsize >>
								     SH_ENTSIZE_TYPE_SHIFT);
			unsigned long offset = shdr->sh_entsize & SH_ENTSIZE_OFFSET_MASK;

			dest = (char *)mod->mem[type].base + offset;	/* userspace: C++ cast */
		}

		if (shdr->sh_type != SHT_NOBITS) {
			/* userspace: no this_module section to check */

			/* userspace: libc's memcpy() takes no NULL source, even for 0 bytes (UBSan) */
			if (shdr->sh_size)
				memcpy(dest, (void *)shdr->sh_addr, shdr->sh_size);
		}
		/* sh_addr: where the section is now, for the rest of the load */
		shdr->sh_addr = (unsigned long)dest;
		pr_debug("\t0x%lx 0x%.8lx %s\n", (long)shdr->sh_addr,
			 (long)shdr->sh_size, info->secstrings + shdr->sh_name);
	}

	return 0;
out_err:
	/* userspace: no ROX memory to restore (module_memory_restore_rox()) */
	while (t > MOD_TEXT)	/* userspace: C++ has no -- on an enum */
		module_memory_free(mod, t = (enum mod_mem_type)(t - 1));
	/* userspace: no codetags */

	return ret;
}

/* Port of find_module_sections(), kernel/module/main.c, v7.3: the sections pokelab uses */
int find_module_sections(struct module *mod, struct load_info *info)
{
	/* userspace: no parameters */
	/* userspace: linux/export.h's section name; a C++ cast */
	mod->syms = (const struct kernel_symbol *)section_objs(info, "ksymtab",
				 sizeof(*mod->syms), &mod->num_syms);
	/* userspace: no __kcrctab, __kflagstab, obsolete _gpl tables or constructors */

	/* userspace: the deferral series' MOD_NOINSTR_TEXT stands for noinstr_text_start */

	/* userspace: no tracepoints, SRCU, BPF, BTF */

	/* userspace: a C++ cast */
	mod->jump_entries = (struct jump_entry *)section_objs(info, "__jump_table",
					sizeof(*mod->jump_entries),
					&mod->num_jump_entries);
	/* userspace: no trace events, printk formats, ftrace, error injection, kprobes */

	/* userspace: pokelab-objtool's name */
	mod->static_call_sites = (struct static_call_site *)section_objs(info, "static_call_sites",
					      sizeof(*mod->static_call_sites),
					      &mod->num_static_call_sites);
	/* userspace: no KUnit suites, exception table, obsolete parameters or dynamic debug */

	return 0;
}

/* Port of module_set_memory(), kernel/module/strict_rwx.c */
int module_set_memory(const struct module *mod, enum mod_mem_type type,
		      int (*set_memory)(unsigned long start, int num_pages))
{
	const struct module_memory *mod_mem = &mod->mem[type];

	if (!mod_mem->base)
		return 0;

	/* userspace: execmem_free() always resets and flushes (set_vm_flush_reset_perms()) */
	return set_memory((unsigned long)mod_mem->base, mod_mem->size >> PAGE_SHIFT);
}

/*
 * Port of module_enable_text_rox(), kernel/module/strict_rwx.c: every text
 * type ROX (CONFIG_STRICT_MODULE_RWX)
 */
int module_enable_text_rox(const struct module *mod)
{
	for_class_mod_mem_type(type, text) {
		int ret;

		/* userspace: no is_rox memory (linux/execmem.h) */
		ret = module_set_memory(mod, type, set_memory_rox);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * userspace: the module's allocated sections, where the layout put them,
 * for the cross-modifying-code model (its noinstr text and its tables),
 * and its text, now ROX, made fetchable.
 */
void xmcModuleFormed(struct module *mod, const struct load_info *info)
{
	std::vector<kshim::XmcSection> secs;

	for (unsigned int i = 1; i < info->hdr->e_shnum; i++) {
		const Elf64_Shdr *s = &info->sechdrs[i];

		if (s->sh_flags & SHF_ALLOC)
			secs.push_back({info->secstrings + s->sh_name, (unsigned long)s->sh_addr,
					(unsigned long)s->sh_size});
	}
	kshim::xmcModuleTables(mod, mod->name, secs.data(), (unsigned int)secs.size());
	for_class_mod_mem_type(type, text)
		if (mod->mem[type].base)
			kshim::xmcTextPublish(mod->mem[type].base, mod->mem[type].size);
}

/*
 * userspace: after add_kallsyms(), kernel/module/kallsyms.c: the object's
 * own symbol table, relocated, stays readable for the module's life
 */
void add_kallsyms(struct module *mod, struct load_info *info)
{
	mod->symtab = (const Elf64_Sym *)info->sechdrs[info->index.sym].sh_addr;
	mod->num_symtab = info->sechdrs[info->index.sym].sh_size / sizeof(Elf64_Sym);
	mod->strtab = info->strtab;
	/* the module keeps the object (free_copy() leaves it): the same buffer */
	mod->loader = new loader_priv{std::move(info->image), false};
	/* its init and exit, by their names (upstream: this_module's fields) */
	mod->init = (int (*)(void))find_kallsyms_symbol_value(mod, "init_module");
	mod->exit = (void (*)(void))find_kallsyms_symbol_value(mod, "cleanup_module");
}

/* Port of post_relocation(), kernel/module/main.c, v7.3 */
int post_relocation(struct module *mod, struct load_info *info)	/* userspace: @info's copy moves */
{
	/* userspace: no exception table, no per-CPU area */

	/* kallsyms */
	add_kallsyms(mod, info);

	/* x86's: the alternatives, retpolines and returns */
	return module_finalize(info->hdr, info->sechdrs, mod);
}

/* For freeing module_init on success, in case kallsyms traversing */
/* Port of struct mod_initfree, kernel/module/main.c, v7.3 */
struct mod_initfree {
	struct llist_node node;
	void *init_text;
	void *init_data;
	void *init_rodata;
};

void do_free_init(struct work_struct *w);
DECLARE_WORK(init_free_wq, do_free_init);
struct llist_head init_free_list;

/*
 * Port of do_free_init(), kernel/module/main.c, v7.3: the kworker frees
 * the init memory of the modules that went live, a grace period after
 * they left it (kallsyms or a lookup may still be reading it)
 */
void do_free_init(struct work_struct *w __maybe_unused)
{
	struct llist_node *list;	/* userspace: the _entry_ walk below */
	struct mod_initfree *initfree, *n;	/* userspace: the _entry_ walk below */

	list = llist_del_all(&init_free_list);

	synchronize_rcu();

	/* userspace: llist_for_each_entry_safe() for llist_for_each_safe() and container_of() */
	llist_for_each_entry_safe(initfree, n, list, node) {
		execmem_free(initfree->init_text);
		execmem_free(initfree->init_data);
		execmem_free(initfree->init_rodata);
		kfree(initfree);
	}
}

/* Port of do_init_module(), kernel/module/main.c, v7.3: the init, live, init memory freed */
__noinline int do_init_module(struct module *mod)
{
	int ret = 0;
	struct mod_initfree *freeinit;
	/* userspace: no module statistics */

	freeinit = kmalloc_obj(*freeinit);
	if (!freeinit) {
		ret = -ENOMEM;
		goto fail;
	}
	freeinit->init_text = mod->mem[MOD_INIT_TEXT].base;
	freeinit->init_data = mod->mem[MOD_INIT_DATA].base;
	freeinit->init_rodata = mod->mem[MOD_INIT_RODATA].base;

	/* userspace: no constructors */
	/* Start the module */
	if (mod->init != NULL)
		ret = mod->init();	/* userspace: no initcall tracing */
	if (ret < 0) {
		/* -EEXIST is the loader's "already loaded": another for the init's own */
		if (ret == -EEXIST)
			ret = -EBUSY;

		goto fail_free_freeinit;
	}
	if (ret > 0)
		/* userspace: fmt's format */
		pr_warn("{}: init suspiciously returned {}, it should follow 0/-E convention\n",
			mod->name, ret);

	/* live */
	WRITE_ONCE(mod->state, MODULE_STATE_LIVE);	/* userspace: lock-free readers */
	blocking_notifier_call_chain(&module_notify_list,
				     MODULE_STATE_LIVE, mod);

	/* userspace: no uevent, async probes or ftrace */

	mutex_lock(&module_mutex);
	/* Drop initial reference. */
	module_put(mod);
	/* userspace: no exception table */
	/* userspace: kallsyms keeps only the core symbols from now on */
	((loader_priv *)mod->loader)->core_kallsyms.store(true, std::memory_order_release);
	/* userspace: ro_after_init data stays writable */

	/* userspace: no tree (the lookups read mem[], cleared here) or arch init freeing */
	for_class_mod_mem_type(type, init) {
		/* userspace: lock-free lookups read them (linux/module.h) */
		WRITE_ONCE(mod->mem[type].base, nullptr);
		WRITE_ONCE(mod->mem[type].size, 0);
	}

	/* userspace: no BTF */
	/*
	 * Free the init memory after a grace period, from a work item: a
	 * lookup may still be reading it, and the load need not wait.
	 */
	if (llist_add(&freeinit->node, &init_free_list))
		schedule_work(&init_free_wq);

	mutex_unlock(&module_mutex);
	wake_up_all(&module_wq);

	/* userspace: no module statistics */

	return 0;

fail_free_freeinit:
	kfree(freeinit);
fail:
	/* against a reference someone took and dropped meanwhile */
	WRITE_ONCE(mod->state, MODULE_STATE_GOING);	/* userspace: lock-free readers */
	synchronize_rcu();
	module_put(mod);
	kshim::xmcModuleTablesGone(mod);	/* userspace: before its sites are unlinked */
	blocking_notifier_call_chain(&module_notify_list,
				     MODULE_STATE_GOING, mod);
	/* userspace: no livepatch or ftrace */

	free_module(mod);
	wake_up_all(&module_wq);

	return ret;
}

/* Port of finished_loading(), kernel/module/main.c, v7.3: is @name's load done? */
bool finished_loading(const char *name)
{
	struct module *mod;
	bool ret;

	/* userspace: no sched_annotate_sleep() */

	mutex_lock(&module_mutex);
	mod = find_module_all(name, strlen(name), true);
	ret = !mod || mod->state == MODULE_STATE_LIVE
		|| mod->state == MODULE_STATE_GOING;
	mutex_unlock(&module_mutex);

	return ret;
}

/*
 * Port of module_patient_check_exists(), kernel/module/main.c, v7.3:
 * module_mutex held; a load of the same name in progress is waited for
 */
int module_patient_check_exists(const char *name,
				enum fail_dup_mod_reason reason __maybe_unused)
{
	struct module *old;
	int err = 0;

	old = find_module_all(name, strlen(name), true);
	if (old == NULL)
		return 0;

	if (old->state == MODULE_STATE_COMING ||
	    old->state == MODULE_STATE_UNFORMED) {
		/* it may yet fail */
		mutex_unlock(&module_mutex);
		err = wait_event_interruptible(module_wq,
				       finished_loading(name));
		mutex_lock(&module_mutex);
		if (err)
			return err;

		/* it may have gone meanwhile */
		old = find_module_all(name, strlen(name), true);
	}

	/* userspace: no failed-load tracking */

	if (old && old->state == MODULE_STATE_LIVE)
		return -EEXIST;
	return -EBUSY;
}

/*
 * Port of __mod_update_bounds(), kernel/module/main.c, v7.3, under
 * module_mutex. userspace: WRITE_ONCE(), __module_address() reads them
 * without the lock; no data bounds (see struct mod_tree_root)
 */
static void __mod_update_bounds(enum mod_mem_type type, void *base, unsigned int size,
				struct mod_tree_root *tree)
{
	unsigned long min = (unsigned long)base;
	unsigned long max = min + size;

	(void)type;	/* userspace: only CONFIG_ARCH_WANTS_MODULES_DATA_IN_VMALLOC reads it */
	if (min < tree->addr_min)
		WRITE_ONCE(tree->addr_min, min);
	if (max > tree->addr_max)
		WRITE_ONCE(tree->addr_max, max);
}

/* Port of mod_update_bounds(), kernel/module/main.c, v7.3 */
static void mod_update_bounds(struct module *mod)
{
	for_each_mod_mem_type(type) {
		struct module_memory *mod_mem = &mod->mem[type];

		if (mod_mem->size)
			__mod_update_bounds(type, mod_mem->base, mod_mem->size, &mod_tree);
	}
}

/* Port of add_unformed_module(), kernel/module/main.c, v7.3: on the list, one of each name */
int add_unformed_module(struct module *mod)
{
	int err;

	mod->state = MODULE_STATE_UNFORMED;

	mutex_lock(&module_mutex);
	err = module_patient_check_exists(mod->name, FAIL_DUP_MOD_LOAD);
	if (err)
		goto out;

	mod_update_bounds(mod);
	/* userspace: the array of linux/module.h for list and tree; it may be full */
	err = kshim::moduleListAdd(mod);

out:
	mutex_unlock(&module_mutex);
	return err;
}

/* Port of complete_formation(), kernel/module/main.c, v7.3 */
int complete_formation(struct module *mod, struct load_info *info)
{
	int err;

	mutex_lock(&module_mutex);

	/* duplicate exports, under the lock */
	err = verify_exported_symbols(mod);
	if (err < 0)
		goto out;

	/* userspace: no bug table, no CFI */

	/* userspace: rodata and data stay writable and executable (docs/modules.md) */

	err = module_enable_text_rox(mod);
	if (err)
		goto out_strict_rwx;

	/* userspace: the model's view of its sections and text */
	xmcModuleFormed(mod, info);

	/* strong_try_module_get() refuses it, kallsyms and the lookups see it */
	WRITE_ONCE(mod->state, MODULE_STATE_COMING);	/* userspace: lock-free readers */
	mutex_unlock(&module_mutex);

	return 0;

out_strict_rwx:
	/* userspace: no bug table */

out:
	mutex_unlock(&module_mutex);
	return err;
}

/* Port of module_deallocate(), kernel/module/main.c, v7.3: @mod is gone after it */
void module_deallocate(struct module *mod, struct load_info *info __maybe_unused)
{
	/* userspace: no per-CPU area, arch init freeing or codetags */

	free_mod_mem(mod);
}

/* Port of layout_and_allocate(), kernel/module/main.c, v7.3 */
struct module *layout_and_allocate(struct load_info *info, int flags __maybe_unused)
{
	struct module *mod;
	int err;

	/* userspace: no arch section frobbing or W^X section check */

	/* userspace: no per-CPU section */

	/* the sections written only until the init is done */
	module_mark_ro_after_init(info->hdr, info->sechdrs, info->secstrings);

	/* each type's size, each section's offset in its sh_entsize */
	layout_sections(info->mod, info);
	/* userspace: kallsyms reads the object's own symbol table (add_kallsyms()) */

	/* the memory, and the sections in it */
	err = move_module(info->mod, info);
	if (err)
		return (struct module *)ERR_PTR(err);	/* userspace: C++ cast */

	/* userspace: struct module is apart from the module's memory */
	mod = info->mod;
	/* userspace: no kmemleak or codetags */

	return mod;
}

} /* namespace */

/* Port of module_memory_free(), kernel/module/main.c, v7.3 */
void module_memory_free(struct module *mod, enum mod_mem_type type)
{
	struct module_memory *mem = &mod->mem[type];

	/* userspace: nothing runs it any more: the model forgets it */
	if (mem->base)
		kshim::xmcTextHidden(mem->base, mem->size);
	execmem_free(mem->base);
	mem->base = nullptr;	/* userspace: a failed load frees what it had */
}

void free_module_struct(struct module *mod)
{
	delete (loader_priv *)mod->loader;
	delete mod;
}

/* Port of flush_module_init_free_work(), kernel/module/main.c, v7.3 */
void flush_module_init_free_work(void)
{
	flush_work(&init_free_wq);
}

namespace {

/*
 * pokelab_module_report(): the last value of each (module, event). The name
 * is copied: the module's string goes with its memory at unload.
 */
struct Report {
	std::atomic<int> state;		/* 0 free, 1 being claimed, 2 in use */
	char mod[MODULE_NAME_LEN];
	int event;
	std::atomic<long> val;
};
Report reports[64];

Report *findReport(const char *mod, int event)
{
	for (Report &r : reports)
		if (r.state.load(std::memory_order_acquire) == 2 && r.event == event &&
		    !strcmp(r.mod, mod))
			return &r;
	return nullptr;
}

} /* namespace */

extern "C" void pokelab_module_report(const char *mod, int event, long val)
{
	Report *r = findReport(mod, event);

	for (Report &c : reports) {
		int expected = 0;

		if (r)
			break;
		if (!c.state.compare_exchange_strong(expected, 1))
			continue;
		strncpy(c.mod, mod, MODULE_NAME_LEN - 1);
		c.event = event;
		c.state.store(2, std::memory_order_release);
		r = &c;
	}
	if (r)
		r->val.store(val, std::memory_order_release);
}
EXPORT_SYMBOL(pokelab_module_report);

long pokelab_module_reported(const char *mod, int event)
{
	Report *r = findReport(mod, event);

	return r ? r->val.load(std::memory_order_acquire) : -1;
}

extern "C" __noinline int pokelab_module_call_a(int x)
{
	return x + 1;
}

extern "C" __noinline int pokelab_module_call_b(int x)
{
	return x + 2;
}

DEFINE_STATIC_CALL(pokelab_module_call, pokelab_module_call_a);
EXPORT_STATIC_CALL(pokelab_module_call);
DEFINE_STATIC_CALL(pokelab_module_call2, pokelab_module_call_b);
EXPORT_STATIC_CALL(pokelab_module_call2);

DEFINE_STATIC_KEY_FALSE(pokelab_module_key);
EXPORT_SYMBOL(pokelab_module_key);

/*
 * After find_kallsyms_symbol_value(), kernel/module/kallsyms.c: once the
 * init memory is gone only the core symbols answer, as upstream's
 * core_kallsyms (add_kallsyms() copies no init symbol into it).
 */
unsigned long find_kallsyms_symbol_value(struct module *mod, const char *name)
{
	const loader_priv *lp = (const loader_priv *)mod->loader;
	const Elf64_Shdr *sechdrs = NULL;

	if (lp && lp->core_kallsyms.load(std::memory_order_acquire)) {
		const Elf64_Ehdr *hdr = (const Elf64_Ehdr *)lp->image.data();

		sechdrs = (const Elf64_Shdr *)(lp->image.data() + hdr->e_shoff);
	}
	for (unsigned int i = 0; i < mod->num_symtab; i++) {
		const Elf64_Sym *sym = &mod->symtab[i];

		if (sym->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(sym->st_info) == STT_SECTION ||
		    strcmp(name, mod->strtab + sym->st_name))
			continue;
		if (sechdrs && sym->st_shndx < SHN_LORESERVE &&
		    mod_mem_type_is_init(sechdrs[sym->st_shndx].sh_entsize >>
					 SH_ENTSIZE_TYPE_SHIFT))
			continue;
		return sym->st_value;
	}
	return 0;
}

namespace {

/* userspace: the caller's one line for @err, unless a step named it already */
void load_error(struct load_info *info, long err, const std::string &line)
{
	if (err && info->err->empty())
		*info->err = line;
}

/* Port of early_mod_check(), kernel/module/main.c, v7.3: before anything is allocated */
int early_mod_check(struct load_info *info, int flags __maybe_unused)
{
	int err;

	/* userspace: no blacklist */

	/*
	 * userspace: elf_validity_cache_copy() set each sh_addr; no __versions
	 * or .modinfo to drop, no this_module section to check
	 */

	/* userspace: struct module is apart, named after the object's file */
	info->mod = new struct module();
	memcpy(info->mod->name, info->name, strlen(info->name) + 1);	/* userspace */

	mutex_lock(&module_mutex);
	err = module_patient_check_exists(info->mod->name, FAIL_DUP_MOD_BECOMING);
	mutex_unlock(&module_mutex);

	return err;
}

/* Port of prepare_coming_module(), kernel/module/main.c, v7.3 */
int prepare_coming_module(struct module *mod)
{
	int err;

	/* userspace: no ftrace or livepatch */

	/*
	 * userspace: no _robust() chain: the call, then the roll-back
	 * _robust() makes when one refuses (here every notifier is told
	 * MODULE_STATE_GOING, the model first)
	 */
	err = blocking_notifier_call_chain(&module_notify_list,
			MODULE_STATE_COMING, mod);
	err = notifier_to_errno(err);
	/* userspace: the roll-back of blocking_notifier_call_chain_robust() */
	if (err) {
		kshim::xmcModuleTablesGone(mod);
		blocking_notifier_call_chain(&module_notify_list, MODULE_STATE_GOING, mod);
	}
	/* userspace: no livepatch */

	return err;
}

/* Port of free_copy(), kernel/module/main.c, v7.3 */
void free_copy(struct load_info *info __maybe_unused, int flags __maybe_unused)
{
	/*
	 * userspace: the copy is @info's vector, freed with @info; kallsyms
	 * keeps it once add_kallsyms() handed it to the module
	 */
}

/* Port of load_module(), kernel/module/main.c, v7.3 (the steps: see the file comment) */
/* userspace: the object in @info already (its file's), no arguments, no flags */
int load_module(struct load_info *info, const char *uargs __maybe_unused, int flags)
{
	struct module *mod;
	bool module_allocated = false;
	long err = 0;
	/* userspace: no parameters */

	/* userspace: no signatures */

	/* the ELF header and sections */
	err = elf_validity_cache_copy(info, flags);
	if (err)
		goto free_copy;

	err = early_mod_check(info, flags);
	load_error(info, err, err == -EEXIST ?	/* userspace: the caller's line */
		   fmt::format("module {} is already loaded", info->name) :
		   fmt::format("module {}: a load of that name in progress", info->name));
	if (err)
		goto free_copy;

	/* the layout, and all the memory */
	mod = layout_and_allocate(info, flags);
	if (IS_ERR(mod)) {
		err = PTR_ERR(mod);
		load_error(info, err, "no memory for its sections");	/* userspace */
		goto free_copy;
	}

	module_allocated = true;

	/* userspace: no audit */

	/* its place on the list */
	err = add_unformed_module(mod);
	load_error(info, err, err == -EEXIST ?	/* userspace: the caller's line */
		   fmt::format("module {} is already loaded", mod->name) :
		   fmt::format("module {}: the module list is full", mod->name));
	if (err)
		goto free_module;

	/* userspace: no taints, no per-CPU area */

	/* in its final place: the use lists and references */
	err = module_unload_init(mod);
	if (err)
		goto unlink_mod;

	/* userspace: no parameters */

	/* the optional sections */
	err = find_module_sections(mod, info);
	if (err)
		goto free_unload;

	/* userspace: no license flags or versions to check, no .modinfo */

	/* each symbol's value its address */
	err = simplify_symbols(mod, info);
	if (err < 0)
		goto free_modinfo;

	err = apply_relocations(mod, info);
	load_error(info, err, "a relocation was refused (see above)");	/* userspace */
	if (err < 0)
		goto free_modinfo;

	err = post_relocation(mod, info);
	if (err < 0)
		goto free_modinfo;

	/* userspace: x86 flushes no icache; no arguments, build id or ftrace */

	/* formed: ready to run */
	err = complete_formation(mod, info);
	load_error(info, err, err == -ENOEXEC ?	/* userspace: the caller's line */
		   "it exports a symbol already exported (see above)" :
		   "its text could not be made ROX");
	if (err)
		goto ddebug_cleanup;

	err = prepare_coming_module(mod);
	load_error(info, err, "a module notifier refused it");	/* userspace */
	if (err)
		goto bug_cleanup;
	kshim::xmcModuleLive(mod);	/* userspace: its tables linked: the model checks them */

	/* userspace: no async probes, arguments, sysfs, livepatch or codetags */

	/* the copy: kallsyms keeps it (add_kallsyms()) */
	free_copy(info, flags);

	/* userspace: no tracepoint */

	/* userspace: the init's error named for the caller, then returned */
	{
		err = do_init_module(mod);
		load_error(info, err, fmt::format("init_module() returned {}", err));
		return err;
	}

	/*
	 * userspace: nothing after prepare_coming_module() can fail (no
	 * arguments, sysfs or livepatch), so no livepatch_cleanup,
	 * sysfs_cleanup or coming_cleanup
	 */

 bug_cleanup:
	WRITE_ONCE(mod->state, MODULE_STATE_GOING);	/* userspace: lock-free readers */
	/* userspace: no bug table */

 ddebug_cleanup:
	/* userspace: no ftrace */

	synchronize_rcu();
	/* userspace: no arguments or arch cleanup */

 free_modinfo:
	/* userspace: no .modinfo */

 free_unload:
	module_unload_free(mod);
 unlink_mod:
	mutex_lock(&module_mutex);
	/* lookups may be walking the list */
	kshim::moduleListDel(mod);	/* userspace: the array */
	/* userspace: no tree */

	wake_up_all(&module_wq);
	/* before the memory goes */
	synchronize_rcu();
	mutex_unlock(&module_mutex);
 free_module:
	/* userspace: no statistics */

	/* userspace: no ROX memory to restore (linux/execmem.h) */

	module_deallocate(mod, info);
 free_copy:
	/*
	 * userspace: no audit or statistics; struct module is apart, freed
	 * with the memory once that was allocated
	 */
	if (!module_allocated && info->mod)
		free_module_struct(info->mod);
	free_copy(info, flags);
	return err;
}

} /* namespace */

int load_module_file(const std::string &path, struct module **modp, std::string *err)
{
	load_info info = {};
	std::ifstream in(path, std::ios::binary);
	int ret;
	struct stat st;

	info.err = err;
	err->clear();
	if (!in) {
		*err = fmt::format("{}: {}", path, strerror(errno));
		return -ENOENT;
	}
	/* userspace: as kernel_read_file() for finit_module(), a directory is -EINVAL */
	if (stat(path.c_str(), &st) || !S_ISREG(st.st_mode)) {
		*err = fmt::format("{}: not a regular file; expected a relocatable object (FILE.o)",
				   path);
		return -EINVAL;
	}
	info.image.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
	info.namebuf = path.substr(path.find_last_of('/') + 1);
	info.namebuf = info.namebuf.substr(0, info.namebuf.find('.'));
	if (info.namebuf.empty() || info.namebuf.size() >= MODULE_NAME_LEN) {
		*err = fmt::format("module name '{}': expected 1-{} characters", info.namebuf,
				   MODULE_NAME_LEN - 1);
		return -EINVAL;
	}
	info.name = info.namebuf.c_str();
	ret = load_module(&info, "", 0);
	if (!ret)
		*modp = info.mod;
	return ret;
}
