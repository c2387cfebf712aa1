#include "health/feed.h"

/* A retirement that says the path failed (not an admin or plane event). */
static int failed(uint8_t reason)
{
	return reason == MRCE_RSN_LOSS || reason == MRCE_RSN_RTO || reason == MRCE_RSN_PROBE_LOST;
}

void mrc_health_feed_event(struct mrc_health *h, uint32_t peer, uint32_t ev,
			   const struct mrce_event *e)
{
	/* A user probe's answer; a lost one (rtt UINT64_MAX) proves nothing
	 * here: the engine retires the path itself if it is dead. */
	if (e->type == MRCE_EVT_PROBE_RESULT && e->rtt_ns != UINT64_MAX)
		mrc_health_path_ok(h, peer, ev, e->time_ns);
	if (e->type != MRCE_EVT_EV_STATE)
		return;
	if (e->new_state == MRCE_EV_ASSUMED_BAD && failed(e->reason))
		mrc_health_path_fail(h, peer, ev, e->time_ns);
	else if (e->new_state == MRCE_EV_GOOD &&
		 (e->reason == MRCE_RSN_PROBE_OK || e->reason == MRCE_RSN_SPURIOUS))
		/* SPURIOUS: the packet whose loss retired the EV was acknowledged
		 * late, so the path delivered.  Under congestion this is most
		 * retirements; left standing they convicted healthy links. */
		mrc_health_path_ok(h, peer, ev, e->time_ns);
}

void mrc_health_feed_ev(struct mrc_health *h, uint32_t peer, uint32_t ev,
			const struct mrce_ev_info *i, uint64_t prev_tx, uint64_t now)
{
	/* Worked as of its newest ACK, not because we sent on it: packets
	 * sent into a blackhole move tx_pkts too, and counting them cleared
	 * the dead link on its own senders (a wrong link located instead).
	 * tx_pkts moving only says the EV is in use, worth a look. */
	if (i->state == MRCE_EV_GOOD && i->tx_pkts > prev_tx && i->last_ack_ns &&
	    i->last_ack_ns <= now)
		mrc_health_path_ok(h, peer, ev, i->last_ack_ns);
	if (i->state == MRCE_EV_ASSUMED_BAD && failed(i->last_reason))
		mrc_health_path_fail(h, peer, ev, now);
}

int mrc_health_feed_share(const struct mrc_health *h, uint64_t now,
			  struct mrc_health_obs *out, size_t max, size_t *n,
			  uint8_t *told_fail)
{
	size_t nbad;
	uint32_t ids[1];
	mrc_health_export(h, now, out, max, n);
	mrc_health_links(h, MRC_HEALTH_SUSPECT, ids, 0, &nbad);
	int fail = 0;
	for (size_t i = 0; i < *n; i++)
		fail |= !out[i].ok;
	/* Once more after the last failure is gone: its retraction (the path
	 * working again, e.g. a spurious retirement) must reach the peers
	 * that hold it, or they keep it for the whole TTL. */
	int due = *n && (fail || nbad || *told_fail);
	*told_fail = (uint8_t)fail;
	return due;
}
