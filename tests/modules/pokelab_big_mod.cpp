// SPDX-License-Identifier: GPL-2.0-only
/*
 * pokelab_big_mod: a module whose text, rodata, data and bss are each
 * more than a page, for the loader's multi-page memory types
 * (tests/module/module_memory_test.cpp): a jump-label site and an inline
 * static call placed after 8 KiB of filler text, reading rodata and data
 * past their first page. The loader used to refuse any type over 4096
 * bytes.
 */
#include <linux/compiler.h>
#include <linux/jump_label.h>
#include <linux/module.h>
#include <linux/static_call.h>
#include <pokelab/module_calls.h>

extern "C" void pokelab_module_report(const char *mod, int event, long val);

DEFINE_STATIC_KEY_FALSE(pokelab_big_mod_key);

/* 12 KiB each: the last entries lie in the third page */
extern "C" {
extern const unsigned int pokelab_big_mod_ro[3072];
const unsigned int pokelab_big_mod_ro[3072] = {1, 2, 3};
unsigned int pokelab_big_mod_data[3072] = {7};
unsigned int pokelab_big_mod_bss[4096];
}

/* 8 KiB of INT3 that nothing runs: what follows is in the third page of text */
extern "C" __noinline void pokelab_big_mod_filler(void)
{
	asm volatile(".skip 8192, 0xcc");
}

/*
 * data[3071] + bss[4095] (both set by the init, 5 and 6), + 100 with the
 * key on, + pokelab_module_call2(0) (2 at _b, its start, or 1 at _a): 13
 */
extern "C" __noinline int pokelab_big_mod_site(void)
{
	int v = (int)(pokelab_big_mod_data[3071] + pokelab_big_mod_bss[4095]);

	if (static_branch_unlikely(&pokelab_big_mod_key))
		v += 100;
	return v + static_call(pokelab_module_call2)(0);
}

extern "C" int pokelab_big_mod_init(void)
{
	pokelab_big_mod_data[3071] = 5;
	pokelab_big_mod_bss[4095] = 6;
	/* 3: the rodata's third entry, read through a volatile index */
	volatile int i = 2;

	pokelab_module_report("pokelab_big_mod", 1, pokelab_big_mod_ro[i] + pokelab_big_mod_site());
	return 0;
}

extern "C" void pokelab_big_mod_exit(void)
{
}

module_init(pokelab_big_mod_init);
module_exit(pokelab_big_mod_exit);
