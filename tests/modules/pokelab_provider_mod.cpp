// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab_provider_mod: a module that exports a function and a static key
 * (EXPORT_SYMBOL(), its ksymtab section) for pokelab_consumer_mod, which
 * cannot load without it and keeps it loaded while it is
 * (tests/module/module_symbols_test.cpp, pokelab torture --module).
 */
#include <linux/compiler.h>
#include <linux/export.h>
#include <linux/jump_label.h>
#include <linux/module.h>

DEFINE_STATIC_KEY_FALSE(pokelab_provider_key);
EXPORT_SYMBOL(pokelab_provider_key);

/* x + 7 with its key off, x + 70 with it on */
extern "C" __noinline int pokelab_provider_fn(int x)
{
	if (static_branch_unlikely(&pokelab_provider_key))
		return x + 70;
	return x + 7;
}
EXPORT_SYMBOL(pokelab_provider_fn);

extern "C" int pokelab_provider_init(void)
{
	return 0;
}

extern "C" void pokelab_provider_exit(void)
{
}

module_init(pokelab_provider_init);
module_exit(pokelab_provider_exit);
