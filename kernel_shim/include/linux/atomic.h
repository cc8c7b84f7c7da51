/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * atomic_t and its operations.
 *
 * CUSTOM: include/linux/atomic*.h on GCC __atomic builtins. atomic_t keeps
 * the kernel's layout ({ int counter; }) so that structures holding one keep
 * their size.
 *
 * Memory ordering follows the LKMM names:
 *  - atomic_read()/atomic_set(): relaxed (READ_ONCE/WRITE_ONCE);
 *  - atomic_set_release(): release store;
 *  - atomic_inc()/atomic_dec()/atomic_add()/atomic_sub(): no ordering implied
 *    (relaxed RMW; LOCK-prefixed on x86 anyway);
 *  - value-returning RMWs (atomic_*_return, atomic_dec_and_test,
 *    atomic_inc_not_zero, atomic_cmpxchg, atomic_try_cmpxchg on success,
 *    atomic_xchg, atomic_fetch_*): fully ordered (seq_cst);
 *  - atomic_cond_read_acquire(): spins with relaxed loads, acquire once the
 *    condition holds.
 * The raw_ variants are the same operations; in the kernel they differ only
 * in being uninstrumented, which here means nothing.
 *
 * Every read-modify-write is LOCK-prefixed on x86, a full fence whether or
 * not it is ordered in the LKMM (a failed cmpxchg too), and each records
 * one on the calling CPU (kshim::cpuFenceEvent(), kernel_shim/cpu_events.h)
 * for the checker's store→load rule.
 *
 * Every operation is lock-free, async-signal-safe and callable from any
 * thread.
 */
#pragma once

#include <kernel_shim/watchdog.h>

#include <asm/barrier.h>
#include <asm/processor.h>
#include <linux/compiler.h>

typedef struct {
	int counter;
} atomic_t;

typedef struct {
	long counter;
} atomic_long_t;

#define ATOMIC_INIT(i) { (i) }

namespace kshim {
/*
 * Back-off for spin loops: PAUSE, and every 256 iterations a sched_yield()
 * so that a simulated CPU sharing its PU with the one it waits for lets that
 * one run. Async-signal-safe.
 */
void spinRelax(unsigned int *iter) noexcept;
} /* namespace kshim */

/*
 * Spin until @cond_expr (which may use VAL, the value just loaded) is true,
 * then order later loads after the load that saw it. Returns VAL.
 * userspace: the loop also yields the PU now and then (kshim::spinRelax()),
 * because simulated CPUs may outnumber the PUs; and once the first load
 * does not end it, the wait is recorded for the soft-lockup watchdog (its
 * call site, the word and the condition: kernel_shim/watchdog.h).
 */
#define smp_cond_load_relaxed(ptr, cond_expr) ({			\
	__typeof__(*(ptr)) VAL = __atomic_load_n((ptr), __ATOMIC_RELAXED); \
	if (!(cond_expr)) {						\
		static constexpr kshim::WaitSite __site = {		\
			__FILE__, __LINE__, __func__, #ptr, #cond_expr};	\
		kshim::SpinWait __wait(&__site, (ptr), sizeof(*(ptr)));	\
		unsigned int __spin = 0;				\
		for (;;) {						\
			kshim::spinRelax(&__spin);			\
			VAL = __atomic_load_n((ptr), __ATOMIC_RELAXED);	\
			if (cond_expr)					\
				break;					\
		}							\
	}								\
	VAL;								\
})

#define smp_cond_load_acquire(ptr, cond_expr) ({			\
	__typeof__(*(ptr)) __v = smp_cond_load_relaxed(ptr, cond_expr);	\
	smp_acquire__after_ctrl_dep();					\
	__v;								\
})

static __always_inline int atomic_read(const atomic_t *v)
{
	return __atomic_load_n(&v->counter, __ATOMIC_RELAXED);
}

static __always_inline int atomic_read_acquire(const atomic_t *v)
{
	return __atomic_load_n(&v->counter, __ATOMIC_ACQUIRE);
}

static __always_inline void atomic_set(atomic_t *v, int i)
{
	__atomic_store_n(&v->counter, i, __ATOMIC_RELAXED);
}

static __always_inline void atomic_set_release(atomic_t *v, int i)
{
	__atomic_store_n(&v->counter, i, __ATOMIC_RELEASE);
}

static __always_inline void atomic_add(int i, atomic_t *v)
{
	__atomic_fetch_add(&v->counter, i, __ATOMIC_RELAXED);
	kshim::cpuFenceEvent();
}

static __always_inline void atomic_sub(int i, atomic_t *v)
{
	__atomic_fetch_sub(&v->counter, i, __ATOMIC_RELAXED);
	kshim::cpuFenceEvent();
}

static __always_inline void atomic_inc(atomic_t *v)
{
	atomic_add(1, v);
}

static __always_inline void atomic_dec(atomic_t *v)
{
	atomic_sub(1, v);
}

static __always_inline int atomic_add_return(int i, atomic_t *v)
{
	int r = __atomic_add_fetch(&v->counter, i, __ATOMIC_SEQ_CST);

	kshim::cpuFenceEvent();
	return r;
}

static __always_inline int atomic_sub_return(int i, atomic_t *v)
{
	int r = __atomic_sub_fetch(&v->counter, i, __ATOMIC_SEQ_CST);

	kshim::cpuFenceEvent();
	return r;
}

static __always_inline int atomic_inc_return(atomic_t *v)
{
	return atomic_add_return(1, v);
}

static __always_inline int atomic_dec_return(atomic_t *v)
{
	return atomic_sub_return(1, v);
}

static __always_inline int atomic_fetch_add(int i, atomic_t *v)
{
	int r = __atomic_fetch_add(&v->counter, i, __ATOMIC_SEQ_CST);

	kshim::cpuFenceEvent();
	return r;
}

static __always_inline int atomic_fetch_or(int i, atomic_t *v)
{
	int r = __atomic_fetch_or(&v->counter, i, __ATOMIC_SEQ_CST);

	kshim::cpuFenceEvent();
	return r;
}

static __always_inline int atomic_fetch_andnot(int i, atomic_t *v)
{
	int r = __atomic_fetch_and(&v->counter, ~i, __ATOMIC_SEQ_CST);

	kshim::cpuFenceEvent();
	return r;
}

static __always_inline bool atomic_dec_and_test(atomic_t *v)
{
	return atomic_sub_return(1, v) == 0;
}

static __always_inline bool atomic_inc_and_test(atomic_t *v)
{
	return atomic_add_return(1, v) == 0;
}

static __always_inline int atomic_xchg(atomic_t *v, int i)
{
	int r = __atomic_exchange_n(&v->counter, i, __ATOMIC_SEQ_CST);

	kshim::cpuFenceEvent();
	return r;
}

/* Returns the value seen; stores @new only if it was @old. Fully ordered. */
static __always_inline int atomic_cmpxchg(atomic_t *v, int old, int new_val)
{
	__atomic_compare_exchange_n(&v->counter, &old, new_val, false, __ATOMIC_SEQ_CST,
				    __ATOMIC_SEQ_CST);
	kshim::cpuFenceEvent();
	return old;
}

/*
 * On success returns true; on failure returns false and updates *@old with
 * the value seen. Fully ordered on success, relaxed on failure (LKMM).
 */
static __always_inline bool atomic_try_cmpxchg(atomic_t *v, int *old, int new_val)
{
	bool ok = __atomic_compare_exchange_n(&v->counter, old, new_val, false, __ATOMIC_SEQ_CST,
					      __ATOMIC_RELAXED);

	kshim::cpuFenceEvent();
	return ok;
}

/* Add @a unless the value is @u; returns the old value. Fully ordered. */
static __always_inline int atomic_fetch_add_unless(atomic_t *v, int a, int u)
{
	int c = atomic_read(v);

	do {
		if (unlikely(c == u))
			break;
	} while (!atomic_try_cmpxchg(v, &c, c + a));

	return c;
}

/* Decrement unless the result would be negative; returns old - 1 either way. Fully ordered. */
static __always_inline int atomic_dec_if_positive(atomic_t *v)
{
	int dec, c = atomic_read(v);

	do {
		dec = c - 1;
		if (unlikely(dec < 0))
			break;
	} while (!atomic_try_cmpxchg(v, &c, dec));

	return dec;
}

/* Add @a unless the value is @u: whether it added. */
static __always_inline bool atomic_add_unless(atomic_t *v, int a, int u)
{
	return atomic_fetch_add_unless(v, a, u) != u;
}

static __always_inline bool atomic_inc_not_zero(atomic_t *v)
{
	return atomic_fetch_add_unless(v, 1, 0) != 0;
}

#define atomic_cond_read_acquire(v, c) smp_cond_load_acquire(&(v)->counter, (c))
#define atomic_cond_read_relaxed(v, c) smp_cond_load_relaxed(&(v)->counter, (c))

/* The uninstrumented forms used by noinstr code. */
#define raw_atomic_read atomic_read
#define raw_atomic_set atomic_set
#define raw_atomic_inc atomic_inc
#define raw_atomic_add atomic_add
#define raw_atomic_sub atomic_sub
#define raw_atomic_dec atomic_dec
#define raw_atomic_add_return atomic_add_return
#define raw_atomic_inc_not_zero atomic_inc_not_zero
#define raw_atomic_try_cmpxchg atomic_try_cmpxchg

static __always_inline long atomic_long_read(const atomic_long_t *v)
{
	return __atomic_load_n(&v->counter, __ATOMIC_RELAXED);
}

static __always_inline void atomic_long_set(atomic_long_t *v, long i)
{
	__atomic_store_n(&v->counter, i, __ATOMIC_RELAXED);
}

static __always_inline void atomic_long_inc(atomic_long_t *v)
{
	__atomic_fetch_add(&v->counter, 1, __ATOMIC_RELAXED);
	kshim::cpuFenceEvent();
}

static __always_inline void atomic_long_add(long i, atomic_long_t *v)
{
	__atomic_fetch_add(&v->counter, i, __ATOMIC_RELAXED);
	kshim::cpuFenceEvent();
}
