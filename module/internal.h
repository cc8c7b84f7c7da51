/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the parts of kernel/module share and nothing else reads: the
 * module list's lock, the notifier chain, the wait queue of loads waiting
 * for another module's init, the exported-symbol search, and the
 * layout's section-offset encoding.
 *
 * PORT: written fresh after kernel/module/internal.h, v7.3. Private to
 * module/.
 */
#pragma once

#include <cerrno>
#include <cstring>

#include <linux/export.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/notifier.h>
#include <linux/wait.h>

/* Protects the module list, each module's use lists, and state changes. */
extern struct mutex module_mutex;
extern struct blocking_notifier_head module_notify_list;
/* Woken when a module finishes loading or goes: resolve_symbol_wait() waits here. */
extern wait_queue_head_t module_wq;

/*
 * The lowest and highest address of any module's memory, loaded or gone:
 * __module_address() answers NULL at once outside them. Written under
 * module_mutex, read without it (READ_ONCE()); they only widen.
 * userspace: no latch tree beside them (the list is an array, walked), and
 * no data_addr_min/max (x86 has no CONFIG_ARCH_WANTS_MODULES_DATA_IN_VMALLOC).
 */
/* Port of struct mod_tree_root, kernel/module/internal.h, v7.3 */
struct mod_tree_root {
	unsigned long addr_min;
	unsigned long addr_max;
};

extern struct mod_tree_root mod_tree;

/*
 * A section's place in the layout, kept in its sh_entsize while the module
 * is laid out: the memory type in the top bits, the offset in that type's
 * memory below (layout_sections(), move_module()).
 */
#ifndef BITS_PER_LONG
#define BITS_PER_LONG		64	/* as linux/cpumask.h */
#endif
#define SH_ENTSIZE_TYPE_BITS	4
#define SH_ENTSIZE_TYPE_SHIFT	(BITS_PER_LONG - SH_ENTSIZE_TYPE_BITS)
#define SH_ENTSIZE_TYPE_MASK	((1UL << SH_ENTSIZE_TYPE_BITS) - 1)
#define SH_ENTSIZE_OFFSET_MASK	((1UL << (BITS_PER_LONG - SH_ENTSIZE_TYPE_BITS)) - 1)

/* include/uapi/linux/elf.h: a livepatch module's symbols (none here) */
#define SHN_LIVEPATCH		0xff20
/* include/uapi/linux/elf.h: a section made read-only once the init is done */
#define SHF_RO_AFTER_INIT	0x00200000
/* include/linux/moduleloader.h: no small-data sections on x86 */
#define ARCH_SHF_SMALL		0

/*
 * The search of one exported-symbol table (find_symbol()). userspace: no
 * __kcrctab (no versions) and no __kflagstab (no license flags: every
 * export may be used by every module).
 */
/* Port of struct symsearch, kernel/module/main.c, v7.3 */
struct symsearch {
	const struct kernel_symbol *start, *stop;
};

struct find_symbol_arg {
	/* Input */
	const char *name;
	bool gplok = true;	/* userspace: no license flags: read by nothing */
	bool warn = false;	/* userspace: read by nothing */

	/* Output: the module that exports it (NULL: the program), and its entry */
	struct module *owner = nullptr;
	const struct kernel_symbol *sym = nullptr;
};

/* Port of kernel_symbol_name(), kernel/module/main.c, v7.3 */
static inline const char *kernel_symbol_name(const struct kernel_symbol *sym)
{
#ifdef CONFIG_HAVE_ARCH_PREL32_RELOCATIONS
	return offset_to_ptr(&sym->name_offset);
#else
	return sym->name;
#endif
}

/*
 * The module called @name (its first @len characters), MODULE_STATE_UNFORMED
 * ones too if @even_unformed, or NULL. module_mutex held, or an RCU read side.
 */
struct module *find_module_all(const char *name, size_t len, bool even_unformed);

/*
 * Find the export @fsa->name in the program's table, then in each formed
 * module's (not MODULE_STATE_UNFORMED). module_mutex held, or an RCU read
 * side (the module found stays until the caller leaves it).
 */
bool find_symbol(struct find_symbol_arg *fsa);

/* Port of kernel_symbol_value(), kernel/module/internal.h, v7.3 */
static inline unsigned long kernel_symbol_value(const struct kernel_symbol *sym)
{
	/* userspace: absolute values (linux/export.h), as without PREL32 relocations */
	return sym->value;
}

/* include/linux/err.h: an error in a pointer. userspace: the shim has no err.h */
#define MAX_ERRNO	4095
#define IS_ERR_VALUE(x)	unlikely((unsigned long)(void *)(x) >= (unsigned long)-MAX_ERRNO)

static inline void *ERR_PTR(long error)
{
	return (void *)error;
}

static inline long PTR_ERR(const void *ptr)
{
	return (long)ptr;
}

static inline bool IS_ERR(const void *ptr)
{
	return IS_ERR_VALUE((unsigned long)ptr);
}

/* include/linux/align.h */
#define ALIGN(x, a)	(((x) + (a) - 1) & ~((__typeof__(x))(a) - 1))

/* include/linux/string.h: does @str start with @prefix? */
static inline bool strstarts(const char *str, const char *prefix)
{
	return strncmp(str, prefix, strlen(prefix)) == 0;
}

/* lib/string.c: copy @src into @dest of @count bytes, always terminated; -E2BIG if cut */
static inline long strscpy(char *dest, const char *src, size_t count)
{
	size_t len = strnlen(src, count);

	if (!count)
		return -E2BIG;
	if (len == count) {
		memcpy(dest, src, count - 1);
		dest[count - 1] = '\0';
		return -E2BIG;
	}
	memcpy(dest, src, len + 1);
	return (long)len;
}

/* kernel/module/internal.h: why a load waited for another of its name */
enum fail_dup_mod_reason {
	FAIL_DUP_MOD_BECOMING = 0,
	FAIL_DUP_MOD_LOAD,
};

namespace kshim {
/*
 * userspace: the module list is an array of slots (linux/module.h);
 * add and remove under module_mutex. moduleListAdd(): -ENOMEM when full.
 */
int moduleListAdd(struct module *mod);
void moduleListDel(struct module *mod);
} /* namespace kshim */
