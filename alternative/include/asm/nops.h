/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * x86-64 NOPs.
 *
 * PORT: written fresh after arch/x86/include/asm/nops.h, v6.16: the
 * "generic 64-bit" NOPs GAS emits, 1 to ASM_NOP_MAX (11) bytes.
 */
#pragma once

#include <linux/types.h>

#define ASM_NOP_MAX 11

/* x86_nops[n] is the n-byte NOP (n = 1..ASM_NOP_MAX). */
extern const unsigned char * const x86_nops[ASM_NOP_MAX + 1];

#define BYTES_NOP5 0x0f, 0x1f, 0x44, 0x00, 0x00
