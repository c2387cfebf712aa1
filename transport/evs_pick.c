/* Spraying: which EV of a peer the next packet takes (planes in turn,
 * then each plane's GOOD EVs in turn, weighted down by penalty credits,
 * detours and suspect paths last).  The EV states themselves are evs.c's. */
#include "transport/evs.h"

static int usable(const struct mrce__ev *pa) { return pa->state == MRCE_EV_GOOD; }

/* The plane's next GOOD EV, detours (mrce_ev_set_detour) or not, suspect
 * ones (waiting for a probe) only with take_suspect; a path with penalty
 * credits is skipped once per credit, which weights it down by its
 * ECN/trim/delay history.  When every candidate has credits, one of them
 * is returned and *penalized set, so that the caller can prefer another
 * plane.  -1: none. */
static int plane_pick(struct mrce__peer *p, uint32_t pl, uint8_t detour, int take_suspect,
		      int *penalized)
{
	uint32_t n = p->plane_nev[pl];
	int fallback = -1;
	for (uint32_t k = 0; k < n; k++) {
		uint16_t ev = p->plane_evs[pl][p->plane_cur[pl]++ % n];
		struct mrce__ev *pa = &p->paths[ev];
		if (!usable(pa) || pa->detour != detour || (pa->suspect && !take_suspect))
			continue;
		if (pa->penalty) {
			pa->penalty--;
			if (fallback < 0)
				fallback = ev;
			continue;
		}
		return ev;
	}
	*penalized = fallback >= 0;
	return fallback;
}

/* Spraying over the planes in mask (0: all): planes in turn, then the
 * plane's GOOD EVs in turn, its detours only when it has no other; suspect
 * paths only with take_suspect.  A plane whose every candidate carries
 * penalty credits (queueing, ECN, trims: it is delivering less than it
 * is given) passes the packet to the next plane with a clean one: the
 * split between planes then follows what each delivers, as a plane that
 * lost a spine keeps its host links but not its uplinks (docs/coll.md).
 * Only when every plane is penalised does the first one take it.
 * -1: no GOOD EV in those planes. */
static int spray(struct mrce__peer *p, uint32_t mask, int avoid_plane,
		 int take_suspect)
{
	int fallback = -1;
	uint32_t fallback_rr = 0;
	for (int tries = 0; tries < 2 * MRCE_MAX_PLANES; tries++) {
		/* One round tells whether a clean plane exists. */
		if (tries == MRCE_MAX_PLANES && fallback >= 0)
			break;
		uint32_t pl = p->plane_rr++ % MRCE_MAX_PLANES;
		if (mask && !(mask >> pl & 1))
			continue;
		/* The first round skips the plane to avoid; the second
		 * takes any plane rather than not sending. */
		if ((int)pl == avoid_plane && tries < MRCE_MAX_PLANES)
			continue;
		int pen = 0;
		int ev = plane_pick(p, pl, 0, take_suspect, &pen);
		if (ev < 0 && p->ndetour)
			ev = plane_pick(p, pl, 1, take_suspect, &pen);
		if (ev < 0)
			continue;
		if (!pen)
			return ev;
		if (fallback < 0)
			fallback = ev, fallback_rr = p->plane_rr;
	}
	/* The turn goes on after the plane that took it, as if no other
	 * plane had been asked: no plane is first for every penalised pick. */
	if (fallback >= 0)
		p->plane_rr = fallback_rr;
	return fallback;
}

/* Picks the EV for the next packet: the QP's planes (plane_mask) while
 * one of them has a GOOD path, else every plane (reliability before
 * placement: a dead plane must not hang a pinned QP).  Returns -1 when no
 * EV may be used (every path DENIED): the caller's QP then waits for one,
 * for no_path_timeout_ns at most (sender.c, loss.c). */
int mrce__ev_pick(struct mrce *e, struct mrce__peer *p, struct mrce__qp *qp,
		   int avoid_plane)
{
	if (qp && (qp->flags & MRCE_QP_PIN_EV)) {
		/* Single-path mode: stay on one EV; rehash only when it is
		 * unusable, like ECMP after the fabric reconverges. */
		for (uint32_t i = 0; i < p->nev; i++) {
			uint32_t ev = (qp->pin_ev + qp->pin_cur + i) % p->nev;
			if (usable(&p->paths[ev])) {
				qp->pin_cur = (qp->pin_cur + i) % p->nev;
				return (int)ev;
			}
		}
	} else if (p->ngood) {
		uint32_t mask = qp ? qp->plane_mask : 0;
		int ev = -1;
		/* Suspect paths only when every GOOD one is suspect. */
		for (int take = 0; take < 2 && ev < 0; take++) {
			ev = spray(p, mask, avoid_plane, take);
			if (ev < 0 && mask)
				ev = spray(p, 0, avoid_plane, take);
			if (!p->nsuspect)
				break;
		}
		if (ev >= 0)
			return ev;
	}
	/* No GOOD path: keep trying the ASSUMED_BAD ones rather than stall. */
	for (uint32_t i = 0; i < p->nev; i++) {
		uint32_t ev = (p->plane_rr++ + i) % p->nev;
		if (p->paths[ev].state == MRCE_EV_ASSUMED_BAD)
			return (int)ev;
	}
	(void)e;
	return -1;
}
