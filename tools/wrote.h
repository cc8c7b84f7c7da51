/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Every file a command writes is named once it is complete and in place:
 * "pokelab: wrote t.svg (--timeline)", on stdout, after the run's own lines.
 */
#pragma once

#include <string>

#include <fmt/format.h>

namespace pokelab {

/* @path is written whole (renamed into place); @what: the option, or what it holds. */
inline void sayWrote(const std::string &path, const std::string &what)
{
	fmt::print("pokelab: wrote {} ({})\n", path, what);
}

} /* namespace pokelab */
