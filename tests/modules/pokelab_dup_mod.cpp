// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab_dup_mod: exports a symbol pokelab_provider_mod also exports;
 * while that module is loaded the loader refuses it (verify_exported_symbols(),
 * tests/module/module_symbols_test.cpp).
 */
#include <linux/compiler.h>
#include <linux/export.h>
#include <linux/module.h>

extern "C" __noinline int pokelab_provider_fn(int x)
{
	return x;
}
EXPORT_SYMBOL(pokelab_provider_fn);

extern "C" int pokelab_dup_init(void)
{
	return 0;
}

extern "C" void pokelab_dup_exit(void)
{
}

module_init(pokelab_dup_init);
module_exit(pokelab_dup_exit);
