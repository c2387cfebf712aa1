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
		mrc_health_path_retired(h, peer, ev, e->time_ns, e->time_ns);
	else if (e->new_state == MRCE_EV_GOOD && e->reason == MRCE_RSN_PROBE_OK)
		mrc_health_path_ok(h, peer, ev, e->time_ns);
	else if (e->new_state == MRCE_EV_GOOD && e->reason == MRCE_RSN_SPURIOUS)
		/* The packet whose loss retired the EV was acknowledged late:
		 * the path delivered.  Under congestion this is most
		 * retirements; left standing they convicted healthy links. */
		mrc_health_path_spurious(h, peer, ev, e->time_ns);
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
		mrc_health_path_retired(h, peer, ev, i->last_change_ns, now);
}

void mrc_health_feed_held(struct mrc_health *h, uint32_t peer, uint32_t ev,
			  const struct mrce_ev_info *i, struct mrc_health_held *held,
			  uint64_t now)
{
	if (i->state != MRCE_EV_ASSUMED_BAD || i->last_reason != MRCE_RSN_DENY) {
		held->since = 0;
		return;
	}
	if (held->since != i->last_change_ns) {
		*held = (struct mrc_health_held){ .since = i->last_change_ns,
			.sent0 = i->probes_sent, .ok0 = i->probes_ok };
		return;
	}
	/* Five sent, none answered: the first four waited out 2, 4, 8 and
	 * 16 ms (the engine's probe_interval, doubling per probe lost), some
	 * 30 ms in all.  With three (under 10 ms) a loaded machine's late
	 * answers read healthy paths as failed on the emulated fabric.
	 * Counters are modulo 2^32. */
	uint32_t sent = (uint32_t)(i->probes_sent - held->sent0);
	if ((uint32_t)i->probes_ok == (uint32_t)held->ok0 && sent >= MRC_HEALTH_HELD_PROBES)
		mrc_health_path_retired(h, peer, ev, held->since, now);
}

int mrc_health_feed_share(const struct mrc_health *h, uint64_t now, int period,
			  struct mrc_health_obs *out, size_t max, size_t *n,
			  struct mrc_health_share_st *st)
{
	size_t nbad;
	uint32_t ids[1];
	*n = 0;
	/* Between periods only a retraction goes out, once: a path whose
	 * failure was told works again (a retirement found spurious), and
	 * peers holding the failure would deny on it until the period. */
	if (!period && st->told != 1)
		return 0;
	mrc_health_export(h, now, out, max, n);
	mrc_health_links(h, MRC_HEALTH_SUSPECT, ids, 0, &nbad);
	int fail = 0;
	for (size_t i = 0; i < *n; i++)
		fail |= !out[i].ok;
	if (!period) {
		if (!mrc_health_recovered_since(h, st->at_ns))
			return 0;
		st->told = 2;   /* and again at the period: a receiver's rate
		                   bound may have dropped this one */
		return 1;
	}
	/* At the period also once after the last failure is gone, so the
	 * retraction reaches every peer that holds it. */
	int due = *n && (fail || nbad || st->told);
	st->told = (uint8_t)fail;
	if (due)
		st->at_ns = now;
	return due;
}

/* n of npeers from the cursor on, and the cursor past them. */
static uint32_t in_turn(uint32_t *next, uint32_t npeers, uint32_t max, uint32_t *first)
{
	if (!npeers)
		return 0;
	if (*next >= npeers)
		*next = 0;   /* fewer peers than when it was set */
	uint32_t n = npeers < max ? npeers : max;
	*first = *next;
	*next = (uint32_t)((*next + (uint64_t)n) % npeers);
	return n;
}

uint32_t mrc_health_share_peers(struct mrc_health_share_st *st, int period,
				uint32_t npeers, uint32_t *first)
{
	if (period) {
		st->share_n = in_turn(&st->share_next, npeers, MRC_HEALTH_SHARE_PEERS,
				      &st->share_first);
	} else if (st->share_first >= npeers || st->share_n > npeers) {
		st->share_first = 0;
		st->share_n = npeers < MRC_HEALTH_SHARE_PEERS ? npeers : MRC_HEALTH_SHARE_PEERS;
	}
	*first = st->share_first;
	return st->share_n;
}

uint32_t mrc_health_tell_peers(struct mrc_health_share_st *st, uint64_t now,
			       uint64_t tick_ns, uint32_t npeers, uint32_t *first)
{
	if (st->tell_ns && now - st->tell_ns < MRC_HEALTH_TELL_TICKS * tick_ns)
		return 0;
	uint32_t n = in_turn(&st->tell_next, npeers, MRC_HEALTH_TELL_PEERS, first);
	if (n)
		st->tell_ns = now;
	return n;
}

uint64_t mrc_health_confirm_ns(uint64_t tick_ns, uint64_t probe_interval_ns)
{
	uint64_t ticks = MRC_HEALTH_CONFIRM_TICKS * tick_ns;
	uint64_t probes = probe_interval_ns + probe_interval_ns / 2 + 2 * tick_ns;
	return ticks > probes ? ticks : probes;
}
