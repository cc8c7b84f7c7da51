// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench text_write: the two ways pokelab can write text, on a scratch page
 * of its own that is never executed (so the model and the machine are not
 * involved; nothing boots):
 *
 *	procmem: pwrite() of 1 byte to /proc/self/mem at the r-x page's address
 *	alias:   memcpy() of 1 byte into an rw- view of the memfd the r-x page
 *	         maps, the view mapped once per batch of writes
 *	map/unmap: what mapping that view costs, mmap() + munmap() alone (the
 *	         price of one text_mutex hold), with the host's TLB shootdowns it
 *	         causes while another thread of the process runs (from the TLB line
 *	         of /proc/interrupts)
 *
 * The ratio is alias / procmem per write: pokelab writes the program's text
 * through the alias (pokelab/text_alias.h).
 */
#include <atomic>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>

#include <kernel_shim/clock.h>

#include "bench.h"

namespace pokelab::bench {

namespace {

constexpr size_t kPage = 4096;

/* Total TLB shootdown interrupts of the host kernel, all CPUs; -1 if unknown. */
long tlbShootdowns()
{
	FILE *f = fopen("/proc/interrupts", "re");
	char line[4096];
	long sum = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = line;

		while (*p == ' ')
			p++;
		if (strncmp(p, "TLB:", 4))
			continue;
		sum = 0;
		for (p += 4;;) {
			char *end;
			long v = strtol(p, &end, 10);

			if (end == p)
				break;
			sum += v;
			p = end;
		}
	}
	fclose(f);
	return sum;
}

int benchTextWrite(const BenchOptions &o)
{
	unsigned int n = roundsOr(o, 492);	/* the writes of a 164-site batch */
	int memfd, memFd;
	char *rx, *rw;
	std::atomic<bool> stop{false};

	if (refuseMachineOptions("text_write", o))
		return 2;
	memfd = memfd_create("pokelab-bench-text", MFD_CLOEXEC);
	memFd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	if (memfd < 0 || memFd < 0 || ftruncate(memfd, 2 * kPage)) {
		fmt::print(stderr, "pokelab: bench text_write: {}\n", strerror(errno));
		return 1;
	}
	/* page 0: private r-x (procmem's case); page 1: the memfd's r-x mapping (alias's) */
	rx = (char *)mmap(nullptr, kPage, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *rxAlias = (char *)mmap(nullptr, kPage, PROT_READ | PROT_EXEC, MAP_SHARED, memfd, 0);
	if (rx == MAP_FAILED || rxAlias == MAP_FAILED) {
		fmt::print(stderr, "pokelab: bench text_write: mmap: {}\n", strerror(errno));
		return 1;
	}
	/* Another thread of the process runs meanwhile, as CPUs do: munmap() must shoot it down. */
	std::thread other([&stop] {
		while (!stop.load(std::memory_order_relaxed))
			;
	});

	fmt::print("bench text_write: {} iterations of {} 1-byte writes per variant\n", o.iters, n);
	auto procmem = [&] {
		u64 t0 = kshim::clockNs();

		for (unsigned int i = 0; i < n; i++) {
			char b = (char)i;

			if (pwrite(memFd, &b, 1, (off_t)(unsigned long)(rx + i % kPage)) != 1)
				abort();
		}
		return (double)(kshim::clockNs() - t0) / n;
	};
	auto alias = [&] {
		u64 t0 = kshim::clockNs();

		rw = (char *)mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
		for (unsigned int i = 0; i < n; i++)
			((volatile char *)rw)[i % kPage] = (char)i;
		munmap(rw, kPage);
		return (double)(kshim::clockNs() - t0) / n;
	};
	PairStat p = runPair("alias/procmem", o.iters, alias, procmem);
	addRow(o, fmt::format("text_write: alias (view per {} writes) / pwrite /proc/self/mem", n), p,
	       "-", true);

	/* The view's own price: one mmap()+munmap() with a write, and its shootdowns. */
	std::vector<double> mapNs;
	long tlb0 = tlbShootdowns();
	unsigned int maps = 200;
	for (unsigned int it = 0; it < maps; it++) {
		u64 t0 = kshim::clockNs();

		rw = (char *)mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
		((volatile char *)rw)[it % kPage] = 1;
		munmap(rw, kPage);
		mapNs.push_back((double)(kshim::clockNs() - t0));
	}
	long tlb1 = tlbShootdowns();
	Stat ms = stat(mapNs);
	fmt::print("Summary: map + write + unmap of the view {} ± {} (median ± MAD over {}); host "
		   "TLB shootdowns {}\n", fmtNs(ms.median), fmtNs(ms.mad), maps,
		   tlb0 < 0 ? std::string("unknown (no TLB line in /proc/interrupts)")
			    : fmt::format("{:.2f} per map", (double)(tlb1 - tlb0) / maps));
	stop.store(true);
	other.join();
	munmap(rx, kPage);
	munmap(rxAlias, kPage);
	close(memfd);
	close(memFd);
	return 0;
}

BenchRegistrar textWriteBench({"text_write", "a text write through the memfd alias vs pwrite() "
			       "on /proc/self/mem, and the alias's map/unmap cost", benchTextWrite});

} /* namespace */

} /* namespace pokelab::bench */
