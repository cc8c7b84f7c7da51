/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Counts in report text: "1 violation", "2 violations". Any thread; allocates.
 */
#pragma once

#include <string>

#include <fmt/format.h>

namespace kshim {

/* @n and the noun: @one for 1, else @many (default: @one + "s"). */
inline std::string nOf(unsigned long n, const char *one, const char *many = nullptr)
{
	if (n == 1)
		return fmt::format("1 {}", one);
	return many ? fmt::format("{} {}", n, many) : fmt::format("{} {}s", n, one);
}

} /* namespace kshim */
