/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What kernel/jump_label.c's port shares with its bug replays
 * (replay_jump_label.cpp). Private to the alternative module.
 * userspace: upstream keeps jump_label_update() static.
 */
#pragma once

#include <linux/bug.h>
#include <linux/jump_label.h>

struct static_key;
struct jump_entry;

/* Port of arch_jump_entry_size(), arch/x86/kernel/jump_label.c: 2 or 5 */
int arch_jump_entry_size(struct jump_entry *entry);

/*
 * Port of jump_entry_size(), include/linux/jump_label.h, v7.3: x86's sites
 * are 2 or 5 bytes, so no JUMP_LABEL_NOP_SIZE: the decoder says.
 */
static inline int jump_entry_size(struct jump_entry *entry)
{
	/* userspace: the !JUMP_LABEL_NOP_SIZE branch only (x86 defines none) */

	return arch_jump_entry_size(entry);
	/* userspace: (#endif) */
}

/* Port of jump_label_update(), kernel/jump_label.c. jump_label_mutex held. */
void jump_label_update(struct static_key *key);

/*
 * kernel/jump_label.c's helpers of the deferred keys (jump_label_deferred.cpp):
 * a decrement that does not take the count to 0, lock-free (false: the
 * slow path's), and the slow decrement itself. Task context.
 */
bool static_key_dec_not_one(struct static_key *key);
void __static_key_slow_dec(struct static_key *key);
/*
 * Port of STATIC_KEY_CHECK_USE(), include/linux/jump_label.h, v7.3: a key
 * changed before jump_label_init() linked its entries would patch nothing.
 */
#define STATIC_KEY_CHECK_USE(key) \
	((void)(key), WARN_ON(!static_key_initialized) /* userspace: no WARN() with a format */)

/*
 * Bug replays, test-only, each the code of before its fix, chosen in the
 * public function whose path the fix changed:
 *  - 224fa3552029: static_key_disable() took any non-zero cmpxchg result
 *    for 1 -> 0 (from static_key_disable());
 *  - 83ab38ef0a0b: static_key_slow_dec()'s fetch_add_unless() fast path,
 *    which lets 0 and -1 be decremented (from static_key_slow_dec()).
 */
void static_key_disable_cpuslocked_pre_224fa3552029(struct static_key *key);
void __static_key_slow_dec_cpuslocked_pre_83ab38ef0a0b(struct static_key *key);
