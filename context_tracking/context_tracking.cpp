// SPDX-License-Identifier: GPL-2.0-only
/*
 * Context tracking with deferred work.
 *
 * Port of kernel/context_tracking.c (v6.12 names) with the IPI-deferral
 * series v7 (24/31 "context-tracking: Introduce work deferral
 * infrastructure", 25/31 "context_tracking,x86: Defer kernel text patching
 * IPIs"), and v5's ct_set_cpu_work() kept behind pokelab.ct_defer=v5 for
 * replay.
 *
 * The functions of upstream's file are at v7.3; the series' lines in them
 * are marked "series v7 NN/31". Deviations (each marked "userspace:"
 * below): no RCU-tasks, vtime or RCU tracepoints (CONFIG_TASKS_RCU and
 * CONFIG_RCU_TRACE off: nothing consumes them); the counter width is a
 * run-time setting; the policy switch selects between the series'
 * revisions at run time.
 */
#include <cstring>
#include <ctime>
#include <string>

#include <asm/sync_core.h>
#include <asm/tlbflush.h>
#include <kernel_shim/boot.h>
#include <kernel_shim/busted.h>
#include <kernel_shim/clock.h>
#include <kernel_shim/machine.h>
#include <kernel_shim/torture.h>
#include <kernel_shim/xmc.h>
#include <linux/bug.h>
#include <linux/context_tracking.h>
#include <linux/instrumentation.h>
#include <linux/instrumented.h>
#include <linux/kconfig.h>
#include <linux/preempt.h>
#include <trace/events/context_tracking.h>
#include <trace/events/rcu.h>
#include <trace/events/pokelab.h>
#include <pokelab/ct_entry.h>
#include <linux/irqflags.h>

/*
 * userspace: RCU's EQS checks stay on, as they were before they became
 * CONFIG_RCU_EQS_DEBUG's; CONFIG_TASKS_RCU is off (no RCU-tasks).
 */
#define CONFIG_RCU_EQS_DEBUG 1
/* Idle and user tracking both, as x86 with nohz_full (CONFIG_CONTEXT_TRACKING_IDLE=y). */
#define CONFIG_CONTEXT_TRACKING_IDLE 1

/* include/linux/rcupdate.h with CONFIG_GENERIC_ENTRY: the entry code reschedules itself */
static inline void rcu_irq_work_resched(void) { }

DEFINE_PER_CPU(struct context_tracking, context_tracking);

/* Port of TPS(), kernel/context_tracking.c, v7.3 */
#define TPS(x) tracepoint_string(x)

/* Port of rcu_task_exit(), kernel/context_tracking.c, v7.3 */
static __always_inline void rcu_task_exit(void)
{
#if defined(CONFIG_TASKS_RCU) && defined(CONFIG_NO_HZ_FULL)
	WRITE_ONCE(current->rcu_tasks_idle_cpu, smp_processor_id());
#endif
}

/* Port of rcu_task_enter(), kernel/context_tracking.c, v7.3 */
static __always_inline void rcu_task_enter(void)
{
#if defined(CONFIG_TASKS_RCU) && defined(CONFIG_NO_HZ_FULL)
	WRITE_ONCE(current->rcu_tasks_idle_cpu, -1);
#endif
}

unsigned int ct_rcu_watching_width = 32 - CT_RCU_WATCHING_START;
enum ct_defer_policy ct_defer_policy = CT_DEFER_OFF;

namespace pokelab {
void (*ctSetCpuWorkRaceHook)(unsigned int cpu);
} /* namespace pokelab */

static DEFINE_PER_CPU(unsigned long, ct_work_flushed);
/* userspace: osnoise-style accounting of the deferred flushes (total and longest, ns) */
static DEFINE_PER_CPU(unsigned long, ct_work_flush_ns);
static DEFINE_PER_CPU(unsigned long, ct_work_flush_max_ns);

/*
 * Port of arch_context_tracking_work(), arch/x86/include/asm/context_tracking_work.h,
 * series v7 25/31
 */
noinstr void arch_context_tracking_work(enum ct_work work)
{
	switch (work) {
	case CT_WORK_SYNC:
		sync_core();
		break;
	case CT_WORK_MAX:
		WARN_ON_ONCE(true);
	}
}

/*
 * userspace: pokelab's census of the deferred flushes (counted, timed,
 * traced; this CPU, IRQs off), its own instrumentation, which the kernel's
 * ct_work_flush() does not have: clock_gettime() and the trace buffer are
 * not noinstr, so it runs inside a pokelab_instr region.
 */
static __attribute__((__noinline__)) u64 ct_work_census_clock(unsigned int work)
{
	trace_pokelab_ct_work_flush(work);
	return kshim::clockNs();
}

static __attribute__((__noinline__)) void ct_work_census_account(u64 t0)
{
	unsigned long dt = kshim::clockNs() - t0;

	this_cpu_inc(ct_work_flushed);
	this_cpu_add(ct_work_flush_ns, dt);
	if (dt > this_cpu_read(ct_work_flush_max_ns))
		this_cpu_write(ct_work_flush_max_ns, dt);
}

static noinstr u64 ct_work_census_begin(unsigned int work)
{
	u64 t0;

	pokelab_instr_begin();
	t0 = ct_work_census_clock(work);
	pokelab_instr_end();
	return t0;
}

static noinstr void ct_work_census_end(u64 t0)
{
	pokelab_instr_begin();
	ct_work_census_account(t0);
	pokelab_instr_end();
}

/* Port of ct_work_flush(), kernel/context_tracking.c, deferral series v7 24/31 */
static noinstr void ct_work_flush(unsigned long seq)
{
	seq = (seq & CT_WORK_MASK) >> CT_WORK_START;

	/* each work is noinstr, cannot block, and may run from an NMI */
	for (int bit = 0; bit < CT_WORK_MAX_OFFSET; bit++) {
		u64 t0;

		if (!(seq & (1UL << bit)))
			continue;
		t0 = ct_work_census_begin(1u << bit);	/* userspace */
		arch_context_tracking_work((enum ct_work)(1 << bit));
		ct_work_census_end(t0);	/* userspace */
	}
}

/* Port of ct_state_inc_clear_work(), kernel/context_tracking.c, deferral series v7 24/31 */
static __always_inline unsigned long ct_state_inc_clear_work(int incby)
{
	struct context_tracking *ct = ct_this();
	int new_state, old, state;

	state = atomic_read(&ct->state);
	do {
		old = state;
		new_state = old & ~CT_WORK_MASK;
		new_state += incby;
		state = atomic_cmpxchg(&ct->state, old, new_state);
	} while (old != state);

	return new_state;
}

/* Port of ct_kernel_exit_state(), kernel/context_tracking.c, v7.3 */
static noinstr void ct_kernel_exit_state(int offset)
{
	/* userspace: the model learns that this CPU stops fetching instrumentable text */
	kshim::xmcEqsEnter();
	/*
	 * One fully ordered RMW: everything this CPU did in the kernel is
	 * ordered before it leaves RCU's sight, and pending work bits go
	 * with it (they were flushed at entry).
	 */
	WARN_ON_ONCE(IS_ENABLED(CONFIG_RCU_EQS_DEBUG) && !rcu_is_watching_curr_cpu());
	torture_delay(kshim::TortureDelay::ExitBeforeRmw);	/* userspace: delay point */
	/* series v7 24/31: the work bits cleared with the same RMW */
	(void)ct_state_inc_clear_work(offset);
}

/* Port of ct_kernel_enter_state(), kernel/context_tracking.c, v7.3 */
static noinstr void ct_kernel_enter_state(int offset)
{
	int seq;

	/*
	 * The fully ordered add makes this CPU visible as watching; a remote
	 * ct_set_cpu_work() that succeeded before it has its work bit in
	 * @seq (pairs with the cmpxchg in ct_set_cpu_work()).
	 */
	torture_delay(kshim::TortureDelay::EntryBeforeRmw);	/* userspace: delay point */
	seq = ct_state_inc(offset);
	/* userspace: torture delay injection, the window between entry and the flush */
	torture_delay(kshim::TortureDelay::EntryBeforeFlush);
	/* series v7 24/31: run the work deferred while this CPU was away */
	if (!BUSTED(SKIP_ENTRY_FLUSH))	/* userspace: BUSTED, the flush deleted */
		ct_work_flush(seq);	/* series v7 24/31 */
	/* userspace: pokelab-catchup (pokelab's own) serialises on every entry from an EQS */
	if (ct_defer_policy == CT_DEFER_CATCHUP && ct_this()->active) {
		arch_context_tracking_work(CT_WORK_SYNC);
		this_cpu_inc(ct_work_flushed);
	}
	WARN_ON_ONCE(IS_ENABLED(CONFIG_RCU_EQS_DEBUG) && !(seq & CT_RCU_WATCHING));
}

/* Port of ct_kernel_exit(), kernel/context_tracking.c, v7.3 */
static noinstr void ct_kernel_exit(bool user, int offset)
{
	struct context_tracking *ct = this_cpu_ptr(&context_tracking);

	WARN_ON_ONCE(ct_nmi_nesting() != CT_NESTING_IRQ_NONIDLE);
	WRITE_ONCE(ct->nmi_nesting, 0);
	WARN_ON_ONCE(IS_ENABLED(CONFIG_RCU_EQS_DEBUG) &&
		     ct_nesting() == 0);
	if (ct_nesting() != 1) {
		/* Still watched: only the nesting changes. */
		ct->nesting--;
		return;
	}

	instrumentation_begin();
	lockdep_assert_irqs_disabled();
	trace_rcu_watching(TPS("End"), ct_nesting(), 0, ct_rcu_watching());
	/* userspace: no tasks: no idle-task check, no preempt-RCU QS to report (liburcu QSBR) */
	(void)user;

	/* the instrumentation the noinstr ct_kernel_exit_state() cannot carry */
	instrument_atomic_write(&ct->state, sizeof(ct->state));

	instrumentation_end();
	WRITE_ONCE(ct->nesting, 0);
	ct_kernel_exit_state(offset);
	rcu_task_exit();
}

/* Port of ct_kernel_enter(), kernel/context_tracking.c, v7.3 */
static noinstr void ct_kernel_enter(bool user, int offset)
{
	struct context_tracking *ct = this_cpu_ptr(&context_tracking);
	long oldval;

	WARN_ON_ONCE(IS_ENABLED(CONFIG_RCU_EQS_DEBUG) && !raw_irqs_disabled());
	oldval = ct_nesting();
	WARN_ON_ONCE(IS_ENABLED(CONFIG_RCU_EQS_DEBUG) && oldval < 0);
	if (oldval) {
		/* Already watched: only the nesting changes. */
		ct->nesting++;
		return;
	}
	rcu_task_enter();
	ct_kernel_enter_state(offset);
	instrumentation_begin();

	/* the instrumentation the noinstr ct_kernel_enter_state() cannot carry */
	instrument_atomic_write(&ct->state, sizeof(ct->state));

	trace_rcu_watching(TPS("Start"), ct_nesting(), 1, ct_rcu_watching());
	/* userspace: no tasks, so no idle task to check for */
	(void)user;
	WRITE_ONCE(ct->nesting, 1);
	WARN_ON_ONCE(ct_nmi_nesting());
	WRITE_ONCE(ct->nmi_nesting, CT_NESTING_IRQ_NONIDLE);
	instrumentation_end();
}

/* Port of ct_nmi_exit(), kernel/context_tracking.c, v7.3 */
noinstr void ct_nmi_exit(void)
{
	struct context_tracking *ct = this_cpu_ptr(&context_tracking);

	instrumentation_begin();
	WARN_ON_ONCE(ct_nmi_nesting() <= 0);
	WARN_ON_ONCE(!rcu_is_watching_curr_cpu());

	/* Not the outermost interrupt of an EQS: stay watched. */
	if (ct_nmi_nesting() != 1) {
		trace_rcu_watching(TPS("--="), ct_nmi_nesting(), ct_nmi_nesting() - 2,
				   ct_rcu_watching());
		WRITE_ONCE(ct->nmi_nesting,
			   ct_nmi_nesting() - 2);
		instrumentation_end();
		return;
	}

	/* The outermost interrupt of an EQS returns: back to it. */
	trace_rcu_watching(TPS("Endirq"), ct_nmi_nesting(), 0, ct_rcu_watching());
	WRITE_ONCE(ct->nmi_nesting, 0);

	/* the instrumentation the noinstr ct_kernel_exit_state() cannot carry */
	instrument_atomic_write(&ct->state, sizeof(ct->state));
	instrumentation_end();

	ct_kernel_exit_state(CT_RCU_WATCHING);

	if (!in_nmi())
		rcu_task_exit();
}

/* Port of ct_nmi_enter(), kernel/context_tracking.c, v7.3 */
noinstr void ct_nmi_enter(void)
{
	long incby = 2;
	struct context_tracking *ct = this_cpu_ptr(&context_tracking);

	WARN_ON_ONCE(ct_nmi_nesting() < 0);

	/*
	 * From an EQS: become watched (counter only, the state field stays)
	 * and count 1, so that an nmi_nesting of 1 means "outermost, from an
	 * EQS"; otherwise count 2.
	 */
	if (!rcu_is_watching_curr_cpu()) {

		if (!in_nmi())
			rcu_task_enter();

		ct_kernel_enter_state(CT_RCU_WATCHING);

		instrumentation_begin();
		/* the noinstr reads and writes of the state word, for KCSAN/KASAN */
		instrument_atomic_read(&ct->state, sizeof(ct->state));
		instrument_atomic_write(&ct->state, sizeof(ct->state));

		incby = 1;
	} else if (!in_nmi()) {
		instrumentation_begin();
		/* userspace: no tick for RCU to restart (rcu_irq_enter_check_tick()) */
	} else  {
		instrumentation_begin();
	}

	trace_rcu_watching(incby == 1 ? TPS("Startirq") : TPS("++="),
			   ct_nmi_nesting(),
			   ct_nmi_nesting() + incby, ct_rcu_watching());
	instrumentation_end();
	WRITE_ONCE(ct->nmi_nesting,
		   ct_nmi_nesting() + incby);
	barrier();
}

/* Port of ct_idle_enter(), kernel/context_tracking.c, v7.3 */
noinstr void ct_idle_enter(void)
{
	WARN_ON_ONCE(IS_ENABLED(CONFIG_RCU_EQS_DEBUG) && !raw_irqs_disabled());
	ct_kernel_exit(false, CT_RCU_WATCHING + CT_STATE_IDLE);
}

/* Port of ct_idle_exit(), kernel/context_tracking.c, v7.3 */
noinstr void ct_idle_exit(void)
{
	unsigned long flags;

	raw_local_irq_save(flags);
	ct_kernel_enter(false, CT_RCU_WATCHING - CT_STATE_IDLE);
	raw_local_irq_restore(flags);
}

/* Port of ct_irq_enter(), kernel/context_tracking.c, v7.3 */
noinstr void ct_irq_enter(void)
{
	lockdep_assert_irqs_disabled();
	ct_nmi_enter();
}

/* Port of ct_irq_exit(), kernel/context_tracking.c, v7.3 */
noinstr void ct_irq_exit(void)
{
	lockdep_assert_irqs_disabled();
	ct_nmi_exit();
}

/* Port of context_tracking_recursion_enter(), kernel/context_tracking.c, v7.3 */
static __always_inline bool context_tracking_recursion_enter(void)
{
	int recursion;

	recursion = __atomic_add_fetch(&ct_this()->recursion, 1, __ATOMIC_RELAXED);
	if (recursion == 1)
		return true;

	WARN_ON_ONCE(recursion < 1);
	__atomic_sub_fetch(&ct_this()->recursion, 1, __ATOMIC_RELAXED);
	return false;
}

/* Port of context_tracking_recursion_exit(), kernel/context_tracking.c, v7.3 */
static __always_inline void context_tracking_recursion_exit(void)
{
	__atomic_sub_fetch(&ct_this()->recursion, 1, __ATOMIC_RELAXED);
}

/* Port of __ct_user_enter(), kernel/context_tracking.c, v7.3 */
noinstr void __ct_user_enter(enum ctx_state state)
{
	struct context_tracking *ct = this_cpu_ptr(&context_tracking);
	lockdep_assert_irqs_disabled();

	/* userspace: no tasks, so no kernel thread without an mm to warn about */

	if (!context_tracking_recursion_enter())
		return;

	if (__ct_state() != state) {
		if (ct->active) {
			if (state == CT_STATE_USER) {
				instrumentation_begin();
				trace_user_enter(0);
				/* userspace: no vtime_user_enter() (no VIRT_CPU_ACCOUNTING_GEN) */

				instrumentation_end();
			}
			/* generic entry reschedules on its own: rcu_irq_work_resched() is empty */
			rcu_irq_work_resched();

			/* RCU stops watching: the CPU leaves for user space. */
			ct_kernel_exit(true, CT_RCU_WATCHING + state);

			/* user <-> kernel tracking for vtime alone: not pokelab's configuration */
			if (!IS_ENABLED(CONFIG_CONTEXT_TRACKING_IDLE))
				raw_atomic_set(&ct->state, state);
		} else {
			/*
			 * Not isolated: keep the state for accounting, but RCU
			 * keeps watching. A plain add is enough: only the
			 * watching counter needs full ordering.
			 */
			if (!IS_ENABLED(CONFIG_CONTEXT_TRACKING_IDLE)) {
				raw_atomic_set(&ct->state, state);
			} else {
				raw_atomic_add(state, &ct->state);
			}
		}
	}
	context_tracking_recursion_exit();
}

/* Port of __ct_user_exit(), kernel/context_tracking.c, v7.3 */
noinstr void __ct_user_exit(enum ctx_state state)
{
	struct context_tracking *ct = this_cpu_ptr(&context_tracking);

	if (!context_tracking_recursion_enter())
		return;

	if (__ct_state() == state) {
		if (ct->active) {
			/* Back in the kernel: RCU watches again, deferred work runs. */
			ct_kernel_enter(true, CT_RCU_WATCHING - state);
			if (state == CT_STATE_USER) {
				instrumentation_begin();
				/* userspace: no vtime_user_exit() (no VIRT_CPU_ACCOUNTING_GEN) */

				trace_user_exit(0);
				instrumentation_end();
			}

			if (!IS_ENABLED(CONFIG_CONTEXT_TRACKING_IDLE))
				raw_atomic_set(&ct->state, CT_STATE_KERNEL);

		} else {
			if (!IS_ENABLED(CONFIG_CONTEXT_TRACKING_IDLE)) {
				raw_atomic_set(&ct->state, CT_STATE_KERNEL);
			} else {
				raw_atomic_sub(state, &ct->state);
			}
		}
	}
	context_tracking_recursion_exit();
}

/* Port of ct_user_enter(), kernel/context_tracking.c, v7.3 */
void ct_user_enter(enum ctx_state state)
{
	unsigned long flags;

	/*
	 * An exception taken inside an IRQ would nest a user transition in the
	 * IRQ's own (ct_irq_enter() ... ct_irq_exit()) and break its nesting
	 * count; the IRQ already keeps RCU watching. Nothing to do there.
	 */
	if (in_interrupt())
		return;

	local_irq_save(flags);
	__ct_user_enter(state);
	local_irq_restore(flags);
}

/* Port of ct_user_exit(), kernel/context_tracking.c, v7.3 */
void ct_user_exit(enum ctx_state state)
{
	unsigned long flags;

	if (in_interrupt())
		return;

	local_irq_save(flags);
	__ct_user_exit(state);
	local_irq_restore(flags);
}

/*
 * Port of ct_set_cpu_work(), kernel/context_tracking.c, deferral series v7
 * 24/31 by default; v5's form under pokelab.ct_defer=v5; under v8, a
 * reconstruction (v8: pokelab's reconstruction of an RFC, not posted code).
 */
bool ct_set_cpu_work(unsigned int cpu, enum ct_work work)
{
	struct context_tracking *ct = per_cpu_ptr(&context_tracking, cpu);
	int old;
	bool ret = false;

	if (!ct->active)
		return false;

	/* userspace: the policy switch; off = mainline, never defer */
	if (ct_defer_policy == CT_DEFER_OFF)
		return false;

	/*
	 * userspace: pokelab-catchup (pokelab's own) keeps no work bits: every entry from an
	 * EQS serialises, so a CPU seen outside the kernel needs no IPI.
	 */
	if (ct_defer_policy == CT_DEFER_CATCHUP)
		return !(atomic_read(&ct->state) & CT_RCU_WATCHING);

	/*
	 * userspace: v8: pokelab's reconstruction of an RFC, not posted code,
	 * after v8 09/10's description (its diff was not read): no work bits.
	 * The smp_mb() is pokelab's. A CPU running with the user CR3 takes
	 * the kPTI CR3 write, which serialises, before any mutable kernel text:
	 *
	 *	patcher				CPU (entry)
	 *	write text			kernel_cr3_loaded = 1
	 *	smp_mb()			smp_mb()
	 *	read kernel_cr3_loaded: 0	CR3 write (serialises): sees the text
	 */
	if (ct_defer_policy == CT_DEFER_V8) {
		torture_delay(kshim::TortureDelay::FlusherBeforeRead);	/* userspace: delay point */
		/* pairs with the smp_mb() in switch_to_kernel_cr3() */
		smp_mb();
		/* userspace: the checker's store→load rule, the text written before this load */
		kshim::xmcFenceCheck(kshim::FENCE_PAIR_TEXT_WRITE);
		return !READ_ONCE(*per_cpu_ptr(&kernel_cr3_loaded, cpu));
	}

	/* userspace: preempt_disable() has nothing to pin on a CPU thread */
	torture_delay(kshim::TortureDelay::FlusherBeforeRead);	/* userspace: delay point */
	old = atomic_read(&ct->state);

	/*
	 * The work may only be stored while the target is not in the kernel,
	 * and CT_RCU_WATCHING tells that for task, IRQ and NMI context alike.
	 * v7 bets on "not watching": if the target is in the kernel the
	 * cmpxchg fails and the loop stops on the watching bit it reloaded.
	 * v5 bet on "watching", so for a target in the kernel with a stable
	 * word the first cmpxchg succeeded and the work was dropped at its
	 * next exit:
	 *
	 *	CPU0 (v5 ct_set_cpu_work)	CPU1 (in the kernel, past its flush)
	 *	old = state | WATCHING
	 *	cmpxchg succeeds, no IPI
	 *					exit: work bits cleared, never run
	 */
	if (ct_defer_policy == CT_DEFER_V5)
		old |= CT_RCU_WATCHING;
	else
		old &= ~CT_RCU_WATCHING;

	/* userspace: lets a test change the target's state inside the window */
	if (pokelab::ctSetCpuWorkRaceHook)
		pokelab::ctSetCpuWorkRaceHook(cpu);
	/* userspace: torture delay injection, between the read and the decision */
	torture_delay(kshim::TortureDelay::CtReadDecision);

	/* Retry while the target still shows "not watching". */
	do {
		ret = atomic_try_cmpxchg(&ct->state, &old, old | (work << CT_WORK_START));
	} while (!ret && !(old & CT_RCU_WATCHING));

	return ret;
}

const char *ct_defer_policy_name(enum ct_defer_policy p)
{
	switch (p) {
	case CT_DEFER_OFF:
		return "off";
	case CT_DEFER_V7:
		return "v7";
	case CT_DEFER_V5:
		return "v5";
	case CT_DEFER_CATCHUP:
		return "pokelab-catchup";
	case CT_DEFER_V7_TLBI:
		return "v7-tlbi";
	case CT_DEFER_V8:
		return "v8";
	}
	return "?";
}

namespace pokelab {
unsigned long ctWorkFlushed(int cpu) noexcept
{
	return __atomic_load_n(per_cpu_ptr(&ct_work_flushed, cpu), __ATOMIC_RELAXED);
}

unsigned long ctWorkFlushNs(int cpu, unsigned long *maxNs) noexcept
{
	if (maxNs)
		*maxNs = __atomic_load_n(per_cpu_ptr(&ct_work_flush_max_ns, cpu), __ATOMIC_RELAXED);
	return __atomic_load_n(per_cpu_ptr(&ct_work_flush_ns, cpu), __ATOMIC_RELAXED);
}
} /* namespace pokelab */

namespace {

bool policyGiven;
enum ct_defer_policy policyParam;
bool tortureParam;

int setCtDefer(const char *val, std::string &err)
{
	static const struct {
		const char *name;
		enum ct_defer_policy p;
	} names[] = {
		{"off", CT_DEFER_OFF},
		{"v7", CT_DEFER_V7},
		{"v5", CT_DEFER_V5},
		{"pokelab-catchup", CT_DEFER_CATCHUP},
		{"v7-tlbi", CT_DEFER_V7_TLBI},
		{"v8", CT_DEFER_V8},
	};

	for (const auto &n : names) {
		if (val && !strcmp(val, n.name)) {
			policyParam = n.p;
			policyGiven = true;
			return 0;
		}
	}
	err = std::string("pokelab.ct_defer=") + (val ? val : "") +
	      ": expected pokelab.ct_defer=off, v7, v7-tlbi, v8, v5 or pokelab-catchup";
	return -EINVAL;
}

int setCtTorture(const char *val, std::string &err)
{
	if (!val || !strcmp(val, "1")) {
		tortureParam = true;
		return 0;
	}
	if (!strcmp(val, "0")) {
		tortureParam = false;
		return 0;
	}
	err = std::string("pokelab.ct_torture=") + val + ": expected pokelab.ct_torture=0 or 1";
	return -EINVAL;
}

kshim::BootParamRegistrar ctDeferParam({
	"pokelab.ct_defer", setCtDefer,
	[] {
		policyGiven = false;
		policyParam = CT_DEFER_OFF;
	},
	"pokelab.ct_defer=off|v7|v7-tlbi|v8|v5|pokelab-catchup",
});

kshim::BootParamRegistrar ctTortureParam({
	"pokelab.ct_torture", setCtTorture, [] { tortureParam = false; },
	"pokelab.ct_torture[=0|1]: 2-bit RCU watching counter",
});

/*
 * userspace: for the cross-modifying-code model, does @cpu have a deferred
 * sync that its next entry runs before any instrumentable code? A work bit
 * (v7, v5), or pokelab-catchup's unconditional serialisation at every entry.
 */
bool ctDeferredSyncPending(int cpu)
{
	struct context_tracking *ct = per_cpu_ptr(&context_tracking, cpu);
	int state = atomic_read(&ct->state);

	if (ct_defer_policy == CT_DEFER_CATCHUP)
		return ct->active;
	/*
	 * v8 (pokelab's reconstruction of an RFC, not posted code): a CPU in
	 * user mode serialises in its entry's CR3 switch before
	 * anything else; that holds from before kernel_cr3_loaded goes 0 at
	 * exit to after the serialisation at entry (in_user_mode brackets
	 * both), so a CPU the model sees in user mode is exempt even while
	 * it is between its store of 1 and its serialisation.
	 */
	if (ct_defer_policy == CT_DEFER_V8)
		return ct->active && pokelab::ctCpuInUserMode(cpu);
	return state & (CT_WORK_SYNC << CT_WORK_START);
}

/* userspace: for the model's reports, @cpu's state word, read once */
int ctStateWord(int cpu)
{
	return atomic_read(&per_cpu_ptr(&context_tracking, cpu)->state);
}

/* userspace: for the model's reports, a state word in words */
std::string ctStateWordDescribe(int state)
{
	static const char *const names[] = {"kernel", "idle", "user", "guest"};
	int work = (state & CT_WORK_MASK) >> CT_WORK_START;

	return std::string(names[(state & CT_STATE_MASK) >> CT_STATE_START]) +
	       (state & CT_RCU_WATCHING ? ", RCU watching" : ", RCU not watching") +
	       (work & CT_WORK_SYNC ? ", work SYNC pending" : ", no work pending");
}

/*
 * userspace: what each policy defers, for the model's rule on waited
 * cross-calls: the sync (CT_WORK_SYNC, or v8's and pokelab-catchup's
 * serialisation at entry) stands for do_sync_core(); v7 28-31's coalesced
 * kernel TLB flushes (v7-tlbi, v8) for the flush functions.
 */
const char *const ctDefersSync[] = {"do_sync_core", nullptr};
const char *const ctDefersSyncTlb[] = {"do_sync_core", "do_flush_tlb_all", "do_kernel_range_flush",
				       nullptr};

/* Port of ct_cpu_track_user() + context_tracking_init(): nohz_full CPUs are active. */
int contextTrackingInit(std::string &err)
{
	const struct cpumask *nohz = kshim::nohzFullMask();

	ct_rcu_watching_width = tortureParam ? 2 : 32 - CT_RCU_WATCHING_START;
	ct_defer_policy = policyGiven ? policyParam
				      : (cpumask_empty(nohz) ? CT_DEFER_OFF : CT_DEFER_V7);

	for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++) {
		struct context_tracking *ct = per_cpu_ptr(&context_tracking, cpu);

		ct->active = cpumask_test_cpu(cpu, nohz);
		ct->recursion = 0;
		/* Every CPU starts in the kernel, watched. */
		atomic_set(&ct->state, CT_RCU_WATCHING);
		ct->nesting = 1;
		ct->nmi_nesting = CT_NESTING_IRQ_NONIDLE;
		*per_cpu_ptr(&ct_work_flushed, cpu) = 0;
		*per_cpu_ptr(&ct_work_flush_ns, cpu) = 0;
		*per_cpu_ptr(&ct_work_flush_max_ns, cpu) = 0;
	}
	if (ct_defer_policy == CT_DEFER_V8)
		kshim::setMachineAttr("ct_defer", "v8 (" CT_DEFER_V8_LABEL ")");
	else if (!cpumask_empty(nohz) || policyGiven)
		kshim::setMachineAttr("ct_defer", ct_defer_policy_name(ct_defer_policy));
	kshim::xmcSetSyncPending(ctDeferredSyncPending);
	kshim::xmcSetCtState(ctStateWord, ctStateWordDescribe);
	kshim::xmcSetDeferral(ct_defer_policy_name(ct_defer_policy),
			      ct_defer_policy == CT_DEFER_OFF ? nullptr
			      : ct_defer_policy == CT_DEFER_V7_TLBI || ct_defer_policy == CT_DEFER_V8
				      ? ctDefersSyncTlb : ctDefersSync);
	/* v7 28-31 (CONFIG_COALESCE_TLBI): kernel TLB flushes skip CPUs in user mode */
	kshim::tlbSetCoalesce(ct_defer_policy == CT_DEFER_V7_TLBI || ct_defer_policy == CT_DEFER_V8);
	return pokelab::ctEntrySetCr3Mode(kshim::tlbCoalesce(), ct_defer_policy == CT_DEFER_V8, err);
}

kshim::BootHookRegistrar ctInitHook({"context_tracking_init", kshim::BootStage::Early,
				     contextTrackingInit});

} /* namespace */
