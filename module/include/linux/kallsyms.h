/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kernel_text_address(): the program's text or a module's.
 *
 * PORT: written fresh after kernel/extable.c's kernel_text_address(), v6.16
 * (no BPF or ftrace trampolines to check). Any context.
 */
#pragma once

#include <asm/sections.h>
#include <linux/module.h>

static inline bool kernel_text_address(unsigned long addr)
{
	return core_kernel_text(addr) || is_module_text_address(addr);
}
