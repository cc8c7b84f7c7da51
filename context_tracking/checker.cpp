// SPDX-License-Identifier: GPL-2.0-only
/*
 * The deferred-sync checker.
 *
 * After a sync round of the text patcher has returned, every CPU has either
 * serialised (do_sync_core() in the IPI) or holds a pending CT_WORK_SYNC
 * that its next kernel entry runs before any instrumentable code. A CPU
 * that reaches instrumentation_begin() with neither is a violation:
 *
 *	CPU0 (patcher)				CPU2 (isolated)
 *	write text, gen = N
 *	sync round: CPU2 deferred (work bit)	(user mode)
 *	round N returns
 *						entry: ct_work_flush() -> sync_core(), gen N
 *						instrumentation_begin(): gen N >= N, fine
 *
 * and with the v5 bug the work bit lands on a CPU in the kernel, is
 * cleared at its exit, and the next entry reaches instrumentation_begin()
 * at gen < N with no bit pending: counted here.
 *
 * Everything on the check path is async-signal-safe (it runs in the IPI
 * handler's entry too): atomics and per-CPU slots only.
 */
#include <cstring>
#include <string>

#include <kernel_shim/boot.h>
#include <kernel_shim/text_gen.h>
#include <linux/context_tracking.h>
#include <linux/instrumentation.h>
#include <linux/percpu.h>
#include <pokelab/ct_check.h>

namespace pokelab {

namespace {

bool checkEnabled;
bool checkParam;

struct CpuCheck {
	unsigned long violations;
	bool haveFirst;
	CtViolation first;
};

DEFINE_PER_CPU(CpuCheck, cpuCheck);

int setCtCheck(const char *val, std::string &err)
{
	if (!val || !strcmp(val, "1")) {
		checkParam = true;
		return 0;
	}
	if (!strcmp(val, "0")) {
		checkParam = false;
		return 0;
	}
	err = std::string("pokelab.ct_check=") + val + ": expected pokelab.ct_check=0 or 1";
	return -EINVAL;
}

kshim::BootParamRegistrar ctCheckParam({
	"pokelab.ct_check", setCtCheck, [] { checkParam = false; },
	"pokelab.ct_check[=0|1]: count CPUs that run kernel text they did not sync with",
});

int ctCheckInit(std::string &)
{
	for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++)
		*per_cpu_ptr(&cpuCheck, cpu) = CpuCheck{};
	checkEnabled = checkParam;
	return 0;
}

kshim::BootHookRegistrar ctCheckHook({"ct_check_init", kshim::BootStage::Early, ctCheckInit});

} /* namespace */

bool ctCheckEnabled() noexcept
{
	return __atomic_load_n(&checkEnabled, __ATOMIC_RELAXED);
}

void ctCheckEnable(bool on) noexcept
{
	__atomic_store_n(&checkEnabled, on, __ATOMIC_RELAXED);
}

void ctCheckInstrumentation(unsigned long ip) noexcept
{
	if (!ctCheckEnabled())
		return;

	int cpu = smp_processor_id();
	unsigned long round = kshim::textGenRound();
	unsigned long mine = kshim::textGenOfCpu(cpu);

	if (mine >= round)
		return;
	if (atomic_read(&per_cpu_ptr(&context_tracking, cpu)->state) &
	    (CT_WORK_SYNC << CT_WORK_START))
		return;

	CpuCheck *c = this_cpu_ptr(&cpuCheck);

	if (!c->haveFirst) {
		c->first = CtViolation{cpu, mine, round, ip};
		c->haveFirst = true;
	}
	__atomic_fetch_add(&c->violations, 1, __ATOMIC_RELAXED);
}

unsigned long ctViolations(int cpu) noexcept
{
	return __atomic_load_n(&per_cpu_ptr(&cpuCheck, cpu)->violations, __ATOMIC_RELAXED);
}

bool ctFirstViolation(int cpu, CtViolation *v) noexcept
{
	CpuCheck *c = per_cpu_ptr(&cpuCheck, cpu);

	if (!c->haveFirst)
		return false;
	*v = c->first;
	return true;
}

} /* namespace pokelab */
