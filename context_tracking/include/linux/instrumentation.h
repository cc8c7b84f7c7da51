/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * instrumentation_begin()/instrumentation_end(): where noinstr code lets
 * instrumentable code run.
 *
 * PORT: written fresh after include/linux/instrumentation.h. In the kernel
 * they are annotations for objtool; in pokelab instrumentation_begin() is
 * also where the cross-modifying-code model takes a CPU that left an
 * extended quiescent state back as one that fetches instrumentable text,
 * and checks that it serialised since the last operation returned
 * (kernel_shim/xmc.h). Inline; async-signal-safe.
 */
#pragma once

#include <linux/compiler.h>
#include <kernel_shim/xmc.h>

#define instrumentation_begin()                                                  \
	do {                                                                     \
		__instrumentation_marker("__instr_begin");                      \
		kshim::xmcInstrumentationBegin(_THIS_IP_);                       \
	} while (0)
#define instrumentation_end() __instrumentation_marker("__instr_end")
