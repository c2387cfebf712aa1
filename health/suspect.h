/* One host's own failure, one hop (docs/health.md "Suspected uplinks"):
 * when the engine retires a path for a failure, the host's other paths
 * through the same uplink of its leaf (the path's first link between
 * switches) are suspects at once, whatever peer they lead to.  The engine
 * keeps path health per peer, so without this each peer's paths learn a
 * dead spine by losing a packet of their own; localisation (health.h)
 * needs failures from k_hosts hosts and a tick.  With sharing on, the
 * host also tells the failure to its peers at once, and each suspects
 * the teller's uplink likewise (mrc_health_suspect_told), so a leaf
 * learns from its first host to lose a packet.  The caller takes the
 * suspects out of use as ASSUMED_BAD (mrce_ev_set_bad: probed, back when
 * a probe answers), never below half a peer's paths, so a wrong
 * suspicion costs a probe round, not a path. */
#ifndef MRC_HEALTH_SUSPECT_H
#define MRC_HEALTH_SUSPECT_H

#include <stdint.h>

#include "health/health.h"
#include "topology/topo.h"
#include "transport/engine.h"

/* 1 with *link set when e retired self -> peer on ev (the fabric's EV
 * number) for a failure and that path leaves its leaf: *link is its first
 * link between switches.  0 for any other event or path. */
int mrc_health_suspect_uplink(const struct mrc_topo *t, uint32_t self, uint32_t peer,
			      uint32_t ev, const struct mrce_event *e, uint32_t *link);
/* One hop: a peer told its failure (a HEALTH observation, o->src the
 * peer).  1 with *link set when o is a failure of a path that leaves its
 * leaf: *link is its first link between switches, the teller's uplink,
 * which the hosts of its leaf share, and every other host's paths into
 * that leaf through that spine.  0 otherwise.  A liar can only name the
 * uplinks of its own leaf, and a wrong suspicion costs a probe round. */
int mrc_health_suspect_told(const struct mrc_topo *t, const struct mrc_health_obs *o,
			    uint32_t *link);
/* 1 when self -> peer on ev crosses link; 0 otherwise (no such path). */
int mrc_health_path_crosses(const struct mrc_topo *t, uint32_t self, uint32_t peer,
			    uint32_t ev, uint32_t link);

#endif
