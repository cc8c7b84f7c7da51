// SPDX-License-Identifier: GPL-2.0-only
/*
 * The cross-modifying-code model: its rules (see kernel_shim/xmc.h and
 * docs/testing.md).
 *
 * State, and who touches it:
 *  - per CPU (XmcCpu): its last serialisation, whether it fetches
 *    instrumentable text, its fresh fetch windows and a stale-at-entry
 *    record; written by the CPU itself in any context, read by the writer;
 *  - per operation (this file's Op): every byte the operation wrote with
 *    its value history, its writes in order, and its sites with the bytes
 *    each is to hold when it returns (for an INT3 batch, what its caller
 *    asked smp_text_poke_batch_add() for); written and read only by the
 *    writer (text_mutex holder), so it needs no atomics;
 *  - the violation log, written by the writer.
 *
 * A fetch window is (CPU serial s, last write u): the CPU, outside an EQS,
 * may fetch for each byte its value at s or any value written in (s, u].
 * R1 is decided on a site's window as soon as the window grows: when the
 * site is written (for every fetching CPU but the writer), when the writer
 * enables IRQs again, and when a CPU leaves an EQS mid-operation. So a
 * verdict comes before the CPU could act on the torn bytes, even where the
 * memory itself holds them. CPUs that share a serial share the verdict, so
 * a write costs one pass over the online CPUs and one check per distinct
 * serial among them.
 */
#include <algorithm>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>

#include <asm/ptrace.h>
#include <asm/sections.h>
#include <kernel_shim/boot.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/disasm.h>
#include <kernel_shim/machine.h>
#include <kernel_shim/symbols.h>
#include <kernel_shim/xmc.h>
#include <linux/bug.h>
#include <linux/cpumask.h>
#include <linux/irqflags.h>

namespace kshim {

XmcCpu xmcCpus[NR_CPUS];
u64 xmcLastOpEnd;
bool xmcEnabled = true;

namespace {

constexpr u8 kInt3 = 0xcc;
constexpr unsigned int kHist = 6;		/* values kept per byte and operation */
constexpr unsigned int kBytesMax = 32768;	/* distinct bytes per operation */
constexpr unsigned int kWritesMax = 16384;	/* writes per operation */
constexpr unsigned int kHashSize = 65536;	/* slots, power of two, >= 2 * kBytesMax */
constexpr unsigned int kViolationsKept = 64;
constexpr unsigned int kRegionsMax = 64;
constexpr unsigned int kSiteMax = 16;		/* longest site the model decodes */
constexpr unsigned int kWindow = kSiteMax + 16;	/* a site and the bytes decoding may need */

/* One byte the operation wrote: its value before, and the values since, in order. */
struct ByteHist {
	unsigned long addr;
	u8 old;
	u8 n;
	u8 val[kHist];
	u8 phase[kHist];
	u64 seq[kHist];
	short onlyCpu;		/* private text: the one CPU that fetches it, else -1 */
	bool inNoinstr;
	bool int3;		/* the operation wrote an INT3 here */
};

struct Write {
	u64 seq;
	unsigned long addr;
	unsigned int len;
	u8 phase;
};

/*
 * A site and the bytes it is to hold when the operation returns: for an
 * INT3 batch, what its caller asked smp_text_poke_batch_add() for; for any
 * other write, what that write wrote.
 */
struct Intent {
	unsigned long addr;
	unsigned int len;
	u8 bytes[kSiteMax];
	/* the same site queued again in one batch: the earlier requests, also valid */
	unsigned int nalt;
	u8 alt[3][kSiteMax];
	/*
	 * The instruction the INT3 handler is to emulate instead of the new
	 * bytes, when the caller gave one (smp_text_poke_batch_add()'s
	 * @emulate: "call __static_call_return0" for the xor form). Valid only
	 * as an emulation: it is never written.
	 */
	bool hasEmu;
	u8 emu[kSiteMax];
};

struct Region {
	unsigned long start, end;
	int cpu;		/* -2 hidden, >= 0 private to that CPU */
};

/* Byte address -> index into Op::bytes, open addressing; clearing costs what was used. */
struct ByteIndex {
	u32 slot[kHashSize];	/* index + 1; 0 = empty */
	u32 used[kBytesMax];
	u32 nused;

	static u32 hash(unsigned long a)
	{
		u64 k = a;

		k ^= k >> 33;
		k *= 0xff51afd7ed558ccdull;
		k ^= k >> 33;
		return (u32)k & (kHashSize - 1);
	}

	long find(unsigned long a, const ByteHist *bytes) const
	{
		for (u32 i = hash(a);; i = (i + 1) & (kHashSize - 1)) {
			if (!slot[i])
				return -1;
			if (bytes[slot[i] - 1].addr == a)
				return slot[i] - 1;
		}
	}

	void insert(unsigned long a, u32 index)
	{
		u32 i = hash(a);

		while (slot[i])
			i = (i + 1) & (kHashSize - 1);
		slot[i] = index + 1;
		used[nused++] = i;
	}

	void clear()
	{
		for (u32 i = 0; i < nused; i++)
			slot[used[i]] = 0;
		nused = 0;
	}
};

struct Op {
	bool open;
	bool implicit;
	bool int3Batch;
	bool full;		/* capacity reached: the next write starts a new operation */
	const char *what;
	int phase;
	u64 first;		/* first write of the operation (0: none yet) */
	u64 last;
	unsigned int nbytes, nwrites;
	ByteHist bytes[kBytesMax];
	Write writes[kWritesMax];
	ByteIndex index;
	std::map<unsigned long, Intent> intents;
	std::vector<u32> int3Bytes;
	/* (site, CPU serial) -> the site's last write that window was decided up to */
	std::map<std::pair<unsigned long, u64>, u64> decided;
};

Op *op;

/* Intents of the batch being queued (smp_text_poke_batch_add()), taken by its finish. */
std::map<unsigned long, Intent> queuedIntents;

/* INT3 refs as the model was told: per CPU, and the shared count. */
bool int3Live[NR_CPUS];
bool int3LiveGlobal;

/*
 * What a CPU that R2 exempted at an operation's return (in an EQS with a
 * deferred sync pending) could still fetch, kept for the report if it then
 * reaches instrumentable code without serialising.
 */
struct Exempt {
	bool have;
	u64 serial;
	XmcViolation v;
};
Exempt exempt[NR_CPUS];
/* Per CPU: the last write of the last operation it was reported stale at (R2). */
u64 staleReported[NR_CPUS];

std::mutex regionLock;
Region regions[kRegionsMax];
unsigned int nregions;

XmcStats stats;
std::vector<XmcViolation> violationLog;
unsigned long violationsOn[NR_CPUS];
/* CPUs already reported in the open operation: one report per CPU and operation. */
bool reportedInOp[NR_CPUS];
/* The first violation, formatted when found, for the way down (xmcDeathNote()). */
char firstText[4096];
size_t firstLen;
/* A write is being checked: a crash on another CPU waits for its verdict. */
int busy;
/* An operation is open: a crash waits a little for its verdict at the return. */
int opActive;

/*
 * R5: trap returns the INT3 path recorded, per CPU (SPSC ring: the CPU in
 * its SIGTRAP handler produces, the writer consumes).
 */
struct EmuRec {
	unsigned long site;		/* the INT3's address */
	unsigned long sp0, flags, top0;	/* as trapped; top0 = the word at sp0 */
	unsigned long ip1, sp1, top1;	/* as resumed; top1 = the word at sp1 */
};

constexpr unsigned int kEmuRing = 64;
constexpr unsigned int kEmuPerWrite = 2;	/* trap returns checked per text write */

struct alignas(SMP_CACHE_BYTES) EmuRing {
	u64 head, tail;
	unsigned long dropped;
	EmuRec rec[kEmuRing];
};
EmuRing emuRings[NR_CPUS];

void (*reporter)(const XmcViolation &v);
bool (*syncPending)(int cpu);

bool paramEnabled = true;

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

struct PSet {
	u8 n;
	u8 v[kHist + 1];

	bool has(u8 x) const
	{
		for (unsigned int i = 0; i < n; i++)
			if (v[i] == x)
				return true;
		return false;
	}
	void add(u8 x)
	{
		if (!has(x))
			v[n++] = x;
	}
};

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

/*
 * Length of the instruction at @p (0: it does not decode); *@falls says
 * whether execution can go on at the next byte after it (not a RET, an
 * unconditional jump, INT3/UD2 or the like).
 */
int insnLength(const u8 *p, unsigned int len, bool *falls = nullptr)
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

/*
 * A verdict window: one site from its first byte, plus the bytes after it
 * that decoding may need (read from the text itself, within the site's last
 * page, where the operation did not write them).
 */
constexpr unsigned int kCands = 5;	/* old, new, up to 3 earlier requests for the site */

struct Window {
	unsigned long start;
	unsigned int siteLen, len;
	u8 old[kWindow], fin[kWindow];
	/* the acceptable instruction streams: [0] old, [1] new, then the alternates */
	unsigned int ncand;
	u8 cand[kCands][kWindow];
	PSet p[kWindow];
};

/*
 * intentAt() for ascending addresses: remembers the range of addresses the
 * last answer holds for (the intent's bytes, or the gap before the next
 * intent), so a window's bytes cost one map lookup, not one each.
 */
struct IntentCursor {
	const Intent *cur = nullptr;
	unsigned long lo = 1, hi = 0;

	const Intent *at(unsigned long a)
	{
		if (a >= lo && a < hi)
			return cur;
		auto it = op->intents.upper_bound(a);
		unsigned long next = it == op->intents.end() ? ~0ul : it->second.addr;

		cur = nullptr;
		lo = a;
		hi = next;
		if (it != op->intents.begin()) {
			const Intent &p = std::prev(it)->second;

			if (a < p.addr + p.len) {
				cur = &p;
				lo = p.addr;
				hi = std::min(p.addr + p.len, next);
			}
		}
		return cur;
	}
};

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

/*
 * R1 on one window: walk the instruction boundaries a CPU can reach from
 * the site's first byte (through the old instruction, the new one, or an
 * INT3 emulated as the new one), and at each look for a combination of
 * possible bytes that starts an instruction which is neither the old one,
 * nor the new one, nor an INT3.
 */
struct Torn {
	unsigned int pos, len;
	u8 bytes[kSiteMax];
};

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

void report(const XmcViolation &found)
{
	XmcViolation v = found;

	v.ts = clockNs();	/* when the model saw it, for a timeline's mark */
	if (v.rule != XmcRule::StaleAtEntry) {
		if (reportedInOp[v.cpu]) {
			stats.more++;
			return;
		}
		reportedInOp[v.cpu] = true;
	}
	stats.violations++;
	violationsOn[v.cpu]++;
	if (violationLog.size() < kViolationsKept)
		violationLog.push_back(v);
	if (!firstLen) {
		std::string t = xmcFormat(v);
		size_t n = std::min(t.size(), sizeof(firstText));

		memcpy(firstText, t.data(), n);
		__atomic_store_n(&firstLen, n, __ATOMIC_RELEASE);
	}
	if (reporter)
		reporter(v);
}

/* A reported CPU starts again from @seq, so that one fault is one report. */
void forgive(int cpu, u64 seq)
{
	cpuRaiseSerial(&cpuEvents[cpu], seq);
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

/* R2 records made by CPUs at their first instrumentable fetch, into the log. */
void takeStaleAtEntry()
{
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		XmcCpu *c = &xmcCpus[cpu];
		XmcViolation v = {};

		if (!__atomic_load_n(&c->staleHave, __ATOMIC_ACQUIRE))
			continue;
		if (c->staleOpEnd <= staleReported[cpu]) {
			/* reported at that operation's return already: one fault, one report */
			__atomic_store_n(&c->staleHave, 0, __ATOMIC_RELEASE);
			continue;
		}
		if (exempt[cpu].have && exempt[cpu].serial == c->staleSerial)
			v = exempt[cpu].v;
		v.rule = XmcRule::StaleAtEntry;
		v.cpu = cpu;
		v.ip = c->staleIp;
		v.cpuSerial = c->staleSerial;
		if (!v.op)
			v.op = "an earlier operation";
		exempt[cpu].have = false;
		__atomic_store_n(&c->staleHave, 0, __ATOMIC_RELEASE);
		report(v);
	}
}

/* R6 records, one per CPU until reported (xmcTlbStale()) */
struct TlbStale {
	int have;
	unsigned long start, end, ip;
	u64 gen, cpuGen;
};
TlbStale tlbStale[NR_CPUS];

void takeStaleTlb()
{
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		TlbStale *t = &tlbStale[cpu];
		XmcViolation v = {};

		if (!__atomic_load_n(&t->have, __ATOMIC_ACQUIRE))
			continue;
		v.rule = XmcRule::StaleTlb;
		v.cpu = cpu;
		v.site = t->start;
		v.rangeEnd = t->end;
		v.ip = t->ip;
		v.tlbGen = t->gen;
		v.tlbCpuGen = t->cpuGen;
		__atomic_store_n(&t->have, 0, __ATOMIC_RELEASE);
		report(v);
	}
}

void opOpen(const char *what, bool implicit, bool int3Batch)
{
	op->open = true;
	op->implicit = implicit;
	op->int3Batch = int3Batch;
	op->full = false;
	op->what = what;
	op->phase = 0;
	op->first = op->last = 0;
	memset(reportedInOp, 0, sizeof(reportedInOp));
	__atomic_store_n(&opActive, 1, __ATOMIC_RELEASE);
	if (int3Batch) {
		op->intents.swap(queuedIntents);
		queuedIntents.clear();
	}
}

/* A violation that names the site holding byte @b, as CPU @cpu may fetch it. */
XmcViolation siteViolation(XmcRule rule, int cpu, const ByteHist *b, u64 serial)
{
	const Intent *in = intentAt(b->addr);
	Intent self = {b->addr, 1, {currentValue(b)}, 0, {}, false, {}};
	XmcViolation v = {};
	Window w;

	if (!in)
		in = &self;
	buildWindow(*in, serial, op->last, &w);
	v.rule = rule;
	v.cpu = cpu;
	v.op = op->what;
	v.cpuSerial = serial;
	v.opFirst = op->first;
	phasesIn(&v, *in, serial, op->last);
	fillBytes(&v, w, 0, w.siteLen);
	return v;
}

/* Drop the operation's bytes, writes and sites. */
void opForget()
{
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

/*
 * R5 on one instruction: where a CPU that executed @insn (the bytes of
 * intent @in's site, or its old ones) in the trapped state @r would resume.
 * False if the model does not know the instruction's effect (it then
 * accepts no outcome from this candidate).
 */
struct Outcome {
	unsigned long ip, sp;
	bool push;
	unsigned long pushed;
};

bool ccTrue(unsigned int cc, unsigned long flags)
{
	bool cf = flags & X86_EFLAGS_CF, zf = flags & X86_EFLAGS_ZF, sf = flags & X86_EFLAGS_SF,
	     of = flags & X86_EFLAGS_OF, pf = flags & X86_EFLAGS_PF, t;

	switch (cc >> 1) {
	case 0: t = of; break;
	case 1: t = cf; break;
	case 2: t = zf; break;
	case 3: t = cf || zf; break;
	case 4: t = sf; break;
	case 5: t = pf; break;
	case 6: t = sf != of; break;
	default: t = (sf != of) || zf; break;
	}
	return (cc & 1) ? !t : t;
}

bool outcomeOf(const u8 *insn, unsigned int len, unsigned long site, const EmuRec &r, Outcome *o)
{
	ZydisDecodedInstruction zi;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	ZyanU64 target = 0;
	unsigned long next;
	bool rel;

	if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(zydisDecoder(), insn, len, &zi, ops)))
		return false;
	next = site + zi.length;
	rel = zi.operand_count_visible == 1 && ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
	      ops[0].imm.is_relative &&
	      ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&zi, &ops[0], site, &target));
	*o = Outcome{next, r.sp0, false, 0};
	if (zi.mnemonic == ZYDIS_MNEMONIC_NOP)
		return true;
	if (zi.mnemonic == ZYDIS_MNEMONIC_JMP && rel) {
		o->ip = target;
		return true;
	}
	if (zi.mnemonic == ZYDIS_MNEMONIC_CALL && rel) {
		*o = Outcome{target, r.sp0 - 8, true, next};
		return true;
	}
	if (zi.mnemonic == ZYDIS_MNEMONIC_RET && !zi.operand_count_visible) {
		*o = Outcome{r.top0, r.sp0 + 8, false, 0};
		return true;
	}
	if (zi.meta.category == ZYDIS_CATEGORY_COND_BR && rel &&
	    ((zi.opcode_map == ZYDIS_OPCODE_MAP_DEFAULT && (zi.opcode & 0xf0) == 0x70) ||
	     (zi.opcode_map == ZYDIS_OPCODE_MAP_0F && (zi.opcode & 0xf0) == 0x80))) {
		if (ccTrue(zi.opcode & 0xf, r.flags))
			o->ip = target;
		return true;
	}
	return false;
}

std::string outcomeText(const Outcome &o, const EmuRec &r, bool sayUnchanged = false)
{
	std::string s = fmt::format("{} [{:#x}]", traceSymbol(o.ip, true), o.ip);

	if (o.sp != r.sp0)
		s += fmt::format(", sp {:+d}", (long)(o.sp - r.sp0));
	else if (sayUnchanged)
		s += ", sp unchanged";
	if (o.push)
		s += fmt::format(", return address {:#x} pushed", o.pushed);
	return s;
}

/* R5 on one trap return. */
void checkEmulation(int cpu, const EmuRec &r)
{
	const Intent *in = intentAt(r.site);
	u8 cand[kCands + 1][kSiteMax];	/* and the caller's emulation */
	Outcome outs[kCands + 1];
	bool outKnown[kCands + 1] = {};
	unsigned int ncand = 0;
	bool known = false;
	std::string want;

	if (!in || in->addr != r.site || !op->int3Batch)
		return;		/* not this batch's site (a late record of an earlier one) */
	stats.emulations++;
	/* Resumed at the site itself: it fetches the site again. */
	if (r.ip1 == r.site && r.sp1 == r.sp0)
		return;
	oldBytes(*in, cand[ncand++]);
	memcpy(cand[ncand++], in->bytes, in->len);
	for (unsigned int k = 0; k < in->nalt; k++)
		memcpy(cand[ncand++], in->alt[k], in->len);
	if (in->hasEmu)
		memcpy(cand[ncand++], in->emu, in->len);
	for (unsigned int c = 0; c < ncand; c++) {
		Outcome &o = outs[c];

		if (!outcomeOf(cand[c], in->len, r.site, r, &o))
			continue;
		known = outKnown[c] = true;
		if (o.ip == r.ip1 && o.sp == r.sp1 && (!o.push || o.pushed == r.top1))
			return;
	}
	if (!known) {
		stats.emulations--;	/* nothing the model knows how to check */
		return;
	}
	/* A violation: only now name the outcomes (symbolising is slow; the writer waits). */
	for (unsigned int c = 0; c < ncand; c++)
		if (outKnown[c])
			want += fmt::format("{}{} instruction: {}", want.empty() ? "" : "; ",
					    c == 0 ? "the old" : c == 1 ? "the new"
					    : in->hasEmu && c == ncand - 1 ? "the caller's emulated"
									  : "an earlier requested",
					    outcomeText(outs[c], r));

	XmcViolation v = intentViolation(XmcRule::Int3Misemulated, cpu, *in, cand[1]);
	Outcome got = {r.ip1, r.sp1, r.sp1 < r.sp0, r.top1};

	v.tornLen = 0;
	v.detail = fmt::format("resumed at {}; expected, after {}", outcomeText(got, r, true),
			       want);
	report(v);
}

/*
 * R5 for the trap returns the CPUs recorded since the last look, at most
 * @budget of them, taken round-robin from the CPU after the one the last
 * look stopped at: the writer's cost per write stays the same however many
 * CPUs trap (what a full ring cannot hold is dropped and counted as not
 * sampled).
 */
void takeEmulations(unsigned int budget)
{
	static unsigned int next;
	unsigned int n = nr_cpu_ids, idle = 0;

	while (budget && idle < n) {
		unsigned int cpu = next++ % n;
		EmuRing *e = &emuRings[cpu];

		if (e->tail >= __atomic_load_n(&e->head, __ATOMIC_ACQUIRE)) {
			idle++;
			continue;
		}
		idle = 0;
		EmuRec r = e->rec[e->tail % kEmuRing];

		__atomic_store_n(&e->tail, e->tail + 1, __ATOMIC_RELEASE);
		budget--;
		if (op->open)
			checkEmulation(cpu, r);
	}
}

/*
 * The operation returns (@returning; false: it goes on in a new one, the
 * model's capacity reached): R4 and R5 for an INT3 batch, R2 for every
 * online CPU, then forget it.
 */
void opClose(bool returning = true)
{
	takeFresh();
	takeEmulations(nr_cpu_ids * kEmuRing);	/* all that is left */
	if (returning && op->int3Batch)
		checkFinished();

	/*
	 * Publish the return before looking at the CPUs: a CPU that leaves
	 * an EQS from here on sees it at its first fetch, and one that left
	 * before is seen fetching below.
	 *
	 *	CPU n (xmcFirstFetch)		writer (here)
	 *	fetching = 1			xmcLastOpEnd = last
	 *	load xmcLastOpEnd		load fetching[n]
	 */
	if (op->last)
		__atomic_store_n(&xmcLastOpEnd, op->last, __ATOMIC_SEQ_CST);

	for (unsigned int cpu = 0; op->last && cpu < nr_cpu_ids; cpu++) {
		XmcCpu *c = &xmcCpus[cpu];
		const ByteHist *stale = nullptr;
		bool noinstrStale = false, fetching, deferred;
		u64 s;

		if (!online(cpu))
			continue;
		/*
		 * Its state first, its serial last: a CPU that leaves the EQS
		 * meanwhile serialises first (its flush), so its serial is
		 * never older than the state it was exempted in.
		 */
		fetching = __atomic_load_n(&c->fetching, __ATOMIC_SEQ_CST);
		deferred = !fetching && syncPending && syncPending(cpu);
		s = __atomic_load_n(&cpuEvents[cpu].serial, __ATOMIC_SEQ_CST);
		stats.returnChecks++;
		if (s >= op->last)
			continue;
		for (unsigned int i = 0; i < op->nbytes; i++) {
			const ByteHist *b = &op->bytes[i];
			PSet p;

			if (!b->n || (b->onlyCpu >= 0 && b->onlyCpu != (int)cpu))
				continue;
			p = possible(b, s, op->last);
			if (p.n == 1 && p.v[0] == currentValue(b))
				continue;
			if (!stale)
				stale = b;
			if (b->inNoinstr) {
				noinstrStale = true;
				stale = b;
				break;
			}
		}
		if (!stale)
			continue;

		XmcViolation v = siteViolation(XmcRule::Stale, cpu, stale, s);

		v.inEqs = !fetching;

		if (!noinstrStale && deferred) {
			/* In an EQS with a deferred sync: checked at its first instrumentable fetch. */
			if (!exempt[cpu].have || exempt[cpu].serial != s) {
				exempt[cpu].have = true;
				exempt[cpu].serial = s;
				exempt[cpu].v = v;
			}
			continue;
		}
		report(v);
		forgive(cpu, op->last);
		staleReported[cpu] = op->last;
	}
	stats.ops++;

	opForget();
	__atomic_store_n(&opActive, 0, __ATOMIC_RELEASE);
	takeStaleAtEntry();
	takeStaleTlb();
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

/* R3, arming: a CPU that may fetch the INT3 just written must have live refs. */
void checkInt3Armed(const ByteHist *b)
{
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		if (!online(cpu) || (b->onlyCpu >= 0 && (int)cpu != b->onlyCpu))
			continue;
		stats.int3Checks++;
		if (int3LiveGlobal || int3Live[cpu])
			continue;
		report(siteViolation(XmcRule::Int3Unpublished, cpu, b, 0));
		return;
	}
}

/* R4, at a write of an INT3 batch: report its first changed byte outside every site. */
void checkStray(unsigned long a, const u8 *before, const u8 *after, size_t len, int writer)
{
	for (size_t i = 0; i < len; i++) {
		XmcViolation v = {};

		if (before[i] == after[i] || intentAt(a + i))
			continue;
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

/* Record one write in the operation; returns its sequence number. */
u64 recordWrite(unsigned long a, const u8 *before, const u8 *after, size_t len, int only)
{
	u64 seq = textWriteSeq + 1;

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
			b->inNoinstr = is_kernel_noinstr_text(a + i);
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

} /* namespace */

/* On the way down (BUG, an unclaimed INT3, a fatal signal): say what the model had found. */
void xmcDeathNote() noexcept
{
	static const char msg[] =
		"xmc: before this crash, the cross-modifying-code model had reported:\n";
	u64 t0 = clockNs();
	size_t n;
	ssize_t r;

	/*
	 * A crash may race the check of the very write that caused it, or
	 * the checks at the return of the operation it happened in: give
	 * them 200 ms.
	 */
	do {
		n = __atomic_load_n(&firstLen, __ATOMIC_ACQUIRE);
		if (n || (!__atomic_load_n(&busy, __ATOMIC_ACQUIRE) &&
			  !__atomic_load_n(&opActive, __ATOMIC_ACQUIRE)))
			break;
	} while (clockNs() - t0 < 200000000ull);
	n = __atomic_load_n(&firstLen, __ATOMIC_ACQUIRE);
	if (!n)
		return;
	r = write(2, msg, sizeof(msg) - 1);
	r = write(2, firstText, n);
	(void)r;
}

bool xmcReported() noexcept
{
	return __atomic_load_n(&firstLen, __ATOMIC_ACQUIRE) != 0;
}

void xmcIntent(const void *addr, const void *bytes, size_t len, const void *emulate) noexcept
{
	Intent in = {(unsigned long)addr, (unsigned int)std::min<size_t>(len, kSiteMax), {}, 0, {},
		     false, {}};
	auto it = queuedIntents.find(in.addr);

	if (!xmcEnabled)
		return;
	memcpy(in.bytes, bytes, in.len);
	if (emulate && memcmp(emulate, bytes, in.len)) {
		in.hasEmu = true;
		memcpy(in.emu, emulate, in.len);
	}
	if (it != queuedIntents.end() && it->second.len == in.len) {
		/* the site queued again: the last request wins, the earlier ones stay valid */
		in.nalt = std::min(it->second.nalt + 1, 3u);
		memcpy(in.alt[0], it->second.bytes, in.len);
		for (unsigned int k = 1; k < in.nalt; k++)
			memcpy(in.alt[k], it->second.alt[k - 1], in.len);
	}
	queuedIntents[in.addr] = in;
}

void xmcTextWrite(const void *addr, const u8 *before, const u8 *after, size_t len) noexcept
{
	unsigned long a = (unsigned long)addr;
	int writer = tlsCpu, only;
	bool changed = false, inNoinstr = false, int3 = false;
	u64 seq, serials[NR_CPUS];
	int firstOf[NR_CPUS];
	unsigned int nserials = 0;
	const Intent *in;

	if (!xmcEnabled || !op)
		return;
	for (size_t i = 0; i < len; i++)
		changed |= before[i] != after[i];
	if (!changed)
		return;
	only = reachableBy(a);
	if (only == -2)
		return;		/* hidden text: nobody fetches it yet */

	__atomic_store_n(&busy, 1, __ATOMIC_RELEASE);
	if (op->open && op->full) {
		/* Capacity: end what we have (its verdicts stand) and go on in a new one. */
		const char *what = op->what;
		bool implicit = op->implicit, b = op->int3Batch;
		int phase = op->phase;
		std::map<unsigned long, Intent> sites = op->intents;

		opClose(false);
		opOpen(what, implicit, b);
		op->phase = phase;
		op->intents.swap(sites);
	}
	if (!op->open)
		opOpen("text_poke", true, false);

	/* R4: an INT3 batch writes only inside the sites it was given. */
	if (op->int3Batch)
		checkStray(a, before, after, len, writer);

	/* Outside an INT3 batch, the write is its own site: what it wrote is the new text. */
	in = intentAt(a);
	if (!in || !op->int3Batch) {
		for (size_t off = 0; off < len; off += kSiteMax) {
			Intent self = {a + off, (unsigned int)std::min<size_t>(len - off, kSiteMax), {},
				       0, {}, false, {}};

			memcpy(self.bytes, after + off, self.len);
			op->intents[self.addr] = self;
		}
	}

	seq = recordWrite(a, before, after, len, only);
	for (size_t i = 0; i < len; i++) {
		const ByteHist *b = findByte(a + i);

		inNoinstr |= b && b->inNoinstr;
		int3 |= after[i] == kInt3 && before[i] != kInt3;
	}
	/* The bytes are in memory: CPUs that serialise from now on cover this write. */
	__atomic_store_n(&textWriteSeq, seq, __ATOMIC_SEQ_CST);

	takeFresh();
	takeEmulations(kEmuPerWrite);

	/*
	 * R1: every CPU that may fetch this text, grouped by its last
	 * serialisation (CPUs that share it share the verdict).
	 */
	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		XmcCpu *c = &xmcCpus[cpu];
		bool seen = false;
		u64 s;

		if ((int)cpu == writer || !online(cpu) || (only >= 0 && (int)cpu != only))
			continue;
		if (!inNoinstr && !__atomic_load_n(&c->fetching, __ATOMIC_SEQ_CST))
			continue;
		s = __atomic_load_n(&cpuEvents[cpu].serial, __ATOMIC_ACQUIRE);
		if (s >= seq)
			continue;
		for (unsigned int k = 0; k < nserials && !seen; k++)
			seen = serials[k] == s;
		if (!seen) {
			serials[nserials] = s;
			firstOf[nserials++] = cpu;
		}
	}
	IntentCursor ic;
	const Intent *prevSite = nullptr;

	for (size_t off = 0; off < len; off++) {
		const Intent *site = ic.at(a + off);
		bool same = off && prevSite == site;

		prevSite = site;
		if (!site || same)
			continue;
		for (unsigned int k = 0; k < nserials; k++)
			checkSite(*site, serials[k], seq, firstOf[k]);
	}
	/* The writer: now if it writes with IRQs on, else when it turns them on. */
	if (writer >= 0 && (only < 0 || only == writer)) {
		XmcCpu *c = &xmcCpus[writer];

		if (archIrqsDisabled()) {
			if (!cpuEvents[writer].irqsOnCall) {
				c->writerSince = seq;
				__atomic_store_n(&cpuEvents[writer].irqsOnCall, 1, __ATOMIC_RELAXED);
			}
		} else {
			u64 s = __atomic_load_n(&cpuEvents[writer].serial, __ATOMIC_ACQUIRE);

			if (s < seq)
				checkSince(s, std::max(s, seq - 1), seq, writer);
		}
	}
	if (int3 && op->int3Batch)
		for (size_t i = 0; i < len; i++)
			if (after[i] == kInt3 && before[i] != kInt3)
				checkInt3Armed(findByte(a + i));
	__atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
}

void xmcWriterIrqsOn(int cpu) noexcept
{
	XmcCpu *c = &xmcCpus[cpu];
	u64 s, now;

	__atomic_store_n(&cpuEvents[cpu].irqsOnCall, 0, __ATOMIC_RELAXED);
	if (!op || !op->open || !op->nwrites)
		return;
	s = __atomic_load_n(&cpuEvents[cpu].serial, __ATOMIC_ACQUIRE);
	now = textWriteSeq;
	if (s >= now)
		return;
	/*
	 * The sites it wrote with IRQs off, as it may fetch them now; its
	 * earlier writes were checked at an earlier IRQ enable, and a site's
	 * window only grows when the site is written.
	 */
	__atomic_store_n(&busy, 1, __ATOMIC_RELEASE);
	checkSince(s, std::max(s, c->writerSince - 1), now, cpu);
	__atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
}

void xmcFirstFetch(int cpu, unsigned long ip) noexcept
{
	XmcCpu *c = &xmcCpus[cpu];
	u64 s, now, end;

	/*
	 * Pairs with the writer's publication of a write and its look at
	 * fetching (xmcTextWrite()): either the writer sees this CPU fetching,
	 * or this CPU sees the write here.
	 *
	 *	CPU n (first fetch)		writer
	 *	fetching = 1			textWriteSeq = seq
	 *	now = textWriteSeq		load fetching[n]
	 */
	__atomic_store_n(&c->fetching, 1, __ATOMIC_SEQ_CST);
	if (!xmcEnabled)
		return;
	__atomic_fetch_add(&c->entryChecks, 1, __ATOMIC_RELAXED);
	s = __atomic_load_n(&cpuEvents[cpu].serial, __ATOMIC_ACQUIRE);
	end = __atomic_load_n(&xmcLastOpEnd, __ATOMIC_ACQUIRE);
	now = __atomic_load_n(&textWriteSeq, __ATOMIC_SEQ_CST);
	if (s < end) {
		/* R2: an operation returned that this CPU never serialised against. */
		__atomic_fetch_add(&c->staleCount, 1, __ATOMIC_RELAXED);
		if (!__atomic_load_n(&c->staleHave, __ATOMIC_ACQUIRE)) {
			c->staleIp = ip;
			c->staleSerial = s;
			c->staleOpEnd = end;
			__atomic_store_n(&c->staleHave, 1, __ATOMIC_RELEASE);
		}
		cpuRaiseSerial(&cpuEvents[cpu], end);
		s = end;
	}
	if (s < now) {
		/* R1: writes of an operation in progress that it has not serialised against. */
		u64 head = c->freshHead;

		if (head - __atomic_load_n(&c->freshTail, __ATOMIC_ACQUIRE) < 16) {
			c->fresh[head % 16].serial = s;
			c->fresh[head % 16].upTo = now;
			__atomic_store_n(&c->freshHead, head + 1, __ATOMIC_RELEASE);
		}
	}
}

void xmcTlbStale(int cpu, unsigned long start, unsigned long end, u64 gen, u64 cpuGen,
		 unsigned long ip) noexcept
{
	TlbStale *t = &tlbStale[cpu];

	if (!xmcEnabled || __atomic_load_n(&t->have, __ATOMIC_ACQUIRE))
		return;
	t->start = start;
	t->end = end;
	t->ip = ip;
	t->gen = gen;
	t->cpuGen = cpuGen;
	/* pairs with the acquire in takeStaleTlb() */
	__atomic_store_n(&t->have, 1, __ATOMIC_RELEASE);
}

void xmcInt3Return(const struct pt_regs *before, const struct pt_regs *after) noexcept
{
	int cpu = tlsCpu;

	if (xmcEnabled && cpu >= 0) {
		EmuRing *e = &emuRings[cpu];
		u64 head = e->head;

		if (head - __atomic_load_n(&e->tail, __ATOMIC_ACQUIRE) < kEmuRing) {
			EmuRec *r = &e->rec[head % kEmuRing];

			r->site = before->ip - 1;	/* the trap reports the byte after the INT3 */
			r->sp0 = before->sp;
			r->flags = before->flags;
			r->top0 = *(const unsigned long *)before->sp;
			r->ip1 = after->ip;
			r->sp1 = after->sp;
			r->top1 = *(const unsigned long *)after->sp;
			__atomic_store_n(&e->head, head + 1, __ATOMIC_RELEASE);
		} else {
			__atomic_store_n(&e->dropped, e->dropped + 1, __ATOMIC_RELAXED);
		}
	}
	cpuEret();
}

void xmcOpBegin(const char *what, bool int3Batch) noexcept
{
	if (!xmcEnabled || !op)
		return;
	if (op->open)
		opClose();
	opOpen(what, false, int3Batch);
	takeStaleAtEntry();
	takeStaleTlb();
}

void xmcOpEnd() noexcept
{
	if (!xmcEnabled || !op || !op->open)
		return;
	opClose();
}

void xmcPhase(int phase) noexcept
{
	if (op && op->open)
		op->phase = phase;
}

void xmcSyncRoundDone() noexcept
{
	if (op && op->open && op->implicit)
		opClose();
}

void xmcMembarrierRound(u64 seq) noexcept
{
	int self = tlsCpu;

	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++)
		if ((int)cpu != self && online(cpu))
			cpuRaiseSerial(&cpuEvents[cpu], seq);
}

void xmcInt3RefsPublish(int cpu) noexcept
{
	if (cpu < 0)
		int3LiveGlobal = true;
	else
		int3Live[cpu] = true;
}

void xmcInt3RefsDrain(int cpu) noexcept
{
	if (cpu < 0)
		int3LiveGlobal = false;
	else
		int3Live[cpu] = false;
	if (!xmcEnabled || !op || !op->open)
		return;

	/* R3: no CPU whose refs go may still fetch an INT3 that the operation removed. */
	takeFresh();
	for (unsigned int c = 0; c < nr_cpu_ids; c++) {
		XmcCpu *x = &xmcCpus[c];
		bool fetching;
		u64 s;

		if ((cpu >= 0 && (int)c != cpu) || !online(c))
			continue;
		fetching = __atomic_load_n(&x->fetching, __ATOMIC_SEQ_CST);
		s = __atomic_load_n(&cpuEvents[c].serial, __ATOMIC_ACQUIRE);
		stats.int3Checks++;
		for (u32 i : op->int3Bytes) {
			const ByteHist *b = &op->bytes[i];

			if (currentValue(b) == kInt3 || (!fetching && !b->inNoinstr) ||
			    (b->onlyCpu >= 0 && b->onlyCpu != (int)c))
				continue;
			if (!possible(b, s, op->last).has(kInt3))
				continue;
			report(siteViolation(XmcRule::Int3Orphaned, c, b, s));
			break;
		}
	}
}

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

void xmcQuiesce() noexcept
{
	if (!op)
		return;
	if (op->open)
		opClose();
	takeStaleAtEntry();
	takeStaleTlb();
}

XmcStats xmcStats() noexcept
{
	XmcStats s = stats;

	for (unsigned int cpu = 0; cpu < nr_cpu_ids; cpu++) {
		s.serialisations += __atomic_load_n(&cpuEvents[cpu].serialCount, __ATOMIC_RELAXED);
		s.entryChecks += __atomic_load_n(&xmcCpus[cpu].entryChecks, __ATOMIC_RELAXED);
		s.emuSkipped += __atomic_load_n(&emuRings[cpu].dropped, __ATOMIC_RELAXED);
	}
	return s;
}

XmcStats operator-(const XmcStats &a, const XmcStats &b) noexcept
{
	XmcStats d;

	d.writes = a.writes - b.writes;
	d.bytes = a.bytes - b.bytes;
	d.ops = a.ops - b.ops;
	d.windows = a.windows - b.windows;
	d.returnChecks = a.returnChecks - b.returnChecks;
	d.entryChecks = a.entryChecks - b.entryChecks;
	d.int3Checks = a.int3Checks - b.int3Checks;
	d.siteChecks = a.siteChecks - b.siteChecks;
	d.emulations = a.emulations - b.emulations;
	d.emuSkipped = a.emuSkipped - b.emuSkipped;
	d.serialisations = a.serialisations - b.serialisations;
	d.violations = a.violations - b.violations;
	d.more = a.more - b.more;
	d.lost = a.lost - b.lost;
	return d;
}

XmcStats &operator+=(XmcStats &a, const XmcStats &b) noexcept
{
	a.writes += b.writes;
	a.bytes += b.bytes;
	a.ops += b.ops;
	a.windows += b.windows;
	a.returnChecks += b.returnChecks;
	a.entryChecks += b.entryChecks;
	a.int3Checks += b.int3Checks;
	a.siteChecks += b.siteChecks;
	a.emulations += b.emulations;
	a.emuSkipped += b.emuSkipped;
	a.serialisations += b.serialisations;
	a.violations += b.violations;
	a.more += b.more;
	a.lost += b.lost;
	return a;
}

unsigned long xmcViolationsOn(int cpu) noexcept
{
	return violationsOn[cpu];
}

std::vector<XmcViolation> xmcViolations()
{
	return violationLog;
}

void xmcSetReporter(void (*fn)(const XmcViolation &v))
{
	reporter = fn;
}

void xmcSetSyncPending(bool (*fn)(int cpu))
{
	syncPending = fn;
}

void xmcReset() noexcept
{
	if (!op) {
		op = new Op();
		op->int3Bytes.reserve(kBytesMax);
	}
	opForget();
	queuedIntents.clear();
	for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++) {
		XmcCpu *c = &xmcCpus[cpu];

		cpuEvents[cpu].serial = 0;
		cpuEvents[cpu].serialCount = 0;
		cpuEvents[cpu].irqsOnCall = 0;
		c->fetching = 1;
		c->freshHead = c->freshTail = 0;
		c->staleCount = 0;
		c->entryChecks = 0;
		c->staleHave = 0;
		int3Live[cpu] = false;
		exempt[cpu].have = false;
		staleReported[cpu] = 0;
		emuRings[cpu].head = emuRings[cpu].tail = 0;
		emuRings[cpu].dropped = 0;
		violationsOn[cpu] = 0;
	}
	int3LiveGlobal = false;
	textWriteSeq = 0;
	xmcLastOpEnd = 0;
	stats = {};
	violationLog.clear();
	firstLen = 0;
	addDeathHook(xmcDeathNote);
	{
		std::lock_guard<std::mutex> lk(regionLock);
		nregions = 0;
	}
	xmcEnabled = paramEnabled;
	irqsOnHook = xmcWriterIrqsOn;
}

const char *xmcRuleName(XmcRule r)
{
	switch (r) {
	case XmcRule::Torn:
		return "torn fetch";
	case XmcRule::Stale:
		return "stale after return";
	case XmcRule::StaleAtEntry:
		return "stale at kernel entry";
	case XmcRule::Int3Orphaned:
		return "INT3 without its handler";
	case XmcRule::Int3Unpublished:
		return "INT3 before its refs";
	case XmcRule::StrayWrite:
		return "write outside the batch";
	case XmcRule::Unfinished:
		return "site left unfinished";
	case XmcRule::Int3Misemulated:
		return "INT3 emulated wrongly";
	case XmcRule::StaleTlb:
		return "stale TLB";
	}
	return "?";
}

namespace {

int setXmc(const char *val, std::string &err)
{
	if (!val || !strcmp(val, "1") || !strcmp(val, "on")) {
		paramEnabled = true;
		return 0;
	}
	if (!strcmp(val, "0") || !strcmp(val, "off")) {
		paramEnabled = false;
		return 0;
	}
	err = std::string("pokelab.xmc=") + val + ": expected pokelab.xmc=1 (the default) or 0";
	return -EINVAL;
}

BootParamRegistrar xmcParam({
	"pokelab.xmc", setXmc, [] { paramEnabled = true; },
	"pokelab.xmc=1|0: the cross-modifying-code model checks every text write (default 1)",
});

/* The model starts empty at every boot, before anything writes text. */
int xmcBoot(std::string &)
{
	xmcReset();
	setMachineAttr("xmc", !xmcEnabled ? "off" : eretSerialises ? "on (eret serialising)"
							     : "on (eret plain)");
	return 0;
}

BootHookRegistrar xmcHook({"xmc", BootStage::Machine, xmcBoot});

} /* namespace */

} /* namespace kshim */
