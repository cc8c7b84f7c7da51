/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the parts of kernel/module share and nothing else reads: the
 * module list's lock, the notifier chain, the wait queue of loads waiting
 * for another module's init.
 *
 * PORT: written fresh after kernel/module/internal.h. Private to module/.
 */
#pragma once

#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/notifier.h>
#include <linux/wait.h>

/* Protects the module list, each module's use lists, and state changes. */
extern struct mutex module_mutex;
extern struct blocking_notifier_head module_notify_list;
/* Woken when a module finishes loading or goes: resolve_symbol_wait() waits here. */
extern wait_queue_head_t module_wq;

namespace kshim {
/*
 * userspace: the module list is an array of slots (linux/module.h);
 * add and remove under module_mutex. moduleListAdd(): -ENOMEM when full.
 */
int moduleListAdd(struct module *mod);
void moduleListDel(struct module *mod);
} /* namespace kshim */
