// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unloading: module references between modules, delete_module(), and
 * freeing a module (pokelab/module_load.h, docs/modules.md).
 *
 * Port of the CONFIG_MODULE_UNLOAD part of kernel/module/main.c, v7.3:
 * module_unload_init(), already_uses(), add_module_usage(), ref_module(),
 * module_unload_free(), try_release_module_ref(), try_stop_module(), the
 * delete_module() system call, __symbol_get() and __symbol_put(),
 * free_mod_mem() and free_module(). No forced unload
 * (CONFIG_MODULE_FORCE_UNLOAD=n).
 *
 * The order that makes unloading safe against a racing try_module_get()
 * (module.cpp):
 *
 *	CPU0: delete_module()			CPU1: try_module_get()
 *	  try_release_module_ref():		  module_is_live(): yes
 *	    refcnt -= MODULE_REF_BASE  (1 -> 0)
 *	  state = GOING				  atomic_inc_not_zero(refcnt): 0, fails
 *	  ->exit(), free_module()
 *
 * A getter that counted first keeps the count above zero, and
 * try_release_module_ref() gives the base back (-EWOULDBLOCK). Checking the
 * count and then marking the module GOING, as this file did before, let a
 * getter that had passed its check count a module that was then freed
 * (tests/module/module_refcount_test.cpp).
 *
 * userspace: a system call is a function here (delete_module(name,
 * flags)); there are no capabilities, audit, livepatch, ftrace, sysfs,
 * parameters, taints or bug tables to tear down; the module list is the
 * array of linux/module.h; struct module is allocated apart from the
 * module's memory and freed after it.
 */
#include <cerrno>
#include <cstring>
#include <fcntl.h>

#include <kernel_shim/xmc.h>
#include <linux/bug.h>
#include <linux/execmem.h>
#include <linux/module.h>
#include <linux/printk.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <pokelab/module_load.h>

#include "internal.h"
#include "loader.h"

/* Port of module_unload_init(), kernel/module/main.c, v7.3 */
int module_unload_init(struct module *mod)
{
	/*
	 * The loader's base reference: a count of 0 means the module is
	 * going (try_release_module_ref() took it).
	 */
	atomic_set(&mod->refcnt, MODULE_REF_BASE);

	INIT_LIST_HEAD(&mod->source_list);
	INIT_LIST_HEAD(&mod->target_list);

	/* And one more while its init runs (do_init_module() drops it). */
	atomic_inc(&mod->refcnt);

	return 0;
}

/* Port of already_uses(), kernel/module/main.c, v7.3: does @a use @b? */
static int already_uses(struct module *a, struct module *b)
{
	struct module_use *use;

	list_for_each_entry(use, &b->source_list, source_list) {
		if (use->source == a)
			return 1;
	}
	pr_debug("%s does not use %s!\n", a->name, b->name);
	return 0;
}

/*
 * Port of add_module_usage(), kernel/module/main.c, v7.3: @a uses @b, on
 * @b's source list (who uses it) and @a's target list (what it uses).
 */
static int add_module_usage(struct module *a, struct module *b)
{
	struct module_use *use;

	pr_debug("Allocating new usage for %s.\n", a->name);
	use = kmalloc_obj(*use, GFP_ATOMIC);
	if (!use)
		return -ENOMEM;

	use->source = a;
	use->target = b;
	list_add(&use->source_list, &b->source_list);
	list_add(&use->target_list, &a->target_list);
	return 0;
}

/*
 * Port of strong_try_module_get(), kernel/module/main.c, v7.3: 0, -EBUSY
 * while @mod's init runs, -ENOENT once it is going.
 */
static inline int strong_try_module_get(struct module *mod)
{
	/*
	 * userspace: upstream BUG_ON()s on UNFORMED here, which a caller can
	 * meet through no fault of its own: __symbol_get() found @mod under
	 * RCU while it was GOING, and free_module() set it UNFORMED before its
	 * grace period (docs/modules.md, "An upstream race"). Taken as going.
	 *
	 *	CPU n (__symbol_get)		CPU 0 (free_module)
	 *	find_symbol(): GOING, found
	 *					mod->state = UNFORMED
	 *	strong_try_module_get(): BUG
	 */
	if (mod && READ_ONCE(mod->state) == MODULE_STATE_UNFORMED)
		return -ENOENT;
	if (mod && mod->state == MODULE_STATE_COMING)
		return -EBUSY;
	if (try_module_get(mod))
		return 0;
	else
		return -ENOENT;
}

/*
 * Port of __symbol_get(), kernel/module/main.c, v7.3: the export's value,
 * with a reference on its module (linux/module.h's symbol_get())
 */
void *__symbol_get(const char *symbol)
{
	struct find_symbol_arg fsa = {
		.name	= symbol,
		.gplok	= true,
		.warn	= true,
	};

	/*
	 * userspace: scoped_guard(rcu) spelt out (rcu_read_lock() and an
	 * unlock on each way out); no license flags: every export may be taken
	 */
	{
		rcu_read_lock();
		if (!find_symbol(&fsa)) {
			rcu_read_unlock();
			return NULL;
		}
		if (strong_try_module_get(fsa.owner)) {
			rcu_read_unlock();
			return NULL;
		}
		rcu_read_unlock();
	}
	return (void *)kernel_symbol_value(fsa.sym);
}

/* Port of __symbol_put(), kernel/module/main.c, v7.3: drop symbol_get()'s reference */
void __symbol_put(const char *symbol)
{
	struct find_symbol_arg fsa = {
		.name	= symbol,
		.gplok	= true,
	};

	rcu_read_lock();	/* userspace: guard(rcu) spelt out */
	BUG_ON(!find_symbol(&fsa));
	module_put(fsa.owner);
	rcu_read_unlock();	/* userspace: guard(rcu)'s end */
}

/* Port of ref_module(), kernel/module/main.c, v7.3: module_mutex held */
int ref_module(struct module *a, struct module *b)
{
	int err;

	if (b == NULL || already_uses(a, b))
		return 0;

	/* No reference to be had: fail. */
	err = strong_try_module_get(b);
	if (err)
		return err;

	err = add_module_usage(a, b);
	if (err) {
		module_put(b);
		return err;
	}
	return 0;
}

/* Port of module_unload_free(), kernel/module/main.c, v7.3: drop what @mod used */
void module_unload_free(struct module *mod)
{
	struct module_use *use, *tmp;

	mutex_lock(&module_mutex);
	list_for_each_entry_safe(use, tmp, &mod->target_list, target_list) {
		struct module *i = use->target;
		pr_debug("%s unusing %s\n", mod->name, i->name);
		module_put(i);
		list_del(&use->source_list);
		list_del(&use->target_list);
		kfree(use);
	}
	mutex_unlock(&module_mutex);
}

/* Port of try_force_unload(), kernel/module/main.c, v7.3 (!CONFIG_MODULE_FORCE_UNLOAD) */
static inline int try_force_unload(unsigned int flags __maybe_unused)
{
	return 0;
}

/*
 * Port of try_release_module_ref(), kernel/module/main.c, v7.3: take the
 * base reference away; 0 if that left none (the module is going), else the
 * base is given back unless the last holder let go meanwhile.
 */
static int try_release_module_ref(struct module *mod)
{
	int ret;

	/* Take away the reference the loader set */
	ret = atomic_sub_return(MODULE_REF_BASE, &mod->refcnt);
	BUG_ON(ret < 0);
	if (ret)
		/* A holder may put its reference now: give the base back unless it did */
		ret = atomic_add_unless(&mod->refcnt, MODULE_REF_BASE, 0);

	return ret;
}

/* Port of try_stop_module(), kernel/module/main.c, v7.3 */
static int try_stop_module(struct module *mod, int flags, int *forced)
{
	/* In use: stop unless forced. */
	if (try_release_module_ref(mod) != 0) {
		*forced = try_force_unload(flags);
		if (!(*forced))
			return -EWOULDBLOCK;
	}

	torture_delay(kshim::TortureDelay::ModuleRelease);	/* userspace: delay point */
	/* Going away. */
	mod->state = MODULE_STATE_GOING;

	return 0;
}

/* Port of free_mod_mem(), kernel/module/main.c, v7.3 */
void free_mod_mem(struct module *mod)
{
	for_each_mod_mem_type(type) {
		struct module_memory *mod_mem = &mod->mem[type];

		if (type == MOD_DATA)
			continue;

		/* userspace: no lockdep key ranges to free */

		if (mod_mem->size)
			module_memory_free(mod, type);
	}

	/* userspace: MOD_DATA does not host struct module here, but goes last as upstream */

	module_memory_free(mod, MOD_DATA);
	/* userspace: struct module and the loader's copy of the object, apart from its memory */
	free_module_struct(mod);
}

/* Port of free_module(), kernel/module/main.c, v7.3: off the lists, then freed */
void free_module(struct module *mod)
{
	/* userspace: no tracepoint, codetags or sysfs */

	/*
	 * On the list until the end (a second load of the name must wait),
	 * but unusable from here on.
	 */
	mutex_lock(&module_mutex);
	mod->state = MODULE_STATE_UNFORMED;
	mutex_unlock(&module_mutex);

	/* userspace: no arch cleanup (no ITS thunks) */

	/* What it used */
	module_unload_free(mod);

	/* userspace: no parameters, no livepatch */

	/* Off the list */
	mutex_lock(&module_mutex);
	/* userspace: the array list; lookups need no RCU read side (linux/module.h) */
	kshim::moduleListDel(mod);
	/* userspace: no bug table */

	/* Readers found it under RCU: wait for them before its memory goes. */
	synchronize_rcu();
	/* userspace: no tainted-modules list */

	mutex_unlock(&module_mutex);

	/* userspace: no arch init freeing, no per-CPU section */

	free_mod_mem(mod);
}

/*
 * Port of the delete_module() system call, kernel/module/main.c, v7.3.
 * userspace: a function taking the name as a plain string.
 */
/* userspace: a function, not a system call */
int delete_module(const char *name_user, unsigned int flags)
{
	struct module *mod;
	char name[MODULE_NAME_LEN];
	/* userspace: no module flags (taints) to record */

	int ret, len, forced = 0;

	/* userspace: no capabilities, and modules are never disabled */

	len = strncpy_from_user(name, name_user, MODULE_NAME_LEN);
	if (len == 0 || len == MODULE_NAME_LEN)
		return -ENOENT;
	if (len < 0)
		return len;

	/* userspace: no audit */

	if (mutex_lock_interruptible(&module_mutex) != 0)
		return -EINTR;

	mod = find_module(name);
	if (!mod) {
		ret = -ENOENT;
		goto out;
	}

	if (!list_empty(&mod->source_list)) {
		/* Modules use it: they must go first. */
		ret = -EWOULDBLOCK;
		goto out;
	}

	/* Still in its init, or going already? */
	if (mod->state != MODULE_STATE_LIVE) {
		/* userspace: no forced unload */
		pr_debug("%s already dying\n", mod->name);
		ret = -EBUSY;
		goto out;
	}

	/* An init and no exit: it cannot be removed */
	if (mod->init && !mod->exit) {
		forced = try_force_unload(flags);
		if (!forced) {
			ret = -EBUSY;
			goto out;
		}
	}

	ret = try_stop_module(mod, flags, &forced);
	if (ret != 0)
		goto out;

	mutex_unlock(&module_mutex);
	/* Nobody can get a reference now: tear it down. */
	if (mod->exit != NULL)
		mod->exit();
	kshim::xmcModuleTablesGone(mod);	/* userspace: before its sites are unlinked */
	blocking_notifier_call_chain(&module_notify_list,
				     MODULE_STATE_GOING, mod);
	/* userspace: no livepatch, ftrace or async probes */

	/* userspace: no last-unloaded-module record */

	free_module(mod);
	/* a load of the same name may be waiting in add_unformed_module() */
	wake_up_all(&module_wq);
	return 0;
out:
	mutex_unlock(&module_mutex);
	return ret;
}

int delete_module(struct module *mod)
{
	char name[MODULE_NAME_LEN];

	memcpy(name, mod->name, MODULE_NAME_LEN);
	return delete_module(name, O_NONBLOCK);
}
