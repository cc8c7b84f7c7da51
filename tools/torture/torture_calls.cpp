// SPDX-License-Identifier: GPL-2.0-only
/*
 * The program's own inline static-call sites, for torture: a call and a
 * tail call of each of torture's three static calls (a plain one, a NULL
 * one and a RET0 one). Built as an object of its own so that
 * pokelab-objtool records its sites in static_call_sites (tools/meson.build),
 * as objtool does for the kernel's objects; static_call_init() makes them
 * direct at boot and every update rewrites them through a batch: CALL and
 * JMP to the function, NOP5 and RET for NULL, the "xor %eax,%eax" form and
 * (tail) RET0's for __static_call_return0. The keys and trampolines are in
 * torture_text.cpp.
 */
#include <linux/static_call.h>

extern "C" unsigned long torture_call_a(unsigned long x);
DECLARE_STATIC_CALL(torture_call, torture_call_a);
extern "C" void torture_cond_hook(unsigned long *x);
DECLARE_STATIC_CALL(torture_cond_call, torture_cond_hook);
extern "C" long torture_ret0_fn(long x);
DECLARE_STATIC_CALL(torture_ret0_call, torture_ret0_fn);

/* CALL __SCT__torture_call */
extern "C" __attribute__((noinline)) unsigned long torture_call_inline(unsigned long x)
{
	return static_call(torture_call)(x) + 100;
}

/* JMP __SCT__torture_call: a tail call */
extern "C" __attribute__((noinline)) unsigned long torture_call_tail(unsigned long x)
{
	return static_call(torture_call)(x);
}

/* CALL __SCT__torture_cond_call: a NOP5 while it is NULL */
extern "C" __attribute__((noinline)) unsigned long torture_cond_inline(unsigned long x)
{
	unsigned long v = x;

	static_call_cond(torture_cond_call)(&v);
	return v + 1;
}

/* JMP __SCT__torture_cond_call: a RET while it is NULL */
extern "C" __attribute__((noinline)) void torture_cond_tail(unsigned long *x)
{
	static_call_cond(torture_cond_call)(x);
}

/* CALL __SCT__torture_ret0_call: "xor %eax,%eax" while at __static_call_return0 */
extern "C" __attribute__((noinline)) long torture_ret0_inline(long x)
{
	return static_call(torture_ret0_call)(x) + 1;
}

/* JMP __SCT__torture_ret0_call */
extern "C" __attribute__((noinline)) long torture_ret0_tail(long x)
{
	return static_call(torture_ret0_call)(x);
}
