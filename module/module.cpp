// SPDX-License-Identifier: GPL-2.0-only
/*
 * The module list, its lookups, module references and the module notifier
 * chain (linux/module.h).
 *
 * Port of the parts of kernel/module/main.c, v6.16, that the rest of the
 * kernel reads. userspace: see linux/module.h.
 */
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include <linux/bug.h>
#include <linux/module.h>
#include <linux/notifier.h>

#include "internal.h"

DEFINE_MUTEX(module_mutex);
BLOCKING_NOTIFIER_HEAD(module_notify_list);
DECLARE_WAIT_QUEUE_HEAD(module_wq);

namespace {

std::atomic<struct module *> modules[MAX_MODULES];

} /* namespace */

int register_module_notifier(struct notifier_block *nb)
{
	return blocking_notifier_chain_register(&module_notify_list, nb);
}

int unregister_module_notifier(struct notifier_block *nb)
{
	return blocking_notifier_chain_unregister(&module_notify_list, nb);
}

bool within_module_mem_type(unsigned long addr, const struct module *mod, enum mod_mem_type type)
{
	unsigned long base = (unsigned long)mod->mem[type].base;

	return base && addr - base < mod->mem[type].size;
}

bool within_module(unsigned long addr, const struct module *mod)
{
	for (int t = 0; t < MOD_MEM_NUM_TYPES; t++)
		if (within_module_mem_type(addr, mod, (enum mod_mem_type)t))
			return true;
	return false;
}

/* Port of __module_address(), kernel/module/main.c (the list walk for mod_find()) */
struct module *__module_address(unsigned long addr)
{
	for (auto &slot : modules) {
		struct module *mod = slot.load(std::memory_order_acquire);

		if (mod && mod->state != MODULE_STATE_UNFORMED && within_module(addr, mod))
			return mod;
	}
	return nullptr;
}

/* Port of __module_text_address(), kernel/module/main.c */
struct module *__module_text_address(unsigned long addr)
{
	struct module *mod = __module_address(addr);

	if (mod && !within_module_mem_type(addr, mod, MOD_TEXT) &&
	    !within_module_mem_type(addr, mod, MOD_INIT_TEXT) &&
	    !within_module_mem_type(addr, mod, MOD_NOINSTR_TEXT))
		mod = nullptr;
	return mod;
}

bool is_module_address(unsigned long addr)
{
	return __module_address(addr) != nullptr;
}

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

struct module *find_module(const char *name)
{
	for (auto &slot : modules) {
		struct module *mod = slot.load(std::memory_order_acquire);

		if (mod && mod->state != MODULE_STATE_UNFORMED && !strcmp(mod->name, name))
			return mod;
	}
	return nullptr;
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
