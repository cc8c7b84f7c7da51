/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * An option and the boot parameter that sets the same thing ("--cpus" and
 * "nr_cpus="), both given: refused with one line naming both (exit status
 * 2, command.h) unless their values are the same.
 */
#pragma once

#include <string>
#include <vector>

#include <fmt/format.h>

namespace pokelab {

/*
 * An option and its boot-parameter twin given with different values
 * ("demo --cpus 4 nr_cpus=8"): one line naming both, else "" (absent, or
 * the same value). Neither silently wins: the kernel's last-one-counts
 * would let whichever the command appends last decide.
 */
inline std::string bootTwinConflict(const std::vector<std::string> &params,
				    const std::string &opt, const std::string &val,
				    const std::string &key)
{
	std::string prefix = key + "=";

	if (val.empty())
		return "";
	for (const std::string &p : params)
		if (!p.rfind(prefix, 0) && p.substr(prefix.size()) != val)
			return fmt::format("{} {} and {}: the same setting, two values; expected "
					   "one of the two (or the same value)", opt, val, p);
	return "";
}

} /* namespace pokelab */
