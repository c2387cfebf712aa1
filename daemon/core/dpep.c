/* Peers' datapath endpoints: see dpep.h. */
#include <errno.h>
#include <string.h>

#include "daemon/core/dpep.h"

_Static_assert(MRCE_CTRL_MAX_EPS >= MRC_DP_MAX_PLANES, "an endpoint per plane fits a message");

int mrcd_ep_fill(const struct mrc_dp *dp, uint32_t nplanes, struct mrce_ctrl *m)
{
	m->neps = 0;
	if (!mrc_dp_has_eps(dp))
		return 0;
	for (uint32_t pl = 0; pl < nplanes && pl < MRCE_CTRL_MAX_EPS; pl++) {
		int rc = mrc_dp_ep_local(dp, pl, &m->ep[pl]);
		if (rc)
			return rc;
	}
	m->neps = nplanes;
	return 0;
}

int mrcd_ep_apply(struct mrc_dp *dp, uint32_t nplanes, const struct mrcd_peer *p)
{
	static const struct in6_addr none;
	int n = 0;
	for (uint32_t ev = 0; ev < p->nev; ev++) {
		uint32_t pl = p->plane[ev];
		/* :: is a path the topology does not have (MRCD_DENY_MISSING). */
		if (pl >= nplanes || !p->ep[pl] || !memcmp(&p->dst[ev], &none, sizeof(none)))
			continue;
		int rc = mrc_dp_ep_set(dp, pl, &p->dst[ev], p->ep[pl]);
		if (rc)
			return rc;
		n++;
	}
	return n;
}

int mrcd_ep_learn(struct mrc_dp *dp, uint32_t nplanes, struct mrcd_peer *p,
		  const struct mrce_ctrl *m)
{
	if (!m->neps)
		return 0;
	int changed = 0;
	for (uint32_t pl = 0; pl < nplanes && pl < m->neps; pl++) {
		changed |= p->ep[pl] != m->ep[pl];
		p->ep[pl] = m->ep[pl];
	}
	/* Every beacon repeats them: only a change costs a pass. */
	return changed ? mrcd_ep_apply(dp, nplanes, p) : 0;
}

int mrcd_ep_side(const struct mrcd_peer *p, uint32_t plane, uint32_t attempt)
{
	if (!p || plane >= MRC_DP_MAX_PLANES || !p->ep[plane])
		return 1;
	/* About every second try, the first retry included: the top bit of
	 * attempt times the golden ratio (Weyl sequence) rather than its
	 * parity, which with two planes or two spines would send one of them
	 * always aside and the other never. */
	return (uint32_t)(attempt * 0x9e3779b9u) >> 31;
}
