// SPDX-License-Identifier: GPL-2.0-only
/*
 * Booting the simulated machine: the command line, the CPUs, the boot hooks,
 * and an orderly shutdown.
 */
#include <algorithm>
#include <cctype>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include <asm/barrier.h>
#include <asm/sync_core.h>
#include <kernel_shim/boot.h>
#include <kernel_shim/boot_cpus.h>
#include <kernel_shim/boot_params.h>
#include <kernel_shim/noinstr_check.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/busted.h>
#include <kernel_shim/machine.h>
#include <kernel_shim/plural.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/bug.h>
#include <linux/kernel.h>
#include <linux/cpumask.h>
#include <linux/irqflags.h>
#include <linux/rcupdate.h>
#include <linux/smp.h>

#include <kernel_shim/watchdog.h>

#define KSHIM_PRIVATE
#include "internal.h"
#include "topology.h"

enum system_states system_state = SYSTEM_HALT;

namespace kshim {

namespace {

/* The boot line, kept for a caller that booted quietly (smpBootLine()). */
std::string smpLine;

std::vector<BootParam> &paramTable()
{
	static std::vector<BootParam> t;
	return t;
}

std::vector<BootHook> &hookTable()
{
	static std::vector<BootHook> t;
	return t;
}

std::map<std::string, std::string> &machineAttrs()
{
	static std::map<std::string, std::string> m;
	return m;
}

bool isBooted;
bool systemRunningFlag;
BootInfo info;

/* Values of the machine's own parameters, as parsed. */
unsigned int paramNrCpus;	/* 0 = default */
bool haveNohzFull;
cpumask paramNohzFull;
std::string nohzFullText;

int setNrCpus(const char *val, std::string &err)
{
	char *end;
	long n;

	if (!val || !*val) {
		err = "nr_cpus: missing value; expected nr_cpus=N with 1 <= N <= 512";
		return -EINVAL;
	}
	errno = 0;
	n = strtol(val, &end, 10);
	if (errno || *end || n < 1 || n > NR_CPUS) {
		err = fmt::format("nr_cpus={}: expected nr_cpus=N with 1 <= N <= {}", val, NR_CPUS);
		return -EINVAL;
	}
	paramNrCpus = n;
	return 0;
}

int setNohzFull(const char *val, std::string &err)
{
	int ret;

	ret = parseCpulistParam("nohz_full", val ? val : "", val, &paramNohzFull, err);
	if (ret)
		return ret;
	haveNohzFull = true;
	nohzFullText = val;
	return 0;
}

BootParamRegistrar nrCpusParam({
	"nr_cpus", setNrCpus, [] { paramNrCpus = 0; },
	"nr_cpus=N: CPUs to simulate (default: the allowed PUs, at least 2)",
});

BootParamRegistrar nohzFullParam({
	"nohz_full", setNohzFull,
	[] {
		haveNohzFull = false;
		cpumask_clear(&paramNohzFull);
		nohzFullText.clear();
	},
	"nohz_full=LIST: isolated CPUs (kernel cpulist syntax)",
});

std::string &paramsHelpHint()
{
	static std::string hint = "pokelab COMMAND --help-all";

	return hint;
}

size_t editDistance(const std::string &a, const std::string &b)
{
	std::vector<size_t> row(b.size() + 1);

	for (size_t j = 0; j <= b.size(); j++)
		row[j] = j;
	for (size_t i = 1; i <= a.size(); i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= b.size(); j++) {
			size_t up = row[j];

			row[j] = std::min({row[j] + 1, row[j - 1] + 1,
					   diag + (a[i - 1] != b[j - 1])});
			diag = up;
		}
	}
	return row[b.size()];
}

/*
 * An unknown boot parameter: the known ones one edit or a prefix away, as
 * an unknown option's line names them, else where the list is; one line.
 */
std::string unknownParamLine(const std::string &tok, const std::string &name, bool hasVal)
{
	std::vector<std::string> near;
	std::string list;

	for (const BootParam &p : paramTable()) {
		std::string known = p.name;
		bool prefix = name.size() >= 2 && (!known.compare(0, name.size(), name) ||
						   !name.compare(0, known.size(), known));

		if (prefix || editDistance(name, known) <= 1)
			near.push_back(known + (hasVal ? "=" : ""));
	}
	if (near.empty())
		return fmt::format("{}: unknown boot parameter; see '{}' for the list", tok,
				   paramsHelpHint());
	for (size_t i = 0; i < near.size(); i++)
		list += (i ? (i + 1 == near.size() ? " or " : ", ") : "") + near[i];
	return fmt::format("{}: unknown boot parameter; did you mean {}?", tok, list);
}

} /* namespace */

void setBootParamsHelpHint(const std::string &hint)
{
	paramsHelpHint() = hint;
}

std::vector<std::string> bootParamForms()
{
	std::vector<BootParam> t = paramTable();
	std::vector<std::string> forms;

	std::sort(t.begin(), t.end(), [](const BootParam &a, const BootParam &b) {
		return std::string_view(a.name) < std::string_view(b.name);
	});
	for (const BootParam &p : t)
		forms.push_back(p.help && *p.help ? p.help : p.name);
	return forms;
}

namespace {

int parseCmdline(std::string_view cmdline, std::string &err)
{
	std::istringstream in{std::string(cmdline)};
	std::string tok;

	for (const BootParam &p : paramTable())
		if (p.reset)
			p.reset();

	while (in >> tok) {
		std::string name = tok, val;
		bool hasVal = false;
		size_t eq = tok.find('=');

		if (eq != std::string::npos) {
			name = tok.substr(0, eq);
			val = tok.substr(eq + 1);
			hasVal = true;
		}
		auto it = std::find_if(paramTable().begin(), paramTable().end(),
				       [&](const BootParam &p) { return name == p.name; });
		if (it == paramTable().end()) {
			err = unknownParamLine(tok, name, hasVal);
			return -EINVAL;
		}
		int ret = it->set(hasVal ? val.c_str() : nullptr, err);
		if (ret)
			return ret;
	}
	return 0;
}

int runHooks(BootStage stage, std::string &err)
{
	for (const BootHook &h : hookTable()) {
		if (h.stage != stage)
			continue;
		int ret = h.fn(err);
		if (ret) {
			if (err.empty())
				err = fmt::format("{} failed: {}", h.name, strerror(-ret));
			return ret;
		}
	}
	return 0;
}

void cpuThreadMain(int cpu)
{
	CpuState &c = cpuState(cpu);

	tlsCpu = cpu;
	this_cpu_off = (unsigned long)cpu * SMP_CACHE_BYTES;
	__preempt_count = PREEMPT_ENABLED;
	c.thread = pthread_self();
	/* Pinning failures were reported at boot for CPU 0; do not repeat per CPU. */
	topology().pinSelf(c.pu);
	/* A CPU comes up serialised (it left reset): it fetches the text as it is now. */
	sync_core();
	fatalSignalStack(true);
	watchdogThreadStart(cpu, false);
	rcuCpuStarting();
	cpumask_set_cpu(cpu, &__cpu_online_mask);

	std::unique_lock<std::mutex> lk(c.taskLock);
	for (;;) {
		while (c.tasks.empty() && !c.stop) {
			/* Idle: an extended quiescent state for RCU while waiting for work. */
			c.kick.store(false, std::memory_order_relaxed);
			lk.unlock();
			kshim::rcuEqsEnter();
			/* work queued for this CPU: its kworker runs meanwhile (workqueue.cpp) */
			cpuLendIdle(c);
			cpuIdle(c);
			cpuLendIdle(c);
			kshim::rcuEqsExit();
			lk.lock();
		}
		c.sliceStartNs.store(clockNs(), std::memory_order_relaxed);
		if (c.tasks.empty() && c.stop)
			break;
		std::function<void()> task = std::move(c.tasks.front());
		c.tasks.pop_front();
		c.running = true;
		lk.unlock();
		task();
		lk.lock();
		c.running = false;
		watchdogTouch();
		if (c.tasks.empty())
			c.idleCv.notify_all();
	}
	lk.unlock();

	/* Going offline: no new IPIs are sent here; run what is already queued. */
	cpumask_clear_cpu(cpu, &__cpu_online_mask);
	smp_mb();
	flushSmpCallFunctionQueueDying();

	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, ipiSignal());
	sigaddset(&set, nmiSignal());
	pthread_sigmask(SIG_BLOCK, &set, nullptr);
	rcuCpuDying();
	watchdogThreadStop();
	fatalSignalStack(false);
	tlsCpu = -1;
	this_cpu_off = kNoCpuOff;
}

} /* namespace */

void registerBootParam(const BootParam &param)
{
	paramTable().push_back(param);
}

void registerBootHook(const BootHook &hook)
{
	hookTable().push_back(hook);
}

void setMachineAttr(const std::string &key, const std::string &value)
{
	machineAttrs()[key] = value;
}

bool booted() noexcept
{
	return isBooted;
}

const std::string &smpBootLine()
{
	return smpLine;
}

bool systemRunning() noexcept
{
	return __atomic_load_n(&systemRunningFlag, __ATOMIC_ACQUIRE);
}

const BootInfo &bootInfo() noexcept
{
	return info;
}

const struct cpumask *nohzFullMask() noexcept
{
	return &info.nohzFull;
}

unsigned int bootNrCpus(std::string_view cmdline)
{
	std::istringstream in{std::string(cmdline)};
	std::string tok, err;
	unsigned int nr = 0, pus;

	BUG_ON(isBooted);
	/* the last nr_cpus= counts, as parseCmdline() sets it in order */
	while (in >> tok) {
		char *end;
		long n;

		if (tok.rfind("nr_cpus=", 0))
			continue;
		errno = 0;
		n = strtol(tok.c_str() + 8, &end, 10);
		if (errno || tok.size() == 8 || *end || n < 1 || n > NR_CPUS)
			return 0;
		nr = n;
	}
	if (nr)
		return nr;
	if (topology().load(err))
		return 0;
	pus = topology().pus().size();
	topology().unload();
	return std::max(2u, pus);
}

std::string machineLine()
{
	std::string s = fmt::format("machine: {} CPU{} on {} PU{} ({}){}, kernel {}, sync_core {}",
				    info.nrCpus, info.nrCpus == 1 ? "" : "s", info.nrPus,
				    info.nrPus == 1 ? "" : "s", info.puList,
				    info.oversubscribed ? ", oversubscribed" : "", kernelBaseline,
				    syncCoreFlavorName(syncCoreFlavor()));

	for (const auto &[k, v] : machineAttrs())
		s += fmt::format(", {} {}", k, v);
	if (!cpumask_empty(&info.nohzFull))
		s += fmt::format(", nohz_full={}", cpumaskPrintList(&info.nohzFull));
	/* as given: its flags say from what the CPUs are isolated */
	if (!isolcpusGiven().empty())
		s += fmt::format(", isolcpus={}", isolcpusGiven());
	return s;
}

int boot(std::string_view cmdline, std::string *errOut, bool quiet)
{
	std::string err;
	int ret;

	BUG_ON(isBooted);
	BUG_ON(tlsCpu >= 0);

	ret = parseCmdline(cmdline, err);
	if (!ret)
		ret = topology().load(err);
	if (ret) {
		if (errOut)
			*errOut = err;
		return ret;
	}

	const std::vector<int> &pus = topology().pus();
	unsigned int nr = paramNrCpus ? paramNrCpus : std::max<unsigned int>(2, pus.size());

	/*
	 * userspace: "N" in a CPU list is the last CPU of this machine. The
	 * kernel parses against nr_cpumask_bits and then masks with the
	 * possible CPUs; here the list is parsed before nr_cpus is known, so
	 * parse it again now that it is.
	 */
	if (haveNohzFull && nohzFullText.find('N') != std::string::npos) {
		std::string t;

		for (char ch : nohzFullText)
			t += ch == 'N' ? std::to_string(nr - 1) : std::string(1, ch);
		cpulist_parse(t.c_str(), &paramNohzFull);
	}

	if (haveNohzFull) {
		unsigned int cpu = cpumask_first(&paramNohzFull);
		unsigned int last = 0;

		for (unsigned int c = 0; c < NR_CPUS; c++)
			if (cpumask_test_cpu(c, &paramNohzFull))
				last = c;
		/* the accepted form, in words an option's line can take over (boot_twin.h) */
		std::string form = nr < 2 ? std::string("; expected no nohz_full= on 1 CPU") :
			fmt::format("; expected nohz_full=CPULIST within {}",
				    nr == 2 ? std::string("1") : fmt::format("1-{}", nr - 1));

		if (last >= nr) {
			err = fmt::format("nohz_full={}: CPU {} is beyond nr_cpus={} (CPUs are 0-{}){}",
					  nohzFullText, last, nr, nr - 1, form);
			ret = -EINVAL;
		} else if (cpumask_weight(&paramNohzFull) >= nr) {
			err = fmt::format("nohz_full={}: isolates all {} CPUs; at least one "
					  "housekeeping CPU must remain{}", nohzFullText, nr, form);
			ret = -EINVAL;
		} else if (cpu == 0) {
			err = fmt::format("nohz_full={}: CPU 0 is the boot CPU, which runs the "
					  "housekeeping work{}", nohzFullText, form);
			ret = -EINVAL;
		}
		if (ret) {
			if (errOut)
				*errOut = err;
			return ret;
		}
	}

	nr_cpu_ids = nr;
	cpumask_clear(&__cpu_possible_mask);
	cpumask_clear(&__cpu_online_mask);
	for (unsigned int cpu = 0; cpu < nr; cpu++)
		__cpumask_set_cpu(cpu, &__cpu_possible_mask);

	info = BootInfo{};
	info.nrCpus = nr;
	info.nrPus = pus.size();
	info.oversubscribed = nr > pus.size();
	info.cmdline = std::string(cmdline);
	info.nohzFull = paramNohzFull;
	{
		cpumask m;
		cpumask_clear(&m);
		for (int pu : pus)
			if (pu < NR_CPUS)
				__cpumask_set_cpu(pu, &m);
		info.puList = cpumaskPrintList(&m);
	}

	for (unsigned int cpu = 0; cpu < nr; cpu++) {
		CpuState &c = cpuState(cpu);

		c.pu = pus[cpu % pus.size()];
		c.stop = false;
		c.running = false;
		c.irqDisabled.store(0);
		c.irqPending.store(0);
		c.hardirq.store(0);
		c.dropIpis.store(0);
		c.failIpiSends.store(0);
		c.ipiSendRetries.store(0);
		c.kick.store(false);
	}
	resetCpuStats();
	smpInit();

	ret = installIpiHandler(err);
	if (!ret)
		ret = installNmiHandler(err);
	if (ret) {
		if (errOut)
			*errOut = err;
		return ret;
	}

	/* The calling thread becomes CPU 0, the boot CPU. */
	topology().saveSelfBinding();
	if (topology().pinSelf(cpuState(0).pu) && !quiet)
		fmt::print(stderr, "pokelab: warning: cannot pin CPU 0 to PU {}: {}; running "
			   "unpinned\n", cpuState(0).pu, strerror(errno));
	cpuState(0).thread = pthread_self();
	tlsCpu = 0;
	this_cpu_off = 0;
	__preempt_count = PREEMPT_ENABLED;
	fatalSignalStack(true);
	watchdogThreadStart(0, false);
	rcuCpuStarting();
	cpumask_set_cpu(0, &__cpu_online_mask);
	isBooted = true;
	WRITE_ONCE(system_state, SYSTEM_BOOTING);

	/* The model and the BUSTED switch, before anything writes text. */
	bustedBoot();
	ret = runHooks(BootStage::Machine, err);
	BUG_ON(ret);	/* the machine's own instruments cannot fail */
	installFatalSignalHandlers();
	if (bustedActive())
		setMachineAttr("BUSTED", bustedActive()->name);

	/* objtool's noinstr check of the machine code, as the build would fail on it */
	ret = noinstrBootCheck(err);
	/* Early hooks: on the boot CPU, before any other CPU runs. */
	if (!ret)
		ret = runHooks(BootStage::Early, err);
	if (ret) {
		shutdown();
		if (errOut)
			*errOut = err;
		return ret;
	}

	WRITE_ONCE(system_state, SYSTEM_SCHEDULING);
	for (unsigned int cpu = 1; cpu < nr; cpu++) {
		CpuState &c = cpuState(cpu);

		c.worker = std::thread(cpuThreadMain, cpu);
		c.thread = c.worker.native_handle();
	}
	while (num_online_cpus() < nr)
		std::this_thread::yield();
	smp_mb();
	/* a kworker per CPU, once each CPU runs (linux/workqueue.h) */
	kworkersStart();

	smpLine = fmt::format("smp: Brought up {} on {} ({}){}", nOf(nr, "CPU"),
			      nOf(pus.size(), "PU"), info.puList,
			      info.oversubscribed
				      ? fmt::format(", oversubscribed: {:.1f} CPUs per PU",
						    (double)nr / pus.size())
				      : std::string(", not oversubscribed"));
	if (!quiet)
		fmt::print(stderr, "{}\n", smpLine);

	ret = runHooks(BootStage::Late, err);
	if (!ret)
		ret = runHooks(BootStage::Booted, err);
	if (ret) {
		shutdown();
		if (errOut)
			*errOut = err;
		return ret;
	}
	/* Boot is over: __ro_after_init data is read-only from here on. */
	WRITE_ONCE(system_state, SYSTEM_RUNNING);
	__atomic_store_n(&systemRunningFlag, true, __ATOMIC_RELEASE);
	return 0;
}

void shutdown()
{
	std::string err;

	if (!isBooted)
		return;
	BUG_ON(tlsCpu != 0);

	/* the work still queued runs first, timers fire (linux/workqueue.h) */
	kworkersStop();
	runHooks(BootStage::Shutdown, err);
	/* CPU 0 stops being an RCU reader first: CPUs going down may wait for grace periods. */
	rcuCpuDying();
	watchdogThreadStop();

	for (unsigned int cpu = 1; cpu < nr_cpu_ids; cpu++) {
		CpuState &c = cpuState(cpu);

		if (!c.worker.joinable())
			continue;
		{
			std::lock_guard<std::mutex> lk(c.taskLock);
			c.stop = true;
		}
		cpuKick(c);
		c.worker.join();
		c.thread = pthread_t{};
	}

	/* CPU 0 goes last and hands the thread back unpinned. */
	flushSmpCallFunctionQueueDying();
	cpumask_clear_cpu(0, &__cpu_online_mask);
	fatalSignalStack(false);
	tlsCpu = -1;
	this_cpu_off = kNoCpuOff;
	topology().restoreSelfBinding();
	topology().unload();
	machineAttrs().clear();
	isBooted = false;
	WRITE_ONCE(system_state, SYSTEM_HALT);
	__atomic_store_n(&systemRunningFlag, false, __ATOMIC_RELEASE);
}

} /* namespace kshim */

/*
 * lib/vsprintf.c's simple_strntoull(): the digits of @base at @startp (0:
 * "0x" hex, a leading 0 octal, else decimal), at most @max_chars of them, no
 * sign or space skipped; *@endp past the last digit taken. userspace:
 * written for get_option()'s use, without the kernel's overflow-free
 * _parse_integer_limit() (an over-long number wraps).
 */
static unsigned long long simple_strntoull(const char *startp, char **endp, unsigned int base,
					   size_t max_chars)
{
	const char *cp = startp;
	unsigned long long result = 0;

	if (!base)
		base = (cp[0] == '0' && (cp[1] | 0x20) == 'x' && isxdigit((unsigned char)cp[2]))
		       ? 16 : cp[0] == '0' ? 8 : 10;
	if (base == 16 && cp[0] == '0' && (cp[1] | 0x20) == 'x')
		cp += 2;
	for (; max_chars && *cp; cp++, max_chars--) {
		unsigned int d = isdigit((unsigned char)*cp) ? *cp - '0'
				 : isxdigit((unsigned char)*cp) ? (*cp | 0x20) - 'a' + 10 : 16;

		if (d >= base)
			break;
		result = result * base + d;
	}
	if (endp)
		*endp = (char *)cp;
	return result;
}

/*
 * Port of get_option(), lib/cmdline.c, v7.3: an integer from *@str into
 * *@pint; 0 if there was none, 1 if it ended the string (or anything but
 * ',' or '-' follows), 2 if a ',' follows (*@str moved past it), 3 if a '-'
 * does (a range).
 */
int get_option(char **str, int *pint)
{
	char *cur = *str;
	int value;

	if (!cur || !(*cur))
		return 0;
	if (*cur == '-')
		value = -simple_strntoull(++cur, str, 0, INT_MAX);
	else
		value = simple_strntoull(cur, str, 0, INT_MAX);
	if (pint)
		*pint = value;
	if (cur == *str)
		return 0;
	if (**str == ',') {
		(*str)++;
		return 2;
	}
	if (**str == '-')
		return 3;

	return 1;
}
