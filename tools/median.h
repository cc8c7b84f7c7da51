/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The median, for the figures that report one (bench, run recursion):
 * robust to the odd iteration a busy host spoils. Any thread.
 */
#pragma once

#include <algorithm>
#include <vector>

namespace pokelab {

/* The median of @v (0 for none); @v is taken by value and sorted. */
inline double medianOf(std::vector<double> v)
{
	size_t n = v.size();

	if (!n)
		return 0;
	std::sort(v.begin(), v.end());
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

} /* namespace pokelab */
