/* The EVs of each peer (evs.c): states, RTT per EV, probes; spraying
 * (evs_pick.c).  An EV is the engine's record of one path
 * (docs/design.md, "Names").  Not installed. */
#ifndef MRC_TRANSPORT_EVS_H
#define MRC_TRANSPORT_EVS_H

#include "transport/store.h"

int mrce__ev_pick(struct mrce *e, struct mrce__peer *p, struct mrce__qp *qp,
		   int avoid_plane);
void mrce__ev_set_state(struct mrce *e, uint32_t peer, uint32_t ev,
			 uint8_t st, uint8_t reason, uint64_t now);
/* weak: the loss is a timeout while the whole peer was silent, which
 * blames no path in particular (loss.c mrce__mark_lost). */
void mrce__ev_lost(struct mrce *e, uint32_t peer, uint32_t ev,
		    uint64_t sent_ts, uint8_t reason, int cong, int weak, uint64_t now);
void mrce__ev_spurious(struct mrce *e, uint32_t peer, uint32_t ev, uint64_t sent_ts,
		       uint64_t now);
void mrce__ev_check(struct mrce *e, uint32_t peer, uint32_t ev,
		     uint64_t sent_ts, uint64_t now);
void mrce__ev_rtt(struct mrce *e, struct mrce__peer *p, uint32_t ev,
		   uint64_t rtt);
void mrce__probe_tick_peer(struct mrce *e, uint32_t peer, uint64_t now);
void mrce__probe_rx(struct mrce *e, uint64_t now, uint32_t peer,
		   const struct mrc_probe_hdr *h);

#endif
