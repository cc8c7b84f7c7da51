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

namespace kshim {
std::mutex module_mutex;
} /* namespace kshim */

namespace {

std::atomic<struct module *> modules[MAX_MODULES];

BLOCKING_NOTIFIER_HEAD(module_notify_list);

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

/* Port of try_module_get(), kernel/module/main.c */
bool try_module_get(struct module *mod)
{
	bool ret = true;

	if (mod) {
		/* a module going away gives no new references */
		if (likely(READ_ONCE(mod->state) != MODULE_STATE_GOING &&
			   READ_ONCE(mod->state) != MODULE_STATE_UNFORMED))
			atomic_inc(&mod->refcnt);
		else
			ret = false;
	}
	return ret;
}

/* Port of module_put(), kernel/module/main.c */
void module_put(struct module *mod)
{
	if (mod) {
		int ret = atomic_dec_if_positive(&mod->refcnt);

		WARN_ON(ret < 0);	/* one put too many */
	}
}

/* Port of module_refcount(), kernel/module/main.c */
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

int moduleNotify(unsigned long state, struct module *mod)
{
	return blocking_notifier_call_chain(&module_notify_list, state, mod);
}

} /* namespace kshim */
