/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Lock-less, NULL-terminated singly linked lists.
 *
 * CUSTOM: the part of include/linux/llist.h and lib/llist.c that
 * kernel/smp.c uses, written fresh for C++20 on GCC's __atomic builtins.
 * A node is one next pointer, a head one first pointer, as the kernel's.
 * llist_add() is a compare-and-exchange loop that reports whether the list
 * was empty; llist_del_all() takes the whole list with one exchange, newest
 * entry first (llist_reverse_order() turns it into arrival order). Both are
 * fully ordered, locked read-modify-writes on x86, and each records one
 * fence on the calling CPU (kernel_shim/cpu_events.h), as linux/atomic.h's
 * RMWs do: a failed compare-and-exchange too.
 *
 * Any number of CPUs may add at once, concurrently with one deleter. The
 * entries a deleter took are its own: it walks and relinks them with plain
 * accesses. All of these are lock-free and async-signal-safe, from any
 * thread.
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include <kernel_shim/cpu_events.h>
#include <linux/compiler.h>
#include <linux/list.h>

struct llist_head {
	struct llist_node *first;
};

struct llist_node {
	struct llist_node *next;
};

static inline void init_llist_head(struct llist_head *list)
{
	WRITE_ONCE(list->first, nullptr);
}

#define llist_entry(ptr, type, member) container_of(ptr, type, member)

/* Whether &@ptr->@member is not NULL (an entry of a NULL node has a NULL member only at 0). */
#define member_address_is_nonnull(ptr, member) \
	((uintptr_t)(ptr) + offsetof(__typeof__(*(ptr)), member) != 0)

/* Walk the entries from @node on; the loop must not free or relink @pos. */
#define llist_for_each_entry(pos, node, member)					\
	for ((pos) = llist_entry((node), __typeof__(*(pos)), member);		\
	     member_address_is_nonnull(pos, member);				\
	     (pos) = llist_entry((pos)->member.next, __typeof__(*(pos)), member))

/* The same, with the next entry read into @n first, so that the loop may relink @pos. */
#define llist_for_each_entry_safe(pos, n, node, member)				\
	for ((pos) = llist_entry((node), __typeof__(*(pos)), member);		\
	     member_address_is_nonnull(pos, member) &&				\
		((n) = llist_entry((pos)->member.next, __typeof__(*(n)), member), true); \
	     (pos) = (n))

static inline bool llist_empty(const struct llist_head *head)
{
	return READ_ONCE(head->first) == nullptr;
}

/* Add @new_first..@new_last (already linked) at the front; true if the list was empty. */
static inline bool llist_add_batch(struct llist_node *new_first, struct llist_node *new_last,
				   struct llist_head *head)
{
	struct llist_node *first = READ_ONCE(head->first);
	bool done;

	do {
		new_last->next = first;
		done = __atomic_compare_exchange_n(&head->first, &first, new_first, false,
						   __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
		kshim::cpuFenceEvent();
	} while (!done);

	return !first;
}

static inline bool llist_add(struct llist_node *new_node, struct llist_head *head)
{
	return llist_add_batch(new_node, new_node, head);
}

/* Take every entry, newest first; NULL if there was none. */
static inline struct llist_node *llist_del_all(struct llist_head *head)
{
	struct llist_node *first = __atomic_exchange_n(&head->first, nullptr, __ATOMIC_SEQ_CST);

	kshim::cpuFenceEvent();
	return first;
}

/* Reverse a list taken with llist_del_all(): oldest entry first. */
static inline struct llist_node *llist_reverse_order(struct llist_node *head)
{
	struct llist_node *new_head = nullptr;

	while (head) {
		struct llist_node *tmp = head;

		head = head->next;
		tmp->next = new_head;
		new_head = tmp;
	}

	return new_head;
}
