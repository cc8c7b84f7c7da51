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
#include <vector>

#include <linux/bug.h>
#include <linux/cpumask.h>

#define XMC_PRIVATE
#include "xmc_internal.h"

namespace kshim {

namespace xmc {

/* What an operation may record (kBytesMax, kWritesMax, or less for a test). */
unsigned int bytesLimit = kBytesMax, writesLimit = kWritesMax;

std::mutex regionLock;
std::vector<Region> regions;
/* bumped under regionLock at every change of @regions: a reader's copy is current while equal */
unsigned long regionsGen = 1;
/* The gated ranges the operation's bytes name (ByteHist::gate); forgotten with them. */
std::vector<Gate> gates;

bool online(int cpu)
{
	return cpumask_test_cpu(cpu, cpu_online_mask);
}

ByteHist *findByte(unsigned long addr)
{
	u32 h = op->hint;
	long i;

	/*
	 * The model walks a site byte by byte, and a write's bytes are
	 * recorded in address order: the byte after the last one found is
	 * the usual answer, checked before the hash.
	 */
	if (h < op->nbytes && op->bytes[h].addr == addr) {
		op->hint = h + 1;
		return &op->bytes[h];
	}
	i = op->index.find(addr, op->bytes);
	if (i < 0)
		return nullptr;
	op->hint = (u32)i + 1;
	return &op->bytes[i];
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

/*
 * What a CPU with window (@serial, @upTo] may fetch for byte @b: its value
 * at @serial and every value written in the window. One pass, as a byte's
 * values are kept in the order of their writes.
 */
PSet possible(const ByteHist *b, u64 serial, u64 upTo)
{
	unsigned int i = 0;
	u8 v = b->old;
	PSet p;

	for (; i < b->n && b->seq[i] <= serial; i++)
		v = b->val[i];
	p.n = 1;
	p.v[0] = v;
	for (; i < b->n && b->seq[i] <= upTo; i++)
		p.add(b->val[i]);
	return p;
}

/* Record one write in the operation; returns its sequence number. */
u64 recordWrite(unsigned long a, const u8 *before, const u8 *after, size_t len, const Reach &r)
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
			if (op->nbytes >= bytesLimit) {
				op->full = true;
				countLost(&XmcStats::lostBytes);
				continue;
			}
			b = &op->bytes[op->nbytes];
			*b = ByteHist{};
			b->addr = a + i;
			b->old = before[i];
			b->onlyCpu = (short)(r.cpu >= 0 ? r.cpu : -1);
			b->gate = (short)(r.cpu == -3 ? gateOf(r) : -1);
			b->inNoinstr = niSame ? ni0 : noinstrText(a + i);
			op->index.insert(a + i, op->nbytes);
			op->nbytes++;
		}
		if (before[i] == after[i])
			continue;
		if (b->n == kHist) {
			/*
			 * Keep the newest values. A CPU that serialised before the
			 * dropped one is past what the model knows of this byte:
			 * its windows on it are not judged (lossSeq; counted).
			 */
			b->lossSeq = b->seq[1];	/* the first value kept from now on */
			memmove(b->val, b->val + 1, kHist - 1);
			memmove(b->phase, b->phase + 1, kHist - 1);
			memmove(b->seq, b->seq + 1, (kHist - 1) * sizeof(u64));
			b->n--;
			countLost(&XmcStats::lostValues);
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
	if (op->nwrites < writesLimit) {
		op->writes[op->nwrites++] = Write{seq, a, (unsigned int)len, (u8)op->phase};
	} else {
		/* a window a CPU opens later does not see this write: unjudged, counted */
		op->full = true;
		countLost(&XmcStats::lostWrites);
	}
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
	intentsChanged();
	op->int3Bytes.clear();
	op->decided.clear();
	gates.clear();
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

/* Who may fetch @addr: -1 everyone, -2 nobody, -3 through a gate, else that CPU only. */
Reach reachableBy(unsigned long addr)
{
	/* asked at every text write: the lock only when text was hidden, published or freed */
	for (const Region &r : threadCopy(regions, regionLock, regionsGen))
		if (addr >= r.start && addr < r.end)
			return Reach{r.cpu, r.key, r.start, r.end};
	return Reach{-1, 0, 0, 0};
}

/* The branch target of the 5 bytes @p at @addr, if they are a JMP32 or a CALL; else 0. */
static unsigned long branchTo(const u8 *p, unsigned long addr)
{
	s32 d;

	if (p[0] != 0xe9 && p[0] != 0xe8)
		return 0;
	memcpy(&d, p + 1, 4);
	return addr + 5 + d;
}

int gateOf(const Reach &r)
{
	for (size_t g = 0; g < gates.size(); g++)
		if (gates[g].key == r.key && gates[g].start == r.start)
			return (int)g;
	if (gates.size() >= 32767)
		return -1;
	gates.push_back(Gate{r.key, r.start, r.end, callGates(r.key)});
	return (int)gates.size() - 1;
}

/*
 * Each branch's bytes as a CPU serialised at @serial fetched them, and as
 * they are now: if one goes into @g's range, the CPU may be there. Bytes of
 * a branch this operation did not write are read from memory.
 */
bool gateReaches(const Gate &g, u64 serial)
{
	for (unsigned long site : g.sites) {
		u8 then[5], now[5];
		unsigned long t1, t2;

		for (unsigned int i = 0; i < 5; i++) {
			const ByteHist *b = findByte(site + i);

			then[i] = b ? valueAt(b, serial) : *(const volatile u8 *)(site + i);
			now[i] = b ? currentValue(b) : then[i];
		}
		t1 = branchTo(then, site);
		t2 = branchTo(now, site);
		if ((t1 >= g.start && t1 < g.end) || (t2 >= g.start && t2 < g.end))
			return true;
	}
	return false;
}

bool mayFetch(const ByteHist *b, unsigned int cpu, u64 serial)
{
	if (b->onlyCpu >= 0 && b->onlyCpu != (int)cpu)
		return false;
	return b->gate < 0 || gateReaches(gates[b->gate], serial);
}

/*
 * [@start, @end) becomes reachable by @cpu (-2 nobody, -1 everyone, -3
 * through the branches of static call @key). A region it overlaps keeps what lies
 * outside it: hiding or publishing part of a page (a sub-page allocation)
 * leaves the rest of the page as it was.
 */
void setRegion(unsigned long start, unsigned long end, int cpu, unsigned long key)
{
	std::lock_guard<std::mutex> lk(regionLock);
	std::vector<Region> next;

	for (const Region &r : regions) {
		if (r.end <= start || end <= r.start) {
			next.push_back(r);
			continue;
		}
		if (r.start < start)
			next.push_back(Region{r.start, start, r.cpu, r.key});
		if (end < r.end)
			next.push_back(Region{end, r.end, r.cpu, r.key});
	}
	if (cpu != -1)
		next.push_back(Region{start, end, cpu, key});
	regions.swap(next);
	__atomic_store_n(&regionsGen, regionsGen + 1, __ATOMIC_RELEASE);
}

void xmcTestCapacity(unsigned int bytes, unsigned int writes) noexcept
{
	bytesLimit = bytes && bytes < kBytesMax ? bytes : kBytesMax;
	writesLimit = writes && writes < kWritesMax ? writes : kWritesMax;
}

void forgetRegions()
{
	std::lock_guard<std::mutex> lk(regionLock);

	regions.clear();
	__atomic_store_n(&regionsGen, regionsGen + 1, __ATOMIC_RELEASE);
}

} /* namespace xmc */

using namespace xmc;

void xmcTextHidden(const void *start, size_t len) noexcept
{
	setRegion((unsigned long)start, (unsigned long)start + len, -2, 0);
}

void xmcTextPrivate(const void *start, size_t len, int cpu) noexcept
{
	setRegion((unsigned long)start, (unsigned long)start + len, cpu, 0);
}

void xmcTextGate(const void *key, const void *start, size_t len) noexcept
{
	setRegion((unsigned long)start, (unsigned long)start + len, -3, (unsigned long)key);
}

void xmcTextPublish(const void *start, size_t len) noexcept
{
	setRegion((unsigned long)start, (unsigned long)start + len, -1, 0);
}

} /* namespace kshim */
