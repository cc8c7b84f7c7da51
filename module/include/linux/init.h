/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * __init, __initdata, __initconst: a module's code and data that only its
 * init uses. They go to sections whose names begin with ".init", which
 * the loader lays out into the init memory types (MOD_INIT_TEXT,
 * MOD_INIT_DATA, MOD_INIT_RODATA), relocates, makes ROX (the text) and
 * frees a grace period after the init returned (module/main.cpp:
 * layout_sections(), do_init_module(), do_free_init()). Nothing may run or
 * patch them after that: jump labels and static calls mark their sites
 * there as init sites and leave them alone once the module is live.
 *
 * PORT: written fresh after include/linux/init.h, v7.3: the section names
 * and __cold, no __latent_entropy or __noinitretpoline.
 * userspace: only in a module (POKELAB_MODULE_BUILD, tests/modules/): the
 * program frees no init sections (and jump labels' init_section_contains()
 * knows none), and glibc and libstdc++ spell __init as an identifier, so
 * they are not defined for the program's code, and a module includes this
 * header last (linux/module.h does not include it, as upstream's does).
 */
#pragma once

#ifdef POKELAB_MODULE_BUILD
#define __init		__attribute__((__section__(".init.text"), __cold__))
#define __initdata	__attribute__((__section__(".init.data")))
#define __initconst	__attribute__((__section__(".init.rodata")))
#endif
