// SPDX-License-Identifier: GPL-2.0-only
/*
 * The NMI line of a simulated CPU: a real-time signal (SIGRTMIN + 2) that
 * the soft IRQ mask does not hold off, as the non-maskable interrupt
 * ignores RFLAGS.IF. Its handler runs the entry that context tracking
 * installs (setNmiEntry(): the paranoid entry and exc_nmi(),
 * context_tracking/nmi.cpp) with interrupts off, then returns as IRET does.
 *
 *	the CPU itself (nmiSelf())		the same CPU, before the kill returns
 *	pthread_kill(self, SIGNMI)   ------>	nmiSignalHandler()
 *						  IRQs off (saved), entry(), restored
 *						  cpuEret()
 *
 * Only the CPU raises its own NMI (torture does, at its delay points):
 * there is no remote sender yet, so the handler need not chase the thread
 * that runs as the CPU, as the IPI's does.
 *
 * An NMI does not nest in itself (the signal is blocked while its handler
 * runs, as NMIs are until IRET). It lands anywhere else: task context, the
 * entry and exit stubs, inside the IPI handler and inside the INT3 handler,
 * where its handler may trap on an INT3 again (SIGTRAP is SA_NODEFER).
 */
#include <cerrno>
#include <csignal>
#include <cstring>
#include <string>

#include <kernel_shim/cpu.h>
#include <kernel_shim/cpu_events.h>
#include <linux/smp.h>

#define KSHIM_PRIVATE
#include "internal.h"

namespace kshim {

namespace {

void (*nmiEntry)(void) noexcept;
std::atomic<unsigned long> nmisTaken[NR_CPUS];

void nmiSignalHandler(int, siginfo_t *, void *) noexcept
{
	int savedErrno = errno;
	int cpu = tlsCpu;
	void (*entry)(void) noexcept = __atomic_load_n(&nmiEntry, __ATOMIC_ACQUIRE);

	if (cpu >= 0 && entry) {
		CpuState &c = cpuState(cpu);
		int was = c.irqDisabled.load(std::memory_order_relaxed);

		/* The NMI runs with interrupts off; what it interrupted gets its flag back. */
		c.irqDisabled.store(1, std::memory_order_relaxed);
		std::atomic_signal_fence(std::memory_order_seq_cst);
		entry();
		std::atomic_signal_fence(std::memory_order_seq_cst);
		c.irqDisabled.store(was, std::memory_order_relaxed);
		nmisTaken[cpu].fetch_add(1, std::memory_order_relaxed);
		/* The return from the NMI: IRET (pokelab.eret=serialising) */
		cpuEret();
	}
	errno = savedErrno;
}

} /* namespace */

int nmiSignal() noexcept
{
	return SIGRTMIN + 2;
}

int installNmiHandler(std::string &err)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = nmiSignalHandler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	/* interrupts off in the NMI: an IPI waits until it returns */
	sigaddset(&sa.sa_mask, ipiSignal());
	if (sigaction(nmiSignal(), &sa, nullptr)) {
		err = std::string("cannot install the NMI signal handler: ") + strerror(errno);
		return -errno;
	}
	for (std::atomic<unsigned long> &n : nmisTaken)
		n.store(0, std::memory_order_relaxed);
	return 0;
}

void setNmiEntry(void (*entry)(void) noexcept) noexcept
{
	__atomic_store_n(&nmiEntry, entry, __ATOMIC_RELEASE);
}

void nmiSelf() noexcept
{
	if (tlsCpu >= 0 && __atomic_load_n(&nmiEntry, __ATOMIC_ACQUIRE))
		pthread_kill(pthread_self(), nmiSignal());
}

unsigned long nmiCount(int cpu) noexcept
{
	return nmisTaken[cpu].load(std::memory_order_relaxed);
}

} /* namespace kshim */
