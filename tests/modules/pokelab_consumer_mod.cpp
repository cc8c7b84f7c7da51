// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab_consumer_mod: uses what pokelab_provider_mod exports, a function
 * it calls and a static key it has a site of, and exports a function of
 * its own (for symbol_get(): tests/module/module_symbols_test.cpp,
 * pokelab torture --module).
 */
#include <linux/compiler.h>
#include <linux/export.h>
#include <linux/jump_label.h>
#include <linux/module.h>

extern "C" void pokelab_module_report(const char *mod, int event, long val);

/* pokelab_provider_mod's */
DECLARE_STATIC_KEY_FALSE(pokelab_provider_key);
extern "C" int pokelab_provider_fn(int x);

/*
 * pokelab_provider_fn(x), + 1000 with the provider's key on: for x = 1, 8
 * with the key off, 1071 with it on (71 or 1008 while a flip is half done)
 */
extern "C" __noinline int pokelab_consumer_run(int x)
{
	int v = pokelab_provider_fn(x);

	if (static_branch_unlikely(&pokelab_provider_key))
		v += 1000;
	return v;
}
EXPORT_SYMBOL(pokelab_consumer_run);

extern "C" int pokelab_consumer_init(void)
{
	pokelab_module_report("pokelab_consumer_mod", 1, pokelab_consumer_run(1));
	return 0;
}

extern "C" void pokelab_consumer_exit(void)
{
}

module_init(pokelab_consumer_init);
module_exit(pokelab_consumer_exit);
