// SPDX-License-Identifier: GPL-2.0-only
/*
 * A made-up upstream file for tools/port-drift's test (tests/port_drift/):
 * "9.0" of the widget code, no Makefile (the directory name is the
 * version). Not kernel code.
 */
#include <linux/widget.h>

static DEFINE_MUTEX(widget_lock);

int widget_count(struct widget *w)
{
	return atomic_read(&w->refs);
}

static void __init_or_module noinline
widget_reset(struct widget *w, int flags)
{
	if (!w)
		return;
	w->state = WIDGET_IDLE;
	w->flags = flags;
}

noinstr bool widget_ready(struct widget *w)
{
	return READ_ONCE(w->state) == WIDGET_READY;
}

/* gone in 9.1 */
static void widget_legacy(struct widget *w)
{
	w->legacy = true;
}
