/* SPDX-License-Identifier: GPL-2.0-only */
/* Made-up upstream header for tools/port-drift's test. Not kernel code. */
#ifndef _LINUX_WIDGET_H
#define _LINUX_WIDGET_H

static __always_inline bool widget_busy(const struct widget *w)
{
	return w->busy != 0;
}

#endif
