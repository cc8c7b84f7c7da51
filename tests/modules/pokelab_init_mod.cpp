// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab_init_mod: a module with init memory (linux/init.h), for the
 * loader's init types and the init sites of jump labels and static calls
 * (tests/module/module_init_test.cpp, pokelab torture --module). Its init
 * text has sites of three keys and an inline static call: its own
 * pokelab_init_mod_key (which also has a site in its core text),
 * pokelab_init_mod_only_key (no site anywhere else), pokelab's
 * pokelab_module_key, and pokelab's pokelab_module_call2; its init data
 * and init rodata feed the init's result. Once the module is live its
 * init memory is freed, and no flip or update may write there.
 */
#include <linux/compiler.h>
#include <linux/export.h>
#include <linux/jump_label.h>
#include <linux/module.h>
#include <linux/static_call.h>
#include <pokelab/module_calls.h>
/* last: glibc's headers spell __init as an identifier */
#include <linux/init.h>

extern "C" void pokelab_module_report(const char *mod, int event, long val);

DEFINE_STATIC_KEY_FALSE(pokelab_init_mod_key);
DEFINE_STATIC_KEY_FALSE(pokelab_init_mod_only_key);

extern "C" {
int pokelab_init_mod_seed __initdata = 40;
extern const int pokelab_init_mod_table[4];
const int pokelab_init_mod_table[4] __initconst = {1, 2, 3, 4};
}

/*
 * In init text: pokelab_module_call2(x) (x + 2 at _b, its start), + 1000
 * with pokelab_init_mod_key on, + 100 with pokelab_module_key, + 10000
 * with pokelab_init_mod_only_key
 */
extern "C" __init __noinline int pokelab_init_mod_init_sites(int x)
{
	int v = static_call(pokelab_module_call2)(x);

	if (static_branch_unlikely(&pokelab_init_mod_key))
		v += 1000;
	if (static_branch_unlikely(&pokelab_module_key))
		v += 100;
	if (static_branch_unlikely(&pokelab_init_mod_only_key))
		v += 10000;
	return v;
}

/*
 * The same in core text, without the init-only key: what runs after the
 * init (exported, for symbol_get() in pokelab torture --module)
 */
extern "C" __noinline int pokelab_init_mod_core_sites(int x)
{
	int v = static_call(pokelab_module_call2)(x);

	if (static_branch_unlikely(&pokelab_init_mod_key))
		v += 1000;
	if (static_branch_unlikely(&pokelab_module_key))
		v += 100;
	return v;
}
EXPORT_SYMBOL(pokelab_init_mod_core_sites);

/* Reports 1: the init sites' value for seed + table[3] (44); 3: where the init sites are */
extern "C" __init int pokelab_init_mod_init(void)
{
	volatile int i = 3;

	pokelab_module_report("pokelab_init_mod", 1,
			      pokelab_init_mod_init_sites(pokelab_init_mod_seed +
							  pokelab_init_mod_table[i]));
	pokelab_module_report("pokelab_init_mod", 3, (long)&pokelab_init_mod_init_sites);
	return 0;
}

extern "C" void pokelab_init_mod_exit(void)
{
}

module_init(pokelab_init_mod_init);
module_exit(pokelab_init_mod_exit);
