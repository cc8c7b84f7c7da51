/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The BPF dispatcher: a multiway direct branch to the attached programs,
 * generated into one half of a page while callers run the other, and
 * switched to through a static call.
 *
 * PORT: written fresh after include/linux/bpf.h (struct bpf_dispatcher,
 * DEFINE_BPF_DISPATCHER, the static-call flavour), kernel/bpf/dispatcher.c
 * and arch/x86/net/bpf_jit_comp.c (arch_prepare_bpf_dispatcher()), v7.3.
 *
 *	DEFINE_BPF_DISPATCHER(xdp)	// bpf_dispatcher_xdp_func(), its static call
 *	bpf_dispatcher_change_prog(BPF_DISPATCHER_PTR(xdp), old, new);
 *	bpf_dispatcher_xdp_func(ctx, prog->insnsi, prog->bpf_func);
 *
 * An update writes the idle half with bpf_arch_text_copy() (no sync: no
 * caller can reach it), switches the static call to it (a text_poke batch,
 * which syncs every CPU), then synchronize_rcu() so that no caller is left
 * in the old half when the next update writes it. Callers run in an RCU
 * read-side section (XDP: softirq).
 *
 * Task context (the dispatcher's mutex, text_mutex, synchronize_rcu()).
 */
#pragma once

#include <linux/filter.h>
#include <linux/mutex.h>
#include <linux/static_call.h>

#define BPF_DISPATCHER_MAX 48

struct bpf_dispatcher_prog {
	struct bpf_prog *prog;
	int users;		/* userspace: an int under the dispatcher's mutex (refcount_t) */
};

struct bpf_dispatcher {
	struct mutex mutex;
	void *func;
	struct bpf_dispatcher_prog progs[BPF_DISPATCHER_MAX];
	int num_progs;
	void *image;		/* ROX, from a program pack: two halves */
	void *rw_image;		/* where a half is prepared */
	u32 image_off;		/* the live half */
	struct static_call_key *sc_key;
	void *sc_tramp;
};

/*
 * What the static call runs while no program is attached: the program
 * itself, indirectly. userspace: out of line with C linkage (the kernel's is
 * __always_inline), since the trampoline's asm names it.
 */
extern "C" unsigned int bpf_dispatcher_nop_func(const void *ctx, const struct bpf_insn *insnsi,
						bpf_func_t bpf_func);

#define BPF_DISPATCHER_FUNC(name) bpf_dispatcher_##name##_func
#define BPF_DISPATCHER_PTR(name) (&bpf_dispatcher_##name)

/*
 * The dispatcher function, its static call (bpf_dispatcher_<name>_call, at
 * bpf_dispatcher_nop_func) and its struct bpf_dispatcher. File scope.
 */
#define DEFINE_BPF_DISPATCHER(name)						\
	DEFINE_STATIC_CALL(bpf_dispatcher_##name##_call, bpf_dispatcher_nop_func);	\
	__attribute__((noinline)) unsigned int bpf_dispatcher_##name##_func(	\
		const void *ctx, const struct bpf_insn *insnsi, bpf_func_t bpf_func)	\
	{									\
		return static_call(bpf_dispatcher_##name##_call)(ctx, insnsi, bpf_func);	\
	}									\
	struct bpf_dispatcher bpf_dispatcher_##name = {				\
		.mutex = {},							\
		.func = (void *)&bpf_dispatcher_##name##_func,			\
		.progs = {},							\
		.num_progs = 0,							\
		.image = NULL,							\
		.rw_image = NULL,						\
		.image_off = 0,							\
		.sc_key = &STATIC_CALL_KEY(bpf_dispatcher_##name##_call),	\
		.sc_tramp = STATIC_CALL_TRAMP_ADDR(bpf_dispatcher_##name##_call),	\
	}

#define DECLARE_BPF_DISPATCHER(name)						\
	unsigned int bpf_dispatcher_##name##_func(const void *ctx,		\
						  const struct bpf_insn *insnsi,	\
						  bpf_func_t bpf_func);		\
	extern struct bpf_dispatcher bpf_dispatcher_##name

/*
 * Replace @from with @to among @d's programs (either may be NULL) and, if
 * that changed the set, regenerate the dispatcher into its idle half and
 * switch to it. Task context; sleeps (synchronize_rcu()).
 */
void bpf_dispatcher_change_prog(struct bpf_dispatcher *d, struct bpf_prog *from,
				struct bpf_prog *to);

/*
 * arch/x86/net/bpf_jit_comp.c: the binary search over @num_funcs program
 * entries @funcs into @buf, branches computed for where it will run,
 * @image. 0, or -1 (an entry out of a 32-bit immediate's or a branch's
 * reach). Any context; writes only @buf.
 */
int arch_prepare_bpf_dispatcher(void *image, void *buf, s64 *funcs, int num_funcs);
