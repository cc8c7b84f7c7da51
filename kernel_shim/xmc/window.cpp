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

#include <kernel_shim/disasm.h>
#include <linux/cpumask.h>

#define XMC_PRIVATE
#include "xmc_internal.h"

namespace kshim {

namespace xmc {

/*
 * Length of the instruction at @p (0: it does not decode); *@falls says
 * whether execution can go on at the next byte after it (not a RET, an
 * unconditional jump, INT3/UD2 or the like).
 */
int insnLength(const u8 *p, unsigned int len, bool *falls)
{
	ZydisDecodedInstruction zi;

	if (falls)
		*falls = false;
	if (!len ||
	    !ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(zydisDecoder(), nullptr, p, len, &zi)))
		return 0;
	if (falls)
		*falls = zi.meta.category != ZYDIS_CATEGORY_RET &&
			 zi.meta.category != ZYDIS_CATEGORY_UNCOND_BR &&
			 zi.meta.category != ZYDIS_CATEGORY_INTERRUPT &&
			 zi.mnemonic != ZYDIS_MNEMONIC_UD2 && zi.mnemonic != ZYDIS_MNEMONIC_UD1 &&
			 zi.mnemonic != ZYDIS_MNEMONIC_HLT;
	return zi.length;
}

/* The intent holding @a, or nullptr. */
const Intent *intentAt(unsigned long a)
{
	auto it = op->intents.upper_bound(a);

	if (it == op->intents.begin())
		return nullptr;
	--it;
	return a < it->second.addr + it->second.len ? &it->second : nullptr;
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
