// SPDX-License-Identifier: GPL-2.0-only
/*
 * The model's storage: every byte an operation wrote, with its value
 * before and the values since (each with its write's sequence number and
 * batch phase), the operation's writes in order, and which text which CPU
 * may fetch at all (hidden, private and published regions). Written and
 * read by the writer (text_mutex holder) only, but for the regions, which
 * any task may change (xmcTextHidden() and friends).
 */
#include <cstring>
#include <mutex>

#include <linux/bug.h>
#include <linux/cpumask.h>

#define XMC_PRIVATE
#include "xmc_internal.h"

namespace kshim {

namespace xmc {

std::mutex regionLock;
Region regions[kRegionsMax];
unsigned int nregions;

bool online(int cpu)
{
	return cpumask_test_cpu(cpu, cpu_online_mask);
}

ByteHist *findByte(unsigned long addr)
{
	long i = op->index.find(addr, op->bytes);

	return i < 0 ? nullptr : &op->bytes[i];
}

/* The value @b had for a CPU that serialised at @serial. */
u8 valueAt(const ByteHist *b, u64 serial)
{
	u8 v = b->old;

	for (unsigned int i = 0; i < b->n && b->seq[i] <= serial; i++)
		v = b->val[i];
	return v;
}

u8 currentValue(const ByteHist *b)
{
	return b->n ? b->val[b->n - 1] : b->old;
}

/* What a CPU with window (@serial, @upTo] may fetch for byte @b. */
PSet possible(const ByteHist *b, u64 serial, u64 upTo)
{
	PSet p = {};

	p.add(valueAt(b, serial));
	for (unsigned int i = 0; i < b->n; i++)
		if (b->seq[i] > serial && b->seq[i] <= upTo)
			p.add(b->val[i]);
	return p;
}

/* Record one write in the operation; returns its sequence number. */
u64 recordWrite(unsigned long a, const u8 *before, const u8 *after, size_t len, int only)
{
	u64 seq = textWriteSeq + 1;
	/* noinstr or not, from the section tables: once per write unless it straddles a bound */
	bool ni0 = noinstrText(a), niSame = ni0 == noinstrText(a + len - 1);

	for (size_t i = 0; i < len; i++) {
		ByteHist *b = findByte(a + i);

		/*
		 * Unchanged bytes of the write are kept too (with no value
		 * history), so that a site's window knows its old bytes.
		 */
		if (!b) {
			if (op->nbytes >= kBytesMax) {
				op->full = true;
				stats.lost++;
				continue;
			}
			b = &op->bytes[op->nbytes];
			*b = ByteHist{};
			b->addr = a + i;
			b->old = before[i];
			b->onlyCpu = (short)only;
			b->inNoinstr = niSame ? ni0 : noinstrText(a + i);
			op->index.insert(a + i, op->nbytes);
			op->nbytes++;
		}
		if (before[i] == after[i])
			continue;
		if (b->n == kHist) {
			/* Keep the newest values; the CPU-visible set loses the oldest (counted). */
			memmove(b->val, b->val + 1, kHist - 1);
			memmove(b->phase, b->phase + 1, kHist - 1);
			memmove(b->seq, b->seq + 1, (kHist - 1) * sizeof(u64));
			b->n--;
			stats.lost++;
		}
		b->val[b->n] = after[i];
		b->phase[b->n] = (u8)op->phase;
		b->seq[b->n] = seq;
		b->n++;
		if (b->int3 && after[i] != kInt3)
			armedRemove(a + i);	/* R3: phase 3 took its INT3 away */
		if (after[i] == kInt3 && !b->int3) {
			b->int3 = true;
			op->int3Bytes.push_back((u32)(b - op->bytes));
		}
		stats.bytes++;
	}
	if (op->nwrites < kWritesMax)
		op->writes[op->nwrites++] = Write{seq, a, (unsigned int)len, (u8)op->phase};
	else
		op->full = true;
	if (!op->first)
		op->first = seq;
	op->last = seq;
	stats.writes++;
	return seq;
}

/* Drop the operation's bytes, writes and sites. */
void opForget()
{
	armedClear();
	for (unsigned int i = 0; i < op->nbytes; i++)
		op->bytes[i] = ByteHist{};
	op->index.clear();
	op->nbytes = op->nwrites = 0;
	op->intents.clear();
	op->int3Bytes.clear();
	op->decided.clear();
	op->open = false;
}

/* The old bytes of intent @in's site, as the operation found them. */
void oldBytes(const Intent &in, u8 *out)
{
	for (unsigned int i = 0; i < in.len; i++) {
		const ByteHist *b = findByte(in.addr + i);

		out[i] = b ? b->old : *(const volatile u8 *)(in.addr + i);
	}
}

/* Where @addr may be fetched from: -1 everyone, -2 nobody, else that CPU only. */
int reachableBy(unsigned long addr)
{
	std::lock_guard<std::mutex> lk(regionLock);

	for (unsigned int i = 0; i < nregions; i++)
		if (addr >= regions[i].start && addr < regions[i].end)
			return regions[i].cpu;
	return -1;
}

void setRegion(unsigned long start, unsigned long end, int cpu)
{
	std::lock_guard<std::mutex> lk(regionLock);

	for (unsigned int i = 0; i < nregions; i++) {
		if (start < regions[i].end && regions[i].start < end) {
			regions[i] = regions[--nregions];
			i--;
		}
	}
	if (cpu == -1)
		return;
	BUG_ON(nregions >= kRegionsMax);
	regions[nregions++] = Region{start, end, cpu};
}

} /* namespace xmc */

using namespace xmc;

void xmcTextHidden(const void *start, size_t len) noexcept
{
	setRegion((unsigned long)start, (unsigned long)start + len, -2);
}

void xmcTextPrivate(const void *start, size_t len, int cpu) noexcept
{
	setRegion((unsigned long)start, (unsigned long)start + len, cpu);
}

void xmcTextPublish(const void *start, size_t len) noexcept
{
	setRegion((unsigned long)start, (unsigned long)start + len, -1);
}

} /* namespace kshim */
