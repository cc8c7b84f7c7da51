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

/*
 * The window lets a CPU fetch one stream only, besides an INT3 at the
 * site's first byte, and that stream is an acceptable one over the whole
 * window (phase 1's INT3 before the old bytes, phase 3's first byte before
 * the new tail): no torn fetch. findTorn() would say the same: the INT3 is
 * skipped, every boundary it reaches is one of that candidate's (a stream
 * whose bytes are the candidate's decodes as the candidate does), and
 * there the bytes match the candidate to its end.
 */
bool oneAcceptableStream(const Window &w)
{
	unsigned int other = 0;
	u8 x = 0;

	for (unsigned int k = 0; k < w.p[0].n; k++)
		if (w.p[0].v[k] != kInt3) {
			x = w.p[0].v[k];
			other++;
		}
	if (other != 1)
		return false;
	for (unsigned int k = 1; k < w.len; k++)
		if (w.p[k].n != 1)
			return false;
	for (unsigned int c = 0; c < w.ncand; c++) {
		bool same = w.cand[c][0] == x;

		for (unsigned int k = 1; same && k < w.len; k++)
			same = w.cand[c][k] == w.p[k].v[0];
		if (same)
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

	if (oneAcceptableStream(w))
		return false;

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

/*
 * What a CPU with window (@serial, @upTo] may fetch at each byte of a site,
 * looked up once for the shortcuts below (the site's bytes, the values
 * each may hold, the text's own where the operation has no byte).
 */
struct SiteView {
	const ByteHist *b[kSiteMax];
	PSet p[kSiteMax];
	u8 old[kSiteMax];
};

/*
 * Fill @v for @in's window (@serial, @upTo]; false when a byte's values
 * from before @serial were dropped for capacity (the window is unknown,
 * counted as lost).
 */
bool siteView(const Intent &in, u64 serial, u64 upTo, SiteView *v)
{
	for (unsigned int k = 0; k < in.len; k++) {
		const ByteHist *b = findByte(in.addr + k);

		v->b[k] = b;
		if (b && b->lossSeq > serial) {
			countLost(&XmcStats::lostValues);
			return false;
		}
		if (b) {
			v->p[k] = possible(b, serial, upTo);
			v->old[k] = b->old;
		} else {
			v->old[k] = *(const volatile u8 *)(in.addr + k);
			v->p[k] = PSet{1, {v->old[k]}};
		}
	}
	return true;
}

/*
 * The window cannot be torn when every value the CPU may fetch at the
 * site's first byte is an INT3 and no acceptable stream starts with one
 * (phase 2's writes, the CPUs serialised after phase 1): findTorn() skips
 * the INT3 (the handler owns it) and reaches no other boundary, as no
 * stream's first instruction can be fetched whole. Decided without
 * building the window: the same verdict, at a fraction of the cost.
 */
bool trapsAtFirstByte(const Intent &in, const SiteView &v)
{
	const ByteHist *b = v.b[0];

	if (!b || b->old == kInt3 || in.bytes[0] == kInt3)
		return false;
	for (unsigned int k = 0; k < in.nalt; k++)
		if (in.alt[k][0] == kInt3)
			return false;
	return v.p[0].n == 1 && v.p[0].v[0] == kInt3;
}

/*
 * oneAcceptableStream() decided without building the window, for the
 * usual shape: nothing after the site was written or is to be (no byte of
 * the operation's, no site there), so every stream holds the text's own
 * bytes there, and only the site's bytes can differ. Exactly what
 * buildWindow() and oneAcceptableStream() would find; false when unsure.
 */
bool oneStreamAtSite(const Intent &in, const SiteView &v)
{
	unsigned long pageEnd = ((in.addr + in.len - 1) | 4095) + 1, lo, hi;
	unsigned long end = std::min(pageEnd, in.addr + in.len + 15);
	u8 fetch[kSiteMax];
	unsigned int other = 0;

	if (intentRange(in.addr, &lo, &hi) != &in || hi < in.addr + in.len)
		return false;
	/* after the site: no byte of the operation's, no site */
	if (intentRange(in.addr + in.len, &lo, &hi) || hi < end)
		return false;
	if (op->index.maybeAny(in.addr + in.len, (unsigned int)(end - in.addr - in.len)))
		return false;
	for (unsigned int j = 0; j < v.p[0].n; j++)
		if (v.p[0].v[j] != kInt3) {
			fetch[0] = v.p[0].v[j];
			other++;
		}
	if (other != 1)
		return false;
	for (unsigned int k = 1; k < in.len; k++) {
		if (v.p[k].n != 1)
			return false;
		fetch[k] = v.p[k].v[0];
	}
	if (!memcmp(fetch, v.old, in.len) || !memcmp(fetch, in.bytes, in.len))
		return true;
	for (unsigned int k = 0; k < in.nalt; k++)
		if (!memcmp(fetch, in.alt[k], in.len))
			return true;
	return false;
}

/* R1 for one CPU (and all that share its @serial) on one site, up to write @upTo. */
/* Where R1 keeps the last write it decided @in's window for @serial up to. */
u64 &decidedFor(const Intent &in, u64 serial)
{
	unsigned int k;

	for (k = 0; k < in.decN; k++)
		if (in.decSerial[k] == serial)
			return in.decUpTo[k];
	auto it = op->decided.find({in.addr, serial});
	if (it != op->decided.end())
		return it->second;
	if (in.decN < 4) {
		k = in.decN++;
	} else {
		/* the oldest inline entry moves to the map */
		k = in.decNext;
		in.decNext = (in.decNext + 1) % 4;
		op->decided[{in.addr, in.decSerial[k]}] = in.decUpTo[k];
	}
	in.decSerial[k] = serial;
	in.decUpTo[k] = 0;
	return in.decUpTo[k];
}

void checkSite(const Intent &in, u64 serial, u64 upTo, int cpu, bool written)
{
	u64 last = written ? upTo : lastWriteTo(in, upTo);
	u64 &seen = decidedFor(in, serial);
	SiteView sv;
	Window w;
	Torn t;

	/* A window only grows when its site is written: decided once per write. */
	if (last <= serial || last <= seen)
		return;
	seen = last;
	/* a byte whose values from before @serial the model dropped: the window is unknown */
	static_assert(sizeof(in.bytes) == kSiteMax, "a site is at most kSiteMax bytes");
	if (!siteView(in, serial, upTo, &sv))
		return;
	if (trapsAtFirstByte(in, sv) || oneStreamAtSite(in, sv)) {
		stats.windows++;
		return;
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
