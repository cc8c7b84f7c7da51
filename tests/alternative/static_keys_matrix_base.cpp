// SPDX-License-Identifier: GPL-2.0-only
/*
 * The "external" keys of the static-key matrix: lib/test_static_key_base.c
 * in pokelab's form, defined in their own translation unit so that the
 * matrix test reaches them only by declaration, as the kernel's test module
 * reaches the base module's exported keys.
 */
#include <gtest/gtest.h>

#include <linux/jump_label.h>

/* old API */
struct static_key base_old_true_key = STATIC_KEY_INIT_TRUE;
struct static_key base_inv_old_true_key = STATIC_KEY_INIT_TRUE;
struct static_key base_old_false_key = STATIC_KEY_INIT_FALSE;
struct static_key base_inv_old_false_key = STATIC_KEY_INIT_FALSE;

/* new API */
DEFINE_STATIC_KEY_TRUE(base_true_key);
DEFINE_STATIC_KEY_TRUE(base_inv_true_key);
DEFINE_STATIC_KEY_FALSE(base_false_key);
DEFINE_STATIC_KEY_FALSE(base_inv_false_key);

static void invert_key(struct static_key *key)
{
	if (static_key_enabled(key))
		static_key_disable(key);
	else
		static_key_enable(key);
}

/*
 * test_static_key_base_init(): the "inv" keys start inverted.
 * userspace: also called again by the test (with @undo) to put them back,
 * since the test binary boots many machines and the keys outlive each.
 */
void test_static_key_base_init(void)
{
	invert_key(&base_inv_old_true_key);
	invert_key(&base_inv_old_false_key);
	invert_key(&base_inv_true_key.key);
	invert_key(&base_inv_false_key.key);
}
