// SPDX-License-Identifier: GPL-2.0-only
/*
 * R7, site holds the wrong instruction: what each site must hold comes from
 * the kernel's own tables and the state they are read with, never from what
 * the code under test asked a batch to write:
 *
 *	table			entry				state read		the site holds
 *	__jump_table		code, target, key | branch	key->enabled		a JMP to target or a NOP,
 *											by enabled ^ branch
 *	static_call_sites	site, key | TAIL | INIT		key->func		CALL/NOP/xor (a call),
 *											JMP/RET (a tail call),
 *											Jcc (a Jcc.d32 tail call)
 *	__SCT__name		the trampoline of __SCK__name	key->func		JMP func, or RET
 *	altinstructions		site, replacement, feature	the CPU's features	altcheck.cpp
 *
 * The tables are taken from the program's section table and symbols
 * (kernel_shim/elf_image.h) and from each module's sections as its loader
 * laid them out (xmcModuleTables()). The checks run when an update the
 * tables describe returns (a key's jump_label_update(), a static call's
 * __static_call_update()), after boot, and at the end of a run for every
 * entry. Sites in init text (the entry's init mark) are left out: after init
 * nothing may rewrite them, and a module's are freed.
 *
 * The x86 forms, as arch/x86/kernel/{jump_label,static_call}.c write them
 * (each compared decoded, with Zydis: a JMP by its target, a NOP by its
 * length, so that the check holds the encoding to its meaning, not to one
 * byte string): a RET is a JMP to the return thunk in use when the CPU has
 * X86_FEATURE_RETHUNK (xmcCpuCaps()), a call of __static_call_return0 is
 * the 5-byte xor %eax,%eax, a NULL call is a NOP5, a NULL Jcc tail call goes
 * to __static_call_return (or the return thunk).
 *
 * Task context; the checks take the model's table lock (its own, not a
 * fence of the kernel's: the check runs after the update it checks).
 */
#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include <kernel_shim/disasm.h>
#include <kernel_shim/boot.h>
#include <kernel_shim/elf_image.h>
#include <kernel_shim/symbols.h>

#define XMC_PRIVATE
#include "xmc_internal.h"

namespace kshim {

namespace xmc {

namespace {

/* The kernel's layouts of the table entries (include/linux/{jump_label,static_call}.h). */
struct JumpEntry {
	s32 code;
	s32 target;
	long key;
};

struct StaticCallSite {
	s32 addr;
	s32 key;
};

constexpr long kJumpBranch = 1, kJumpInit = 2;

constexpr s32 kScTail = 1, kScInit = 2;

struct Source {
	const void *owner;	/* nullptr: the program; else the module */
	bool live;		/* its sites are the tables' (after the module's COMING notifiers) */
	const char *name;
	const JumpEntry *jumpStart, *jumpEnd;
	const StaticCallSite *scStart, *scEnd;
	const u8 *altStart, *altEnd;
};

std::mutex tableLock;
std::vector<Source> sources;
bool programLoaded;

/* Site address -> its table entry, for the check at a batch's request (rebuilt on change). */
struct SiteRef {
	const JumpEntry *jump;
	const StaticCallSite *call;
};
std::unordered_map<unsigned long, SiteRef> siteIndex;
bool siteIndexStale = true;
/*
 * The lowest and highest address in siteIndex, for checkRequest() to pass
 * over a request outside every table without the lock and the lookup (a
 * batch on JIT text, a module's own pages). [0, ~0] while the index is
 * stale. Written under tableLock; read without it, relaxed: a request for
 * a site of tables just added comes after them by text_mutex (the loader
 * pokes its own sites, a key's users find the module under jump_label_mutex).
 */
std::atomic<unsigned long> siteLo{0}, siteHi{~0ul};

/* The tables changed: the index is rebuilt at the next request. tableLock held. */
void siteIndexChanged()
{
	siteIndexStale = true;
	siteLo.store(0, std::memory_order_relaxed);
	siteHi.store(~0ul, std::memory_order_relaxed);
}


/* Program symbols the forms need (0 when absent). */
unsigned long symReturn0, symReturn, symReturnThunkVar;
std::vector<std::pair<unsigned long, unsigned long>> trampolines;	/* (key, tramp) */

const u32 *caps;
unsigned int capWords;
int rethunkBit = -1;

unsigned long entryCode(const JumpEntry *e)
{
	return (unsigned long)&e->code + e->code;
}

unsigned long entryTarget(const JumpEntry *e)
{
	return (unsigned long)&e->target + e->target;
}

unsigned long entryKey(const JumpEntry *e)
{
	return (unsigned long)&e->key + (e->key & ~3L);
}

unsigned long siteAddr(const StaticCallSite *s)
{
	return (unsigned long)&s->addr + s->addr;
}

unsigned long siteKey(const StaticCallSite *s)
{
	return (unsigned long)&s->key + (s->key & ~3);
}

bool rethunk()
{
	return rethunkBit >= 0 && caps && (unsigned int)rethunkBit / 32 < capWords &&
	       (caps[rethunkBit / 32] & (1u << (rethunkBit % 32)));
}

unsigned long returnThunk()
{
	return symReturnThunkVar ? *(const volatile unsigned long *)symReturnThunkVar : 0;
}

/* The build's return thunk itself (__x86_return_thunk), whichever is in use. */
unsigned long returnThunkAddr()
{
	static unsigned long a = elfProgramSymbol("__x86_return_thunk");

	return a;
}

/* One decoded instruction: what the forms are compared by. */
struct Insn {
	bool ok;
	unsigned int len;
	ZydisMnemonic mnemonic;
	unsigned long target;	/* a relative branch's, else 0 */
	bool rel;
	bool xorEaxEax;
};

Insn decodeAt(const u8 *p, unsigned int len, unsigned long addr)
{
	ZydisDecodedInstruction zi;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	Insn in = {};
	ZyanU64 t;

	if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(zydisDecoder(), p, len, &zi, ops)))
		return in;
	in.ok = true;
	in.len = zi.length;
	in.mnemonic = zi.mnemonic;
	if (zi.operand_count_visible == 1 && ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
	    ops[0].imm.is_relative && ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&zi, &ops[0], addr, &t))) {
		in.rel = true;
		in.target = t;
	}
	in.xorEaxEax = zi.mnemonic == ZYDIS_MNEMONIC_XOR && zi.operand_count_visible == 2 &&
		       ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
		       ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER &&
		       ops[0].reg.value == ZYDIS_REGISTER_EAX && ops[1].reg.value == ZYDIS_REGISTER_EAX;
	return in;
}

bool isJmpTo(const Insn &in, unsigned long target, unsigned int len)
{
	return in.ok && in.mnemonic == ZYDIS_MNEMONIC_JMP && in.rel && in.target == target &&
	       in.len == len;
}

/* RET (c3, then INT3 padding to @len) or, with the return thunk wanted, a JMP32 to it. */
bool isRetForm(const u8 *p, unsigned long addr, unsigned int len)
{
	bool ret = p[0] == 0xc3;

	for (unsigned int i = 1; ret && i < len; i++)
		ret = p[i] == 0xcc;
	if (rethunk())
		return isJmpTo(decodeAt(p, 5, addr), returnThunk(), 5);
	return ret;
}

std::string nameOf(unsigned long a)
{
	return a ? fmt::format("{} [{:#x}]", traceSymbol(a, true), a) : "NULL";
}

void reportSite(const char *what, unsigned long site, const u8 *now, unsigned int len,
		const u8 *old, bool haveOld, const std::string &demand, bool request = false)
{
	XmcViolation v = {};

	v.request = request;
	v.rule = XmcRule::WrongSite;
	v.cpu = tlsCpu >= 0 ? tlsCpu : 0;
	v.op = what;
	v.site = site;
	v.len = len;
	for (unsigned int i = 0; i < len; i++) {
		v.nposs[i] = 1;
		v.poss[i][0] = now[i];
	}
	memcpy(v.oldBytes, haveOld ? old : now, len);
	memcpy(v.newBytes, now, len);
	memcpy(v.tornBytes, now, len);
	v.tornLen = len;
	v.detail = request ? demand
			   : fmt::format("after {} the site holds other bytes than {}", what, demand);
	report(v);
}

/*
 * What jump entry @e demands of the @len bytes @now at its site: "" when
 * they hold it, else the demand in words; *@size its size (2 or 5).
 */
std::string judgeJumpEntry(const JumpEntry *e, const u8 *now, unsigned int len,
			   unsigned int *size)
{
	unsigned long code = entryCode(e), key = entryKey(e), target = entryTarget(e);
	int count = __atomic_load_n((const int *)key, __ATOMIC_ACQUIRE);
	/* static_key_count(): -1 is a first enable in progress, counted as 1 */
	bool enabled = count != 0, branch = e->key & kJumpBranch, jmp = enabled ^ branch;
	u8 old[5];
	bool haveOld = elfProgramBytes(code, old, 5);
	Insn in = decodeAt(now, len, code), orig = haveOld ? decodeAt(old, 5, code) : in;

	/* the site's size: 2 or 5, as arch_jump_entry_size() reads it; the build's if in doubt */
	*size = in.ok && (in.len == 2 || in.len == 5) ? in.len
		: orig.ok && (orig.len == 2 || orig.len == 5) ? orig.len : 5;
	if (jmp ? isJmpTo(in, target, *size)
		: in.ok && in.mnemonic == ZYDIS_MNEMONIC_NOP && in.len == *size)
		return "";
	return fmt::format("its __jump_table entry demands (key {} with count {}, branch {}: {})",
			   nameOf(key), count, branch ? 1 : 0,
			   jmp ? fmt::format("a {}-byte JMP to {}", *size, nameOf(target))
			       : fmt::format("a {}-byte NOP", *size));
}

/* "entry 12 of the program's __jump_table [0x...]": which entry @e is, for a report. */
std::string entryName(const void *e)
{
	for (const Source &s : sources) {
		if (e >= s.jumpStart && e < s.jumpEnd)
			return fmt::format("entry {} of {}'s __jump_table [{}]",
					   (const JumpEntry *)e - s.jumpStart, s.name, e);
		if (e >= s.scStart && e < s.scEnd)
			return fmt::format("entry {} of {}'s static_call_sites [{}]",
					   (const StaticCallSite *)e - s.scStart, s.name, e);
	}
	return fmt::format("the entry at {}", e);
}

/* R7 on one __jump_table entry, as its site is in memory now. */
void checkJumpEntry(const char *what, const JumpEntry *e)
{
	unsigned long code = entryCode(e);
	u8 now[5], old[5];
	bool haveOld = elfProgramBytes(code, old, 5);
	unsigned int size;
	std::string demand;

	if (e->key & kJumpInit)
		return;
	memcpy(now, (const void *)code, 5);
	stats.tableChecks++;
	demand = judgeJumpEntry(e, now, 5, &size);
	if (!demand.empty())
		reportSite(what, code, now, size, old, haveOld, demand + ", " + entryName(e));
}

/*
 * What static-call site @s demands of the bytes @now (6 readable) at its
 * site: "" when they hold it, else the demand in words; *@len its length.
 */
std::string judgeCallSite(const StaticCallSite *s, const u8 *now, unsigned int *len)
{
	unsigned long site = siteAddr(s), key = siteKey(s);
	unsigned long func = __atomic_load_n((const unsigned long *)key, __ATOMIC_ACQUIRE);
	bool tail = s->key & kScTail, ok;
	std::string demand;
	Insn in = decodeAt(now, 6, site);

	*len = 5;
	if (tail && now[0] == 0x0f && (now[1] & 0xf0) == 0x80) {
		/* a Jcc.d32 tail call: the condition stays, the target follows func */
		unsigned long to = func ? func : rethunk() ? returnThunk() : symReturn;

		*len = 6;
		ok = in.ok && in.rel && in.len == 6 && in.target == to;
		demand = fmt::format("a Jcc.d32 to {}", nameOf(to));
	} else if (tail) {
		ok = func ? isJmpTo(in, func, 5) : isRetForm(now, site, 5);
		demand = func ? fmt::format("a JMP to {}", nameOf(func))
			      : rethunk() ? "a JMP to the return thunk" : "a RET";
	} else if (!func) {
		ok = in.ok && in.mnemonic == ZYDIS_MNEMONIC_NOP && in.len == 5;
		demand = "a NOP5 (no function)";
	} else if (func == symReturn0) {
		ok = in.ok && in.xorEaxEax && in.len == 5;
		demand = "the 5-byte xor %eax,%eax (a call of __static_call_return0)";
	} else {
		ok = in.ok && in.mnemonic == ZYDIS_MNEMONIC_CALL && in.rel && in.target == func &&
		     in.len == 5;
		demand = fmt::format("a CALL of {}", nameOf(func));
	}
	if (ok)
		return "";
	return fmt::format("its static_call_sites entry demands ({} site of key {}, func {}: {})",
			   tail ? "a tail-call" : "a call", nameOf(key), nameOf(func), demand);
}

/* R7 on one inline static-call site, as it is in memory now. */
void checkCallSite(const char *what, const StaticCallSite *s)
{
	unsigned long site = siteAddr(s);
	u8 now[6], old[6];
	bool haveOld = elfProgramBytes(site, old, 6);
	unsigned int len;
	std::string demand;

	if (s->key & kScInit)
		return;
	memcpy(now, (const void *)site, 6);
	stats.tableChecks++;
	demand = judgeCallSite(s, now, &len);
	if (!demand.empty())
		reportSite(what, site, now, len, old, haveOld, demand + ", " + entryName(s));
}

/* R7 on one trampoline. */
void checkTrampoline(const char *what, unsigned long key, unsigned long tramp)
{
	unsigned long func = __atomic_load_n((const unsigned long *)key, __ATOMIC_ACQUIRE);
	u8 now[5], old[5];
	bool haveOld = elfProgramBytes(tramp, old, 5);

	memcpy(now, (const void *)tramp, 5);
	stats.tableChecks++;
	/*
	 * A NULL trampoline keeps the RET form it was built or last written
	 * with until an update rewrites it: the boot-time fixup of the
	 * program's trampolines (__static_call_fixup() from apply_returns(),
	 * over return sites objtool does not record for pokelab's own text) is
	 * not ported yet, so either RET form passes for it (docs/testing.md).
	 */
	if (func ? isJmpTo(decodeAt(now, 5, tramp), func, 5)
		 : isRetForm(now, tramp, 5) || (now[0] == 0xc3 && now[1] == 0xcc) ||
			   isJmpTo(decodeAt(now, 5, tramp), returnThunkAddr(), 5))
		return;
	reportSite(what, tramp, now, 5, old, haveOld,
		   fmt::format("its key demands (trampoline of {}, func {}: {})", nameOf(key),
			       nameOf(func), func ? fmt::format("a JMP to {}", nameOf(func))
					     : rethunk() ? std::string("a JMP to the return thunk")
							 : std::string("a RET")));
}

void loadProgram()
{
	unsigned long a, n;
	Source s = {nullptr, true, "the program", nullptr, nullptr, nullptr, nullptr, nullptr,
		    nullptr};

	if (programLoaded)
		return;
	programLoaded = true;
	if (elfProgramSection("__jump_table", &a, &n)) {
		s.jumpStart = (const JumpEntry *)a;
		s.jumpEnd = (const JumpEntry *)(a + n / sizeof(JumpEntry) * sizeof(JumpEntry));
	}
	if (elfProgramSection("static_call_sites", &a, &n)) {
		s.scStart = (const StaticCallSite *)a;
		s.scEnd = (const StaticCallSite *)(a + n / sizeof(StaticCallSite) *
						   sizeof(StaticCallSite));
	}
	if (elfProgramSection("altinstructions", &a, &n)) {
		s.altStart = (const u8 *)a;
		s.altEnd = (const u8 *)(a + n);
	}
	sources.insert(sources.begin(), s);
	siteIndexChanged();
	symReturn0 = elfProgramSymbol("__static_call_return0");
	symReturn = elfProgramSymbol("__static_call_return");
	symReturnThunkVar = elfProgramSymbol("x86_return_thunk");
	for (const auto &[name, tramp] : elfProgramSymbols("__SCT__")) {
		unsigned long key = elfProgramSymbol(("__SCK__" + name.substr(7)).c_str());

		if (key)
			trampolines.emplace_back(key, tramp);
	}
}

void buildSiteIndex()
{
	unsigned long lo, hi;

	/* every source, live or not: a request made by a module's COMING notifiers counts too */
	siteIndex.clear();
	for (const Source &s : sources) {
		for (const JumpEntry *e = s.jumpStart; e && e < s.jumpEnd; e++)
			if (!(e->key & kJumpInit))
				siteIndex[entryCode(e)] = SiteRef{e, nullptr};
		for (const StaticCallSite *c = s.scStart; c && c < s.scEnd; c++)
			if (!(c->key & kScInit))
				siteIndex[siteAddr(c)] = SiteRef{nullptr, c};
	}
	for (const auto &[key, tramp] : trampolines)
		siteIndex.erase(tramp);
	siteIndexStale = false;
	lo = ~0ul;
	hi = 0;
	for (const auto &[addr, ref] : siteIndex) {
		lo = std::min(lo, addr);
		hi = std::max(hi, addr);
	}
	siteLo.store(lo, std::memory_order_relaxed);
	siteHi.store(hi, std::memory_order_relaxed);
}

} /* namespace */

void checkRequest(unsigned long addr, const u8 *bytes, unsigned int len)
{
	u8 buf[6];
	unsigned int l;
	std::string demand;

	if (!xmcEnabled)
		return;
	/* no table has a site there (the bounds are [0, ~0] until the index is built) */
	if (addr < siteLo.load(std::memory_order_relaxed) ||
	    addr > siteHi.load(std::memory_order_relaxed))
		return;
	std::lock_guard<std::mutex> lk(tableLock);
	loadProgram();
	if (siteIndexStale)
		buildSiteIndex();
	auto it = siteIndex.find(addr);
	/*
	 * The index points into the tables, which the kernel sorts in place
	 * (static_call_sort_entries() runs after the jump-label notifier's
	 * pokes indexed a module's tables): an entry that no longer describes
	 * @addr means the index is stale, not that the site is gone.
	 */
	if (it != siteIndex.end() &&
	    (it->second.jump ? entryCode(it->second.jump) : siteAddr(it->second.call)) != addr) {
		buildSiteIndex();
		it = siteIndex.find(addr);
	}
	if (it == siteIndex.end())
		return;
	/* the request, with the site's own bytes after it for the decoder */
	memcpy(buf, (const void *)addr, sizeof(buf));
	memcpy(buf, bytes, std::min<unsigned int>(len, sizeof(buf)));
	stats.tableChecks++;
	demand = it->second.jump ? judgeJumpEntry(it->second.jump, buf, 5, &l)
				 : judgeCallSite(it->second.call, buf, &l);
	if (demand.empty())
		return;
	u8 old[6];
	bool haveOld = elfProgramBytes(addr, old, sizeof(old));

	reportSite("smp_text_poke_batch_add", addr, buf, l, haveOld ? old : (const u8 *)addr, true,
		   "smp_text_poke_batch_add() was asked for other bytes than " + demand, true);
}

void checkTablesLocked(const char *what, unsigned long key, bool callKey, bool all,
		       const void *only)
{
	loadProgram();
	if (only) {
		/* one module's own entries, all of them */
		for (const Source &s : sources) {
			if (s.owner != only)
				continue;
			for (const JumpEntry *e = s.jumpStart; e && e < s.jumpEnd; e++)
				checkJumpEntry(what, e);
			for (const StaticCallSite *c = s.scStart; c && c < s.scEnd; c++)
				checkCallSite(what, c);
		}
		return;
	}
	for (const Source &s : sources) {
		if (!s.live)
			continue;
		for (const JumpEntry *e = s.jumpStart; !callKey && e && e < s.jumpEnd; e++)
			if (all || entryKey(e) == key)
				checkJumpEntry(what, e);
		for (const StaticCallSite *c = s.scStart; (callKey || all) && c && c < s.scEnd; c++)
			if (all || siteKey(c) == key)
				checkCallSite(what, c);
		if (all)
			checkAlternatives(what, s.owner, s.altStart, s.altEnd, caps, capWords);
	}
	for (const auto &[k, tramp] : trampolines)
		if (all || (callKey && k == key))
			checkTrampoline(what, k, tramp);
}

void checkTableSet(const char *what, unsigned int tables)
{
	std::lock_guard<std::mutex> lk(tableLock);

	loadProgram();
	for (const Source &s : sources) {
		if (!s.live)
			continue;
		for (const JumpEntry *e = s.jumpStart;
		     (tables & XMC_TABLE_JUMP_LABELS) && e && e < s.jumpEnd; e++)
			checkJumpEntry(what, e);
		for (const StaticCallSite *c = s.scStart;
		     (tables & XMC_TABLE_STATIC_CALLS) && c && c < s.scEnd; c++)
			checkCallSite(what, c);
		if (tables & XMC_TABLE_ALTERNATIVES)
			checkAlternatives(what, s.owner, s.altStart, s.altEnd, caps, capWords);
	}
	for (const auto &[k, tramp] : trampolines)
		if (tables & XMC_TABLE_STATIC_CALLS)
			checkTrampoline(what, k, tramp);
}

std::vector<unsigned long> callGates(unsigned long key)
{
	std::vector<unsigned long> out;
	std::lock_guard<std::mutex> lk(tableLock);

	loadProgram();
	for (const auto &[k, tramp] : trampolines)
		if (k == key)
			out.push_back(tramp);
	for (const Source &s : sources)
		for (const StaticCallSite *c = s.scStart; s.live && c && c < s.scEnd; c++)
			if (!(c->key & kScInit) && siteKey(c) == key)
				out.push_back(siteAddr(c));
	return out;
}

} /* namespace xmc */

using namespace xmc;

void xmcCpuCaps(const u32 *cpuCaps, unsigned int words, int rethunkFeature) noexcept
{
	std::lock_guard<std::mutex> lk(tableLock);

	caps = cpuCaps;
	capWords = words;
	rethunkBit = rethunkFeature;
}

void xmcKeyUpdated(const void *key) noexcept
{
	if (!xmcEnabled)
		return;
	std::lock_guard<std::mutex> lk(tableLock);
	checkTablesLocked("jump_label_update", (unsigned long)key, false, false);
}

void xmcStaticCallsInitialised() noexcept
{
	if (!xmcEnabled)
		return;
	/* the first text boot writes after the model: a boot stage, whose fault panics */
	if (!systemRunning()) {
		xmcBootStage("static_call_init", XMC_TABLE_STATIC_CALLS);
		return;
	}
	std::lock_guard<std::mutex> lk(tableLock);
	loadProgram();
	for (const Source &s : sources)
		for (const StaticCallSite *c = s.scStart; !s.owner && c && c < s.scEnd; c++)
			checkCallSite("static_call_init", c);
	for (const auto &[k, tramp] : trampolines)
		checkTrampoline("static_call_init", k, tramp);
}

void xmcStaticCallUpdated(const void *key) noexcept
{
	if (!xmcEnabled)
		return;
	std::lock_guard<std::mutex> lk(tableLock);
	checkTablesLocked("__static_call_update", (unsigned long)key, true, false);
}

void xmcTablesCheck(const char *when) noexcept
{
	if (!xmcEnabled)
		return;
	std::lock_guard<std::mutex> lk(tableLock);
	checkTablesLocked(when, 0, false, true);
}

void xmcModuleTables(const void *mod, const char *name, const XmcSection *secs,
		     unsigned int n) noexcept
{
	Source s = {mod, false, name, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};

	for (unsigned int i = 0; i < n; i++) {
		unsigned long a = secs[i].addr, e = secs[i].addr + secs[i].size;

		if (!strcmp(secs[i].name, "__jump_table")) {
			s.jumpStart = (const JumpEntry *)a;
			s.jumpEnd = (const JumpEntry *)(a + secs[i].size / sizeof(JumpEntry) *
						       sizeof(JumpEntry));
		} else if (!strcmp(secs[i].name, "static_call_sites")) {
			s.scStart = (const StaticCallSite *)a;
			s.scEnd = (const StaticCallSite *)(a + secs[i].size /
							    sizeof(StaticCallSite) *
							    sizeof(StaticCallSite));
		} else if (!strcmp(secs[i].name, "altinstructions")) {
			s.altStart = (const u8 *)a;
			s.altEnd = (const u8 *)e;
		}
	}
	for (unsigned int i = 0; i < n; i++)
		if (!strcmp(secs[i].name, "noinstr_text") && secs[i].size)
			noinstrAdd(mod, secs[i].addr, secs[i].addr + secs[i].size);
	std::lock_guard<std::mutex> lk(tableLock);
	loadProgram();
	sources.push_back(s);
	siteIndexChanged();
}

void xmcModuleLive(const void *mod) noexcept
{
	std::lock_guard<std::mutex> lk(tableLock);

	for (Source &s : sources)
		if (s.owner == mod)
			s.live = true;
	siteIndexChanged();
	if (xmcEnabled)
		checkTablesLocked("the module's COMING notifiers", 0, false, false, mod);
}

void xmcModuleTablesGone(const void *mod) noexcept
{
	noinstrRemove(mod);
	std::lock_guard<std::mutex> lk(tableLock);

	sources.erase(std::remove_if(sources.begin(), sources.end(),
				     [mod](const Source &s) { return s.owner == mod; }),
		      sources.end());
	siteIndexChanged();
}

} /* namespace kshim */
