/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The median, for the figures that report one (bench, run recursion, run
 * bpf-stats), and its spread, the median absolute deviation: robust to the
 * odd iteration a busy host spoils. Any thread.
 */
#pragma once

#include <algorithm>
#include <cmath>
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

struct MedianMad {
	double median = 0;
	double mad = 0;		/* the median of |x - median| */
};

/* The median of @v and its median absolute deviation (both 0 for none). */
inline MedianMad medianMadOf(const std::vector<double> &v)
{
	MedianMad m;
	std::vector<double> dev;

	m.median = medianOf(v);
	for (double x : v)
		dev.push_back(std::fabs(x - m.median));
	m.mad = medianOf(dev);
	return m;
}

} /* namespace pokelab */
