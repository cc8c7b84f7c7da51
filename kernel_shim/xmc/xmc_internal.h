/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The cross-modifying-code model's own header: its state and the functions
 * its files share. Private to kernel_shim/xmc/ (the rest of the tree sees
 * kernel_shim/xmc.h, the feeds, and kernel_shim/xmc_verdict.h, the results).
 *
 * Who touches what: per CPU (XmcCpu, xmc.h), the CPU itself in any
 * context, read by the writer; everything here, the writer (the
 * text_mutex holder, or the boot CPU before the others run), task
 * context, but the regions (any task, under regionLock) and the rings the
 * CPUs fill (emulation records, fresh windows, TLB verdicts), each a
 * single-producer single-consumer ring or slot.
 */
#pragma once

#ifndef XMC_PRIVATE
#error "kernel_shim/xmc/xmc_internal.h is private to kernel_shim/xmc"
#endif

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <kernel_shim/xmc.h>
#include <kernel_shim/xmc_verdict.h>
#include <linux/threads.h>
#include <linux/types.h>

namespace kshim {

namespace xmc {

constexpr u8 kInt3 = 0xcc;
constexpr unsigned int kHist = 6;		/* values kept per byte and operation */
constexpr unsigned int kBytesMax = 32768;	/* distinct bytes per operation */
constexpr unsigned int kWritesMax = 16384;	/* writes per operation */
constexpr unsigned int kHashSize = 65536;	/* slots, power of two, >= 2 * kBytesMax */
constexpr unsigned int kViolationsKept = 64;
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
	short gate;		/* reached only through gates[gate] (-1: not gated) */
	u64 lossSeq;		/* the last value dropped for capacity (0: none): older windows unjudged */
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
/*
 * The byte arrays are read only up to @len, @nalt and @hasEmu and are left
 * uninitialised by IntentMap's insert (zeroing all 176 bytes per site was
 * two thirds of its cost); the scalars start at 0.
 */
struct Intent {
	unsigned long addr = 0;
	unsigned int len = 0;
	u8 bytes[kSiteMax];
	/* the same site queued again in one batch: the earlier requests, also valid */
	unsigned int nalt = 0;
	u8 alt[3][kSiteMax];
	/*
	 * The instruction the caller asked the INT3 handler to emulate instead
	 * of the new bytes (smp_text_poke_batch_add()'s @emulate: "call
	 * __static_call_return0" for the xor form). Recorded, not believed: R5
	 * holds the handler to emulatedAs(), the model's own reading.
	 */
	bool hasEmu = false;
	u8 emu[kSiteMax];
	/*
	 * R1's memory of the site's windows it decided, the last few inline
	 * (CPU serial, the site's last write then); older ones in Op::decided.
	 */
	mutable u64 decSerial[4] = {}, decUpTo[4] = {};
	mutable u8 decN = 0, decNext = 0;
};

struct Region {
	unsigned long start, end;
	int cpu;		/* -2 hidden, -3 reached through a gate, >= 0 private to that CPU */
	unsigned long key;	/* -3: the static call every caller goes through */
};

/* Who may fetch a byte: reachableBy()'s answer. */
struct Reach {
	int cpu;		/* -1 everyone, -2 nobody, -3 through @key's branches, >= 0 that CPU only */
	unsigned long key, start, end;
};

/* A gated range, and the branches into it: its key's trampoline and inline sites. */
struct Gate {
	unsigned long key, start, end;
	std::vector<unsigned long> sites;
};

/* Byte address -> index into Op::bytes, open addressing; clearing costs what was used. */
struct ByteIndex {
	u32 slot[kHashSize];	/* index + 1; 0 = empty */
	u32 used[kBytesMax];
	u32 nused;

	/*
	 * The bytes of one 16-byte block land in 16 neighbouring slots (one
	 * cache line), the blocks are scattered: a site's bytes, looked up
	 * one after the other, cost one miss, not one each.
	 */
	static u32 hash(unsigned long a)
	{
		u64 k = a >> 4;

		k ^= k >> 33;
		k *= 0xff51afd7ed558ccdull;
		k ^= k >> 33;
		return ((u32)k << 4 | (u32)(a & 15)) & (kHashSize - 1);
	}

	/*
	 * One bit per address modulo kFilterBits, set for every recorded
	 * byte: most bytes the model asks about (those after a site) were
	 * never written, and the filter, in L1, says so without a probe.
	 */
	static constexpr unsigned int kFilterBits = 32768;
	u64 filter[kFilterBits / 64];

	bool maybe(unsigned long a) const
	{
		return filter[(a / 64) % (kFilterBits / 64)] & (1ull << (a % 64));
	}

	/* maybe() for any of [@a, @a + @n), @n <= 64: a word or two of the filter */
	bool maybeAny(unsigned long a, unsigned int n) const
	{
		while (n) {
			unsigned int bit = a % 64, take = std::min(n, 64 - bit);
			u64 mask = (take == 64 ? ~0ull : ((1ull << take) - 1)) << bit;

			if (filter[(a / 64) % (kFilterBits / 64)] & mask)
				return true;
			a += take;
			n -= take;
		}
		return false;
	}

	long find(unsigned long a, const ByteHist *bytes) const
	{
		if (!maybe(a))
			return -1;
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

		filter[(a / 64) % (kFilterBits / 64)] |= 1ull << (a % 64);

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
		memset(filter, 0, sizeof(filter));
	}
};

/*
 * Intents by site address, as one sorted vector: a batch records one per
 * site, in address order (text_poke_addr_ordered()), so each goes at the
 * end, and drops them all when it returns, keeping the storage for the
 * next (bench batch: a std::map node per site was most of the model's time
 * per smp_text_poke_batch_add()). The subset of std::map's interface the
 * model uses. An insert moves the intents after it: pointers into the map
 * last until the next insert (intentsChanged() says so to the lookups'
 * caches). Only the writer (text_mutex holder) touches it.
 */
/* One site's intent under its address; the intent's arrays left as they come (see Intent). */
struct IntentEntry {
	unsigned long first;
	Intent second;

	explicit IntentEntry(unsigned long a) : first(a) {}
};

class IntentMap
{
public:
	using value_type = IntentEntry;
	using iterator = std::vector<value_type>::iterator;
	using const_iterator = std::vector<value_type>::const_iterator;

	iterator begin() { return v_.begin(); }
	iterator end() { return v_.end(); }
	const_iterator begin() const { return v_.begin(); }
	const_iterator end() const { return v_.end(); }
	bool empty() const { return v_.empty(); }
	size_t size() const { return v_.size(); }
	void clear() { v_.clear(); }
	void swap(IntentMap &o) { v_.swap(o.v_); }

	/* the end at once for an address past the last: a batch queues in address order */
	iterator lower_bound(unsigned long a)
	{
		if (v_.empty() || v_.back().first < a)
			return v_.end();
		return std::lower_bound(v_.begin(), v_.end(), a,
					[](const value_type &e, unsigned long k) { return e.first < k; });
	}
	iterator upper_bound(unsigned long a)
	{
		return std::upper_bound(v_.begin(), v_.end(), a,
					[](unsigned long k, const value_type &e) { return k < e.first; });
	}
	/* @a's intent, a new one if it had none */
	Intent &operator[](unsigned long a)
	{
		iterator it = lower_bound(a);

		if (it == v_.end() || it->first != a)
			it = emplace_hint(it, a);
		return it->second;
	}
	/* a new intent for @a, which has none, at @pos: lower_bound(@a) */
	iterator emplace_hint(iterator pos, unsigned long a)
	{
		return v_.emplace(pos, a);
	}

private:
	std::vector<value_type> v_;
};

struct Op {
	bool open;
	bool implicit;
	bool int3Batch;
	bool full;		/* capacity reached: later bytes or writes go unrecorded (counted) */
	const char *what;
	int phase;
	u64 first;		/* first write of the operation (0: none yet) */
	u64 last;
	unsigned int nbytes, nwrites;
	ByteHist bytes[kBytesMax];
	Write writes[kWritesMax];
	ByteIndex index;
	u32 hint;		/* findByte()'s guess: the byte after the last one found */
	IntentMap intents;
	std::vector<u32> int3Bytes;
	/* (site, CPU serial) -> the site's last write that window was decided up to */
	struct DecidedHash {
		size_t operator()(const std::pair<unsigned long, u64> &k) const
		{
			return std::hash<unsigned long>()(k.first * 0x9e3779b97f4a7c15ull ^
							  k.second);
		}
	};
	std::unordered_map<std::pair<unsigned long, u64>, u64, DecidedHash> decided;
};

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
 * A memory of what a decoder said of a few bytes (insnLength(), R5's
 * outcomes): the model decodes the same instructions again and again, and
 * a decode is the dearest step of a check. Exact: keyed by every byte the
 * decoder could look at (at most 16) and how many it was given.
 * Direct-mapped; owned by whoever holds it (the writer, all but always):
 * another thread that finds it taken decodes for itself.
 */
template <typename T, unsigned int N>
struct DecodeMemo {
	struct Entry {
		u64 key[2];	/* the bytes, zero-padded */
		u8 n;		/* how many; 0 = empty */
		T v;
	};
	Entry e[N];
	int owned;

	template <typename F>
	T get(const u8 *p, unsigned int n, F decode)
	{
		u64 key[2] = {0, 0}, h;
		bool own;
		T v;

		memcpy(key, p, n);
		h = (key[0] * 0x9e3779b97f4a7c15ull) ^ ((key[1] + n) * 0xc2b2ae3d27d4eb4full);
		Entry &m = e[(h >> 40) & (N - 1)];
		own = !__atomic_exchange_n(&owned, 1, __ATOMIC_ACQUIRE);
		if (own && n && m.n == n && m.key[0] == key[0] && m.key[1] == key[1]) {
			v = m.v;
		} else {
			v = decode(p, n);
			if (own && n) {
				m.key[0] = key[0];
				m.key[1] = key[1];
				m.n = (u8)n;
				m.v = v;
			}
		}
		if (own)
			__atomic_store_n(&owned, 0, __ATOMIC_RELEASE);
		return v;
	}
};

/*
 * The calling thread's copy of @v, which writers change under @lock and
 * bump @gen (a release store) each time: the lock is taken only when @gen
 * moved on since the thread's last copy; @refresh, if any, runs under it
 * first. For what the writer asks at every text write (the regions, the
 * noinstr ranges). Task context (a thread-local copy per element type).
 */
template <typename T>
const std::vector<T> &threadCopy(const std::vector<T> &v, std::mutex &lock,
				 const unsigned long &gen, void (*refresh)() = nullptr)
{
	static thread_local std::vector<T> copy;
	static thread_local unsigned long copyGen;

	if (copyGen != __atomic_load_n(&gen, __ATOMIC_ACQUIRE)) {
		std::lock_guard<std::mutex> lk(lock);

		if (refresh)
			refresh();
		copy = v;
		copyGen = gen;
	}
	return copy;
}

/* The open operation (xmc.cpp). */
extern Op *op;

/* The intent holding @a, or nullptr (window.cpp). */
const Intent *intentAt(unsigned long a);
/* The intent whose first byte is @a, or nullptr: a trap's site (O(1) in an INT3 batch). */
const Intent *intentStartingAt(unsigned long a);

/*
 * The intent holding @a (or nullptr), and the range [*@lo, *@hi) of
 * addresses that get the same answer: the intent's bytes, or the gap
 * before the next intent (window.cpp). The last answer is remembered
 * until the intents change, so the lookups of one write, which all fall
 * on its site and the bytes after it, cost one map lookup or two.
 */
const Intent *intentRange(unsigned long a, unsigned long *lo, unsigned long *hi);
/* The intents changed (added, swapped in, cleared): forget the remembered answer. */
void intentsChanged();

/* intentAt() for ascending addresses, with a range of its own. */
struct IntentCursor {
	const Intent *cur = nullptr;
	unsigned long lo = 1, hi = 0;

	const Intent *at(unsigned long a)
	{
		if (a >= lo && a < hi)
			return cur;
		cur = intentRange(a, &lo, &hi);
		return cur;
	}
};

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
 * R5: trap returns the INT3 path recorded, per CPU (SPSC ring: the CPU in
 * its SIGTRAP handler produces, the writer consumes).
 */
/* One cache line a record: the writer's read of it is one miss, not two. */
struct alignas(SMP_CACHE_BYTES) EmuRec {
	unsigned long site;		/* the INT3's address */
	unsigned long sp0, flags, top0;	/* as trapped; top0 = the word at sp0 */
	unsigned long ip1, sp1, top1;	/* as resumed; top1 = the word at sp1 */
};

constexpr unsigned int kEmuRing = 256;
constexpr unsigned int kEmuPerWrite = 2;	/* trap returns checked per text write */
constexpr unsigned int kEmuEvery = 4;		/* text writes between looks at the rings */
constexpr unsigned int kEmuChunk = 16;		/* records taken from one CPU at a visit */

/*
 * A ring per CPU and level: an NMI may land in the SIGTRAP handler between
 * its look at head and its store of head + 1, and run a site whose INT3
 * takes the nested handler into the same path. Each level has its own
 * producer (NMIs do not nest), so each ring stays single-producer:
 *
 *	CPU1, level 0 (INT3 handler)		CPU1, level 1 (INT3 inside the NMI)
 *	head = H, fills rec[H] ...
 *		<NMI> site: INT3 ------------->	fills its own ring's rec[H'], H' + 1
 *	... fills the rest of rec[H], H + 1
 */
constexpr unsigned int kEmuLevels = 2;	/* 0: task or IRQ context; 1: in an NMI */

struct alignas(SMP_CACHE_BYTES) EmuRing {
	/*
	 * The producer's line: the trapping CPU writes head and dropped, and
	 * keeps the tail it last read (tailSeen), so that it reads the
	 * consumer's line only when the ring looks full.
	 */
	u64 head;
	unsigned long dropped;
	u64 tailSeen;
	/*
	 * The consumer's, apart, so that taking records does not steal the
	 * producer's line; headSeen likewise, so that it reads the producer's
	 * line only when it has taken all it saw there.
	 */
	alignas(SMP_CACHE_BYTES) u64 tail;
	u64 headSeen;
	alignas(SMP_CACHE_BYTES) EmuRec rec[kEmuRing];
};

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

/* R6 records, one per CPU until reported (xmcTlbStale()) */
struct TlbStale {
	int have;
	unsigned long start, end, ip;
	u64 gen, cpuGen;
};

/* R3: the INT3s the open batch armed, for the declined-trap check in signal context. */
constexpr unsigned int kArmedMax = 512;

struct ArmedList {
	unsigned int gen;	/* seqcount: odd while the writer changes the list */
	unsigned int n;
	unsigned long site[kArmedMax];
	u8 removed[kArmedMax];
	/* the opcodes of the site's old and new (or emulated) instruction, for R5's stack check */
	u8 oldOp[kArmedMax], newOp[kArmedMax];
};

/*
 * Claim a CPU's record word from @from to @to against that CPU's own
 * nested handlers (an NMI inside the INT3 handler): CMPXCHG without LOCK,
 * one instruction, so a nested claim that came first makes it fail; not a
 * fence, so the model adds no ordering to the code it watches. Only the
 * CPU itself claims; another thread may release the word (to @from).
 */
static inline bool claimOwn(int *p, int from, int to)
{
	int seen = from;

	asm volatile("cmpxchgl %2, %1" : "+a"(seen), "+m"(*p) : "r"(to) : "cc", "memory");
	return seen == from;
}

/* The record words' states: empty (0), ready for the writer (1), being filled (2). */
constexpr int kRecFilling = 2;

/* R3: per CPU, the INT3 handler's nesting and the declined trap it recorded. */
struct alignas(SMP_CACHE_BYTES) Int3Cpu {
	unsigned int depth;	/* > 0 inside exc_int3() */
	unsigned long site;	/* the outermost trap's INT3 */
	int declinedHave;
	unsigned long declinedSite;
	int declinedPhase;
	long declinedRefs;
	/* R5, checked on the trapping CPU: the stack the handler resumed with (emulation.cpp) */
	int stackHave;
	unsigned long stackSite, stackIp, stackSp0, stackSp1;
	u8 stackOp;
	/* the handler's first take of a ref with the count at 0 (xmcInt3RefOp()), for the causes */
	int fromZeroHave;
	u64 fromZeroSeq;
	unsigned long fromZeroSite;
	/* the outermost trap's stack pointer and the word there, as trapped (boot.cpp's R5) */
	unsigned long enterSp, enterTop;
	/* R5 on the INT3 self-test, found on this CPU (boot.cpp) */
	int selftestHave;
	unsigned long selftestSp0, selftestTop0, selftestIp, selftestSp1, selftestTop1;
	unsigned long selftestTop0Now;
};

/* R8 records, one per CPU until reported (xmcFenceMissing()) */
struct FenceMissing {
	int have;
	int pair;
	unsigned long ip;
};

/*
 * What the model takes a CPU to have serialised against: its own record
 * (kernel_shim/cpu_events.h), raised by what the model forgives (one fault,
 * one report) and by what membarrier covers, which the model keeps apart:
 * @raised is the writer's, XmcCpu::forgiven the CPU's own.
 */
extern u64 raised[NR_CPUS];

static inline u64 serialOf(unsigned int cpu)
{
	u64 s = __atomic_load_n(&cpuEvents[cpu].serial, __ATOMIC_ACQUIRE);
	u64 f = __atomic_load_n(&xmcCpus[cpu].forgiven, __ATOMIC_ACQUIRE);
	u64 r = __atomic_load_n(&raised[cpu], __ATOMIC_ACQUIRE);

	return std::max({s, f, r});
}

/* ---- xmc.cpp: the open operation and its bookkeeping ---- */
extern int busy;
extern int opActive;
extern bool paramEnabled;
void opOpen(const char *what, bool implicit, bool int3Batch);
void opClose(bool returning = true);
/* What the CPUs recorded for the writer to report (R2 at entry, R6, R8). */
void takeCpuRecords();

/* ---- bytes.cpp ---- */
bool online(int cpu);
ByteHist *findByte(unsigned long addr);
/* The value @b had for a CPU that serialised at @serial. */
u8 valueAt(const ByteHist *b, u64 serial);
u8 currentValue(const ByteHist *b);
/* What a CPU with window (@serial, @upTo] may fetch for byte @b. */
PSet possible(const ByteHist *b, u64 serial, u64 upTo);
/* Record one write in the operation; returns its sequence number. */
u64 recordWrite(unsigned long a, const u8 *before, const u8 *after, size_t len, const Reach &r);
/* Drop the operation's bytes, writes and sites. */
void opForget();
/* The old bytes of intent @in's site, as the operation found them. */
void oldBytes(const Intent &in, u8 *out);
/* Who may fetch @addr (a Reach). */
Reach reachableBy(unsigned long addr);
/* The operation's gated ranges, which bytes refer to by index (ByteHist::gate). */
extern std::vector<Gate> gates;
/* The index in gates of @r's range (-1: none, too many). Writer. */
int gateOf(const Reach &r);
/*
 * Can a CPU serialised at @serial reach gated range @g: does one of its
 * branches go into it, as the CPU fetched it at @serial or as it is now?
 */
bool gateReaches(const Gate &g, u64 serial);
/* Can CPU @cpu, serialised at @serial, fetch byte @b at all? */
bool mayFetch(const ByteHist *b, unsigned int cpu, u64 serial);
void setRegion(unsigned long start, unsigned long end, int cpu, unsigned long key);
void forgetRegions();

/* ---- tables.cpp ---- */
/* The branches of static call @key: its trampolines and inline sites (live sources). */
std::vector<unsigned long> callGates(unsigned long key);
void xmcTestCapacity(unsigned int bytes, unsigned int writes) noexcept;
/* What one operation may record now (kBytesMax, kWritesMax, or less: a test, the knob). */
extern unsigned int bytesLimit, writesLimit;

/* ---- window.cpp ---- */
int insnLength(const u8 *p, unsigned int len, bool *falls = nullptr);
void buildWindow(const Intent &in, u64 serial, u64 upTo, Window *w);
/* Fetch windows CPUs opened by leaving an EQS while this operation wrote. */
void takeFresh();

/* ---- emulation.cpp: R5 ---- */
/*
 * Candidate @bytes (@len) of the site at @site as the INT3 handler must run
 * it, into @out (may be @bytes): xor5rax as "call __static_call_return0",
 * anything else as itself. The model's knowledge, not the patcher's word.
 */
void emulatedAs(const u8 *bytes, unsigned int len, unsigned long site, u8 *out);

/* ---- torn.cpp: R1 ---- */
bool findTorn(const Window &w, Torn *t);
void fillBytes(XmcViolation *v, const Window &w, unsigned int pos, unsigned int len);
/* Phases of the first and the last write to the site in (@serial, @upTo]. */
void phasesIn(XmcViolation *v, const Intent &in, u64 serial, u64 upTo);
/*
 * R1 for one CPU (and all that share its @serial) on one site, up to write
 * @upTo; @written: the caller knows the site's last write is @upTo itself.
 */
void checkSite(const Intent &in, u64 serial, u64 upTo, int cpu, bool written = false);
/* R1 for @cpu, serialised at @serial, on every site written in (@since, @upTo]. */
void checkSince(u64 serial, u64 since, u64 upTo, int cpu);

/* ---- stale.cpp: R2 ---- */
extern Exempt exempt[NR_CPUS];
extern u64 staleReported[NR_CPUS];
extern bool (*syncPending)(int cpu);
void checkStaleAtReturn();
/* R2 records made by CPUs at their first instrumentable fetch, into the log. */
void takeStaleAtEntry();

/* ---- int3.cpp: R3 ---- */
extern ArmedList armed;
/* The last forgotten batch's INT3 sites (int3.cpp), for a late trap's report. */
extern ArmedList retired;
extern Int3Cpu int3Cpus[NR_CPUS];
/* A CPU's INT3 refs count as the atomic reads now (-1: not registered). */
long refsOf(unsigned int cpu);
/* The handler takes the one shared count (pokelab.refs=global), read from its own flag. */
bool refsGlobalMode();
void armedRemove(unsigned long site);
void armedClear();
/* The open batch armed @site: its old and new opcodes. Lock-free, any context (int3.cpp). */
bool armedOpcodes(unsigned long site, u8 *oldOp, u8 *newOp);
/* R5's stack records of the CPUs, one line each on stderr, on the way down. Signal-safe. */
bool stackNotes();
/* Is any R5 stack record waiting? Signal-safe. */
bool stackPending();
/* The declined traps the CPUs recorded, into the log. */
void takeDeclined();
/* R3, arming: a CPU that may fetch the INT3 just written must have live refs. */
void checkInt3Armed(const ByteHist *b);

/* ---- sites.cpp: R4 ---- */
extern IntentMap queuedIntents;
/* A violation on intent @in's site: old bytes, the requested ones, and @now. */
XmcViolation intentViolation(XmcRule rule, int cpu, const Intent &in, const u8 *now);
/* R4 at an INT3 batch's return: every site holds what its caller asked for. */
void checkFinished();
/* R4, at a write of an INT3 batch: report its first changed byte outside every site. */
void checkStray(unsigned long a, const u8 *before, const u8 *after, size_t len, int writer);

/* ---- emulation.cpp: R5 ---- */
extern EmuRing emuRings[NR_CPUS][kEmuLevels];
void checkEmulation(int cpu, const EmuRec &r);
void takeEmulations(unsigned int budget);

/* ---- tlb.cpp: R6 ---- */
extern TlbStale tlbStale[NR_CPUS];
void takeStaleTlb();

/* ---- fence.cpp: R8 ---- */
extern FenceMissing fenceMissing[NR_CPUS];
void takeMissingFences();
const char *fencePairStore(int pair);
const char *fencePairLoad(int pair);

/* ---- calls.cpp: R9 ---- */
extern int (*ctStateRead)(int cpu);
extern std::string (*ctStateDescribe)(int state);
extern int skipState[NR_CPUS][NR_CPUS];
extern u8 skipPending[NR_CPUS][NR_CPUS];
/* and whether it was fetching instrumentable text then (outside an EQS, past its flush) */
extern u8 skipFetching[NR_CPUS][NR_CPUS];
/* Does the deferral policy in force defer the cross-call function @func? Task context. */
bool policyDefers(unsigned long func);
const char *deferralPolicy();
/* A context-tracking state word in words (or in hex, without context tracking). */
std::string ctStateWords(int state);
/* The waited calls that returned early, into the log. The writer. */
void takeCallRecords();
/* Set when a sender recorded one: the writer takes them at its next write and round. */
extern int callLatePending;
/* Install the machine's cross-call hooks and forget the records. Boot. */
void callsReset();

/* ---- cause.cpp: why, for the reports ---- */
/* The indented cause lines of @v (empty: none). The writer. */
std::string causeOf(const XmcViolation &v);
/* "  CPU n's last events" lines. */
std::string lastEvents(int cpu);
/* A sync round returned: keep what it did with each CPU (the writer's last cross-call). */
void recordRound();
/* A membarrier round covered writes up to @seq: the next recordRound() is it. */
void recordMembarrierRound(u64 seq);
void roundsReset();

/* ---- noinstr.cpp: which text is noinstr, from the section tables ---- */
void noinstrAdd(const void *owner, unsigned long start, unsigned long end);
void noinstrRemove(const void *owner);
bool noinstrText(unsigned long addr);

/* ---- tables.cpp, altcheck.cpp: R7 ---- */
void checkTablesLocked(const char *what, unsigned long key, bool callKey, bool all,
		       const void *only = nullptr);
/* A batch was asked for @len bytes at @addr: R7 if @addr is a table's site. */
void checkRequest(unsigned long addr, const u8 *bytes, unsigned int len);
void checkAlternatives(const char *what, const void *owner, const u8 *start, const u8 *end,
		       const u32 *caps, unsigned int words);

/* R7 over the tables of @tables (XMC_TABLE_* bits), every live source. Takes the table lock. */
void checkTableSet(const char *what, unsigned int tables);

/* ---- boot.cpp: the model at boot ---- */
/* Forget the boot stages; find the self-test's symbols. xmcReset(). */
void bootReset();
/* A self-test emulation a CPU found wrong after boot, into the log. The writer. */
void takeSelftest();

/* ---- report.cpp ---- */
/* A note printed on the way down counts as reported (xmcReported()). Async-signal-safe. */
void xmcNoteReported() noexcept;
extern int notedOnTheWayDown;
extern XmcStats stats;

/* One window or value past the model's capacity: counted in stats.lost and in its @cause. */
inline void countLost(unsigned long XmcStats::*cause)
{
	stats.*cause += 1;
	stats.lost++;
}
extern std::vector<XmcViolation> violationLog;
extern unsigned long violationsOn[NR_CPUS];
extern bool reportedInOp[NR_CPUS];
extern size_t firstLen;
extern void (*reporter)(const XmcViolation &v);
void report(const XmcViolation &found);
/* A reported CPU starts again from @seq, so that one fault is one report. */
void forgive(int cpu, u64 seq);
/* A violation that names the site holding byte @b, as CPU @cpu may fetch it. */
XmcViolation siteViolation(XmcRule rule, int cpu, const ByteHist *b, u64 serial);

} /* namespace xmc */

} /* namespace kshim */
