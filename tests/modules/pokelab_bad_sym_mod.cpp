// SPDX-License-Identifier: GPL-2.0-only
/*
 * A module that calls a function pokelab does not export: the loader must
 * refuse it ("Unknown symbol"), as the kernel refuses a module that uses an
 * unexported symbol.
 */
extern "C" void pokelab_not_exported(void);

extern "C" int pokelab_bad_sym_mod_init(void)
{
	pokelab_not_exported();
	return 0;
}
