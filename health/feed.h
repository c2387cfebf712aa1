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
/* How long a link must have been the located explanation at every eval
 * before it is LOCATED or DENIED (mrc_health_cfg.confirm_ns): at least
 * MRC_HEALTH_CONFIRM_TICKS ticks, and longer than a wrongly retired live
 * path takes to come back by its probes (the engine's first probe a
 * quarter interval after the retirement, the second an interval later:
 * probe_ok_needed 2) and its retraction to be read (2 ticks).  A path
 * retired for a late packet under congestion is back in that time; a dead
 * link's paths are not.  docs/health.md "Confirmation". */
#define MRC_HEALTH_CONFIRM_TICKS 4
uint64_t mrc_health_confirm_ns(uint64_t tick_ns, uint64_t probe_interval_ns);

/* Who is told what, and how often: one host's bound, whatever its
 * number of peers (docs/health.md "The sending bound"), in its ticks:
 * - a share every MRC_HEALTH_SHARE_TICKS ticks, to at most
 *   MRC_HEALTH_SHARE_PEERS peers, the next ones in turn (every peer in
 *   ceil(peers / MRC_HEALTH_SHARE_PEERS) periods), and between two at
 *   most one retraction, to the same peers;
 * - a failure told at once at most every MRC_HEALTH_TELL_TICKS ticks, to
 *   at most MRC_HEALTH_TELL_PEERS peers in turn.
 * At most 2 x 512 + 10 x 512 = 6,144 HEALTH messages a period (mrcd:
 * 100 ms): 1,024 of at most MRCE_CTRL_HEALTH_MAX records (776 bytes of
 * body), 5,120 of one (20 bytes).  Up to 512 peers that is what was sent
 * before, every share and tell to every peer; past 512 peers (1,023
 * messages each in a 1,024-host all-to-all) it is bounded.  256 peers
 * and a tell every 5 ticks made the 384- and 512-host all-to-alls lose
 * more on a dead link (docs/health.md).  A HEALTH received is never
 * answered. */
#define MRC_HEALTH_SHARE_TICKS 10
#define MRC_HEALTH_SHARE_PEERS 512
#define MRC_HEALTH_TELL_TICKS 1
#define MRC_HEALTH_TELL_PEERS 512
/* The whole bound: HEALTH messages one host sends in a sharing period. */
#define MRC_HEALTH_PERIOD_MSGS (2 * MRC_HEALTH_SHARE_PEERS + \
	MRC_HEALTH_SHARE_TICKS / MRC_HEALTH_TELL_TICKS * MRC_HEALTH_TELL_PEERS)

/* A host's sharing state between ticks (start zeroed). */
struct mrc_health_share_st {
	uint8_t told;           /* 1: the last period's share held a failure;
	                           2: its retraction went out early */
	uint64_t at_ns;         /* when the last period's share went out */
	uint32_t share_next;    /* the next peer in turn for a share */
	uint32_t share_first, share_n;   /* the last share's peers */
	uint32_t tell_next;     /* the next peer in turn for a tell */
	uint64_t tell_ns;       /* the last tell (0: never) */
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

/* The peers of this tick's share (mrc_health_feed_share said it is due),
 * out of npeers the caller numbers 0..npeers-1 in a stable order: n of
 * them from *first on, wrapping.  At the period the next ones in turn
 * (at most MRC_HEALTH_SHARE_PEERS); between periods, a retraction, the
 * last share's, which heard the failure. */
uint32_t mrc_health_share_peers(struct mrc_health_share_st *st, int period,
				uint32_t npeers, uint32_t *first);
/* A failure of this host's own paths to tell at once: the count of peers
 * (from *first on, wrapping, at most MRC_HEALTH_TELL_PEERS) when the last
 * tell is at least MRC_HEALTH_TELL_TICKS ticks (tick_ns each) old, else 0
 * (the failure waits for the share). */
uint32_t mrc_health_tell_peers(struct mrc_health_share_st *st, uint64_t now,
			       uint64_t tick_ns, uint32_t npeers, uint32_t *first);

#endif
