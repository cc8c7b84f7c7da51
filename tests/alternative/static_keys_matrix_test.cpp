// SPDX-License-Identifier: GPL-2.0-only
/*
 * The 18-case static-key matrix of lib/test_static_keys.c: old
 * (static_key_true/false) and new (static_branch_likely/unlikely) API, true
 * and false keys, keys that start inverted, internal keys and "external"
 * ones (static_keys_matrix_base.cpp). Verify, invert every key once,
 * verify, invert back, verify: static_key_enabled() must match the expected
 * state and each branch must be taken exactly when its key is enabled.
 */
/* gtest first: it spells __attribute__((noinline)), which linux/compiler.h redefines */
#include <gtest/gtest.h>

#include <linux/jump_label.h>

#include "booted.h"

/* old keys */
struct static_key old_true_key = STATIC_KEY_INIT_TRUE;
struct static_key old_false_key = STATIC_KEY_INIT_FALSE;

/* new API */
DEFINE_STATIC_KEY_TRUE(true_key);
DEFINE_STATIC_KEY_FALSE(false_key);

/* external (static_keys_matrix_base.cpp) */
extern struct static_key base_old_true_key;
extern struct static_key base_inv_old_true_key;
extern struct static_key base_old_false_key;
extern struct static_key base_inv_old_false_key;
DECLARE_STATIC_KEY_TRUE(base_true_key);
DECLARE_STATIC_KEY_TRUE(base_inv_true_key);
DECLARE_STATIC_KEY_FALSE(base_false_key);
DECLARE_STATIC_KEY_FALSE(base_inv_false_key);

void test_static_key_base_init(void);

namespace {

struct test_key {
	bool init_state;
	struct static_key *key;
	bool (*test_key)(void);
};

#define test_key_func(key, branch)					\
	__noinline bool key##_##branch(void)				\
	{								\
		return branch(&key);					\
	}

test_key_func(old_true_key, static_key_true)
test_key_func(old_false_key, static_key_false)
test_key_func(true_key, static_branch_likely)
test_key_func(true_key, static_branch_unlikely)
test_key_func(false_key, static_branch_likely)
test_key_func(false_key, static_branch_unlikely)
test_key_func(base_old_true_key, static_key_true)
test_key_func(base_inv_old_true_key, static_key_true)
test_key_func(base_old_false_key, static_key_false)
test_key_func(base_inv_old_false_key, static_key_false)
test_key_func(base_true_key, static_branch_likely)
test_key_func(base_true_key, static_branch_unlikely)
test_key_func(base_inv_true_key, static_branch_likely)
test_key_func(base_inv_true_key, static_branch_unlikely)
test_key_func(base_false_key, static_branch_likely)
test_key_func(base_false_key, static_branch_unlikely)
test_key_func(base_inv_false_key, static_branch_likely)
test_key_func(base_inv_false_key, static_branch_unlikely)

const struct test_key static_keys[] = {
	{ true, &old_true_key, old_true_key_static_key_true },
	{ false, &old_false_key, old_false_key_static_key_false },
	{ true, &true_key.key, true_key_static_branch_likely },
	{ true, &true_key.key, true_key_static_branch_unlikely },
	{ false, &false_key.key, false_key_static_branch_likely },
	{ false, &false_key.key, false_key_static_branch_unlikely },
	{ true, &base_old_true_key, base_old_true_key_static_key_true },
	{ false, &base_inv_old_true_key, base_inv_old_true_key_static_key_true },
	{ false, &base_old_false_key, base_old_false_key_static_key_false },
	{ true, &base_inv_old_false_key, base_inv_old_false_key_static_key_false },
	{ true, &base_true_key.key, base_true_key_static_branch_likely },
	{ true, &base_true_key.key, base_true_key_static_branch_unlikely },
	{ false, &base_inv_true_key.key, base_inv_true_key_static_branch_likely },
	{ false, &base_inv_true_key.key, base_inv_true_key_static_branch_unlikely },
	{ false, &base_false_key.key, base_false_key_static_branch_likely },
	{ false, &base_false_key.key, base_false_key_static_branch_unlikely },
	{ true, &base_inv_false_key.key, base_inv_false_key_static_branch_likely },
	{ true, &base_inv_false_key.key, base_inv_false_key_static_branch_unlikely },
};

void invert_key(struct static_key *key)
{
	if (static_key_enabled(key))
		static_key_disable(key);
	else
		static_key_enable(key);
}

void invert_keys(const struct test_key *keys, int size)
{
	struct static_key *previous = NULL;

	for (int i = 0; i < size; i++) {
		if (previous != keys[i].key) {
			invert_key(keys[i].key);
			previous = keys[i].key;
		}
	}
}

/*
 * Port of verify_keys(), lib/test_static_keys.c: returns the number of
 * failed checks (the kernel stops at the first with -EINVAL), and names
 * each failure.
 */
int verify_keys(const struct test_key *keys, int size, bool invert, bool report = true)
{
	int bad = 0;

	for (int i = 0; i < size; i++) {
		bool enabled = static_key_enabled(keys[i].key);
		bool init = keys[i].init_state;

		if (enabled != (invert ? !init : init)) {
			bad++;
			if (report)
				ADD_FAILURE() << "case " << i << ": enabled " << enabled;
		}
		if (keys[i].test_key() != enabled) {
			bad++;
			if (report)
				ADD_FAILURE() << "case " << i << ": branch differs from enabled";
		}
	}
	return bad;
}

class StaticKeysMatrix : public pokelab::test::Booted
{
};

TEST_F(StaticKeysMatrix, EighteenCases)
{
	const int size = sizeof(static_keys) / sizeof(static_keys[0]);

	ASSERT_EQ(size, 18);
	EXPECT_EQ(jump_label_nr_sites(&base_true_key.key), 2u);
	EXPECT_EQ(jump_label_nr_sites(&old_true_key), 1u);

	test_static_key_base_init();

	EXPECT_EQ(verify_keys(static_keys, size, false), 0);
	invert_keys(static_keys, size);
	EXPECT_EQ(verify_keys(static_keys, size, true), 0);
	invert_keys(static_keys, size);
	EXPECT_EQ(verify_keys(static_keys, size, false), 0);

	/* userspace: undo the base "module" init, the keys outlive this machine */
	test_static_key_base_init();
}

/* The checker fires: a verify against the wrong expectation reports every case. */
TEST_F(StaticKeysMatrix, VerifyCatchesAWrongState)
{
	test_static_key_base_init();
	/* every key's state is "wrong" against the inverted expectation; the branches still agree */
	EXPECT_EQ(verify_keys(static_keys, 18, true, false), 18);
	test_static_key_base_init();
}

} /* namespace */
