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
/* What a host shares this round: its newest observations into out (at
 * most max, *n set, as mrc_health_export) and 1 when they are worth
 * sending: a failure of its own, a link not OK, or the round after its
 * last failure (the news that it works again); else 0.  *told_fail is the
 * caller's state between rounds (start 0). */
int mrc_health_feed_share(const struct mrc_health *h, uint64_t now,
			  struct mrc_health_obs *out, size_t max, size_t *n,
			  uint8_t *told_fail);

#endif
