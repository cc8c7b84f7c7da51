// SPDX-License-Identifier: GPL-2.0-only
/*
 * R4, the batch's own text: an INT3 batch writes only inside the sites it
 * was given, and when it returns each site holds what its caller asked for
 * (no INT3 left behind, no byte missing).
 */
#include <algorithm>
#include <cstring>

#define XMC_PRIVATE
#include "xmc_internal.h"

namespace kshim {

namespace xmc {

/* Intents of the batch being queued (smp_text_poke_batch_add()), taken by its finish. */
IntentMap queuedIntents;

/* A violation on intent @in's site: old bytes, the requested ones, and @now. */
XmcViolation intentViolation(XmcRule rule, int cpu, const Intent &in, const u8 *now)
{
	XmcViolation v = {};

	v.rule = rule;
	v.cpu = cpu;
	v.op = op->what;
	v.opFirst = op->first;
	v.site = in.addr;
	v.len = in.len;
	oldBytes(in, v.oldBytes);
	memcpy(v.newBytes, in.bytes, in.len);
	for (unsigned int i = 0; i < in.len; i++) {
		v.nposs[i] = 1;
		v.poss[i][0] = now[i];
	}
	memcpy(v.tornBytes, now, in.len);
	v.tornLen = in.len;
	return v;
}

/* R4 at an INT3 batch's return: every site holds what its caller asked for. */
void checkFinished()
{
	int writer = tlsCpu >= 0 ? tlsCpu : 0;

	for (const auto &[addr, in] : op->intents) {
		u8 now[kSiteMax];
		bool ok;

		for (unsigned int i = 0; i < in.len; i++) {
			const ByteHist *b = findByte(addr + i);

			now[i] = b ? currentValue(b) : *(const volatile u8 *)(addr + i);
		}
		ok = !memcmp(now, in.bytes, in.len);
		for (unsigned int k = 0; k < in.nalt && !ok; k++)
			ok = !memcmp(now, in.alt[k], in.len);
		stats.siteChecks++;
		if (!ok)
			report(intentViolation(XmcRule::Unfinished, writer, in, now));
	}
}

/* R4, at a write of an INT3 batch: report its first changed byte outside every site. */
void checkStray(unsigned long a, const u8 *before, const u8 *after, size_t len, int writer)
{
	unsigned long lo, hi;

	/* the usual write: inside one site */
	if (intentRange(a, &lo, &hi) && a + len <= hi)
		return;
	for (size_t i = 0; i < len; i++) {
		if (before[i] == after[i] || intentAt(a + i))
			continue;

		XmcViolation v = {};

		v.rule = XmcRule::StrayWrite;
		v.cpu = writer >= 0 ? writer : 0;
		v.op = op->what;
		v.site = a + i;
		v.len = (unsigned int)std::min<size_t>(len - i, kSiteMax);
		for (unsigned int k = 0; k < v.len; k++) {
			v.nposs[k] = 2;
			v.poss[k][0] = before[i + k];
			v.poss[k][1] = after[i + k];
		}
		memcpy(v.oldBytes, before + i, v.len);
		memcpy(v.newBytes, after + i, v.len);
		report(v);
		return;
	}
}

} /* namespace xmc */

using namespace xmc;

namespace {

/* @in: the request for @len bytes at @a, emulated as @emulate unless that is the same */
void fillIntent(Intent &in, unsigned long a, unsigned int len, const void *bytes,
		const void *emulate)
{
	in.addr = a;
	in.len = len;
	memcpy(in.bytes, bytes, len);
	if (emulate && memcmp(emulate, bytes, len)) {
		in.hasEmu = true;
		memcpy(in.emu, emulate, len);
	}
}

} /* namespace */

void xmcIntent(const void *addr, const void *bytes, size_t len, const void *emulate) noexcept
{
	unsigned long a = (unsigned long)addr;
	unsigned int l = (unsigned int)std::min<size_t>(len, kSiteMax);
	IntentMap::iterator it;

	if (!xmcEnabled)
		return;
	/* R7: the request against the site's table (a key's entry, a static call's site) */
	checkRequest(a, (const u8 *)bytes, l);
	it = queuedIntents.lower_bound(a);
	if (it == queuedIntents.end() || it->first != a) {
		/* the usual case, built in place */
		fillIntent(queuedIntents.emplace_hint(it, a)->second, a, l, bytes, emulate);
		return;
	}

	Intent in{};

	fillIntent(in, a, l, bytes, emulate);
	if (it->second.len == in.len) {
		/* the site queued again: the last request wins, the earlier ones stay valid */
		in.nalt = std::min(it->second.nalt + 1, 3u);
		memcpy(in.alt[0], it->second.bytes, in.len);
		for (unsigned int k = 1; k < in.nalt; k++)
			memcpy(in.alt[k], it->second.alt[k - 1], in.len);
	}
	it->second = in;
}

} /* namespace kshim */
