/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * An option and the boot parameter that sets the same thing ("--cpus" and
 * "nr_cpus="), both given: refused with one line naming both (exit status
 * 2, command.h) unless their values are the same.
 */
#pragma once

#include <cctype>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace pokelab {

/*
 * A CPU list ("2-3", "3,2") as the set of CPUs it names, so that two
 * spellings of one set compare equal; false where it is not a plain list
 * of numbers and ranges (then the values are compared as text).
 */
inline bool cpuListSet(const std::string &list, std::set<unsigned long> *cpus)
{
	size_t pos = 0;

	if (list.empty())
		return false;
	while (pos <= list.size()) {
		size_t end = list.find(',', pos);
		std::string item = list.substr(pos, end == std::string::npos ? std::string::npos :
						end - pos);
		size_t dash = item.find('-');
		char *rest;
		unsigned long lo, hi;

		if (item.empty() || item.find_first_not_of("0123456789-") != std::string::npos)
			return false;
		lo = std::strtoul(item.c_str(), &rest, 10);
		if (rest == item.c_str())
			return false;
		hi = lo;
		if (dash != std::string::npos) {
			const char *h = item.c_str() + dash + 1;

			hi = std::strtoul(h, &rest, 10);
			if (rest == h || *rest || hi < lo || hi - lo > 4096)
				return false;
		} else if (*rest) {
			return false;
		}
		for (unsigned long c = lo; c <= hi; c++)
			cpus->insert(c);
		if (end == std::string::npos)
			break;
		pos = end + 1;
	}
	return true;
}

/* The same setting, whether spelt the same or not: a CPU list as a set, a count as a number */
inline bool sameTwinValue(const std::string &key, const std::string &a, const std::string &b)
{
	std::set<unsigned long> sa, sb;

	if (a == b)
		return true;
	if ((key == "nohz_full" || key == "nr_cpus") && cpuListSet(a, &sa) && cpuListSet(b, &sb))
		return sa == sb;
	return false;
}

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
		if (!p.rfind(prefix, 0) && !sameTwinValue(key, val, p.substr(prefix.size())))
			return fmt::format("{} {} and {}: the same setting, two values; expected "
					   "one of the two (or the same value)", opt, val, p);
	return "";
}

/* An option and the boot parameter it becomes; val empty where the option was not given */
struct BootTwin {
	const char *opt;	/* "--nohz-full" */
	std::string val;	/* as typed */
	const char *key;	/* "nohz_full" */
};

/*
 * A boot error about a value the user gave as an option, in the option's
 * words: "nohz_full=3: CPU 3 is beyond nr_cpus=2 (...); expected
 * nohz_full=CPULIST within 1" becomes "--nohz-full 3: CPU 3 is beyond
 * --cpus 2 (...); expected --nohz-full CPULIST within 1" where --nohz-full
 * and --cpus were typed. A value given only as a boot parameter keeps its
 * boot spelling.
 */
inline std::string inOptionWords(std::string err, const std::vector<BootTwin> &twins)
{
	for (const BootTwin &t : twins) {
		std::string key = std::string(t.key) + "=", opt = std::string(t.opt) + " ";

		if (t.val.empty())
			continue;
		for (const std::string &lead : {std::string("expected "), std::string("e.g. ")}) {
			for (size_t at = err.find(lead + key); at != std::string::npos;
			     at = err.find(lead + key, at + 1))
				err.replace(at + lead.size(), key.size(), opt);
		}
		std::string typed = key + t.val;

		for (size_t at = err.find(typed); at != std::string::npos;
		     at = err.find(typed, at + 1)) {
			size_t end = at + typed.size();
			char next = end < err.size() ? err[end] : ' ';

			if ((at && (std::isalnum((unsigned char)err[at - 1]) || err[at - 1] == '_' ||
				    err[at - 1] == '.')) ||
			    std::isalnum((unsigned char)next) || next == ',' || next == '-')
				continue;
			err.replace(at, key.size(), opt);
		}
	}
	return err;
}

} /* namespace pokelab */
