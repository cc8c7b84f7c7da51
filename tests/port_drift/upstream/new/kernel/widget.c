// SPDX-License-Identifier: GPL-2.0-only
/*
 * A made-up upstream file for tools/port-drift's test (tests/port_drift/):
 * "9.1" of the widget code. Not kernel code.
 */
#include <linux/widget.h>

static DEFINE_MUTEX(widget_lock);

int widget_count(struct widget *w)
{
	return atomic_read(&w->refs);
}

/* storage words, a return type on its own line, the brace on its own line */
static void __init_or_module noinline
widget_reset(struct widget *w,
	     int flags)
{
	if (!w)
		return;
	w->state = WIDGET_IDLE;		/* upstream's own comment */
	w->flags = flags;
}

void widget_poke(struct widget *w, const u8 *new, size_t len)
{
	mutex_lock(&widget_lock);
	memcpy(w->buf, new, len);
	perf_widget_event(w, new, len);
	w->gen++;
	if (w->flags & WIDGET_SYNC)
		widget_sync(w);
	mutex_unlock(&widget_lock);
}

/* 9.1 also checks ->busy */
noinstr bool widget_ready(struct widget *w)
{
	return READ_ONCE(w->state) == WIDGET_READY && !w->busy;
}

void widget_drain(struct widget *w)
{
	w->draining = true;
	widget_flush(w);
	w->pending = 0;
}

#ifdef CONFIG_WIDGET_BATCH
static void widget_flush(struct widget *w)
{
	widget_queue_apply(w);
}
#else
static void widget_flush(struct widget *w) { }
#endif

struct widget *widget_find(int id)
{
	if (id < 0 || id >= NR_WIDGETS)
		return NULL;
	return widget_table[id];
}

void widget_lock_all(void)
{
	mutex_lock(&widget_lock);
}

void widget_unlock_all(void)
{
	mutex_unlock(&widget_lock);
}

void widget_put(struct widget *w)
{
	WIDGET_CHECK(w);
	atomic_dec(&w->refs);
}

void widget_kick(struct widget *w)
{
	if (w->flags & WIDGET_KICK)
		widget_sync(w);
}

void widget_wake(struct widget *w)
{
	widget_sync(w);
}

#define WIDGET_CHECK(w)	WARN_ON(!(w)->refs)

void widget_map(struct widget *w)
{
	w->base = alloc_pages(w->order);
	if (!w->base)
		return;
	set_memory_ro(w->base, 1 << w->order);
	flush_tlb_all();
	w->mapped = true;
}
