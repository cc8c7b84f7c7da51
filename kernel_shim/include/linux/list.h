/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Doubly linked lists and container_of().
 *
 * CUSTOM: the interface of include/linux/list.h and
 * include/linux/container_of.h (struct list_head, INIT_LIST_HEAD(),
 * list_add(), list_add_tail(), list_del(), list_del_init(), list_empty(),
 * list_first_entry(), list_for_each_entry(), list_for_each_entry_safe()),
 * written fresh for the shim: C++'s decltype stands in for typeof, and
 * there is no list poisoning or CONFIG_DEBUG_LIST checking. No locking:
 * the caller serialises writers; no RCU variants.
 */
#pragma once

#include <cstddef>
#include <type_traits>

struct list_head {
	struct list_head *next, *prev;
};

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#define LIST_HEAD_INIT(name) { &(name), &(name) }
#define LIST_HEAD(name) struct list_head name = LIST_HEAD_INIT(name)

static inline void INIT_LIST_HEAD(struct list_head *list)
{
	list->next = list;
	list->prev = list;
}

static inline void __list_add(struct list_head *entry, struct list_head *prev,
			      struct list_head *next)
{
	next->prev = entry;
	entry->next = next;
	entry->prev = prev;
	prev->next = entry;
}

/* @entry after @head (a stack) */
static inline void list_add(struct list_head *entry, struct list_head *head)
{
	__list_add(entry, head, head->next);
}

/* @entry before @head (a queue) */
static inline void list_add_tail(struct list_head *entry, struct list_head *head)
{
	__list_add(entry, head->prev, head);
}

static inline void __list_del(struct list_head *prev, struct list_head *next)
{
	next->prev = prev;
	prev->next = next;
}

static inline void list_del(struct list_head *entry)
{
	__list_del(entry->prev, entry->next);
	entry->next = nullptr;
	entry->prev = nullptr;
}

static inline void list_del_init(struct list_head *entry)
{
	__list_del(entry->prev, entry->next);
	INIT_LIST_HEAD(entry);
}

static inline bool list_empty(const struct list_head *head)
{
	return head->next == head;
}

#define list_entry(ptr, type, member) container_of(ptr, type, member)
#define list_first_entry(ptr, type, member) list_entry((ptr)->next, type, member)

#define __list_type(pos) std::remove_reference_t<decltype(*(pos))>
#define list_next_entry(pos, member) list_entry((pos)->member.next, __list_type(pos), member)

#define list_for_each_entry(pos, head, member)					\
	for (pos = list_first_entry(head, __list_type(pos), member);		\
	     &pos->member != (head);						\
	     pos = list_next_entry(pos, member))

#define list_for_each_entry_safe(pos, n, head, member)				\
	for (pos = list_first_entry(head, __list_type(pos), member),		\
	     n = list_next_entry(pos, member);					\
	     &pos->member != (head);						\
	     pos = n, n = list_next_entry(n, member))
