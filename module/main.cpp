// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab's module loader (pokelab/module_load.h, docs/modules.md).
 *
 * Port of load_module() and its steps, delete_module() and free_module(),
 * kernel/module/main.c, v6.16, and find_kallsyms_symbol_value(),
 * kernel/module/kallsyms.c, in the order upstream runs them:
 *
 *	elf_validity_cache_copy()	the header and section table are sane
 *	layout_and_allocate()		each SHF_ALLOC section to a memory type,
 *					one execmem page per type, copied
 *	add_unformed_module()		on the list, MODULE_STATE_UNFORMED
 *	find_module_sections()		__jump_table, static_call_sites
 *	simplify_symbols()		undefined ones from EXPORT_SYMBOL()s
 *	apply_relocations()		apply_relocate_add() (module_x86.cpp)
 *	post_relocation()		module_finalize(): the alternatives
 *	complete_formation()		text made ROX, MODULE_STATE_COMING
 *	prepare_coming_module()		notifiers: jump labels, static calls
 *	do_init_module()		init_module(), MODULE_STATE_LIVE
 *
 * userspace:
 *  - the object comes from a file path (finit_module(2) without the fd),
 *    its name from the file name (no .modinfo or this_module section);
 *  - no signatures, versions, parameters, sysfs, livepatch, init memory
 *    freed after init, or kmemleak; module rodata stays writable (upstream's
 *    set_memory_ro() is a direct flush like set_memory_rox(), see
 *    docs/context_tracking.md);
 *  - text is loaded read-write and made ROX with set_memory_rox() before it
 *    goes live (v6.13's module_enable_text_rox()): the relocations and the
 *    alternatives write it in place, where v6.15's ROX cache has them write
 *    a temporarily writable mapping (execmem_make_temp_rw());
 *  - struct module is allocated apart from the module's memory (upstream:
 *    the .gnu.linkonce.this_module section).
 */
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <kernel_shim/xmc.h>
#include <linux/bug.h>
#include <linux/execmem.h>
#include <linux/export.h>
#include <linux/module.h>
#include <linux/printk.h>
#include <linux/rcupdate.h>
#include <pokelab/module_calls.h>
#include <pokelab/module_load.h>

#include "internal.h"
#include "loader.h"

namespace {

constexpr size_t kPage = 4096;

/* kernel/module/internal.h: what the loader knows while it loads */
struct load_info {
	std::string name;
	std::vector<u8> image;		/* the object file; kallsyms keeps reading it */
	Elf64_Ehdr *hdr;
	Elf64_Shdr *sechdrs;
	const char *secstrings, *strtab;
	unsigned int symindex, strindex;
	std::vector<int> sec_type;	/* the memory type of each section, or -1 */
	std::vector<unsigned long> sec_off;
};

struct loader_priv {
	std::vector<u8> image;
};

const char *mem_type_name(int t)
{
	static const char *const names[] = {"text", "data", "rodata", "ro_after_init",
					    "init_text", "init_data", "init_rodata",
					    "noinstr_text"};

	return names[t];
}

/* Port of elf_validity_cache_copy()'s header and section checks, kernel/module/main.c */
int elf_validity_check(load_info *info, std::string *err)
{
	const size_t len = info->image.size();
	Elf64_Ehdr *hdr = (Elf64_Ehdr *)info->image.data();

	if (len < sizeof(*hdr) || memcmp(hdr->e_ident, ELFMAG, SELFMAG) ||
	    hdr->e_ident[EI_CLASS] != ELFCLASS64 || hdr->e_type != ET_REL ||
	    hdr->e_machine != EM_X86_64 || hdr->e_shentsize != sizeof(Elf64_Shdr)) {
		*err = "not a relocatable x86-64 ELF object (ET_REL, EM_X86_64)";
		return -ENOEXEC;
	}
	if (hdr->e_shoff >= len || hdr->e_shnum * sizeof(Elf64_Shdr) > len - hdr->e_shoff ||
	    hdr->e_shstrndx >= hdr->e_shnum) {
		*err = "section header table out of the file";
		return -ENOEXEC;
	}
	info->hdr = hdr;
	info->sechdrs = (Elf64_Shdr *)(info->image.data() + hdr->e_shoff);
	for (unsigned int i = 1; i < hdr->e_shnum; i++) {
		Elf64_Shdr *s = &info->sechdrs[i];

		if (s->sh_type != SHT_NOBITS && (s->sh_offset > len || s->sh_size > len - s->sh_offset)) {
			*err = fmt::format("section {} out of the file", i);
			return -ENOEXEC;
		}
		/* every section's address is where it lies in the image, until moved */
		s->sh_addr = (Elf64_Addr)(info->image.data() + s->sh_offset);
	}
	info->secstrings = (const char *)info->image.data() + info->sechdrs[hdr->e_shstrndx].sh_offset;

	/* exactly one symbol table, and its string table */
	info->symindex = 0;
	for (unsigned int i = 1; i < hdr->e_shnum; i++) {
		if (info->sechdrs[i].sh_type != SHT_SYMTAB)
			continue;
		if (info->symindex) {
			*err = "more than one symbol table";
			return -ENOEXEC;
		}
		info->symindex = i;
		info->strindex = info->sechdrs[i].sh_link;
	}
	if (!info->symindex || info->strindex >= hdr->e_shnum) {
		*err = "no symbol table";
		return -ENOEXEC;
	}
	info->strtab = (const char *)info->sechdrs[info->strindex].sh_addr;
	return 0;
}

/* Port of layout_sections(), kernel/module/main.c: which memory type each section goes to */
void layout_sections(struct module *mod, load_info *info)
{
	unsigned int n = info->hdr->e_shnum;

	info->sec_type.assign(n, -1);
	info->sec_off.assign(n, 0);
	for (unsigned int i = 1; i < n; i++) {
		Elf64_Shdr *s = &info->sechdrs[i];
		const char *sname = info->secstrings + s->sh_name;
		int t;

		if (!(s->sh_flags & SHF_ALLOC))
			continue;
		if (s->sh_flags & SHF_EXECINSTR)
			t = !strcmp(sname, "noinstr_text") ? MOD_NOINSTR_TEXT : MOD_TEXT;
		else if (!strcmp(sname, "__jump_table") || !strcmp(sname, "static_call_sites"))
			t = MOD_RO_AFTER_INIT;	/* module_sections' ro_after_init list */
		else if (s->sh_flags & SHF_WRITE)
			t = MOD_DATA;
		else
			t = MOD_RODATA;

		unsigned long align = s->sh_addralign ? s->sh_addralign : 1;
		unsigned long off = (mod->mem[t].size + align - 1) & ~(align - 1);

		info->sec_type[i] = t;
		info->sec_off[i] = off;
		mod->mem[t].size = off + s->sh_size;
	}
}

/* Port of move_module(), kernel/module/main.c: allocate each type, copy the sections in */
int move_module(struct module *mod, load_info *info, std::string *err)
{
	for (int t = 0; t < MOD_MEM_NUM_TYPES; t++) {
		bool text = t == MOD_TEXT || t == MOD_NOINSTR_TEXT || t == MOD_INIT_TEXT;

		if (!mod->mem[t].size)
			continue;
		/* userspace: the execmem port hands out one page at a time */
		if (mod->mem[t].size > kPage) {
			*err = fmt::format("its {} is {} bytes, more than the {} that one execmem "
					   "page holds", mem_type_name(t), mod->mem[t].size, kPage);
			return -ENOMEM;
		}
		mod->mem[t].base = execmem_alloc_rw(text ? EXECMEM_MODULE_TEXT : EXECMEM_MODULE_DATA,
						    mod->mem[t].size);
		if (!mod->mem[t].base) {
			*err = fmt::format("no execmem page for its {}", mem_type_name(t));
			return -ENOMEM;
		}
		memset(mod->mem[t].base, 0, mod->mem[t].size);
	}
	for (unsigned int i = 1; i < info->hdr->e_shnum; i++) {
		Elf64_Shdr *s = &info->sechdrs[i];
		int t = info->sec_type[i];

		if (t < 0)
			continue;
		u8 *dest = (u8 *)mod->mem[t].base + info->sec_off[i];

		/* an empty section may be all of its type: no page, nothing to copy */
		if (s->sh_type != SHT_NOBITS && s->sh_size)
			memcpy(dest, info->image.data() + s->sh_offset, s->sh_size);
		/* update sh_addr to point to the copy in the module's memory */
		s->sh_addr = (Elf64_Addr)dest;
	}
	return 0;
}

/* Port of find_symbol() over the kernel's and the modules' EXPORT_SYMBOL() tables */
bool find_exported_symbol(const char *name, unsigned long *value)
{
	for (const struct kernel_symbol *k = __start_ksymtab; k && k < __stop_ksymtab; k++) {
		if (!strcmp(k->name, name)) {
			*value = k->value;
			return true;
		}
	}
	return false;
}

/*
 * Port of ignore_undef_symbol(), kernel/module/main.c: an assembler may
 * leave an unreferenced _GLOBAL_OFFSET_TABLE_ in an x86-64 object.
 */
bool ignore_undef_symbol(Elf64_Half emachine, const char *name)
{
	if (emachine == EM_386 || emachine == EM_X86_64)
		return !strcmp(name, "_GLOBAL_OFFSET_TABLE_");
	return false;
}

/* Port of simplify_symbols(), kernel/module/main.c */
int simplify_symbols(struct module *mod, load_info *info, std::string *err)
{
	Elf64_Shdr *symsec = &info->sechdrs[info->symindex];
	Elf64_Sym *sym = (Elf64_Sym *)symsec->sh_addr;
	unsigned int i, n = symsec->sh_size / sizeof(Elf64_Sym);

	(void)mod;
	for (i = 1; i < n; i++) {
		const char *name = info->strtab + sym[i].st_name;
		unsigned long value;

		switch (sym[i].st_shndx) {
		case SHN_COMMON:
			*err = fmt::format("{}: please compile with -fno-common", name);
			return -ENOEXEC;
		case SHN_ABS:
			break;
		case SHN_UNDEF:
			if (!*name)
				break;
			if (find_exported_symbol(name, &value)) {
				sym[i].st_value = value;
				break;
			}
			/* an unresolved weak or ignored symbol stays 0 */
			if (ELF64_ST_BIND(sym[i].st_info) == STB_WEAK ||
			    ignore_undef_symbol(info->hdr->e_machine, name))
				break;
			*err = fmt::format("Unknown symbol {} (err {})", name, -ENOENT);
			return -ENOENT;
		default:
			if (sym[i].st_shndx >= info->hdr->e_shnum) {
				*err = fmt::format("symbol {}: section {} out of range", name,
						   sym[i].st_shndx);
				return -ENOEXEC;
			}
			sym[i].st_value += info->sechdrs[sym[i].st_shndx].sh_addr;
			break;
		}
	}
	return 0;
}

/* Port of apply_relocations(), kernel/module/main.c */
int apply_relocations(struct module *mod, load_info *info, std::string *err)
{
	for (unsigned int i = 1; i < info->hdr->e_shnum; i++) {
		unsigned int infosec = info->sechdrs[i].sh_info;
		int ret;

		/* not a valid relocation section? */
		if (infosec >= info->hdr->e_shnum)
			continue;
		/* don't bother with non-allocated sections */
		if (!(info->sechdrs[infosec].sh_flags & SHF_ALLOC))
			continue;
		if (info->sechdrs[i].sh_type == SHT_REL) {
			*err = "REL relocations (x86-64 modules use RELA)";
			return -ENOEXEC;
		}
		if (info->sechdrs[i].sh_type != SHT_RELA)
			continue;
		ret = apply_relocate_add(info->sechdrs, info->strtab, info->symindex, i, mod);
		if (ret) {
			*err = fmt::format("section {}: relocation refused (see above)",
					   info->secstrings + info->sechdrs[infosec].sh_name);
			return ret;
		}
	}
	return 0;
}

/*
 * userspace: the module's allocated sections, where the layout put them,
 * for the cross-modifying-code model (its noinstr text and its tables).
 */
static void xmcModuleSections(struct module *mod, load_info *info)
{
	std::vector<kshim::XmcSection> secs;

	for (unsigned int i = 1; i < info->hdr->e_shnum; i++) {
		const Elf64_Shdr *s = &info->sechdrs[i];

		if (s->sh_flags & SHF_ALLOC)
			secs.push_back({info->secstrings + s->sh_name, (unsigned long)s->sh_addr,
					(unsigned long)s->sh_size});
	}
	kshim::xmcModuleTables(mod, mod->name, secs.data(), (unsigned int)secs.size());
}

/* Port of find_module_sections(), kernel/module/main.c (the sections pokelab's modules have) */
void find_module_sections(struct module *mod, load_info *info)
{
	for (unsigned int i = 1; i < info->hdr->e_shnum; i++) {
		const char *sname = info->secstrings + info->sechdrs[i].sh_name;
		Elf64_Shdr *s = &info->sechdrs[i];

		if (!strcmp(sname, "__jump_table")) {
			mod->jump_entries = (struct jump_entry *)s->sh_addr;
			mod->num_jump_entries = s->sh_size / 16;	/* sizeof(struct jump_entry) */
		} else if (!strcmp(sname, "static_call_sites")) {
			mod->static_call_sites = (struct static_call_site *)s->sh_addr;
			mod->num_static_call_sites = s->sh_size / 8;
		}
	}
}

/* Port of module_enable_text_rox(), kernel/module/strict_rwx.c (v6.13) */
void module_enable_text_rox(struct module *mod)
{
	for (int t : {MOD_TEXT, MOD_NOINSTR_TEXT, MOD_INIT_TEXT})
		if (mod->mem[t].base)
			set_memory_rox((unsigned long)mod->mem[t].base, 1);
}


} /* namespace */

/* Port of module_memory_free(), kernel/module/main.c, v7.3 */
void module_memory_free(struct module *mod, enum mod_mem_type type)
{
	struct module_memory *mem = &mod->mem[type];

	/* userspace: nothing runs it any more: the model forgets it */
	if (mem->base)
		kshim::xmcTextHidden(mem->base, kPage);
	execmem_free(mem->base);
	mem->base = nullptr;	/* userspace: a failed load frees what it had */
}

void free_module_struct(struct module *mod)
{
	delete (loader_priv *)mod->loader;
	delete mod;
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

unsigned long find_kallsyms_symbol_value(struct module *mod, const char *name)
{
	for (unsigned int i = 0; i < mod->num_symtab; i++) {
		const Elf64_Sym *sym = &mod->symtab[i];

		if (sym->st_shndx != SHN_UNDEF && ELF64_ST_TYPE(sym->st_info) != STT_SECTION &&
		    !strcmp(name, mod->strtab + sym->st_name))
			return sym->st_value;
	}
	return 0;
}

/* Port of load_module(), kernel/module/main.c, v6.16 (the steps: see the file comment) */
int load_module_file(const std::string &path, struct module **modp, std::string *err)
{
	load_info info;
	std::ifstream in(path, std::ios::binary);
	struct module *mod;
	int ret;

	if (!in) {
		*err = fmt::format("{}: {}", path, strerror(errno));
		return -ENOENT;
	}
	info.image.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
	if ((ret = elf_validity_check(&info, err)))
		return ret;
	info.name = path.substr(path.find_last_of('/') + 1);
	info.name = info.name.substr(0, info.name.find('.'));
	if (info.name.empty() || info.name.size() >= MODULE_NAME_LEN) {
		*err = fmt::format("module name '{}': expected 1-{} characters", info.name,
				   MODULE_NAME_LEN - 1);
		return -EINVAL;
	}

	mod = new struct module();
	mod->state = MODULE_STATE_UNFORMED;
	memcpy(mod->name, info.name.c_str(), info.name.size() + 1);
	module_unload_init(mod);

	layout_sections(mod, &info);
	if ((ret = move_module(mod, &info, err)))
		goto free_mem;

	/* add_unformed_module(): one module of each name */
	{
		mutex_lock(&module_mutex);
		if (find_module(mod->name)) {
			mutex_unlock(&module_mutex);
			*err = fmt::format("module {} is already loaded", mod->name);
			ret = -EEXIST;
			goto free_mem;
		}
		if ((ret = kshim::moduleListAdd(mod))) {
			mutex_unlock(&module_mutex);
			*err = fmt::format("more than {} modules", MAX_MODULES);
			goto free_mem;
		}
		mutex_unlock(&module_mutex);
	}

	find_module_sections(mod, &info);
	if ((ret = simplify_symbols(mod, &info, err)))
		goto unlink;
	if ((ret = apply_relocations(mod, &info, err)))
		goto unlink;
	/* post_relocation(): the alternatives, before anything can run the text */
	if ((ret = module_finalize(info.hdr, info.sechdrs, mod)))
		goto unlink;

	/* kallsyms: the symbols, relocated, stay readable for the module's life */
	mod->symtab = (const Elf64_Sym *)info.sechdrs[info.symindex].sh_addr;
	mod->num_symtab = info.sechdrs[info.symindex].sh_size / sizeof(Elf64_Sym);
	mod->strtab = info.strtab;
	mod->init = (int (*)(void))find_kallsyms_symbol_value(mod, "init_module");
	mod->exit = (void (*)(void))find_kallsyms_symbol_value(mod, "cleanup_module");

	/* complete_formation(): ROX text, visible to the lookups, MODULE_STATE_COMING */
	module_enable_text_rox(mod);
	xmcModuleSections(mod, &info);	/* userspace: the model's view of its sections */
	for (int t : {MOD_TEXT, MOD_NOINSTR_TEXT})
		if (mod->mem[t].base)
			kshim::xmcTextPublish(mod->mem[t].base, mod->mem[t].size);
	WRITE_ONCE(mod->state, MODULE_STATE_COMING);

	/* prepare_coming_module(): jump labels and static calls link the module's sites */
	ret = blocking_notifier_call_chain(&module_notify_list, MODULE_STATE_COMING, mod);
	ret = notifier_to_errno(ret);
	if (ret) {
		*err = "a module notifier refused it";
		goto coming_cleanup;
	}
	kshim::xmcModuleLive(mod);	/* userspace: its tables are linked: the model checks them */

	/* do_init_module() */
	if (mod->init && (ret = mod->init()) < 0) {
		*err = fmt::format("init_module() returned {}", ret);
		goto coming_cleanup;
	}
	WRITE_ONCE(mod->state, MODULE_STATE_LIVE);
	blocking_notifier_call_chain(&module_notify_list, MODULE_STATE_LIVE, mod);
	mutex_lock(&module_mutex);
	module_put(mod);	/* the init's reference */
	mutex_unlock(&module_mutex);
	wake_up_all(&module_wq);

	mod->loader = new loader_priv{std::move(info.image)};
	*modp = mod;
	return 0;

coming_cleanup:
	WRITE_ONCE(mod->state, MODULE_STATE_GOING);
	kshim::xmcModuleTablesGone(mod);	/* userspace */
	blocking_notifier_call_chain(&module_notify_list, MODULE_STATE_GOING, mod);
unlink:
	mutex_lock(&module_mutex);
	kshim::moduleListDel(mod);
	mutex_unlock(&module_mutex);
	synchronize_rcu();
free_mem:
	for_each_mod_mem_type(type)
		if (mod->mem[type].base)
			module_memory_free(mod, type);
	free_module_struct(mod);
	wake_up_all(&module_wq);
	return ret;
}
