/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Booting and shutting down the simulated machine.
 *
 * boot() takes a kernel command line ("nr_cpus=4 nohz_full=2-3 ..."); the
 * calling thread becomes CPU 0, the boot CPU, and CPUs 1..N-1 are threads
 * pinned with hwloc to PUs of the process's allowed cpuset (round-robin when
 * N exceeds them). shutdown() joins every CPU thread. One machine at a time
 * per process; boot() again after shutdown() is allowed (tests do it).
 */
#pragma once

#include <string>
#include <string_view>

#include <linux/cpumask.h>

namespace kshim {

/*
 * Boot the machine. Parses and validates every parameter first; on a bad one
 * it returns -EINVAL, starts nothing, and puts in *@err one line naming the
 * parameter, the bad value and the accepted form. Prints one boot line
 * ("smp: Brought up N CPUs on M PUs ...") to stderr unless @quiet.
 * Must be called from a thread that is not already a CPU, with no machine
 * booted. Not async-signal-safe.
 */
int boot(std::string_view cmdline, std::string *err = nullptr, bool quiet = false);

/*
 * Stop and join CPUs 1..N-1 (their tasks must have returned or must return
 * on their own; see cpuRun()), unpin CPU 0 and forget the machine. Called on
 * CPU 0, the thread that booted.
 */
void shutdown();

bool booted() noexcept;

/*
 * The boot line of the last boot() ("smp: Brought up N CPUs on M PUs ..."),
 * for a caller that booted quietly and prints it once it has checked the
 * machine. Task context.
 */
const std::string &smpBootLine();

/*
 * The kernel's system_state >= SYSTEM_RUNNING: true once boot() has run its
 * late hooks, false again at shutdown(). __ro_after_init data may be written
 * only while it is false. Any thread; async-signal-safe.
 */
bool systemRunning() noexcept;

/* The parameters the machine was booted with. */
struct BootInfo {
	unsigned int nrCpus = 0;	/* simulated CPUs (nr_cpu_ids) */
	unsigned int nrPus = 0;		/* PUs in the allowed cpuset */
	bool oversubscribed = false;	/* nrCpus > nrPus */
	std::string puList;		/* the allowed PUs, as a CPU list */
	std::string cmdline;		/* the command line given to boot() */
	cpumask nohzFull{};		/* nohz_full= CPUs (empty if none) */
};
const BootInfo &bootInfo() noexcept;

/*
 * The one-line machine description every report opens with: CPUs, PUs,
 * oversubscription, kernel baseline, sync back-end and sync_core flavour.
 */
std::string machineLine();

/* Kernel baseline pokelab ports ("v7.3"; tools/port-drift says which function is at which). */
inline constexpr const char *kernelBaseline = "v7.3";

/*
 * Boot parameters, the kernel's early_param()/__setup(): a module registers
 * a name with a setter and a reset. At every boot() all setters are reset,
 * then each "name=value" (or bare "name") is handed to its setter, which
 * returns 0 or -EINVAL with a message in @err. Unknown names are rejected.
 * userspace: the kernel passes unknown parameters on to init; here nothing
 * else would read them, so a typo is an error instead of silence.
 */
struct BootParam {
	const char *name;
	/* @val is NULL for a bare "name" */
	int (*set)(const char *val, std::string &err);
	void (*reset)();
	const char *help;	/* accepted form, e.g. "nr_cpus=N (N >= 1)" */
};
void registerBootParam(const BootParam &param);

/* Registers a boot parameter from a file-scope object (static init). */
struct BootParamRegistrar {
	explicit BootParamRegistrar(const BootParam &param) { registerBootParam(param); }
};

/*
 * Boot hooks: "machine" hooks set up the machine's own instruments (the
 * cross-modifying-code model) on CPU 0 once it is online, before anything
 * writes text; "early" hooks run on CPU 0 after the parameters are parsed
 * and before any other CPU starts (apply_alternatives() and
 * jump_label_init() run there); "late" hooks after every CPU is online;
 * "booted" hooks after the late ones, to look at the machine as booted (the
 * checker's table check); "shutdown" hooks on CPU 0 before the CPUs are
 * stopped. Each returns 0 or -errno with @err. This is how the rooms above the core (mm, trace, the
 * checker) and the ported code get called at boot: the core calls no room
 * above it by name.
 */
enum class BootStage { Machine, Early, Late, Booted, Shutdown };
struct BootHook {
	const char *name;
	BootStage stage;
	int (*fn)(std::string &err);
};
void registerBootHook(const BootHook &hook);

struct BootHookRegistrar {
	explicit BootHookRegistrar(const BootHook &hook) { registerBootHook(hook); }
};

} /* namespace kshim */
