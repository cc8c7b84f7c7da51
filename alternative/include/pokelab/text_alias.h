/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The writable alias of the program's text (text_alias.cpp): what plays
 * the kernel's temporary text_poke_mm for text_poke_memcpy().
 *
 * At the first boot with pokelab.poke=alias (the default) the program's own
 * executable segment is moved onto a memfd, mapped r-x where it was: the same
 * bytes at the same addresses, never writable. A write maps a second, rw-
 * (never executable) view of that memfd elsewhere, copies through it, and
 * the view stays mapped while text_mutex is held (it is unmapped when
 * text_mutex is released; a write made without text_mutex, such as boot's
 * text_poke_early() calls, unmaps it at once). execmem pages (module and
 * JIT text) are memfd pages too (linux/execmem.h): each gets a one-page
 * view for the hold in the same way, whatever pokelab.poke= says (a
 * shared r-x page cannot be written through /proc/self/mem). Text that is
 * neither, and the program's text with pokelab.poke=procmem before it was
 * ever moved, goes through pwrite() on /proc/self/mem instead.
 *
 * Caller: the writer of text (text_mutex holder, or the boot CPU before the
 * others run); task context, never a signal handler.
 */
#pragma once

#include <cstddef>
#include <string>

namespace pokelab {

/*
 * Boot (poking_init()): move the text onto the memfd if @want and not yet
 * done. Returns the writer's name for the machine line ("alias" or
 * "procmem"); @note gets one line if the move was wanted and failed.
 */
const char *textAliasInit(bool want, std::string &note);

/*
 * Copy @len bytes from @src to the text at @dst through the alias, if @dst
 * lies in the moved segment: true when written, false when the caller must
 * use /proc/self/mem.
 */
bool textAliasWrite(void *dst, const void *src, size_t len);

/* The rw- view's maps and unmaps since the process started (for bench and docs). */
struct TextAliasStats {
	unsigned long maps, unmaps, writes;
};
TextAliasStats textAliasStats();

} /* namespace pokelab */
