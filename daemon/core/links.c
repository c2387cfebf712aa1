/* The plane link monitor: a plane NIC that goes down denies that plane's
 * paths for every peer, and probing starts when it comes back
 * (daemon/core/node.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/node.h"
#include "srv6/linkmon.h"

static void on_link(const struct mrc_linkmon_event *le, void *arg)
{
	struct mrcd *d = arg;
	for (uint32_t pl = 0; pl < d->nplanes; pl++) {
		if (strcmp(le->name, d->plane_if[pl]))
			continue;
		int down = le->deleted || !mrc_linkmon_event_usable(le);
		uint32_t bit = 1u << pl;
		if (!!(d->local_down & bit) == down)
			return;
		d->local_down ^= bit;
		mrcd_note(d, "plane", "plane %u NIC %s %s", pl, le->name,
			  down ? "down: its paths are denied" : "up: probing its paths");
		uint64_t now = mrcd_now();
		for (uint32_t p = 0; p < d->max_peers; p++)
			if (d->peers[p].used)
				mrcd_plane_apply(d, p, pl, now);
		mrcd_plane_state_changed(d);
		mrcd_flush(d);
		return;
	}
}

static void on_lm(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	struct mrcd *d = w->data;
	mrc_linkmon_dispatch(d->lm);
}

int mrcd_linkmon_start(struct mrcd *d)
{
	if (!d->topo)
		return 0;
	int rc = mrc_linkmon_open(&d->lm, true, on_link, d);
	if (rc)
		return rc;
	ev_io_init(&d->lm_w, on_lm, mrc_linkmon_fd(d->lm), EV_READ);
	d->lm_w.data = d;
	ev_io_start(d->loop, &d->lm_w);
	mrc_linkmon_dispatch(d->lm);
	return 0;
}
