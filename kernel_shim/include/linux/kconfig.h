/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * IS_ENABLED(CONFIG_FOO): 1 when CONFIG_FOO is defined to 1, else 0, in
 * an expression (include/linux/kconfig.h's interface; pokelab has no
 * Kconfig, so an option is a macro a header or the build defines, e.g.
 * CONFIG_HAVE_STATIC_CALL_INLINE in linux/static_call.h or
 * -DCONFIG_MITIGATION_RETHUNK=1 for an object built with the thunks).
 *
 * CUSTOM: written fresh. How it works: pasting the option's value onto
 * __pokelab_one_ gives __pokelab_one_1 only for a value of 1, which
 * expands to "junk," and shifts a 1 into the second argument's place.
 */
#pragma once

#define __pokelab_one_1 junk,
#define __pokelab_second(a, b, ...) b
#define __pokelab_pick(x) __pokelab_second(x 1, 0, 0)
#define __pokelab_paste(v) __pokelab_pick(__pokelab_one_##v)
#define __pokelab_defined(v) __pokelab_paste(v)
#define IS_ENABLED(option) __pokelab_defined(option)
