/* What the engine's events and EV states say about paths, as health/
 * takes them: the one reading both mrcd (daemon/core/health.c) and mrcsim
 * (sim/health.c) feed it through.  Kept out of health.h so the library
 * itself needs only topology/. */
#ifndef MRC_HEALTH_FEED_H
#define MRC_HEALTH_FEED_H

#include <stddef.h>
#include <stdint.h>

#include "health/health.h"
#include "transport/engine.h"

/* One engine event about self -> peer on ev (the fabric's EV number):
 * a probe answered or an EV back by a probe works; an EV retired for
 * loss, RTO or an unanswered probe failed; anything else says nothing. */
void mrc_health_feed_event(struct mrc_health *h, uint32_t peer, uint32_t ev,
			   const struct mrce_event *e);
/* The per-tick reading of one EV: GOOD and in use since the last tick
 * (tx_pkts above prev_tx) works as of its newest ACK (last_ack_ns), never
 * as of now (a packet sent is no proof: it may have gone into a
 * blackhole); still retired for a failure keeps failing (its evidence
 * stays fresh while the path is bad). */
void mrc_health_feed_ev(struct mrc_health *h, uint32_t peer, uint32_t ev,
			const struct mrce_ev_info *i, uint64_t prev_tx, uint64_t now);
/* An EV taken out of use with no failure of its own (ASSUMED_BAD, reason
 * DENY: a suspected uplink, health/suspect.h; mrcd leaves out a denied
 * link's, which are out on located evidence already) carries no data,
 * so no loss retires it: its probes are its only outcome.  held is
 * the caller's per-EV state (start zeroed); call at the event that took
 * it out (the probe counts then are the baseline) and at every tick.
 * While none of its probes since is answered and MRC_HEALTH_HELD_PROBES
 * went out, it failed (as the engine's own lost probe would retire it);
 * an answer says nothing here (the engine brings the EV back, and that
 * event works).  Without this a blackholed link that a suspected uplink
 * took out of use at once on every host kept the one failure that
 * suspected it and was never located (docs/health.md). */
#define MRC_HEALTH_HELD_PROBES 5
struct mrc_health_held {
	uint64_t since;         /* last_change_ns of the hold (0: none) */
	uint64_t sent0, ok0;    /* probes_sent, probes_ok at its start */
};
void mrc_health_feed_held(struct mrc_health *h, uint32_t peer, uint32_t ev,
			  const struct mrce_ev_info *i, struct mrc_health_held *held,
			  uint64_t now);
/* A host's sharing state between ticks (start zeroed). */
struct mrc_health_share_st {
	uint8_t told;           /* 1: the last period's share held a failure;
	                           2: its retraction went out early */
	uint64_t at_ns;         /* when the last period's share went out */
};

/* What a host shares at this tick: its newest observations into out (at
 * most max, *n set, as mrc_health_export) and 1 when they are worth
 * sending.  At the sharing period (period != 0): a failure of its own, a
 * link not OK, or the first period after its last failure is gone (the
 * news that it works again).  At any other tick, once per period: when a
 * share that held a failure went out and a path has worked again since
 * (mrc_health_recovered_since), the retraction at once. */
int mrc_health_feed_share(const struct mrc_health *h, uint64_t now, int period,
			  struct mrc_health_obs *out, size_t max, size_t *n,
			  struct mrc_health_share_st *st);

#endif
