/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pokelab torture --results FILE: one JSON line per run, appended to FILE
 * (JSON Lines; the fields and the file rules are in docs/testing.md,
 * "Campaigns"). A campaign (tools/campaign) collects and merges them.
 *
 *	resultsOpen()		before anything boots: FILE checked and opened
 *	resultsBegin()		after the boot: what is known at the start
 *				(version, host, seed, options, boot line, replay),
 *				rendered once for the crash path
 *	resultsFirstReport()	the first violation, as it is reported
 *	resultsEnd()		the verdict and the counts, rendered
 *	resultsWrite()		after the machine is shut down: the line appended
 *	resultsCrash()		on the way down instead: a record of the crash
 *
 * Task context, main thread, except resultsCrash() (async-signal-safe, a
 * death hook's) and resultsFirstReport() (the model's reporter's context).
 */
#pragma once

#include <string>
#include <vector>

namespace pokelab::torture {

/* What the run was asked to do: its record's options and its replay command. */
struct ResultsRun {
	unsigned long long seed;
	unsigned int duration;		/* s; with ops == 0 */
	unsigned long ops;		/* --ops, or 0 */
	unsigned int cpus;		/* as booted (nr_cpu_ids) */
	std::string nohzFull, ctDefer, module;
	std::vector<std::string> params;	/* as given (no csdlock_debug=1 of torture's) */
	std::string boot;		/* the command line it booted with */
	std::string machine;		/* kshim::machineLine() */
};

/*
 * FILE must be absent, empty, or a regular file whose lines torture wrote
 * (its first line a record, its last one whole): anything else gets one
 * line in *@err and no run. Opened O_APPEND|O_NOFOLLOW and kept open.
 */
bool resultsOpen(const std::string &path, std::string *err);
bool resultsWanted();

void resultsBegin(const ResultsRun &run);

/* The first line of the first violation reported (later ones are ignored). */
void resultsFirstReport(const std::string &text);

/*
 * @verdict: SUCCESS, FAILURE or INTERRUPTED; @reason: what the FAILURE line
 * says after "FAILURE (seed N): " ("" otherwise); @firstReport: the first
 * knob or console line, else @reason, for a run whose model reported no
 * violation (the first violation's line wins where there is one).
 */
void resultsEnd(const char *verdict, const std::string &reason, const std::string &firstReport,
		unsigned long decisions, unsigned long warns, double secs, int exitStatus);

/* Append the record resultsEnd() rendered: one write(2) under flock(); 0 or one line in *@err. */
bool resultsWrite(std::string *err);

/* A crash record (verdict FAILURE, "crash": true), unless one was written. Signal-safe. */
void resultsCrash() noexcept;

} /* namespace pokelab::torture */
