// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fetch windows: what a CPU that last serialised at write s may fetch from
 * a site once writes up to u are in memory, byte by byte (a value at s or
 * any value written in (s, u]), with the bytes after the site that
 * decoding may need, and the instruction streams that are acceptable
 * there; and the windows CPUs open themselves by leaving an EQS while an
 * operation writes (XmcCpu::fresh).
 */
#include <algorithm>
#include <cstring>
#include <vector>

#include <kernel_shim/disasm.h>
#include <linux/cpumask.h>

#define XMC_PRIVATE
#include "xmc_internal.h"

namespace kshim {

namespace xmc {

namespace {

int decode(const u8 *p, unsigned int len, bool *falls)
{
	ZydisDecodedInstruction zi;

	*falls = false;
	if (!len ||
	    !ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(zydisDecoder(), nullptr, p, len, &zi)))
		return 0;
	*falls = zi.meta.category != ZYDIS_CATEGORY_RET &&
		 zi.meta.category != ZYDIS_CATEGORY_UNCOND_BR &&
		 zi.meta.category != ZYDIS_CATEGORY_INTERRUPT &&
		 zi.mnemonic != ZYDIS_MNEMONIC_UD2 && zi.mnemonic != ZYDIS_MNEMONIC_UD1 &&
		 zi.mnemonic != ZYDIS_MNEMONIC_HLT;
	return zi.length;
}

} /* namespace */

/*
 * Length of the instruction at @p (0: it does not decode); *@falls says
 * whether execution can go on at the next byte after it (not a RET, an
 * unconditional jump, INT3/UD2 or the like).
 */
int insnLength(const u8 *p, unsigned int len, bool *falls)
{
	struct Len {
		s8 length;
		bool falls;
	};
	static DecodeMemo<Len, 4096> memo;
	Len l = memo.get(p, std::min(len, 15u), [](const u8 *q, unsigned int n) {
		Len r;

		r.length = (s8)decode(q, n, &r.falls);
		return r;
	});

	if (falls)
		*falls = l.falls;
	return l.length;
}

namespace {

/* intentRange()'s last answer */
struct {
	unsigned long lo = 1, hi = 0;
	const Intent *in = nullptr;
} lastRange;

/*
 * An INT3 batch's sites do not change while it runs: looked up in a flat
 * sorted copy of their addresses (one cache-friendly binary search), made
 * at the first lookup after they changed. Other operations add a site at
 * each write and look up in the map.
 */
std::vector<unsigned long> flatAddr;
std::vector<const Intent *> flatIn;
bool flatValid;
/* and by their first byte's address, for a trap's site (open addressing, a power of two) */
std::vector<const Intent *> flatByStart;

size_t startSlot(unsigned long a, size_t mask)
{
	return (a * 0x9e3779b97f4a7c15ull >> 32) & mask;
}

void buildFlat()
{
	size_t n = 16;

	flatAddr.clear();
	flatIn.clear();
	for (const auto &[addr, i] : op->intents) {
		flatAddr.push_back(addr);
		flatIn.push_back(&i);
	}
	while (n < 2 * flatIn.size())
		n *= 2;
	flatByStart.assign(n, nullptr);
	for (const Intent *i : flatIn) {
		size_t k = startSlot(i->addr, n - 1);

		while (flatByStart[k])
			k = (k + 1) & (n - 1);
		flatByStart[k] = i;
	}
	flatValid = true;
}

} /* namespace */

void intentsChanged()
{
	lastRange.lo = 1;
	lastRange.hi = 0;
	flatValid = false;
}

const Intent *intentRange(unsigned long a, unsigned long *lo, unsigned long *hi)
{
	const Intent *in = nullptr, *prev = nullptr;
	unsigned long next;

	if (a >= lastRange.lo && a < lastRange.hi) {
		*lo = lastRange.lo;
		*hi = lastRange.hi;
		return lastRange.in;
	}
	if (op->int3Batch && !flatValid)
		buildFlat();
	if (op->int3Batch) {
		static size_t lastK;
		size_t k = lastK, n = flatAddr.size();

		/*
		 * k: the first site above @a. A batch writes its sites in
		 * address order, phase after phase: the last answer's, or the
		 * one after it, before a binary search.
		 */
		if (!(k <= n && (k == n || a < flatAddr[k]) && (k == 0 || flatAddr[k - 1] <= a))) {
			k++;
			if (!(k <= n && (k == n || a < flatAddr[k]) && flatAddr[k - 1] <= a))
				k = std::upper_bound(flatAddr.begin(), flatAddr.end(), a) -
				    flatAddr.begin();
		}
		lastK = k;

		next = k == flatAddr.size() ? ~0ul : flatAddr[k];
		prev = k ? flatIn[k - 1] : nullptr;
	} else {
		auto it = op->intents.upper_bound(a);

		next = it == op->intents.end() ? ~0ul : it->second.addr;
		prev = it != op->intents.begin() ? &std::prev(it)->second : nullptr;
	}
	*lo = a;
	*hi = next;
	if (prev) {
		if (a < prev->addr + prev->len) {
			in = prev;
			*lo = prev->addr;
			*hi = std::min(prev->addr + prev->len, next);
		} else {
			*lo = prev->addr + prev->len;
		}
	}
	lastRange.lo = *lo;
	lastRange.hi = *hi;
	lastRange.in = in;
	return in;
}

/* The intent holding @a, or nullptr. */
const Intent *intentAt(unsigned long a)
{
	unsigned long lo, hi;

	return intentRange(a, &lo, &hi);
}

const Intent *intentStartingAt(unsigned long a)
{
	const Intent *in;

	if (!op->int3Batch) {
		in = intentAt(a);
		return in && in->addr == a ? in : nullptr;
	}
	if (!flatValid)
		buildFlat();
	for (size_t m = flatByStart.size() - 1, k = startSlot(a, m); flatByStart[k];
	     k = (k + 1) & m)
		if (flatByStart[k]->addr == a)
			return flatByStart[k];
	return nullptr;
}

void buildWindow(const Intent &in, u64 serial, u64 upTo, Window *w)
{
	unsigned long pageEnd = ((in.addr + in.len - 1) | 4095) + 1;
	IntentCursor ic;

	w->start = in.addr;
	w->siteLen = std::min(in.len, kSiteMax);
	w->len = 0;
	for (unsigned long a = in.addr; a < pageEnd && w->len < w->siteLen + 15; a++) {
		const ByteHist *b = findByte(a);
		const Intent *i = ic.at(a);
		unsigned int k = w->len++;

		if (b) {
			w->old[k] = b->old;
			w->p[k] = possible(b, serial, upTo);
			w->fin[k] = currentValue(b);
		} else {
			u8 m = *(const volatile u8 *)a;

			w->old[k] = w->fin[k] = m;
			w->p[k] = PSet{1, {m}};
		}
		if (i)
			w->fin[k] = i->bytes[a - i->addr];
	}
	w->ncand = 2 + in.nalt;
	memcpy(w->cand[0], w->old, w->len);
	memcpy(w->cand[1], w->fin, w->len);
	for (unsigned int k = 0; k < in.nalt; k++) {
		memcpy(w->cand[2 + k], w->fin, w->len);
		memcpy(w->cand[2 + k], in.alt[k], w->siteLen);
	}
}

/* Fetch windows CPUs opened by leaving an EQS while this operation wrote. */
void takeFresh()
{
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		XmcCpu *c = &xmcCpus[cpu];
		u64 head = __atomic_load_n(&c->freshHead, __ATOMIC_ACQUIRE);

		while (c->freshTail < head) {
			auto &f = c->fresh[c->freshTail % 16];

			if (op->open && op->first && f.upTo >= op->first)
				checkSince(f.serial, f.serial, f.upTo, cpu);
			__atomic_store_n(&c->freshTail, c->freshTail + 1, __ATOMIC_RELEASE);
		}
	}
}

} /* namespace xmc */

} /* namespace kshim */
