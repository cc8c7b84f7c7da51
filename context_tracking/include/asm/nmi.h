/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * NMI handlers, as arch/x86/include/asm/nmi.h: register_nmi_handler()
 * adds a handler that exc_nmi() (context_tracking/nmi.cpp) runs on every
 * simulated NMI (kshim::nmiSelf(), kernel_shim/kernel/nmi.cpp), after the
 * paranoid entry and irqentry_nmi_enter(): in NMI context, interrupts off,
 * RCU watching, the kernel CR3 loaded.
 *
 * userspace: one type (NMI_LOCAL), a fixed table of NMI_MAX_HANDLERS (no
 * allocation: register and unregister are task-context calls made while
 * no NMI can run the table, at boot or with the CPUs stopped).
 */
#pragma once

#include <linux/types.h>

struct pt_regs;

enum {
	NMI_LOCAL = 0,
	NMI_HANDLED = 1,
	NMI_DONE = 0,
};

#define NMI_MAX_HANDLERS 4

typedef int (*nmi_handler_t)(unsigned int type, struct pt_regs *regs);

/*
 * Add @handler (@name for messages) to the NMI_LOCAL list. Returns 0, or
 * -EINVAL for another @type, -ENOSPC with the table full. @handler must be
 * async-signal-safe: no allocation, locks or stdio. Task context.
 */
int register_nmi_handler(unsigned int type, nmi_handler_t handler, unsigned long flags,
			 const char *name);
/* Remove the handler registered as @name. Task context, no NMI in flight. */
void unregister_nmi_handler(unsigned int type, const char *name);
