// SPDX-License-Identifier: GPL-2.0-only
/*
 * R1, torn fetch: on a site's window, walk the instruction boundaries a
 * CPU can reach from the site's first byte (through the old instruction,
 * the new one, or an INT3 emulated as the new one), and at each look for a
 * combination of possible bytes that starts an instruction which is
 * neither the old one, nor the new one, nor an INT3. Decided as soon as a
 * window grows (a write to the site, the writer's IRQ enable, a CPU leaving
 * an EQS mid-operation), so the verdict comes before the CPU could act.
 */
#include <algorithm>
#include <cstring>

#define XMC_PRIVATE
#include "xmc_internal.h"

namespace kshim {

namespace xmc {

/*
 * At boundary @pos, byte @i: @live is the set of candidates the bytes so far
 * still match (bit k: candidate k, whose instruction at @pos is @len[k]
 * long). A value that matches none is a torn fetch; a candidate matched to
 * its length is a whole instruction.
 */
bool dfs(const Window &w, unsigned int pos, unsigned int i, unsigned int live, const int *len,
	 u8 *combo, Torn *t)
{
	const PSet &p = w.p[pos + i];

	for (unsigned int k = 0; k < p.n; k++) {
		u8 v = p.v[k];
		unsigned int next = 0;
		bool whole = false;

		if (i == 0 && v == kInt3)
			continue;	/* traps; the INT3 handler owns it */
		for (unsigned int c = 0; c < w.ncand; c++) {
			if (!(live & (1u << c)) || v != w.cand[c][pos + i])
				continue;
			next |= 1u << c;
			whole |= (int)i + 1 >= len[c];
		}
		combo[i] = v;
		if (!next) {
			unsigned int l = i + 1;

			for (unsigned int c = 0; c < w.ncand; c++)
				if (live & (1u << c))
					l = std::max<unsigned int>(l, len[c]);
			l = std::min<unsigned int>({l, kSiteMax, w.len - pos});
			/* show the rest as the first possible non-INT3 value of each byte */
			for (unsigned int j = i + 1; j < l; j++) {
				const PSet &q = w.p[pos + j];

				combo[j] = q.v[0] == kInt3 && q.n > 1 ? q.v[1] : q.v[0];
			}
			t->pos = pos;
			t->len = l;
			memcpy(t->bytes, combo, l);
			return true;
		}
		if (whole || pos + i + 1 >= w.len || i + 1 >= kSiteMax)
			continue;
		if (dfs(w, pos, i + 1, next, len, combo, t))
			return true;
	}
	return false;
}

bool findTorn(const Window &w, Torn *t)
{
	/* For each candidate stream: its instruction boundaries, lengths, fall-through. */
	bool bound[kCands][kWindow] = {}, falls[kCands][kWindow] = {}, reach[kWindow] = {};
	int len[kCands][kWindow] = {};
	u8 combo[kSiteMax];

	for (unsigned int c = 0; c < w.ncand; c++) {
		for (unsigned int pos = 0; pos < w.siteLen;) {
			int l = insnLength(w.cand[c] + pos, w.len - pos, &falls[c][pos]);

			bound[c][pos] = true;
			/* bytes that do not decode are compared as they are, to the site's end */
			len[c][pos] = l > 0 ? l : (int)(w.siteLen - pos);
			if (l <= 0)
				break;
			pos += l;
		}
	}
	reach[0] = true;
	for (unsigned int pos = 0; pos < w.siteLen; pos++) {
		unsigned int live = 0;
		int lens[kCands];

		if (!reach[pos])
			continue;
		for (unsigned int c = 0; c < w.ncand; c++) {
			lens[c] = len[c][pos];
			if (bound[c][pos])
				live |= 1u << c;
		}
		if (dfs(w, pos, 0, live, lens, combo, t))
			return true;
		/*
		 * Where a CPU goes next: past a whole instruction it can fetch
		 * that falls through. An INT3 at the site's first byte is
		 * emulated as the site's instruction, which leaves the site.
		 */
		for (unsigned int c = 0; c < w.ncand; c++) {
			bool all = bound[c][pos] && falls[c][pos];

			for (int i = 0; all && i < len[c][pos] && pos + i < w.len; i++)
				all = w.p[pos + i].has(w.cand[c][pos + i]);
			if (all && pos + len[c][pos] < kWindow)
				reach[pos + len[c][pos]] = true;
		}
	}
	return false;
}

void fillBytes(XmcViolation *v, const Window &w, unsigned int pos, unsigned int len)
{
	/* At least the whole old and new instruction at @pos. */
	len = std::max<unsigned int>({len, (unsigned int)insnLength(w.old + pos, w.len - pos),
				      (unsigned int)insnLength(w.fin + pos, w.len - pos)});
	len = std::min<unsigned int>({len, kSiteMax, w.len - pos});
	v->site = w.start + pos;
	v->len = len;
	for (unsigned int i = 0; i < len; i++) {
		const PSet &p = w.p[pos + i];

		v->nposs[i] = std::min<u8>(p.n, 4);
		memcpy(v->poss[i], p.v, v->nposs[i]);
		v->oldBytes[i] = w.old[pos + i];
		v->newBytes[i] = w.fin[pos + i];
	}
}

/* Phases of the first and the last write to the site in (@serial, @upTo]. */
void phasesIn(XmcViolation *v, const Intent &in, u64 serial, u64 upTo)
{
	u64 first = ~0ull, last = 0;

	v->phase = v->phaseTo = 0;
	for (unsigned long a = in.addr; a < in.addr + in.len; a++) {
		const ByteHist *b = findByte(a);

		for (unsigned int i = 0; b && i < b->n; i++) {
			if (b->seq[i] <= serial || b->seq[i] > upTo)
				continue;
			if (b->seq[i] < first) {
				first = b->seq[i];
				v->phase = b->phase[i];
			}
			if (b->seq[i] >= last) {
				last = b->seq[i];
				v->phaseTo = b->phase[i];
			}
		}
	}
}

/* The site's last write up to @upTo (0: none). */
u64 lastWriteTo(const Intent &in, u64 upTo)
{
	u64 last = 0;

	for (unsigned long a = in.addr; a < in.addr + in.len; a++) {
		const ByteHist *b = findByte(a);

		for (unsigned int i = 0; b && i < b->n && b->seq[i] <= upTo; i++)
			last = std::max(last, b->seq[i]);
	}
	return last;
}

/* R1 for one CPU (and all that share its @serial) on one site, up to write @upTo. */
void checkSite(const Intent &in, u64 serial, u64 upTo, int cpu)
{
	u64 last = lastWriteTo(in, upTo);
	u64 &seen = op->decided[{in.addr, serial}];
	Window w;
	Torn t;

	/* A window only grows when its site is written: decided once per write. */
	if (last <= serial || last <= seen)
		return;
	seen = last;
	/* a byte whose values from before @serial the model dropped: the window is unknown */
	for (unsigned long a = in.addr; a < in.addr + in.len; a++) {
		const ByteHist *b = findByte(a);

		if (b && b->lossSeq > serial) {
			stats.lost++;
			return;
		}
	}
	buildWindow(in, serial, upTo, &w);
	stats.windows++;
	if (!findTorn(w, &t))
		return;

	XmcViolation v = {};

	v.rule = XmcRule::Torn;
	v.cpu = cpu;
	v.op = op->what;
	v.cpuSerial = serial;
	v.opFirst = op->first;
	phasesIn(&v, in, serial, upTo);
	fillBytes(&v, w, t.pos, t.len);
	memcpy(v.tornBytes, t.bytes, t.len);
	v.tornLen = t.len;
	report(v);
	forgive(cpu, upTo);
}

/*
 * R1 for @cpu, serialised at @serial, on every site the operation wrote in
 * (@since, @upTo] (@since >= @serial).
 */
void checkSince(u64 serial, u64 since, u64 upTo, int cpu)
{
	Write *w = std::upper_bound(op->writes, op->writes + op->nwrites, since,
				    [](u64 s, const Write &x) { return s < x.seq; });
	const Intent *done[64];
	unsigned int ndone = 0;

	for (; w < op->writes + op->nwrites && w->seq <= upTo; w++) {
		const Intent *in = intentAt(w->addr);
		bool seen = false;

		if (!in)
			continue;
		for (unsigned int k = 0; k < ndone; k++)
			seen |= done[k] == in;
		if (seen)
			continue;
		if (ndone < 64)
			done[ndone++] = in;
		checkSite(*in, serial, upTo, cpu);
	}
}

} /* namespace xmc */

} /* namespace kshim */
