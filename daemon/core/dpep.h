/* Peers' datapath endpoints (docs/datapaths.md, "First contact"): with a
 * datapath that has them (verbs: a UD datagram names the peer's QP number
 * besides its address), each mrcd puts its own per plane in the REQ, REP
 * and PLANES messages it sends, and gives those a peer sends it to the
 * datapath for every path address of the peer.  Until it knows a peer's
 * endpoint on a plane, a control message to that peer goes over the side
 * channel (kernel UDP on the plane, side.c), and so does about every
 * second try from the first retry on, which gets past an endpoint gone
 * stale (a peer restarted).
 * Pure: the core calls these (cm.c, reload.c); the unit tests drive them
 * between two fake verbs providers (tests/test_dp_verbs_peer.c). */
#ifndef MRC_DAEMON_DPEP_H
#define MRC_DAEMON_DPEP_H

#include "daemon/core/core.h"
#include "daemon/core/ctrl.h"

/* Puts dp's endpoint of each of the nplanes planes in m (m->neps =
 * nplanes); leaves m without any (0) when dp has none. */
int mrcd_ep_fill(const struct mrc_dp *dp, uint32_t nplanes, struct mrce_ctrl *m);
/* Takes the endpoints m carries as peer p's (p->ep per plane) and sets
 * them in dp for every path of p (mrcd_ep_apply); 0 and nothing changed
 * when m carries none.  Returns how many paths were set or a negative
 * errno from the datapath. */
int mrcd_ep_learn(struct mrc_dp *dp, uint32_t nplanes, struct mrcd_peer *p,
		  const struct mrce_ctrl *m);
/* Sets p's known endpoints in dp for each of its paths whose address is
 * known (again after a topology reload moved them); returns how many. */
int mrcd_ep_apply(struct mrc_dp *dp, uint32_t nplanes, const struct mrcd_peer *p);
/* Whether try `attempt` of a control message to peer p (NULL: none yet)
 * on plane goes over the side channel rather than the datapath. */
int mrcd_ep_side(const struct mrcd_peer *p, uint32_t plane, uint32_t attempt);

#endif
