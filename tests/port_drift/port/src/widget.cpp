// SPDX-License-Identifier: GPL-2.0-only
/*
 * The port side of tools/port-drift's test (tests/port_drift/): one case
 * per function, each named in run.py with the verdicts it must get.
 */
#include "widget.h"

namespace fixture {

/* Port of widget_count(), kernel/widget.c, v9.1 */
int widget_count(struct widget *w)
{
	return atomic_read(&w->refs);	/* a plain comment is no marker */
}

/* Port of widget_reset(), kernel/widget.c */
static void widget_reset(struct widget *w, int flags)
{
	if (!w)
		return;

	w->state = WIDGET_IDLE;
	w->flags = flags;
}

/* Port of widget_poke(), kernel/widget.c, v9.1: new_buf is upstream's new */
void widget_poke(struct widget *w, const u8 *new_buf, size_t len)
{
	mutex_lock(&widget_lock);
	fixture_trace(w);	/* userspace: the test's hook */
	memcpy(w->buf, new_buf, len);
	/* userspace: no perf events to feed */

	w->gen++;
	/* userspace: always synchronous, so the whole if differs */
	if (fixture_sync) {
		widget_sync(w);
		widget_syncs++;
	}
	mutex_unlock(&widget_lock);
}

/* Port of widget_ready(), kernel/widget.c, v9.0 */
bool widget_ready(struct widget *w)
{
	return READ_ONCE(w->state) == WIDGET_READY;
}

/* Port of widget_drain(), kernel/widget.c, v9.1 */
void widget_drain(struct widget *w)
{
	fixture_trace(w);	/* userspace: the test's hook */
	w->draining = true;
	/* userspace: nothing to flush (a blank line follows: no statement marked) */

	w->pending = 1;
}

/* Port of widget_flush(), kernel/widget.c (CONFIG_WIDGET_BATCH) */
static void widget_flush(struct widget *w)
{
	widget_queue_apply(w);
}

/* Port of widget_find(), kernel/widget.c, v9.1 */
struct widget *fixtureFind(int id)
{
	if (id < 0 || id >= NR_WIDGETS)
		return nullptr;
	return widget_table[id];
}

/* Port of widget_legacy(), kernel/widget.c, v9.0 */
static void widget_legacy(struct widget *w)
{
	w->legacy = true;
}

/* Port of widget_lock_all() and widget_unlock_all(), kernel/widget.c */
void widget_lock_all(void)
{
	mutex_lock(&widget_lock);
}

void widget_unlock_all(void)
{
	/* userspace: the kernel's unlock, but counted */
	widget_unlocks++;
	mutex_unlock(&widget_lock);
}

/* Port of widget_put(), kernel/widget.c, v9.1: an unmarked omission */
void widget_put(struct widget *w)
{
	atomic_dec(&w->refs);
}

/* Port of widget_kick(), kernel/widget.c, v9.1 */
void widget_kick(struct widget *w)
{
	if (fixture_kick(w))	/* userspace: the test decides (this line only) */
		widget_sync_now(w);
}

/* Port of widget_wake(), kernel/widget.c, v9.1, with series v2 3/7's deferral */
void widget_wake(struct widget *w)
{
	/* series v2 3/7: skip a sleeping widget */
	if (widget_can_defer(w))
		return;
	widget_sync(w);
}

/* Port of widget_defer(), kernel/widget.c, series v2 3/7 */
bool widget_defer(struct widget *w)
{
	return !w->awake;
}

/* Port of widget_old_lock(), kernel/widget.c, v8.2 */
void widget_old_lock(void)
{
	mutex_lock(&widget_lock);
}

/* Port of widget_map(), kernel/widget.c, v9.1: one marked hunk stands for most of it */
void widget_map(struct widget *w)
{
	/* userspace: one anonymous mapping stands for the pages and their protection */
	w->base = mmap_widget(w);
	w->mapped = true;
}

/* Port of the widget table's locking rules, kernel/widget.c */
static std::mutex table_lock;

} /* namespace fixture */

/* Port of WIDGET_CHECK(), kernel/widget.c */
#define WIDGET_CHECK(w)	WARN_ON(!(w)->refs)
