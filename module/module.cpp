// SPDX-License-Identifier: GPL-2.0-only
/*
 * The module list, its lookups, module references and the module notifier
 * chain (linux/module.h).
 *
 * Port of the parts of kernel/module/main.c, v7.3, that the rest of the
 * kernel reads, and of its exported-symbol search (find_symbol(), for the
 * loader and symbol_get()). userspace: see linux/module.h.
 */
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include <linux/bug.h>
#include <linux/export.h>
#include <linux/module.h>
#include <linux/notifier.h>
#include <linux/printk.h>

#include "internal.h"

DEFINE_MUTEX(module_mutex);
BLOCKING_NOTIFIER_HEAD(module_notify_list);
DECLARE_WAIT_QUEUE_HEAD(module_wq);

/* Port of mod_tree, kernel/module/main.c, v7.3 (no __cacheline_aligned) */
struct mod_tree_root mod_tree = {
	.addr_min = -1UL,
	.addr_max = 0,
};

namespace {

std::atomic<struct module *> modules[MAX_MODULES];

} /* namespace */

/* Port of register_module_notifier(), kernel/module/main.c, v7.3 */
int register_module_notifier(struct notifier_block *nb)
{
	return blocking_notifier_chain_register(&module_notify_list, nb);
}

/* Port of unregister_module_notifier(), kernel/module/main.c, v7.3 */
int unregister_module_notifier(struct notifier_block *nb)
{
	return blocking_notifier_chain_unregister(&module_notify_list, nb);
}

bool within_module_mem_type(unsigned long addr, const struct module *mod, enum mod_mem_type type)
{
	/* userspace: lock-free readers: do_init_module() clears the init types under them */
	unsigned long base = (unsigned long)READ_ONCE(mod->mem[type].base);

	return base && addr - base < READ_ONCE(mod->mem[type].size);
}

bool within_module(unsigned long addr, const struct module *mod)
{
	for (int t = 0; t < MOD_MEM_NUM_TYPES; t++)
		if (within_module_mem_type(addr, mod, (enum mod_mem_type)t))
			return true;
	return false;
}

/*
 * userspace: mod_find() without a tree: the module on the array whose
 * memory holds @addr, formed or not
 */
static struct module *mod_find(unsigned long addr)
{
	for (auto &slot : modules) {
		struct module *mod = slot.load(std::memory_order_acquire);

		if (mod && within_module(addr, mod))
			return mod;
	}
	return NULL;
}

/* Port of __module_address(), kernel/module/main.c, v7.3 */
struct module *__module_address(unsigned long addr)
{
	struct module *mod;

	/* userspace: READ_ONCE(), the bounds widen under module_mutex as we read */
	if (addr >= READ_ONCE(mod_tree.addr_min) && addr <= READ_ONCE(mod_tree.addr_max))
		goto lookup;

	/* userspace: no data bounds (x86 keeps module data beside its text) */

	return NULL;

lookup:
	mod = mod_find(addr);	/* userspace: the array's walk (mod_find() above) */
	if (mod) {
		/*
		 * userspace: no BUG_ON(!within_module()): mod_find() and it
		 * read mem[] apart, and do_init_module() may clear the init
		 * types between (upstream's mod_tree_remove_init() does not
		 * wait for the readers either)
		 */
		if (READ_ONCE(mod->state) == MODULE_STATE_UNFORMED)	/* userspace: lock-free */
			mod = NULL;
	}
	return mod;
}

/* Port of __module_text_address(), kernel/module/main.c, v7.3 */
struct module *__module_text_address(unsigned long addr)
{
	struct module *mod = __module_address(addr);
	if (mod) {
		/* its text, or not a text address */
		if (!within_module_mem_type(addr, mod, MOD_TEXT) &&
		    !within_module_mem_type(addr, mod, MOD_INIT_TEXT) &&
		    !within_module_mem_type(addr, mod, MOD_NOINSTR_TEXT))	/* series v7 25/31 */
			mod = NULL;
	}
	return mod;
}

/* Port of is_module_address(), kernel/module/main.c, v7.3 */
bool is_module_address(unsigned long addr)
{
	return __module_address(addr) != nullptr;
}

/* Port of is_module_text_address(), kernel/module/main.c, v7.3 */
bool is_module_text_address(unsigned long addr)
{
	return __module_text_address(addr) != nullptr;
}

/* The deferral series v7 25/31: is_module_noinstr_text_address() */
bool is_module_noinstr_text_address(unsigned long addr)
{
	struct module *mod = __module_address(addr);

	return mod && within_module_mem_type(addr, mod, MOD_NOINSTR_TEXT);
}

/* userspace: the table's entry for @name, or NULL; its order is the link's, not sorted */
static const struct kernel_symbol *lookup_symbol(const char *name,
						 const struct kernel_symbol *start,
						 const struct kernel_symbol *stop)
{
	for (const struct kernel_symbol *sym = start; sym && sym < stop; sym++)
		if (!strcmp(name, kernel_symbol_name(sym)))
			return sym;
	return NULL;
}

/* Port of find_exported_symbol_in_section(), kernel/module/main.c, v7.3 */
static bool find_exported_symbol_in_section(const struct symsearch *syms,
					    struct module *owner,
					    struct find_symbol_arg *fsa)
{
	const struct kernel_symbol *sym;	/* userspace: const, the tables are */

	/* userspace: a linear search: no build step sorts pokelab's tables by name */
	sym = lookup_symbol(fsa->name, syms->start, syms->stop);
	if (!sym)
		return false;

	/* userspace: no license flags (__kflagstab): every export may be used */

	fsa->owner = owner;
	/* userspace: no versions (__kcrctab) */

	fsa->sym = sym;
	/* userspace: no license flags */

	return true;
}

/* Port of find_symbol(), kernel/module/main.c, v7.3 */
bool find_symbol(struct find_symbol_arg *fsa)
{
	const struct symsearch syms = {
		.start		= __start_ksymtab,	/* userspace: linux/export.h's section */
		.stop		= __stop_ksymtab,	/* userspace: linux/export.h's section */
	};
	struct module *mod;

	if (find_exported_symbol_in_section(&syms, NULL, fsa))
		return true;

	/* userspace: the array of linux/module.h, its slots read with acquire loads */
	for (auto &slot : modules) {
		mod = slot.load(std::memory_order_acquire);
		if (!mod)
			continue;
		const struct symsearch syms = {
			.start		= mod->syms,
			.stop		= mod->syms + mod->num_syms,
		};

		if (READ_ONCE(mod->state) == MODULE_STATE_UNFORMED)	/* userspace: lock-free */
			continue;

		if (find_exported_symbol_in_section(&syms, mod, fsa))
			return true;
	}

	pr_debug("Failed to find symbol %s\n", fsa->name);
	return false;
}

/* Port of find_module_all(), kernel/module/main.c, v7.3 */
struct module *find_module_all(const char *name, size_t len,
			       bool even_unformed)
{
	struct module *mod;

	/* userspace: the array of linux/module.h, its slots read with acquire loads */
	for (auto &slot : modules) {
		mod = slot.load(std::memory_order_acquire);
		if (!mod)
			continue;
		if (!even_unformed && READ_ONCE(mod->state) == MODULE_STATE_UNFORMED)
			continue;
		if (strlen(mod->name) == len && !memcmp(mod->name, name, len))
			return mod;
	}
	return NULL;
}

/* Port of find_module(), kernel/module/main.c, v7.3 */
struct module *find_module(const char *name)
{
	return find_module_all(name, strlen(name), false);
}

/* Port of __module_get(), kernel/module/main.c, v7.3 */
void __module_get(struct module *module)
{
	if (module) {
		atomic_inc(&module->refcnt);
		(void)0;	/* userspace: no module_get tracepoint */
	}
}

/*
 * Port of try_module_get(), kernel/module/main.c, v7.3: the count goes up
 * only from a non-zero value, so once try_release_module_ref() has taken
 * it to zero no new reference can be had, whatever module_is_live() read.
 */
bool try_module_get(struct module *module)
{
	bool ret = true;

	if (module) {
		/* Can fail: the module may be going. */
		if (likely(module_is_live(module) &&
			   atomic_inc_not_zero(&module->refcnt) != 0))
			(void)0;	/* userspace: no module_get tracepoint */
		else
			ret = false;
	}
	return ret;
}

/* Port of module_put(), kernel/module/main.c, v7.3 */
void module_put(struct module *module)
{
	int ret;

	if (module) {
		ret = atomic_dec_if_positive(&module->refcnt);
		WARN_ON(ret < 0);	/* one put too many */
		(void)0;	/* userspace: no module_put tracepoint */
	}
}

/* Port of module_refcount(), kernel/module/main.c, v7.3 */
int module_refcount(struct module *mod)
{
	return atomic_read(&mod->refcnt) - MODULE_REF_BASE;
}

namespace kshim {

int moduleListAdd(struct module *mod)
{
	for (auto &slot : modules) {
		if (slot.load(std::memory_order_relaxed))
			continue;
		slot.store(mod, std::memory_order_release);
		return 0;
	}
	return -ENOMEM;
}

void moduleListDel(struct module *mod)
{
	for (auto &slot : modules)
		if (slot.load(std::memory_order_relaxed) == mod)
			slot.store(nullptr, std::memory_order_release);
}

bool moduleTextLoading(unsigned long addr)
{
	for (auto &slot : modules) {
		struct module *mod = slot.load(std::memory_order_acquire);

		if (mod && READ_ONCE(mod->state) == MODULE_STATE_UNFORMED &&
		    (within_module_mem_type(addr, mod, MOD_TEXT) ||
		     within_module_mem_type(addr, mod, MOD_NOINSTR_TEXT) ||
		     within_module_mem_type(addr, mod, MOD_INIT_TEXT)))
			return true;
	}
	return false;
}

} /* namespace kshim */
