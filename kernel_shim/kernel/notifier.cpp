// SPDX-License-Identifier: GPL-2.0-only
/*
 * The blocking notifier chain (linux/notifier.h): the module notifiers'
 * chain, kept by priority.
 *
 * Port of the parts of kernel/notifier.c, v6.16, that pokelab's callers use.
 */
#include <cerrno>
#include <mutex>

#include <linux/bug.h>
#include <linux/notifier.h>

/* Port of blocking_notifier_chain_register(), kernel/notifier.c */
int blocking_notifier_chain_register(struct blocking_notifier_head *nh, struct notifier_block *n)
{
	std::lock_guard<std::mutex> l(nh->rwsem);
	struct notifier_block **nl = &nh->head;

	while (*nl) {
		if (WARN_ON_ONCE(*nl == n))
			return -EEXIST;
		if (n->priority > (*nl)->priority)
			break;
		nl = &(*nl)->next;
	}
	n->next = *nl;
	*nl = n;
	return 0;
}

/* Port of blocking_notifier_chain_unregister(), kernel/notifier.c */
int blocking_notifier_chain_unregister(struct blocking_notifier_head *nh,
				       struct notifier_block *n)
{
	std::lock_guard<std::mutex> l(nh->rwsem);

	for (struct notifier_block **nl = &nh->head; *nl; nl = &(*nl)->next) {
		if (*nl == n) {
			*nl = n->next;
			return 0;
		}
	}
	return -ENOENT;
}

/* Port of blocking_notifier_call_chain() and notifier_call_chain(), kernel/notifier.c */
int blocking_notifier_call_chain(struct blocking_notifier_head *nh, unsigned long val, void *v)
{
	std::lock_guard<std::mutex> l(nh->rwsem);
	int ret = NOTIFY_DONE;

	for (struct notifier_block *nb = nh->head; nb; nb = nb->next) {
		ret = nb->notifier_call(nb, val, v);
		if (ret & NOTIFY_STOP_MASK)
			break;
	}
	return ret;
}
