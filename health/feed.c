#include "health/feed.h"

/* A retirement that says the path failed (not an admin or plane event). */
static int failed(uint8_t reason)
{
	return reason == MRCE_RSN_LOSS || reason == MRCE_RSN_RTO || reason == MRCE_RSN_PROBE_LOST;
}

void mrc_health_feed_event(struct mrc_health *h, uint32_t peer, uint32_t ev,
			   const struct mrce_event *e)
{
	if (e->type == MRCE_EVT_PROBE_RESULT)
		mrc_health_path_ok(h, peer, ev, e->time_ns);
	if (e->type != MRCE_EVT_EV_STATE)
		return;
	if (e->new_state == MRCE_EV_ASSUMED_BAD && failed(e->reason))
		mrc_health_path_fail(h, peer, ev, e->time_ns);
	else if (e->new_state == MRCE_EV_GOOD && e->reason == MRCE_RSN_PROBE_OK)
		mrc_health_path_ok(h, peer, ev, e->time_ns);
}

void mrc_health_feed_ev(struct mrc_health *h, uint32_t peer, uint32_t ev,
			const struct mrce_ev_info *i, uint64_t prev_tx, uint64_t now)
{
	if (i->state == MRCE_EV_GOOD && i->tx_pkts > prev_tx)
		mrc_health_path_ok(h, peer, ev, now);
	if (i->state == MRCE_EV_ASSUMED_BAD && failed(i->last_reason))
		mrc_health_path_fail(h, peer, ev, now);
}
