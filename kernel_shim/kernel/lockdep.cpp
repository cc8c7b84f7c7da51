// SPDX-License-Identifier: GPL-2.0-only
/*
 * lockdep for the shim's sleeping locks: the two rules of
 * kernel/locking/lockdep.c that a wrong patch to the port breaks most,
 * checked at each mutex_lock() before it waits (linux/mutex.h).
 *
 *  - recursive locking: a task taking a lock class it already holds;
 *  - circular dependency: taking B while holding A when B -> ... -> A was
 *    seen once, anywhere; the order seen first is the order, so the
 *    inversion is reported even when the run did not deadlock:
 *
 *	CPU1					CPU2
 *	lock(jump_label_mutex)
 *	lock(text_mutex)	edge jump_label_mutex -> text_mutex
 *						lock(text_mutex)
 *						lock(jump_label_mutex): reported here
 *
 * CUSTOM: a lock class is a DEFINE_MUTEX() lock (static: its address is the
 * class, as the kernel's static lock keys); mutexes inside other objects
 * have no class and are not followed. At most 64 classes (a bit each in
 * the closure of the order graph); the 65th turns lockdep off with the
 * kernel's words. The first report turns it off too (debug_locks_off()),
 * and boot turns it on again with an empty graph. Cost at a mutex_lock()
 * of a lock already ordered after the ones held: a scan of the task's held
 * locks and a bit test each; the graph's lock only for a new edge.
 */
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <kernel_shim/boot.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/watchdog.h>
#include <linux/mutex.h>
#include <linux/smp.h>

#define KSHIM_PRIVATE
#include "internal.h"

namespace kshim {

namespace {

constexpr int kMaxClasses = 64;
constexpr int kMaxHeld = 16;	/* MAX_LOCK_DEPTH is 48; the port nests three at most */

struct Place {
	const char *file = nullptr;
	unsigned int line = 0;
	const char *func = nullptr;
	int cpu = -1;
};

struct Held {
	struct mutex *m;
	int cls;
	Place at;
};

/* The task's held locks (a thread: a mutex is never taken in a signal handler). */
thread_local Held held[kMaxHeld];
thread_local int nHeld;

struct Edge {
	Place before;	/* where the earlier lock was taken */
	Place after;	/* where the later one was, while the earlier was held */
};

std::mutex graphLock;
std::atomic<bool> debugLocks{true};
std::atomic<int> nClasses{0};
const struct mutex *classLock[kMaxClasses + 1];
/* direct[a] bit b: b was taken while a was held; closure[a]: b reachable from a */
std::atomic<u64> direct[kMaxClasses + 1];
std::atomic<u64> closure[kMaxClasses + 1];
Edge edges[kMaxClasses + 1][kMaxClasses + 1];

/* lockdep.prove_locking=0|1, the kernel's module parameter: 0 turns the checks off */
bool proveLocking = true;

int setProveLocking(const char *val, std::string &err)
{
	if (val && (!strcmp(val, "0") || !strcmp(val, "1"))) {
		proveLocking = val[0] == '1';
		return 0;
	}
	err = fmt::format("lockdep.prove_locking={}: expected lockdep.prove_locking=0 or =1",
			  val ? val : "");
	return -EINVAL;
}

BootParamRegistrar proveLockingParam({
	"lockdep.prove_locking", setProveLocking, [] { proveLocking = true; },
	"lockdep.prove_locking=0|1: lockdep's order checks of the struct mutexes (default: 1)",
});

int lockdepBoot(std::string &)
{
	std::lock_guard<std::mutex> lk(graphLock);

	for (int i = 0; i <= kMaxClasses; i++) {
		direct[i].store(0);
		closure[i].store(0);
		if (classLock[i])
			const_cast<struct mutex *>(classLock[i])->lockdep_class.store(0);
		classLock[i] = nullptr;
	}
	nClasses.store(0);
	debugLocks.store(proveLocking);
	return 0;
}

BootHookRegistrar lockdepBootHook({"lockdep", BootStage::Machine, lockdepBoot});

std::string placeOf(const Place &p)
{
	return fmt::format("at {}:{} in {}", shortFile(p.file), p.line,
			   portFunction(bareName(p.func).c_str()));
}

std::string cpuName(int cpu)
{
	return cpu >= 0 ? fmt::format("CPU#{}", cpu) : "a non-CPU thread";
}

const char *nameOf(int cls)
{
	return classLock[cls] && classLock[cls]->name ? classLock[cls]->name : "?";
}

/* The class of @m: its number, 1.. (0: none, no DEFINE_MUTEX(); -1: out of classes). */
int classOf(struct mutex *m)
{
	int c = m->lockdep_class.load(std::memory_order_acquire);

	if (c || !m->name)
		return c;
	std::lock_guard<std::mutex> lk(graphLock);

	c = m->lockdep_class.load(std::memory_order_relaxed);
	if (c)
		return c;
	if (nClasses.load() >= kMaxClasses) {
		if (debugLocks.exchange(false))
			lockupReport("lockdep: BUG: MAX_LOCKDEP_KEYS too low!\n"
				     "lockdep: turning off the locking correctness validator.\n");
		return -1;
	}
	c = nClasses.load() + 1;
	classLock[c] = m;
	nClasses.store(c);
	m->lockdep_class.store(c, std::memory_order_release);
	return c;
}

std::string header(const char *title)
{
	std::string bar(strlen(title) + 9, '=');

	return fmt::format("lockdep: {}\nlockdep: WARNING: {}\nlockdep: {}\n", bar, title,
			   std::string(strlen(title) + 9, '-'));
}

void recursive(const Held &h, struct mutex *m, const Place &now)
{
	std::string r = header("possible recursive locking detected");

	r += fmt::format("lockdep: {} is trying to acquire lock:\n", cpuName(now.cpu));
	r += fmt::format("lockdep:  ({}) {}\n", m->name, placeOf(now));
	r += "lockdep: but it already holds lock:\n";
	r += fmt::format("lockdep:  ({}) {}\n", nameOf(h.cls), placeOf(h.at));
	r += "lockdep: other info that might help us debug this:\n"
	     "lockdep:  Possible unsafe locking scenario:\n"
	     "lockdep:        CPU0\n"
	     "lockdep:        ----\n";
	r += fmt::format("lockdep:   lock({});\nlockdep:   lock({});\n", m->name, m->name);
	r += "lockdep:  *** DEADLOCK ***\n";
	lockupReport(r);
}

/* The path from @from to @to over direct edges (a BFS; 64 classes at most). */
std::vector<int> path(int from, int to)
{
	int prev[kMaxClasses + 1];
	std::vector<int> q{from}, out;

	for (int &p : prev)
		p = 0;
	prev[from] = from;
	for (size_t i = 0; i < q.size() && !prev[to]; i++) {
		u64 d = direct[q[i]].load();

		for (int c = 1; c <= kMaxClasses; c++)
			if (d & (1ull << (c - 1)) && !prev[c]) {
				prev[c] = q[i];
				q.push_back(c);
			}
	}
	if (!prev[to])
		return out;
	for (int c = to; c != from; c = prev[c])
		out.insert(out.begin(), c);
	out.insert(out.begin(), from);
	return out;
}

void circular(const Held &h, int cls, struct mutex *m, const Place &now)
{
	std::string r = header("possible circular locking dependency detected");
	std::vector<int> chain = path(cls, h.cls);

	r += fmt::format("lockdep: {} is trying to acquire lock:\n", cpuName(now.cpu));
	r += fmt::format("lockdep:  ({}) {}\n", m->name, placeOf(now));
	r += "lockdep: but it already holds lock:\n";
	r += fmt::format("lockdep:  ({}) {}\n", nameOf(h.cls), placeOf(h.at));
	r += "lockdep: which lock already depends on the new lock.\n"
	     "lockdep: the existing dependency chain (in reverse order) is:\n";
	for (size_t i = chain.size() - 1; i >= 1; i--) {
		const Edge &e = edges[chain[i - 1]][chain[i]];

		r += fmt::format("lockdep: -> #{} ({}): taken {} on {}\n", i, nameOf(chain[i]),
				 placeOf(e.after), cpuName(e.after.cpu));
		r += fmt::format("lockdep:        while holding ({}), taken {}\n",
				 nameOf(chain[i - 1]), placeOf(e.before));
	}
	r += fmt::format("lockdep: -> #0 ({}): taken {} on {}\n", m->name, placeOf(now),
			 cpuName(now.cpu));
	r += "lockdep: other info that might help us debug this:\n"
	     "lockdep:  Possible unsafe locking scenario:\n";
	r += fmt::format("lockdep:        {:<24}{}\n", "CPU0", "CPU1");
	r += fmt::format("lockdep:        {:<24}{}\n", "----", "----");
	r += fmt::format("lockdep:   lock({});\n", m->name);
	r += fmt::format("lockdep:   {:<29}lock({});\n", "", nameOf(h.cls));
	r += fmt::format("lockdep:   {:<29}lock({});\n", "", m->name);
	r += fmt::format("lockdep:   lock({});\n", nameOf(h.cls));
	r += "lockdep:  *** DEADLOCK ***\n";
	lockupReport(r);
}

/* Record a -> b (b taken while a held) and close the graph over it. Under graphLock. */
void addEdge(int a, int b, const Place &atA, const Place &atB)
{
	u64 bitB = 1ull << (b - 1), reach = bitB | closure[b].load();

	direct[a].fetch_or(bitB);
	edges[a][b] = Edge{atA, atB};
	for (int x = 1; x <= nClasses.load(); x++)
		if (x == a || closure[x].load() & (1ull << (a - 1)))
			closure[x].fetch_or(reach);
}

} /* namespace */

void lockdepAcquire(struct mutex *m, const std::source_location &loc) noexcept
{
	if (!debugLocks.load(std::memory_order_relaxed) || !m->name)
		return;
	int cls = classOf(m);
	Place now{loc.file_name(), (unsigned int)loc.line(), loc.function_name(),
		  raw_smp_processor_id()};

	if (cls <= 0)
		return;
	for (int i = 0; i < nHeld; i++) {
		if (held[i].cls == cls) {
			if (debugLocks.exchange(false))
				recursive(held[i], m, now);
			return;
		}
	}
	for (int i = 0; i < nHeld; i++) {
		int a = held[i].cls;

		if (direct[a].load(std::memory_order_relaxed) & (1ull << (cls - 1)))
			continue;
		std::lock_guard<std::mutex> lk(graphLock);

		if (closure[cls].load() & (1ull << (a - 1))) {
			if (debugLocks.exchange(false))
				circular(held[i], cls, m, now);
			return;
		}
		addEdge(a, cls, held[i].at, now);
	}
	if (nHeld < kMaxHeld)
		held[nHeld++] = Held{m, cls, now};
}

void lockdepRelease(struct mutex *m) noexcept
{
	for (int i = nHeld - 1; i >= 0; i--) {
		if (held[i].m != m)
			continue;
		for (int k = i; k < nHeld - 1; k++)
			held[k] = held[k + 1];
		nHeld--;
		return;
	}
}

} /* namespace kshim */
