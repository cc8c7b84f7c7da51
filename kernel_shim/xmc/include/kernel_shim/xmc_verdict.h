/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the cross-modifying-code model found: its violations, its counters
 * and its verdict, for the tools and tests that report them. The feeds the
 * code under test calls are in kernel_shim/xmc.h; the rules in
 * docs/testing.md.
 */
#pragma once

#include <string>
#include <vector>

#include <linux/types.h>

namespace kshim {

/* ---- Results. Task context. ---- */

enum class XmcRule {
	Torn,			/* R1 */
	Stale,			/* R2, at the operation's return */
	StaleAtEntry,		/* R2, at the first instrumentable fetch after an EQS */
	Int3Orphaned,		/* R3, at a refs drain */
	Int3Unpublished,	/* R3, at an INT3 write */
	StrayWrite,		/* R4, at a write outside the batch's sites */
	Unfinished,		/* R4, at the batch's return */
	Int3Misemulated,	/* R5 */
	StaleTlb,		/* R6: a kernel range touched through a translation its flush removed */
	WrongSite,		/* R7: a site holds other bytes than its table and state demand */
	MissingFence,		/* R8: a protocol's load with no full fence after its store */
	Int3RefsHeld,		/* R3: INT3 refs still held (read from the atomics) at the drain's return */
	Int3Declined,		/* R3: the handler declined a trap on an INT3 the batch armed */
	CallReturnedEarly,	/* R9: a waited cross-call returned before a CPU ran its function */
};

struct XmcViolation {
	XmcRule rule;
	int cpu;
	unsigned long site;	/* first byte of the instruction concerned */
	int phase;		/* of the first write the CPU might not have seen (0: none) */
	int phaseTo;		/* of the last write in its window */
	const char *op;		/* the operation */
	u64 cpuSerial;		/* the CPU's last serialisation (write sequence) */
	u64 opFirst;		/* the operation's first write */
	unsigned long ip;	/* StaleAtEntry: where the CPU fetched */
	bool inEqs;		/* Stale: it was in an EQS (with no deferred sync pending) */
	/* Bytes from @site: possible values per byte, old, new, and the torn one. */
	unsigned int len;
	u8 nposs[16];
	u8 poss[16][4];
	u8 oldBytes[16];
	u8 newBytes[16];
	u8 tornBytes[16];	/* Torn: the torn bytes; Unfinished: the site's bytes now */
	unsigned int tornLen;
	std::string detail;	/* Int3Misemulated: where the CPU resumed, and where it should */
	/* StaleTlb: the range [site, rangeEnd), its change's generation, the CPU's TLB's */
	unsigned long rangeEnd;
	u64 tlbGen, tlbCpuGen;
	int pair;		/* MissingFence: the store→load pair (kernel_shim/cpu_events.h) */
	bool request;		/* WrongSite: newBytes are what a batch was asked for, not memory */
	long refs;		/* Int3RefsHeld: the count read; Int3Declined: the CPU's refs then */
	u64 ts;			/* when the model reported it (CLOCK_MONOTONIC, ns) */
	/* CallReturnedEarly: the call's function, its sender CPU and the sender's caller */
	unsigned long func;
	int sender;
	unsigned long caller;
	/*
	 * Why, in indented lines after the report's own (the unsynced CPU's
	 * sync rounds and last events, the refs operation that went wrong):
	 * the model's reading of its records, for a person; empty when it has
	 * none.
	 */
	std::string cause;
};

struct XmcStats {
	unsigned long writes;		/* text writes recorded (changed bytes) */
	unsigned long bytes;		/* bytes changed */
	unsigned long ops;		/* operations that returned */
	unsigned long windows;		/* fetch windows decided by R1 */
	unsigned long returnChecks;	/* CPU checks at operation return (R2) */
	unsigned long entryChecks;	/* first instrumentable fetches checked (R2) */
	unsigned long int3Checks;	/* refs drains and INT3 writes checked (R3) */
	unsigned long siteChecks;	/* sites checked at an INT3 batch's return (R4) */
	unsigned long emulations;	/* INT3 trap returns checked (R5) */
	unsigned long tableChecks;	/* sites checked against their tables (R7) */
	unsigned long emuSkipped;	/* trap returns not recorded: the CPU's ring was full */
	unsigned long serialisations;	/* seen by the model at a check (approximate) */
	unsigned long violations;	/* one per CPU and operation at most */
	unsigned long more;		/* further violating windows of those */
	unsigned long lost;		/* windows the model could not keep (capacity), of: */
	unsigned long lostBytes;	/*  bytes of an operation past the bytes it keeps */
	unsigned long lostWrites;	/*  writes of an operation past the writes it keeps */
	unsigned long lostValues;	/*  values of a byte past the 6 kept, and windows on it */
	unsigned long lostArmed;	/*  INT3s armed at once past those it keeps */
	unsigned long lostWindows;	/*  windows a CPU's full ring could not take */
	unsigned long events() const
	{
		return writes + windows + returnChecks + entryChecks + int3Checks + siteChecks +
		       emulations + tableChecks;
	}
};

/* The counters since boot; a - b gives those of a run between two reads. */
XmcStats xmcStats() noexcept;
XmcStats operator-(const XmcStats &a, const XmcStats &b) noexcept;
XmcStats &operator+=(XmcStats &a, const XmcStats &b) noexcept;
/*
 * The write sequence the model takes CPU @cpu to have serialised against:
 * its own serialisations (kernel_shim/cpu_events.h), membarrier rounds, and
 * what the model forgave it after a report. Any thread.
 */
u64 xmcSerialOf(int cpu) noexcept;
/* Violations found on @cpu since boot. */
unsigned long xmcViolationsOn(int cpu) noexcept;
/* The first violations (at most 64), in the order found. */
std::vector<XmcViolation> xmcViolations();
/* Called (task context) for each violation as it is found, e.g. to print it at once. */
void xmcSetReporter(void (*fn)(const XmcViolation &v));
/* One line (and indented detail lines) naming the CPU, the site, its bytes, decoded. */
std::string xmcFormat(const XmcViolation &v);
/* "xmc: N text writes, ... -> PASS|FAIL|NOTHING CHECKED". */
std::string xmcVerdict(const XmcStats &s);
/*
 * What a PARTIAL verdict left unjudged, by the limit each part passed: "40
 * writes past the 2 an operation keeps, 3 fetch windows a CPU's full ring
 * of 16 could not take"; "" when nothing was lost.
 */
std::string xmcLostCauses(const XmcStats &s);
/*
 * What would make a PARTIAL run's verdict whole, from what the model could
 * not keep: without the knob that lowered its limits, with no more CPUs
 * than PUs (a writer descheduled takes the isolated CPUs' windows too
 * seldom), on a quieter host, or nothing a run can change (the model's own
 * limits: docs/testing.md). "" when nothing was lost. Task context, after
 * the run (it reads the booted machine's shape).
 */
std::string xmcPartialHint(const XmcStats &s);
const char *xmcRuleName(XmcRule r);

/*
 * Written on the way down (a BUG, an unclaimed INT3, a fatal signal): the
 * first violation the model found, waiting up to 200 ms for a check in
 * flight or an open operation's checks at its return (the write that
 * caused the crash is usually still being judged). Async-signal-safe;
 * boot() installs it as a death hook.
 */
void xmcDeathNote() noexcept;
/* Has the model reported a violation since boot? Async-signal-safe. */
bool xmcReported() noexcept;

} /* namespace kshim */
