// SPDX-License-Identifier: GPL-2.0-only
/*
 * R9, waited cross-calls: a smp_call_function_many_cond() (on_each_cpu*(),
 * smp_call_function*()) or smp_call_function_single() that waits returns
 * only after every online CPU of its mask, less the sender, that its
 * condition did not skip has ended the function. Read from the machine's
 * record of the call (kernel_shim/call_events.h): the call's arguments,
 * the condition's "no"s, and the begin and end of the function on each
 * target, never what the wait loop looked at.
 *
 * A CPU the condition skipped is not a target, with one exception: a CPU
 * skipped while it had deferred work pending (the deferral series'
 * do_sync_core_defer_cond() set CT_WORK_SYNC) took the function as
 * deferred work, and that counts only when the deferral policy in force
 * defers that function (xmcSetDeferral()). A condition that filters (as
 * the kernel's TLB flushes skip lazy CPUs) is the caller's business.
 *
 * The check runs on the sender at its return (task context); the first
 * violation of each sender waits in a record for the writer, who reports
 * it at its next operation boundary, as R6's and R8's.
 */
#include <mutex>
#include <string>

#include <fmt/format.h>

#include <kernel_shim/call_events.h>
#include <kernel_shim/symbols.h>
#include <linux/cpumask.h>

#define XMC_PRIVATE
#include "xmc_internal.h"

namespace kshim {

namespace xmc {

/* The first violation of a sender's waited calls, for the writer (one writer each side). */
struct CallLate {
	int have;
	int cpu;
	bool began;		/* the CPU had begun the function */
	bool deferred;		/* skipped as deferred work the policy does not defer */
	int state;		/* its context-tracking state word when skipped */
	unsigned long func, caller;
	const char *sender;
	struct cpumask targets, skipped, ended;
	unsigned long more;	/* further calls that returned early before the writer took this */
};

CallLate callLate[NR_CPUS];
/* Some sender holds a record: the writer takes them at its next write or round. */
int callLatePending;

/* Per sender and skipped CPU: its state word and whether it had deferred work pending. */
int skipState[NR_CPUS][NR_CPUS];
u8 skipPending[NR_CPUS][NR_CPUS];
u8 skipFetching[NR_CPUS][NR_CPUS];

int (*ctStateRead)(int cpu);
std::string (*ctStateDescribe)(int state);

namespace {

const char *deferPolicy;
std::vector<std::string> deferNames;

/* What each function sent is, by its symbol: deferred by the policy or not. */
struct DeferMemo {
	unsigned long func;
	bool defers;
};

constexpr unsigned int kDeferMemo = 32;
DeferMemo deferMemo[kDeferMemo];
unsigned int deferMemoN;
std::mutex deferMemoLock;

} /* namespace */

bool policyDefers(unsigned long func)
{
	unsigned int n = __atomic_load_n(&deferMemoN, __ATOMIC_ACQUIRE);
	unsigned long start;
	std::string name;
	bool yes = false;

	for (unsigned int i = 0; i < n; i++)
		if (deferMemo[i].func == func)
			return deferMemo[i].defers;
	std::lock_guard<std::mutex> lk(deferMemoLock);

	if (traceSymbolStart(func, &start, &name) && start == func)
		for (const std::string &d : deferNames)
			yes |= d == name;
	n = deferMemoN;
	if (n < kDeferMemo) {
		deferMemo[n] = {func, yes};
		__atomic_store_n(&deferMemoN, n + 1, __ATOMIC_RELEASE);
	}
	return yes;
}

const char *deferralPolicy()
{
	return deferPolicy ? deferPolicy : "none";
}

std::string deferredFunctions()
{
	std::string s;

	for (size_t i = 0; i < deferNames.size(); i++)
		s += fmt::format("{}{}()", i ? (i + 1 == deferNames.size() ? " and " : ", ") : "",
				 deferNames[i]);
	return s.empty() ? "no function" : s;
}

std::string ctStateWords(int state)
{
	return ctStateDescribe ? ctStateDescribe(state) : fmt::format("{:#x}", state);
}

/* The condition said no to @cpu: its state as read right after. Sender, task context. */
void callSkippedHook(int sender, int cpu) noexcept
{
	bool pending = syncPending && syncPending(cpu);

	skipPending[sender][cpu] = pending;
	skipState[sender][cpu] = ctStateRead ? ctStateRead(cpu) : 0;
	skipFetching[sender][cpu] = __atomic_load_n(&xmcCpus[cpu].fetching, __ATOMIC_ACQUIRE);
}

/* R9 at a waited call's return, on its sender (task context). */
void callReturnedHook(int sender) noexcept
{
	const CallRecord *r = &callRecords[sender];
	CallLate *l = &callLate[sender];
	struct cpumask ended;
	int bad = -1;
	bool began = false, deferred = false;
	unsigned int cpu;

	if (!xmcEnabled)
		return;
	cpumask_clear(&ended);
	for_each_cpu(cpu, &r->targets) {
		const CallRan *ran = &callRan[cpu][sender];

		if (__atomic_load_n(&ran->ended, __ATOMIC_ACQUIRE) == r->gen) {
			cpumask_set_cpu(cpu, &ended);
			continue;
		}
		if (bad >= 0 || !cpu_online(cpu))
			continue;
		if (cpumask_test_cpu(cpu, &r->skipped)) {
			/* a filter's "no", or work the policy defers: served */
			if (!skipPending[sender][cpu] || policyDefers(r->func))
				continue;
			deferred = true;
		}
		bad = cpu;
		began = __atomic_load_n(&ran->began, __ATOMIC_ACQUIRE) == r->gen;
	}
	if (bad < 0)
		return;
	if (__atomic_load_n(&l->have, __ATOMIC_ACQUIRE)) {
		l->more++;
		return;
	}
	l->cpu = bad;
	l->began = began;
	l->deferred = deferred;
	l->state = skipState[sender][bad];
	l->func = r->func;
	l->caller = r->caller;
	l->sender = r->sender;
	cpumask_copy(&l->targets, &r->targets);
	cpumask_copy(&l->skipped, &r->skipped);
	cpumask_copy(&l->ended, &ended);
	/* pairs with the acquire in takeCallRecords() */
	__atomic_store_n(&l->have, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&callLatePending, 1, __ATOMIC_RELEASE);
}

/* The calls that returned early, into the log. The writer. */
void takeCallRecords()
{
	__atomic_store_n(&callLatePending, 0, __ATOMIC_RELAXED);
	for (unsigned int sender = 0; sender < nr_cpu_ids; sender++) {
		CallLate *l = &callLate[sender];
		XmcViolation v = {};
		std::string list;

		if (!__atomic_load_n(&l->have, __ATOMIC_ACQUIRE))
			continue;
		v.rule = XmcRule::CallReturnedEarly;
		v.cpu = l->cpu;
		v.sender = sender;
		v.func = l->func;
		v.caller = l->caller;
		v.op = l->sender;
		v.detail = fmt::format("the call: to CPUs {} (its mask's online CPUs but CPU {}); "
				       "skipped by its condition: {}; ended by its return: {}",
				       cpumaskPrintList(&l->targets), sender,
				       cpumask_empty(&l->skipped) ? "none"
								  : cpumaskPrintList(&l->skipped),
				       cpumask_empty(&l->ended) ? "none"
								: cpumaskPrintList(&l->ended));
		if (l->deferred)
			v.detail = fmt::format("{}\n  CPU {} was skipped while its context-tracking "
					       "state read {}: deferred work, but the deferral policy "
					       "({}) defers {}, not {}", v.detail, l->cpu,
					       ctStateWords(l->state), deferralPolicy(),
					       deferredFunctions(), traceSymbol(l->func, false) + "()");
		else
			v.detail = fmt::format("{}\n  CPU {} {} it", v.detail, l->cpu,
					       l->began ? "had begun but not ended" : "had not begun");
		stats.more += l->more;
		l->more = 0;
		__atomic_store_n(&l->have, 0, __ATOMIC_RELEASE);
		report(v);
	}
}

void callsReset()
{
	for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++) {
		callLate[cpu].have = 0;
		callLate[cpu].more = 0;
	}
	callLatePending = 0;
	callHooks.skipped = callSkippedHook;
	callHooks.returned = callReturnedHook;
}

} /* namespace xmc */

using namespace xmc;

void xmcSetDeferral(const char *policy, const char *const *funcs)
{
	std::lock_guard<std::mutex> lk(deferMemoLock);

	deferPolicy = policy;
	deferNames.clear();
	for (; funcs && *funcs; funcs++)
		deferNames.push_back(*funcs);
	__atomic_store_n(&deferMemoN, 0, __ATOMIC_RELEASE);
}

void xmcSetCtState(int (*read)(int cpu), std::string (*describe)(int state))
{
	ctStateRead = read;
	ctStateDescribe = describe;
}

} /* namespace kshim */
