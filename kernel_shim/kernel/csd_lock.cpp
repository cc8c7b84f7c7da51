// SPDX-License-Identifier: GPL-2.0-only
/*
 * The CSD-lock watchdog, with csdlock_debug=1 (smp.cpp; off by default, as
 * in a production kernel): a sender spinning on a CSD lock for longer than
 * csd_lock_timeout milliseconds reports the target CPU, the function, how
 * long it has waited and what the target is running, re-sends the IPI if
 * the target is running no csd, and keeps waiting, reporting again with
 * back-off (or BUGs with panic_on_ipistall).
 *
 * Port of the CONFIG_CSD_LOCK_WAIT_DEBUG part of kernel/smp.c, v7.3
 * (csd_lock_wait_toolong(), the record of the csd each CPU runs, and their
 * parameters); the lock and its waits are in smp.cpp.
 *
 * userspace:
 *  - the parameters are plain boot parameters "csd_lock_timeout=MS" and
 *    "panic_on_ipistall[=MS]", not the smp.* module parameters; the bare
 *    form is 1 ms, so it BUGs at the first report;
 *  - csd_lock_timeout must be positive: csdlock_debug=0 is the way to turn
 *    the watchdog off, not a timeout of 0 (the kernel's other "off");
 *  - reports are formatted with fmt; %pS/%ps of a C++ function is its
 *    demangled name without arguments (dladdr1());
 *  - no NMI backtrace of the target: its registers are not reachable from
 *    here; dump_cpu_task() prints what the machine knows of the CPU;
 *  - the soft-lockup watchdog (kernel_shim/watchdog.h) is told of each
 *    wait, and names a csd wait's function and target for it (csdlock_debug
 *    on or off); a first "non-responsive" report is handed to the lockup
 *    handler (torture: a FAILURE of the run, as panic_on_ipistall).
 */
#include <cerrno>
#include <cxxabi.h>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <unistd.h>

#include <fmt/format.h>

#include <kernel_shim/boot.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/watchdog.h>
#include <linux/atomic.h>
#include <linux/bug.h>
#include <linux/percpu.h>
#include <linux/smp.h>

#define KSHIM_PRIVATE
#include "internal.h"
#include "smp_internal.h"

namespace {

constexpr unsigned long kDefaultCsdLockTimeoutMs = 5000;

unsigned long csd_lock_timeout = kDefaultCsdLockTimeoutMs;	/* ms */
int panic_on_ipistall;		/* ms; 0 = never */

atomic_t csd_bug_count = ATOMIC_INIT(0);
atomic_t n_csd_lock_stuck;

/* The csd each CPU runs now, and its function and argument, for the watchdog's report. */
DEFINE_PER_CPU(call_single_data_t *, cur_csd);
DEFINE_PER_CPU(smp_call_func_t, cur_csd_func);
DEFINE_PER_CPU(void *, cur_csd_info);

/* this_cpu_write() as __this_cpu_write(): a relaxed store, the watchdog reads it from afar. */
#define __this_cpu_write(var, val) this_cpu_write(var, val)

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

/*
 * The bare form is 1 ms: a lock is reported only once it has been held
 * longer than csd_lock_timeout (at least 1 ms), so the first report BUGs.
 */
int setPanicOnIpistall(const char *val, std::string &err)
{
	unsigned long ms;

	if (!val) {
		panic_on_ipistall = 1;
		return 0;
	}
	if (parseMs("panic_on_ipistall", val, &ms, err))
		return -EINVAL;
	panic_on_ipistall = (int)ms;
	return 0;
}

kshim::BootParamRegistrar csdLockTimeoutParam({
	"csd_lock_timeout", setCsdLockTimeout,
	[] { csd_lock_timeout = kDefaultCsdLockTimeoutMs; },
	"csd_lock_timeout=MS: report a CSD lock held longer than MS ms (default: 5000)",
});

kshim::BootParamRegistrar panicOnIpistallParam({
	"panic_on_ipistall", setPanicOnIpistall, [] { panic_on_ipistall = 0; },
	"panic_on_ipistall[=MS]: abort on a stuck CSD lock (first report, or stuck MS ms)",
});

/*
 * %pS (@offset: "name+0xoff/0xsize") or %ps ("name") of @addr, or the raw
 * address if no symbol covers it.
 */
std::string symbolOf(const void *addr, bool offset = true)
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
		if (!offset)
			return name;
		return fmt::format("{}+{:#x}/{:#x}", name,
				   (uintptr_t)addr - (uintptr_t)dli.dli_saddr,
				   (unsigned long)sym->st_size);
	}
	return fmt::format("{}", addr);
}

/* printk at KERN_ALERT: the watchdog's reports, on stderr as the kernel's console. */
#define pr_alert(...) fmt::print(stderr, __VA_ARGS__)

/* include/linux/log2.h's ilog2() of a positive run-time value: its highest set bit. */
inline int ilog2(unsigned long n)
{
	return 63 - __builtin_clzl(n);
}

/* atomic_cmpxchg_acquire(): the value seen; @new_val stored only if it was @old. */
inline int atomic_cmpxchg_acquire(atomic_t *v, int old, int new_val)
{
	__atomic_compare_exchange_n(&v->counter, &old, new_val, false, __ATOMIC_ACQUIRE,
				    __ATOMIC_ACQUIRE);
	kshim::cpuFenceEvent();
	return old;
}

/*
 * pokelab's stand-in for kernel/sched/core.c's dump_cpu_task(): no NMI
 * backtrace of another CPU's thread, so what the machine knows of @cpu.
 */
void dump_cpu_task(int cpu)
{
	kshim::CpuState &c = kshim::cpuState(cpu);

	fmt::print(stderr, "Task dump for CPU {}: {}, IRQs {}, {}, IPI {}, {} IPIs taken\n", cpu,
		   cpu_online(cpu) ? "online" : "offline",
		   c.irqDisabled.load(std::memory_order_relaxed) ? "masked" : "on",
		   c.hardirq.load(std::memory_order_relaxed) ? "in its IPI handler" : "in a task",
		   c.irqPending.load(std::memory_order_relaxed) ? "pending" : "not pending",
		   c.ipiReceived.load(std::memory_order_relaxed));
}

/* include/linux/printk.h's dump_stack(): the caller's frames, as BUG() prints them. */
void dump_stack(void)
{
	void *frames[32];
	int n = backtrace(frames, ARRAY_SIZE(frames));

	fmt::print(stderr, "Call Trace:\n");
	backtrace_symbols_fd(frames, n, STDERR_FILENO);
}

/* Port of csd_lock_wait_getcpu(), kernel/smp.c, v7.3 */
static int csd_lock_wait_getcpu(call_single_data_t *csd)
{
	unsigned int csd_type;

	csd_type = CSD_TYPE(csd);
	if (csd_type == CSD_TYPE_ASYNC || csd_type == CSD_TYPE_SYNC)
		return csd->node.dst; /* only these two types carry the target CPU */
	return -1;
}

/*
 * userspace: the soft-lockup watchdog's view of a csd wait. A waiter spins
 * on &csd->node.u_flags, in csd_lock_wait()'s smp_cond_load_acquire()
 * (csdlock_debug off) or in __csd_lock_wait() (on: recorded here, from
 * csd_lock_wait_toolong()); the namer says whose csd, which function and
 * which CPU must run it.
 */
const kshim::WaitSite csdWaitSite = {"kernel_shim/kernel/smp.cpp", 0, "__csd_lock_wait",
				     "csd->node.u_flags", "!(VAL & CSD_FLAG_LOCK)"};
thread_local const call_single_data_t *csdWaiting;
thread_local int csdWaitDepth = -1;

void csd_wait_record(call_single_data_t *csd)
{
	if (csdWaiting == csd)
		return;
	csdWaiting = csd;
	csdWaitDepth = kshim::waitBegin(kshim::WaitKind::Csd, &csdWaitSite, &csd->node.u_flags,
					sizeof(csd->node.u_flags));
}

void csd_wait_done(void)
{
	if (!csdWaiting)
		return;
	kshim::waitEnd(csdWaitDepth);
	csdWaiting = nullptr;
	csdWaitDepth = -1;
}

bool csdWaitNamer(const char *func, const volatile void *addr, kshim::WaitHolder *h)
{
	if (strcmp(func, "csd_lock_wait") && strcmp(func, "__csd_lock_wait") &&
	    strcmp(func, "csd_lock"))
		return false;
	const call_single_data_t *csd = (const call_single_data_t *)
		((const char *)addr - offsetof(call_single_data_t, node.u_flags));
	unsigned int flags = READ_ONCE(csd->node.u_flags);
	int dst = READ_ONCE(csd->node.dst);

	if ((unsigned int)dst >= nr_cpu_ids)
		return false;
	h->cpu = dst;
	h->what = fmt::format("the CSD lock of {}({}) for CPU#{}", symbolOf((void *)csd->func),
			      symbolOf(csd->info, false), dst);
	kshim::CpuState &c = kshim::cpuState(dst);
	call_single_data_t *cur = smp_load_acquire(&per_cpu(cur_csd, dst));
	bool pending = c.irqPending.load(std::memory_order_relaxed);

	h->detail = fmt::format("CPU#{} must run it and unlock it ({} csd, flags {:#x}); it is {}, "
				"IRQs {}, {}, IPI {}, {} IPIs taken{}", dst,
				CSD_TYPE(csd) == CSD_TYPE_SYNC ? "a synchronous"
							       : "an asynchronous",
				flags, cpu_online(dst) ? "online" : "offline",
				c.irqDisabled.load(std::memory_order_relaxed) ? "masked" : "on",
				c.hardirq.load(std::memory_order_relaxed) ? "in its IPI handler"
									  : "in a task",
				pending ? "pending" : "not pending",
				c.ipiReceived.load(std::memory_order_relaxed),
				cur == csd ? ", running this csd"
				: cur	   ? ", running another csd"
					   : "");
	return true;
}

kshim::WaitNamerRegistrar csdNamer(csdWaitNamer);

/* The first report of a stuck lock, to the lockup handler (torture ends the run on it). */
void csd_lock_stall(call_single_data_t *csd, int cpu, u64 ts_delta)
{
	kshim::WaitHolder h;
	std::string r;

	r = fmt::format("csd: BUG: non-responsive CSD lock on CPU#{}: waiting {:.1f} s for CPU#{} "
			"to run {}({}) (csd_lock_timeout={} ms; panic_on_ipistall under torture)\n",
			raw_smp_processor_id(), ts_delta / 1e9, cpu, symbolOf((void *)csd->func),
			symbolOf(csd->info, false), csd_lock_timeout);
	if (csdWaitNamer("__csd_lock_wait", &csd->node.u_flags, &h))
		r += "csd:   " + h.detail + "\n";
	r += fmt::format("csd:   waiting in {}\n", kshim::portFunction("csd_lock_wait_toolong"));
	kshim::lockupReportFatal(r);
}

} /* namespace */

/* Port of __csd_lock_record(), kernel/smp.c, v7.3 */
void __csd_lock_record(call_single_data_t *csd) noexcept
{
	if (!csd) {
		/* After the callback and the unlock: a watchdog that reads NULL sees them done. */
		smp_store_release(this_cpu_ptr(&cur_csd), NULL);
		return;
	}
	__this_cpu_write(cur_csd_func, csd->func);
	__this_cpu_write(cur_csd_info, csd->info);
	/* The function and its argument are there before a watchdog can see the csd. */
	smp_store_release(this_cpu_ptr(&cur_csd), csd);
}

/* Port of csd_lock_is_stuck(), kernel/smp.c, v7.3 */
bool csd_lock_is_stuck(void)
{
	return !!atomic_read(&n_csd_lock_stuck);
}

/*
 * Port of csd_lock_wait_toolong(), kernel/smp.c, v7.3.
 * Returns true once @csd is unlocked. Task context on the waiting CPU.
 */
bool csd_lock_wait_toolong(call_single_data_t *csd, u64 ts0, u64 *ts1, int *bug_id,
			   unsigned long *nmessages)
{
	int cpu = -1;
	int cpux;
	bool firsttime;
	u64 ts2, ts_delta;
	call_single_data_t *cpu_cur_csd;
	unsigned int flags = READ_ONCE(csd->node.u_flags);
	unsigned long long csd_lock_timeout_ns = csd_lock_timeout * NSEC_PER_MSEC;

	csd_wait_record(csd);	/* userspace: the soft-lockup watchdog's record */
	if (!(flags & CSD_FLAG_LOCK)) {
		csd_wait_done();	/* userspace: the record's end */
		if (!unlikely(*bug_id))
			return true;
		cpu = csd_lock_wait_getcpu(csd);
		/* userspace: fmt's {} for printk's % conversions */
		pr_alert("csd: CSD lock (#{}) got unstuck on CPU#{:02}, CPU#{:02} released the "
			 "lock.\n", *bug_id, raw_smp_processor_id(), cpu);
		atomic_dec(&n_csd_lock_stuck);
		return true;
	}

	ts2 = ktime_get_mono_fast_ns();
	/* Since the last check that reported. */
	ts_delta = ts2 - *ts1;
	if (likely(ts_delta <= csd_lock_timeout_ns * (*nmessages + 1) *
			       (!*nmessages ? 1 : (ilog2(num_online_cpus()) / 2 + 1)) ||
		   csd_lock_timeout_ns == 0))
		return false;

	if (ts0 > ts2) {
		/* The clock went backward here: nothing to blame the target for. */
		ts_delta = ts0 - ts2;
		/* userspace: fmt's {} for printk's % conversions */
		pr_alert("sched_clock on CPU {} went backward by {} ns\n", raw_smp_processor_id(),
			 ts_delta);
		*ts1 = ts2;
		return false;
	}

	firsttime = !*bug_id;
	if (firsttime)
		*bug_id = atomic_inc_return(&csd_bug_count);
	cpu = csd_lock_wait_getcpu(csd);
	/* userspace: the shim's WARN_ONCE() takes no arguments; C++: the comparison's cast */
	if (WARN_ONCE(cpu < 0 || (unsigned int)cpu >= nr_cpu_ids, "csd_lock_wait_toolong: bad cpu"))
		cpux = 0;
	else
		cpux = cpu;
	/* Pairs with __csd_lock_record()'s releases: a csd read here comes with its func/info. */
	cpu_cur_csd = smp_load_acquire(&per_cpu(cur_csd, cpux));
	/* Since the wait began. */
	ts_delta = ts2 - ts0;
	/* userspace: fmt's {} for printk's % conversions; %pS/%ps through symbolOf() */
	pr_alert("csd: {} non-responsive CSD lock (#{}) on CPU#{}, waiting {} ns for CPU#{:02} "
		 "{}({}).\n", firsttime ? "Detected" : "Continued", *bug_id,
		 raw_smp_processor_id(), (s64)ts_delta, cpu, symbolOf((void *)csd->func),
		 symbolOf(csd->info, false));
	(*nmessages)++;
	if (firsttime)
		atomic_inc(&n_csd_lock_stuck);
	if (firsttime)
		csd_lock_stall(csd, cpu, ts_delta);	/* userspace: a FAILURE under torture */
	/* Stuck that long, it will not come back (signed: a clock skew is no stall). */
	BUG_ON(panic_on_ipistall > 0 && (s64)ts_delta > ((s64)panic_on_ipistall * NSEC_PER_MSEC));
	if (cpu_cur_csd && csd != cpu_cur_csd) {
		/* userspace: fmt's {} for printk's % conversions; %pS/%ps through symbolOf() */
		pr_alert("\tcsd: CSD lock (#{}) handling prior {}({}) request.\n",
			 *bug_id, symbolOf((void *)READ_ONCE(per_cpu(cur_csd_func, cpux))),
			 symbolOf(READ_ONCE(per_cpu(cur_csd_info, cpux)), false));
	} else {
		/* userspace: fmt's {} for printk's % conversions */
		pr_alert("\tcsd: CSD lock (#{}) {}.\n",
			 *bug_id, !cpu_cur_csd ? "unresponsive" : "handling this request");
	}
	if (cpu >= 0) {
		if (atomic_cmpxchg_acquire(&per_cpu(trigger_backtrace, cpu), 1, 0))
			dump_cpu_task(cpu);
		if (!cpu_cur_csd) {
			/* userspace: fmt's {} for printk's % conversions */
			pr_alert("csd: Re-sending CSD lock (#{}) IPI from CPU#{:02} to CPU#{:02}\n",
				 *bug_id, raw_smp_processor_id(), cpu);
			arch_send_call_function_single_ipi(cpu);
		}
	}
	if (firsttime)
		dump_stack();
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
	return atomic_read(&csd_bug_count);
}

} /* namespace kshim */
