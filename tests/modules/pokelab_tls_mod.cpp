// SPDX-License-Identifier: GPL-2.0-only
/*
 * A module with a TLS access, as preempt_disable() or this_cpu_*() make in
 * pokelab (linux/preempt.h, linux/percpu.h: %fs, local-exec): an
 * R_X86_64_TPOFF32 relocation, which no module relocation resolves. The
 * loader must refuse it ("Unknown rela relocation: 23"), as the kernel
 * refuses a type it does not handle.
 */
static __thread int pokelab_tls_mod_count __attribute__((tls_model("local-exec")));

extern "C" int pokelab_tls_mod_init(void)
{
	return ++pokelab_tls_mod_count;
}
