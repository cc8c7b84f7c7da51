/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Loadable modules: the module structure, the module list and its lookups,
 * module references and the module notifier chain.
 *
 * PORT: written fresh after include/linux/module.h and kernel/module/main.c,
 * v7.3, with the deferral series' MOD_NOINSTR_TEXT memory type (v7 25/31:
 * a module's .noinstr.text, so that a poke there IPIs isolated CPUs at
 * once). The loader itself (ELF, layout, symbols, relocations, the load
 * and unload order) is module/main.cpp; this is the part the rest of the
 * kernel reads: kernel_text_address(), __module_address(), jump labels'
 * and static calls' notifiers.
 *
 * userspace: the list is an array of at most MAX_MODULES slots read with
 * acquire loads (the kernel: an RCU list and a latched tree), so the
 * lookups take no lock and are async-signal-safe; writers hold
 * module_mutex. As upstream, a lookup and its use of the module it found
 * must sit in an RCU read-side section, which delete_module()'s
 * synchronize_rcu() waits out: with the shim's QSBR RCU, any stretch of a
 * CPU's task or IRQ work between two quiescent states is one, except IRQ
 * work on a CPU in an extended quiescent state, which RCU does not see.
 * A module's memory is PAGE_ALIGN(size) bytes of execmem per type in use
 * (linux/execmem.h); its init types (MOD_INIT_*) are freed after its init
 * has run, and their base and size cleared first (do_init_module()).
 */
#pragma once

#include <elf.h>

#include <kernel_shim/torture.h>
#include <linux/atomic.h>
#include <linux/list.h>
#include <linux/notifier.h>
#include <linux/types.h>

/* include/asm-generic/module.h: a 64-bit architecture's ELF types */
#define Elf_Shdr	Elf64_Shdr
#define Elf_Phdr	Elf64_Phdr
#define Elf_Sym		Elf64_Sym
#define Elf_Dyn		Elf64_Dyn
#define Elf_Ehdr	Elf64_Ehdr
#define Elf_Addr	Elf64_Addr
#define Elf_Rel		Elf64_Rel
#define Elf_Rela	Elf64_Rela
#define Elf_Half	Elf64_Half
#define ELF_R_TYPE(X)	ELF64_R_TYPE(X)
#define ELF_R_SYM(X)	ELF64_R_SYM(X)
#define ELF_ST_BIND(X)	ELF64_ST_BIND(X)
#define ELF_ST_TYPE(X)	ELF64_ST_TYPE(X)

#define MODULE_NAME_LEN	56
#define MAX_MODULES	32

enum module_state {
	MODULE_STATE_LIVE,	/* normal state */
	MODULE_STATE_COMING,	/* fully formed, running its init */
	MODULE_STATE_GOING,	/* going away */
	MODULE_STATE_UNFORMED,	/* still being set up */
};

enum mod_mem_type {
	MOD_INVALID = -1,
	MOD_TEXT = 0,
	MOD_DATA,
	MOD_RODATA,
	MOD_RO_AFTER_INIT,
	MOD_INIT_TEXT,
	MOD_INIT_DATA,
	MOD_INIT_RODATA,
	MOD_NOINSTR_TEXT,	/* the deferral series, v7 25/31 */
	MOD_MEM_NUM_TYPES,
};

/* include/linux/module.h's classes of memory type (the deferral series' noinstr text is text) */
#define mod_mem_type_is_init(type)	\
	((type) == MOD_INIT_TEXT ||	\
	 (type) == MOD_INIT_DATA ||	\
	 (type) == MOD_INIT_RODATA)
#define mod_mem_type_is_core(type) (!mod_mem_type_is_init(type))
#define mod_mem_type_is_text(type)	\
	((type) == MOD_TEXT ||		\
	 (type) == MOD_INIT_TEXT ||	\
	 (type) == MOD_NOINSTR_TEXT)
#define mod_mem_type_is_data(type) (!mod_mem_type_is_text(type))
#define mod_mem_type_is_core_data(type) (mod_mem_type_is_core(type) && mod_mem_type_is_data(type))

/* userspace: C++ has no ++ on an enum */
#define for_each_mod_mem_type(type)					\
	for (enum mod_mem_type type = MOD_TEXT; type < MOD_MEM_NUM_TYPES;	\
	     type = (enum mod_mem_type)(type + 1))
#define for_class_mod_mem_type(type, class)	\
	for_each_mod_mem_type(type)		\
		if (mod_mem_type_is_##class(type))

struct module_memory {
	void *base;
	unsigned int size;
};

struct jump_entry;
struct kernel_symbol;
struct static_call_site;

struct module {
	enum module_state state;
	char name[MODULE_NAME_LEN];
	struct module_memory mem[MOD_MEM_NUM_TYPES];

	/* Exported symbols (its ksymtab section, linux/export.h) */
	const struct kernel_symbol *syms;
	unsigned int num_syms;

	int (*init)(void);

	/* What depends on this module (struct module_use) and what it depends on */
	struct list_head source_list;
	struct list_head target_list;

	void (*exit)(void);

	/*
	 * MODULE_REF_BASE while nobody holds a reference, one more while its
	 * init runs; 0 once delete_module() took the base away (going).
	 */
	atomic_t refcnt;

	struct jump_entry *jump_entries;
	unsigned int num_jump_entries;
	struct static_call_site *static_call_sites;
	unsigned int num_static_call_sites;

	/* kallsyms: the module's own symbol table, its values relocated */
	const Elf64_Sym *symtab;
	unsigned int num_symtab;
	const char *strtab;

	void *loader;	/* userspace: the loader's copy of the ELF image */
};

/* Port of MODULE_REF_BASE(), kernel/module/main.c, v7.3 */
#define MODULE_REF_BASE	1

/* kernel/module/main.c: module @source uses a symbol of module @target */
struct module_use {
	struct list_head source_list;
	struct list_head target_list;
	struct module *source, *target;
};

/*
 * Port of module_is_live(), include/linux/module.h: not going away. Any
 * context. userspace: a torture delay point (kernel_shim/torture.h) after
 * the read, the window try_module_get() must survive before it counts.
 */
static inline bool module_is_live(struct module *mod)
{
	bool live = READ_ONCE(mod->state) != MODULE_STATE_GOING;

	torture_delay(kshim::TortureDelay::ModuleGet);
	return live;
}

/* include/linux/module.h: the module's name, "kernel" for none (the program) */
static inline const char *module_name(const struct module *mod)
{
	return mod ? mod->name : "kernel";
}

/* userspace: the kernel's module_init()/module_exit(): @fn has C linkage */
#define module_init(fn) extern "C" int init_module(void) __attribute__((alias(#fn)))
#define module_exit(fn) extern "C" void cleanup_module(void) __attribute__((alias(#fn)))

/*
 * The module whose memory holds @addr, or NULL; modules still being set up
 * (MODULE_STATE_UNFORMED) are skipped, as upstream. Any context.
 */
struct module *__module_address(unsigned long addr);
/* The module whose text (MOD_TEXT, MOD_INIT_TEXT, MOD_NOINSTR_TEXT) holds @addr, or NULL. */
struct module *__module_text_address(unsigned long addr);
bool is_module_address(unsigned long addr);
bool is_module_text_address(unsigned long addr);
/* The deferral series: @addr is in a module's noinstr text (MOD_NOINSTR_TEXT). */
bool is_module_noinstr_text_address(unsigned long addr);
bool within_module_mem_type(unsigned long addr, const struct module *mod, enum mod_mem_type type);
bool within_module(unsigned long addr, const struct module *mod);

/* The live or coming module called @name, or NULL. Caller holds module_mutex. */
struct module *find_module(const char *name);

/*
 * symbol_get(): the address of the exported symbol @symbol, with a
 * reference on the module that exports it (none for the program's), or
 * NULL if no formed module exports it or that module is in its init or
 * going; symbol_put() drops the reference. Task or IRQ context on a CPU
 * RCU watches; the module cannot be unloaded in between (delete_module()
 * is -EWOULDBLOCK). userspace: every export may be taken (no license
 * flags), not only EXPORT_SYMBOL_GPL() ones.
 */
void *__symbol_get(const char *symbol);
void __symbol_put(const char *symbol);
#define symbol_get(x) ((__typeof__(&x))(__symbol_get(#x)))
#define symbol_put(x) __symbol_put(#x)

/*
 * try_module_get(): take a reference, false if the module is going away
 * (its count was taken to 0 by delete_module(), atomic_inc_not_zero());
 * __module_get() takes one unconditionally (the caller already holds one);
 * module_put() drops one; module_refcount() the references held, -1 once
 * the module is going. Any context (atomic ops; fully ordered). A CPU that
 * runs a module's code holds a reference, and delete_module() refuses to
 * unload while one is held.
 */
bool try_module_get(struct module *mod);
void __module_get(struct module *mod);
void module_put(struct module *mod);
int module_refcount(struct module *mod);

/* MODULE_STATE_* notifications, in the kernel's order (jump labels, static calls). */
int register_module_notifier(struct notifier_block *nb);
int unregister_module_notifier(struct notifier_block *nb);

/* Notifier priorities: jump labels first, then static calls (include/linux/module.h). */
#define JUMP_LABEL_MODULE_NOTIFY_PRIORITY	1
#define STATIC_CALL_MODULE_NOTIFY_PRIORITY	0

namespace kshim {
/*
 * @addr is in the text of a module still being set up (MODULE_STATE_UNFORMED:
 * its pages are read-write, nothing runs them), so text_poke_early() may copy
 * there directly. Any context.
 */
bool moduleTextLoading(unsigned long addr);
} /* namespace kshim */
