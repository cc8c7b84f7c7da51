// SPDX-License-Identifier: GPL-2.0-only
/*
 * BUG() and WARN(), and the panic_on_warn boot parameter.
 */
#include <cstdlib>
#include <execinfo.h>
#include <string>

#include <kernel_shim/boot.h>
#include <kernel_shim/sigsafe.h>
#include <linux/bug.h>
#include <linux/smp.h>

namespace kshim {

namespace {

bool panicOnWarn;
unsigned long nrWarnings;

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

/* backtrace() loads libgcc on first use, which allocates: do it before any signal path needs it. */
[[maybe_unused]] const int backtraceWarm = [] {
	void *f[1];
	return backtrace(f, 1);
}();

} /* namespace */

void bugAt(const char *file, int line, const char *func, const char *cond) noexcept
{
	SigSafeBuf b;

	b.str("------------[ cut here ]------------\nkernel BUG at ").str(file).str(":").dec(line)
		.str("!\n").str("  in ").str(func).str("()");
	if (cond)
		b.str(": BUG_ON(").str(cond).str(")");
	b.str(" on CPU ").dec(raw_smp_processor_id()).str("\n");
	b.emit();
	dumpStack();
	abort();
}

void notOnCpu(const char *file, int line) noexcept
{
	SigSafeBuf b;

	b.str("BUG: smp_processor_id() called from a thread that is not a simulated CPU at ")
		.str(file).str(":").dec(line).str("\n");
	b.emit();
	dumpStack();
	abort();
}

void warnAt(const char *file, int line, const char *func, const char *cond) noexcept
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
		abort();
	}
}

unsigned long warnCount() noexcept
{
	return __atomic_load_n(&nrWarnings, __ATOMIC_RELAXED);
}

} /* namespace kshim */
