/* SPDX-License-Identifier: GPL-2.0-only */
/* The port side of tools/port-drift's test: a header. */
#pragma once

/* Port of widget_busy(), include/linux/widget.h, v9.1 */
static __always_inline bool widget_busy(const struct widget *w)
{
	return w->busy != 0;
}
