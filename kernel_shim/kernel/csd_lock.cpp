// SPDX-License-Identifier: GPL-2.0-only
/*
 * The CSD-lock watchdog: a sender spinning on a CSD lock for longer than
 * csd_lock_timeout milliseconds reports the stuck target CPU, the function
 * and how long it has waited, re-sends the IPI once, and keeps waiting (or
 * aborts with panic_on_ipistall).
 *
 * Port of the CONFIG_CSD_LOCK_WAIT_DEBUG part of kernel/smp.c, v6.16
 * (csd_lock_wait_toolong() and its parameters).
 *
 * userspace:
 *  - the parameters are plain boot parameters "csd_lock_timeout=MS" and
 *    "panic_on_ipistall[=MS]", not the smp.* module parameters;
 *  - csd_lock_timeout must be positive: 0 (the kernel's "off") would let a
 *    lost signal hang a test silently;
 *  - no NMI backtrace of the target: its registers are not reachable from
 *    here; the report names the CPU, the function and the wait instead.
 */
#include <cerrno>
#include <cxxabi.h>
#include <climits>
#include <cstdlib>
#include <ctime>
#include <dlfcn.h>
#include <link.h>

#include <fmt/format.h>

#include <kernel_shim/boot.h>
#include <kernel_shim/clock.h>
#include <linux/bug.h>
#include <linux/smp.h>

#define KSHIM_PRIVATE
#include "internal.h"

namespace {

constexpr unsigned long kDefaultCsdLockTimeoutMs = 5000;

unsigned long csd_lock_timeout = kDefaultCsdLockTimeoutMs;	/* ms */
long panic_on_ipistall;		/* ms; 0 = never, -1 = at the first report */
int csd_bug_count;

int parseMs(const char *name, const char *val, unsigned long *out, std::string &err)
{
	char *end;
	unsigned long v;

	if (!val || !*val) {
		err = fmt::format("{}: missing value; expected {}=MS with MS a positive "
				  "integer (milliseconds)", name, name);
		return -EINVAL;
	}
	errno = 0;
	v = strtoul(val, &end, 10);
	if (errno || *end || v == 0 || v > INT_MAX || val[0] == '-' || val[0] == '+') {
		err = fmt::format("{}={}: expected {}=MS with MS a positive integer "
				  "(milliseconds, at most {})", name, val, name, INT_MAX);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int setCsdLockTimeout(const char *val, std::string &err)
{
	return parseMs("csd_lock_timeout", val, &csd_lock_timeout, err);
}

int setPanicOnIpistall(const char *val, std::string &err)
{
	unsigned long ms;

	if (!val) {
		panic_on_ipistall = -1;
		return 0;
	}
	if (parseMs("panic_on_ipistall", val, &ms, err))
		return -EINVAL;
	panic_on_ipistall = ms;
	return 0;
}

kshim::BootParamRegistrar csdLockTimeoutParam({
	"csd_lock_timeout", setCsdLockTimeout,
	[] { csd_lock_timeout = kDefaultCsdLockTimeoutMs; },
	"csd_lock_timeout=MS: report a CSD lock held longer than MS ms (default 5000)",
});

kshim::BootParamRegistrar panicOnIpistallParam({
	"panic_on_ipistall", setPanicOnIpistall, [] { panic_on_ipistall = 0; },
	"panic_on_ipistall[=MS]: abort on a stuck CSD lock (first report, or stuck MS ms)",
});

/* "%pS(%ps)" of the function: "name+0xoff/0xsize", or the raw address. */
std::string symbolOf(const void *addr)
{
	Dl_info dli;
	const ElfW(Sym) *sym = nullptr;

	if (dladdr1(addr, &dli, (void **)&sym, RTLD_DL_SYMENT) && dli.dli_sname && sym) {
		/* userspace: C++ names are demangled and printed without their arguments */
		int status;
		char *d = abi::__cxa_demangle(dli.dli_sname, nullptr, nullptr, &status);
		std::string name = d && !status ? d : dli.dli_sname;

		free(d);
		if (name.find('(') != std::string::npos)
			name.resize(name.find('('));
		return fmt::format("{}+{:#x}/{:#x}", name,
				   (uintptr_t)addr - (uintptr_t)dli.dli_saddr,
				   (unsigned long)sym->st_size);
	}
	return fmt::format("{}", addr);
}

} /* namespace */

u64 csd_lock_wait_now_ns(void)
{
	return kshim::clockNs();
}

/*
 * Port of csd_lock_wait_toolong(), kernel/smp.c, v6.16.
 * Returns true once @csd is unlocked. Task context on the waiting CPU.
 */
bool csd_lock_wait_toolong(call_single_data_t *csd, u64 ts0, u64 *ts1, int *bug_id,
			   unsigned long *nmessages)
{
	int cpu = raw_smp_processor_id();
	int target = csd->dst;
	u64 ts2, ts_delta;

	if (!(__atomic_load_n(&csd->u_flags, __ATOMIC_RELAXED) & CSD_FLAG_LOCK)) {
		if (*bug_id)
			fmt::print(stderr, "csd: CSD lock (#{}) got unstuck on CPU#{:02}, CPU#{:02} "
				   "released the lock.\n", *bug_id, cpu, target);
		return true;
	}

	ts2 = kshim::clockNs();
	ts_delta = ts2 - *ts1;
	/* userspace: one report per stuck lock; the kernel repeats with back-off */
	if (likely(*nmessages || ts_delta <= csd_lock_timeout * 1000000ULL))
		return false;

	if (panic_on_ipistall < 0 ||
	    (panic_on_ipistall > 0 && ts2 - ts0 >= (u64)panic_on_ipistall * 1000000ULL)) {
		fmt::print(stderr, "csd: CSD lock stuck on CPU#{:02} for {} ns waiting for "
			   "CPU#{:02} {}\n", cpu, ts2 - ts0, target, symbolOf((void *)csd->func));
		std::fflush(stderr);
		BUG_ON(panic_on_ipistall);
	}

	(*nmessages)++;
	*bug_id = __atomic_add_fetch(&csd_bug_count, 1, __ATOMIC_RELAXED);
	fmt::print(stderr, "csd: Detected non-responsive CSD lock (#{}) on CPU#{}, waiting {} ns "
		   "for CPU#{:02} {}({}).\n", *bug_id, cpu, ts2 - ts0, target,
		   symbolOf((void *)csd->func), csd->info);
	fmt::print(stderr, "csd: CSD lock (#{}) unresponsive: target CPU#{:02} {}, csd {} "
		   "flags {:#x}\n", *bug_id, target, cpu_online(target) ? "online" : "offline",
		   (void *)csd, csd->u_flags);
	/* As the kernel does on the first report: the IPI may have been lost. */
	if ((unsigned int)target < nr_cpu_ids && cpu_online(target)) {
		fmt::print(stderr, "csd: Re-sending CSD lock (#{}) IPI from CPU#{:02} to "
			   "CPU#{:02}\n", *bug_id, cpu, target);
		kshim::sendIpiSignal(target);
	}
	std::fflush(stderr);
	*ts1 = ts2;
	return false;
}

namespace kshim {

unsigned long csdLockTimeoutMs() noexcept
{
	return csd_lock_timeout;
}

int csdLockStallCount() noexcept
{
	return __atomic_load_n(&csd_bug_count, __ATOMIC_RELAXED);
}

} /* namespace kshim */
