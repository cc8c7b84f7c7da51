/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The replay tests' count of the model's stale-TLB reports (R6), for the
 * races they force on CPU 1 over one 4 KiB kernel range.
 */
#pragma once

#include <string>

#include <gtest/gtest.h>

#include <kernel_shim/xmc.h>
#include <kernel_shim/xmc_verdict.h>

namespace pokelab::test {

/*
 * The stale-TLB reports the model holds, after xmcQuiesce(). With @range,
 * each must name CPU 1 and [@range, @range + 4096) (a gtest failure if not).
 * Task context.
 */
inline unsigned long staleTlbReports(unsigned long range = 0)
{
	unsigned long n = 0;

	kshim::xmcQuiesce();
	for (const kshim::XmcViolation &v : kshim::xmcViolations()) {
		if (v.rule != kshim::XmcRule::StaleTlb)
			continue;
		n++;
		if (!range)
			continue;
		EXPECT_EQ(v.cpu, 1);
		EXPECT_EQ(v.site, range);
		EXPECT_EQ(v.rangeEnd, range + 4096);
		EXPECT_NE(kshim::xmcFormat(v).find("stale TLB: CPU 1"), std::string::npos)
			<< kshim::xmcFormat(v);
	}
	return n;
}

} /* namespace pokelab::test */
