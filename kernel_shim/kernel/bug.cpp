// SPDX-License-Identifier: GPL-2.0-only
/*
 * BUG() and WARN(), and the panic_on_warn boot parameter.
 */
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <execinfo.h>
#include <memory>
#include <new>
#include <string>
#include <ucontext.h>

#include <kernel_shim/boot.h>
#include <kernel_shim/machine.h>
#include <kernel_shim/sigsafe.h>
#include <linux/bug.h>
#include <linux/smp.h>

namespace kshim {

namespace {

bool panicOnWarn;
unsigned long nrWarnings;
void (*deathHooks[4])() noexcept;

/*
 * The death hooks, oldest first, once per process: a BUG()'s abort() and a
 * libc abort() (a heap a CPU's torn code corrupted) both reach them, the
 * first through die(), the second through the SIGABRT handler.
 */
int deathHooksRan;

void runDeathHooks() noexcept
{
	if (__atomic_exchange_n(&deathHooksRan, 1, __ATOMIC_ACQ_REL))
		return;
	for (int i = 0; i < 4; i++) {
		void (*fn)() noexcept = __atomic_load_n(&deathHooks[i], __ATOMIC_ACQUIRE);

		if (fn)
			fn();
	}
}

/* The hooks, then the abort. */
[[noreturn]] void die() noexcept
{
	runDeathHooks();
	abort();
}

void dumpStack() noexcept
{
	void *frames[32];
	int n = backtrace(frames, 32);

	SigSafeBuf().str("Call Trace:\n").emit();
	backtrace_symbols_fd(frames, n, 2);
}

int setPanicOnWarn(const char *val, std::string &err)
{
	if (!val || std::string(val) == "1") {
		panicOnWarn = true;
		return 0;
	}
	if (std::string(val) == "0") {
		panicOnWarn = false;
		return 0;
	}
	err = std::string("panic_on_warn=") + val + ": expected panic_on_warn, panic_on_warn=0 or =1";
	return -EINVAL;
}

BootParamRegistrar panicOnWarnParam({
	"panic_on_warn", setPanicOnWarn, [] { panicOnWarn = false; },
	"panic_on_warn[=0|1]: abort on the first WARN",
});

/* The machine line says that a WARN will abort the run. */
int panicOnWarnAttr(std::string &)
{
	if (panicOnWarn)
		setMachineAttr("panic_on_warn", "on");
	return 0;
}

BootHookRegistrar panicOnWarnHook({"panic_on_warn", BootStage::Machine, panicOnWarnAttr});

/* backtrace() loads libgcc on first use, which allocates: do it before any signal path needs it. */
[[maybe_unused]] const int backtraceWarm = [] {
	void *f[1];
	return backtrace(f, 1);
}();

} /* namespace */

namespace {

[[noreturn]] __attribute__((__noinline__)) void bugReport(const char *file, int line,
							  const char *func, const char *cond) noexcept
{
	SigSafeBuf b;

	b.str("------------[ cut here ]------------\nkernel BUG at ").str(file).str(":").dec(line)
		.str("!\n").str("  in ").str(func).str("()");
	if (cond)
		b.str(": BUG_ON(").str(cond).str(")");
	b.str(" on CPU ").dec(raw_smp_processor_id()).str("\n");
	b.emit();
	dumpStack();
	die();
}

[[noreturn]] __attribute__((__noinline__)) void notOnCpuReport(const char *file, int line) noexcept
{
	SigSafeBuf b;

	b.str("BUG: smp_processor_id() called from a thread that is not a simulated CPU at ")
		.str(file).str(":").dec(line).str("\n");
	b.emit();
	dumpStack();
	die();
}

__attribute__((__noinline__)) void warnReport(const char *file, int line, const char *func,
					       const char *cond) noexcept
{
	SigSafeBuf b;

	__atomic_fetch_add(&nrWarnings, 1, __ATOMIC_RELAXED);
	b.str("------------[ cut here ]------------\nWARNING: ").str(file).str(":").dec(line)
		.str(" ").str(func).str("(): ").str(cond).str(" on CPU ")
		.dec(raw_smp_processor_id()).str("\n");
	b.emit();
	if (panicOnWarn) {
		SigSafeBuf().str("Kernel panic - not syncing: panic_on_warn set\n").emit();
		dumpStack();
		die();
	}
}

} /* namespace */

/*
 * The slow paths of BUG(), WARN() and smp_processor_id()'s check, reached
 * from noinstr code too: noinstr themselves, the report inside an
 * instrumentation region, as the kernel's #UD handler (handle_bug()) is.
 */
noinstr void bugAt(const char *file, int line, const char *func, const char *cond) noexcept
{
	pokelab_instr_begin();
	bugReport(file, line, func, cond);
	pokelab_instr_end();
}

noinstr void notOnCpu(const char *file, int line) noexcept
{
	pokelab_instr_begin();
	notOnCpuReport(file, line);
	pokelab_instr_end();
}

noinstr void warnAt(const char *file, int line, const char *func, const char *cond) noexcept
{
	pokelab_instr_begin();
	warnReport(file, line, func, cond);
	pokelab_instr_end();
}

namespace {

/* What was installed before ours (AddressSanitizer's SEGV handler, say): chained to. */
struct sigaction previous[NSIG];

/*
 * A fatal signal (a CPU executed a torn instruction, followed a garbage
 * pointer, ...): say where, run the death hooks, then hand the signal to
 * the handler installed before ours, or die of it as if nothing had caught
 * it.
 */
void fatalSignal(int sig, siginfo_t *si, void *ucv) noexcept
{
	const ucontext_t *uc = (const ucontext_t *)ucv;
	const char *name = sig == SIGILL ? "SIGILL" : sig == SIGFPE ? "SIGFPE" :
			   sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" :
			   sig == SIGABRT ? "SIGABRT" : "?";
	const struct sigaction &prev = previous[sig];

	/* die()'s own abort(), after its report and the hooks: nothing more to say */
	if (sig == SIGABRT && __atomic_load_n(&deathHooksRan, __ATOMIC_ACQUIRE))
		goto chain;
	SigSafeBuf().str("pokelab: fatal signal ").dec(sig).str(" (").str(name)
		.str(") on CPU ").dec(raw_smp_processor_id()).str(" at ip ")
		.hex((unsigned long)uc->uc_mcontext.gregs[REG_RIP]).str(", address ")
		.hex((unsigned long)si->si_addr).str("\n").emit();
	runDeathHooks();
chain:
	if ((prev.sa_flags & SA_SIGINFO) && prev.sa_sigaction) {
		prev.sa_sigaction(sig, si, ucv);
		return;
	}
	if (!(prev.sa_flags & SA_SIGINFO) && prev.sa_handler != SIG_DFL &&
	    prev.sa_handler != SIG_IGN) {
		prev.sa_handler(sig);
		return;
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

} /* namespace */

void installFatalSignalHandlers() noexcept
{
	static bool installed;
	struct sigaction sa;

	if (installed)
		return;
	installed = true;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fatalSignal;
	/* on the alternate stack: a CPU that ran torn code may have no usable stack */
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	for (int sig : {SIGILL, SIGFPE, SIGSEGV, SIGBUS, SIGABRT})
		sigaction(sig, &sa, &previous[sig]);
}

namespace {
thread_local std::unique_ptr<char[]> altStack;
} /* namespace */

void fatalSignalStack(bool on) noexcept
{
	constexpr size_t kSize = 64 * 1024;
	stack_t ss = {};

	if (!on) {
		ss.ss_flags = SS_DISABLE;
		sigaltstack(&ss, nullptr);
		altStack.reset();
		return;
	}
	if (!altStack)
		altStack.reset(new (std::nothrow) char[kSize]);
	if (!altStack)
		return;
	ss.ss_sp = altStack.get();
	ss.ss_size = kSize;
	sigaltstack(&ss, nullptr);
}

void addDeathHook(void (*fn)() noexcept)
{
	for (auto &h : deathHooks) {
		if (h == fn)
			return;
		if (!h) {
			__atomic_store_n(&h, fn, __ATOMIC_RELEASE);
			return;
		}
	}
}

namespace {

void (*panicNotifiers[2])() noexcept;
int panicNotifiersRan;

} /* namespace */

void addPanicNotifier(void (*fn)() noexcept)
{
	for (auto &h : panicNotifiers) {
		if (h == fn)
			return;
		if (!h) {
			__atomic_store_n(&h, fn, __ATOMIC_RELEASE);
			return;
		}
	}
}

void runPanicNotifiers() noexcept
{
	if (__atomic_exchange_n(&panicNotifiersRan, 1, __ATOMIC_ACQ_REL))
		return;
	for (auto &h : panicNotifiers) {
		void (*fn)() noexcept = __atomic_load_n(&h, __ATOMIC_ACQUIRE);

		if (fn)
			fn();
	}
}

void addTaintWarn() noexcept
{
	__atomic_fetch_add(&nrWarnings, 1, __ATOMIC_RELAXED);
}

unsigned long warnCount() noexcept
{
	return __atomic_load_n(&nrWarnings, __ATOMIC_RELAXED);
}

} /* namespace kshim */
