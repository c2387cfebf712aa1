/* The paths to a peer (path.c): states, spraying, RTT per path, probes.  Not installed. */
#ifndef MRC_TRANSPORT_PATH_H
#define MRC_TRANSPORT_PATH_H

#include "transport/store.h"

int mrc__path_pick(struct mrce *e, struct mrc__peer *p, struct mrc__qp *qp,
		   int avoid_plane);
void mrc__path_set_state(struct mrce *e, uint32_t peer, uint32_t ev,
			 uint8_t st, uint8_t reason, uint64_t now);
/* weak: the loss is a timeout while the whole peer was silent, which
 * blames no path in particular (loss.c mrc__mark_lost). */
void mrc__path_lost(struct mrce *e, uint32_t peer, uint32_t ev,
		    uint64_t sent_ts, uint8_t reason, int cong, int weak, uint64_t now);
void mrc__path_check(struct mrce *e, uint32_t peer, uint32_t ev,
		     uint64_t sent_ts, uint64_t now);
void mrc__path_rtt(struct mrce *e, struct mrc__peer *p, uint32_t ev,
		   uint64_t rtt);
void mrc__probe_tick_peer(struct mrce *e, uint32_t peer, uint64_t now);
void mrc__probe_rx(struct mrce *e, uint64_t now, uint32_t peer,
		   const struct mrc_probe_hdr *h);

#endif
