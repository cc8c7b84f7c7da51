/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Names near a mistyped one, for "did you mean": one edit away (insert,
 * delete, change, swap two neighbours) or a prefix either way. Plain
 * functions of strings; any thread, not signal-safe (they allocate).
 */
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace pokelab {

/* Edits (insert, delete, change, swap two neighbours) from @a to @b. */
inline size_t editDistance(const std::string &a, const std::string &b)
{
	std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));

	for (size_t i = 0; i <= a.size(); i++)
		d[i][0] = i;
	for (size_t j = 0; j <= b.size(); j++)
		d[0][j] = j;
	for (size_t i = 1; i <= a.size(); i++)
		for (size_t j = 1; j <= b.size(); j++) {
			d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1,
					    d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
				d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
		}
	return d[a.size()][b.size()];
}

/* Does @a end in "-" @b ("timeline-gap" in "gap")? */
inline bool hyphenSuffix(const std::string &a, const std::string &b)
{
	return a.size() > b.size() + 1 && a[a.size() - b.size() - 1] == '-' &&
	       !a.compare(a.size() - b.size(), b.size(), b);
}

/*
 * Is @known near @typed: one edit away, a prefix of it (or it of @known) of
 * 2 letters or more, or the same name with a hyphenated word before it
 * ("--timeline-gap" and timeline's "--gap")?
 */
inline bool nearName(const std::string &typed, const std::string &known)
{
	bool prefix = typed.size() >= 2 && (!known.compare(0, typed.size(), typed) ||
					    !typed.compare(0, known.size(), known));

	return prefix || editDistance(typed, known) <= 1 || hyphenSuffix(typed, known) ||
	       hyphenSuffix(known, typed);
}

} /* namespace pokelab */
