/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Compiler attributes and the ONCE accessors.
 *
 * CUSTOM: include/linux/compiler*.h and asm-generic/rwonce.h, written for
 * GCC/C++20.
 *
 * READ_ONCE()/WRITE_ONCE() are relaxed atomic accesses of naturally aligned
 * scalars: they compile to a plain mov on x86-64, as in the kernel, and they
 * are data-race free in the C++ memory model. They are async-signal-safe.
 */
#pragma once

#include <linux/types.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((__always_inline__))
#endif
/*
 * userspace: spelled __noinline, not noinline: GoogleTest and libstdc++ write
 * __attribute__((noinline)), which a "noinline" macro would break.
 */
#define __noinline __attribute__((__noinline__))
#define __noreturn __attribute__((__noreturn__))
#define __maybe_unused __attribute__((__unused__))
#define __aligned(x) __attribute__((__aligned__(x)))
#define __packed __attribute__((__packed__))

/*
 * noinstr: code that must not be instrumented or patched while it runs (the
 * entry path up to the deferred-work flush). It goes to its own section,
 * bounded by __noinstr_text_start/__noinstr_text_end (asm/sections.h).
 * userspace: the section is "noinstr_text" (a C identifier, so GNU ld
 * provides __start_/__stop_ symbols without a linker script); the kernel's
 * is .noinstr.text. As the kernel's, noinstr code gets no tracing, no
 * sanitizer instrumentation and no stack protector, so that no call the
 * compiler adds leaves the section.
 */
#define noinstr                                                                  \
	__attribute__((__noinline__, __section__("noinstr_text"), __used__,        \
		       __no_instrument_function__, __no_sanitize_address__,         \
		       __no_sanitize_undefined__, __no_stack_protector__))

/*
 * The markers objtool reads (.discard.instr_begin/.discard.instr_end in the
 * kernel): a NOP whose address goes into __instr_begin/__instr_end, which
 * pokelab's noinstr check (kernel_shim/noinstr_check.h) reads at boot.
 * instrumentation_begin()/end() (linux/instrumentation.h) place them.
 */
#define __instrumentation_marker(sec)                                            \
	asm volatile("661: nop\n\t"                                                 \
		     ".pushsection " sec ", \"aw\"\n\t"                              \
		     ".quad 661b\n\t"                                                  \
		     ".popsection" ::: "memory")

/*
 * userspace: pokelab's own instrumentation inside noinstr code, which the
 * kernel does not have there: the reports of BUG()/WARN() (the kernel's
 * are a UD2 whose noinstr #UD handler opens an instrumentation region),
 * torture delay points, test hooks and the census's timing. The markers
 * alone, without instrumentation_begin()'s model hook: the CPU is not
 * taken out of its quiescent state by them.
 */
#define pokelab_instr_begin() __instrumentation_marker("__instr_begin")
#define pokelab_instr_end() __instrumentation_marker("__instr_end")

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* Compiler barrier: no memory access moves across it. */
#define barrier() __asm__ __volatile__("" : : : "memory")

#define READ_ONCE(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WRITE_ONCE(x, val) __atomic_store_n(&(x), (val), __ATOMIC_RELAXED)

/* The address the current function returns to (kernel: _RET_IP_). */
#define _RET_IP_ ((unsigned long)__builtin_return_address(0))
/* The address of the current statement (kernel: _THIS_IP_). */
#define _THIS_IP_ ({ __label__ __here; __here: (unsigned long)&&__here; })

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
