// SPDX-License-Identifier: GPL-2.0-only
/*
 * A program whose noinstr text tests an ordinary static key: boot must
 * refuse it with "<key>: non-RO static key usage in noinstr" (objtool
 * warning 13's rule). Exits 0 when boot failed with that message.
 */
#include <cstdio>
#include <string>

#include <kernel_shim/boot.h>
#include <linux/jump_label.h>

DEFINE_STATIC_KEY_FALSE(bad_noinstr_key);

noinstr int bad_noinstr_user(void)
{
	return static_branch_unlikely(&bad_noinstr_key) ? 1 : 0;
}

int main()
{
	std::string err;

	if (kshim::boot("nr_cpus=2", &err, true) == 0) {
		fprintf(stderr, "boot accepted a non-RO key in noinstr text\n");
		kshim::shutdown();
		return 1;
	}
	fprintf(stderr, "boot refused, as it must: %s\n", err.c_str());
	return err.find("bad_noinstr_key: non-RO static key usage in noinstr") == 0 ? 0 : 1;
}
