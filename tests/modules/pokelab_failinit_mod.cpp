// SPDX-License-Identifier: GPL-2.0-only
/*
 * A module whose init_module() fails: its jump-label site of pokelab's key
 * and its inline static call of pokelab's call are linked at
 * MODULE_STATE_COMING, so the failed load must unlink them again (the
 * GOING notifiers) before its memory goes.
 */
#include <linux/compiler.h>
#include <linux/module.h>
#include <pokelab/module_calls.h>

extern "C" __noinline int pokelab_failinit_mod_site(int x)
{
	if (static_branch_unlikely(&pokelab_module_key))
		return static_call(pokelab_module_call)(x) + 1;
	return static_call(pokelab_module_call)(x);
}

extern "C" int pokelab_failinit_mod_init(void)
{
	return pokelab_failinit_mod_site(1) > 0 ? -22 : 0;	/* -EINVAL */
}

module_init(pokelab_failinit_mod_init);
