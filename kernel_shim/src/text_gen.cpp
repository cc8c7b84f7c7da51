// SPDX-License-Identifier: GPL-2.0-only
/*
 * Text generations (see kernel_shim/text_gen.h).
 */
#include <atomic>
#include <string>

#include <kernel_shim/boot.h>
#include <kernel_shim/text_gen.h>
#include <linux/percpu.h>

namespace kshim {

namespace {

std::atomic<unsigned long> globalGen{0};
std::atomic<unsigned long> roundGen{0};
DEFINE_PER_CPU(std::atomic<unsigned long>, cpuGen);

int textGenInit(std::string &)
{
	textGenReset();
	return 0;
}

BootHookRegistrar textGenHook({"text_gen_init", BootStage::Early, textGenInit});

} /* namespace */

unsigned long textGenBump() noexcept
{
	return globalGen.fetch_add(1, std::memory_order_release) + 1;
}

unsigned long textGen() noexcept
{
	return globalGen.load(std::memory_order_acquire);
}

unsigned long textGenBeginSync() noexcept
{
	return globalGen.load(std::memory_order_acquire);
}

void textGenEndSync(unsigned long gen) noexcept
{
	std::atomic<unsigned long> *slot = this_cpu_ptr(&cpuGen);
	unsigned long old = slot->load(std::memory_order_relaxed);

	/* Only forward: a late, older record must not hide a newer sync. */
	while (old < gen && !slot->compare_exchange_weak(old, gen, std::memory_order_release,
							 std::memory_order_relaxed))
		;
}

unsigned long textGenOfCpu(int cpu) noexcept
{
	return per_cpu_ptr(&cpuGen, cpu)->load(std::memory_order_acquire);
}

void textGenRoundDone(unsigned long gen) noexcept
{
	unsigned long old = roundGen.load(std::memory_order_relaxed);

	while (old < gen && !roundGen.compare_exchange_weak(old, gen, std::memory_order_release,
							    std::memory_order_relaxed))
		;
}

unsigned long textGenRound() noexcept
{
	return roundGen.load(std::memory_order_acquire);
}

void textGenReset() noexcept
{
	globalGen.store(0);
	roundGen.store(0);
	for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++)
		per_cpu_ptr(&cpuGen, cpu)->store(0);
}

} /* namespace kshim */
