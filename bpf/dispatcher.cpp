// SPDX-License-Identifier: GPL-2.0-only
/*
 * The BPF dispatcher: a multiway branch code generator. A client registers
 * a program; the dispatcher regenerates a direct-branch search over the
 * registered programs' entries into the idle half of its image and points
 * its static call at it, so that the programs are called directly, not
 * through an indirect (retpolined) call.
 *
 * PORT: written fresh after kernel/bpf/dispatcher.c, v7.3 (see linux/bpf.h).
 */
#include <kernel_shim/busted.h>
#include <kernel_shim/xmc.h>
#include <linux/bpf.h>
#include <linux/rcupdate.h>

namespace {

constexpr unsigned int PAGE_SIZE = 4096;

/* bpf_prog_inc() / bpf_prog_put(): userspace, a count under the dispatcher's mutex */
void bpf_prog_inc(struct bpf_prog *prog)
{
	__atomic_add_fetch(&prog->refcnt, 1, __ATOMIC_RELAXED);
}

void bpf_prog_put(struct bpf_prog *prog)
{
	__atomic_sub_fetch(&prog->refcnt, 1, __ATOMIC_RELAXED);
}

/* Port of bpf_dispatcher_find_prog(), kernel/bpf/dispatcher.c (v7.3) */
struct bpf_dispatcher_prog *bpf_dispatcher_find_prog(struct bpf_dispatcher *d,
						      struct bpf_prog *prog)
{
	int i;

	for (i = 0; i < BPF_DISPATCHER_MAX; i++) {
		if (prog == d->progs[i].prog)
			return &d->progs[i];
	}
	return NULL;
}

/* Port of bpf_dispatcher_find_free(), kernel/bpf/dispatcher.c (v7.3) */
struct bpf_dispatcher_prog *bpf_dispatcher_find_free(struct bpf_dispatcher *d)
{
	return bpf_dispatcher_find_prog(d, NULL);
}

/* Port of bpf_dispatcher_add_prog(), kernel/bpf/dispatcher.c (v7.3) */
bool bpf_dispatcher_add_prog(struct bpf_dispatcher *d, struct bpf_prog *prog)
{
	struct bpf_dispatcher_prog *entry;

	if (!prog)
		return false;

	entry = bpf_dispatcher_find_prog(d, prog);
	if (entry) {
		entry->users++;
		return false;
	}

	entry = bpf_dispatcher_find_free(d);
	if (!entry)
		return false;

	bpf_prog_inc(prog);
	entry->prog = prog;
	entry->users = 1;
	d->num_progs++;
	return true;
}

/* Port of bpf_dispatcher_remove_prog(), kernel/bpf/dispatcher.c (v7.3) */
bool bpf_dispatcher_remove_prog(struct bpf_dispatcher *d, struct bpf_prog *prog)
{
	struct bpf_dispatcher_prog *entry;

	if (!prog)
		return false;

	entry = bpf_dispatcher_find_prog(d, prog);
	if (!entry)
		return false;

	if (--entry->users == 0) {
		entry->prog = NULL;
		bpf_prog_put(prog);
		d->num_progs--;
		return true;
	}
	return false;
}

/* Port of bpf_dispatcher_prepare(), kernel/bpf/dispatcher.c (v7.3) */
int bpf_dispatcher_prepare(struct bpf_dispatcher *d, void *image, void *buf)
{
	s64 ips[BPF_DISPATCHER_MAX] = {}, *ipsp = &ips[0];
	int i;

	for (i = 0; i < BPF_DISPATCHER_MAX; i++) {
		if (d->progs[i].prog)
			*ipsp++ = (s64)(uintptr_t)d->progs[i].prog->bpf_func;
	}
	return arch_prepare_bpf_dispatcher(image, buf, &ips[0], d->num_progs);
}

/* Port of bpf_dispatcher_update(), kernel/bpf/dispatcher.c (v7.3) */
void bpf_dispatcher_update(struct bpf_dispatcher *d, int prev_num_progs)
{
	void *new_, *tmp;
	u32 noff = 0;

	/* userspace: each half is entered only through the static call (said again after a boot) */
	kshim::xmcTextGate(d->sc_key, d->image, PAGE_SIZE / 2);
	kshim::xmcTextGate(d->sc_key, (char *)d->image + PAGE_SIZE / 2, PAGE_SIZE / 2);

	if (prev_num_progs)
		noff = d->image_off ^ (PAGE_SIZE / 2);
	if (BUSTED(DISPATCHER_LIVE_HALF))	/* BUSTED: the half callers are running */
		noff = d->image_off;

	new_ = d->num_progs ? (char *)d->image + noff : NULL;
	tmp = d->num_progs ? (char *)d->rw_image + noff : NULL;
	if (new_) {
		/*
		 * Prepare the dispatcher in d->rw_image. Then use
		 * bpf_arch_text_copy to update d->image, which is RO+X.
		 */
		if (bpf_dispatcher_prepare(d, new_, tmp))
			return;
		if (!bpf_arch_text_copy(new_, tmp, PAGE_SIZE / 2))
			return;
	}

	/* __BPF_DISPATCHER_UPDATE() */
	__static_call_update(d->sc_key, d->sc_tramp,
			     new_ ? new_ : (void *)&bpf_dispatcher_nop_func);

	/*
	 * Make sure all the callers executing the previous/old half of the
	 * image leave it, so following update call can modify it safely.
	 */
	synchronize_rcu();

	if (new_)
		d->image_off = noff;
}

} /* namespace */

/* Port of bpf_dispatcher_nop_func(), include/linux/bpf.h (v7.3) */
extern "C" unsigned int bpf_dispatcher_nop_func(const void *ctx, const struct bpf_insn *insnsi,
						bpf_func_t bpf_func)
{
	return bpf_func(ctx, insnsi);
}

/* Port of bpf_dispatcher_change_prog(), kernel/bpf/dispatcher.c (v7.3) */
void bpf_dispatcher_change_prog(struct bpf_dispatcher *d, struct bpf_prog *from,
				struct bpf_prog *to)
{
	bool changed = false;
	int prev_num_progs;

	if (from == to)
		return;

	mutex_lock(&d->mutex);
	if (!d->image) {
		d->image = bpf_prog_pack_alloc(PAGE_SIZE, bpf_jit_fill_hole_with_zero);
		if (!d->image)
			goto out;
		d->rw_image = bpf_jit_alloc_exec(PAGE_SIZE);
		if (!d->rw_image) {
			u32 size = PAGE_SIZE;

			bpf_arch_text_copy(d->image, &size, sizeof(size));
			bpf_prog_pack_free(d->image, PAGE_SIZE);
			d->image = NULL;
			goto out;
		}
		/* userspace: no bpf_image_ksym_add() */
	}

	prev_num_progs = d->num_progs;
	changed |= bpf_dispatcher_remove_prog(d, from);
	changed |= bpf_dispatcher_add_prog(d, to);

	if (!changed)
		goto out;

	bpf_dispatcher_update(d, prev_num_progs);
out:
	mutex_unlock(&d->mutex);
}
