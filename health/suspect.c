#include "health/suspect.h"

static int first_switch_link(const struct mrc_topo *t, uint32_t src, uint32_t dst,
			     uint32_t ev, uint32_t *link)
{
	struct mrc_path p;
	if (mrc_topo_path(t, src, dst, ev, &p))
		return 0;
	for (unsigned i = 0; i < p.n_links; i++)
		if (t->nodes[t->links[p.links[i]].lower].tier != MRC_TIER_HOST) {
			*link = p.links[i];
			return 1;
		}
	return 0;
}

int mrc_health_suspect_uplink(const struct mrc_topo *t, uint32_t self, uint32_t peer,
			      uint32_t ev, const struct mrce_event *e, uint32_t *link)
{
	/* A failure only (loss, RTO, a suspect's probe unanswered): admin
	 * and health's own denials (DENY, these suspects included) say
	 * nothing new of the link. */
	if (e->type != MRCE_EVT_EV_STATE || e->new_state != MRCE_EV_ASSUMED_BAD ||
	    (e->reason != MRCE_RSN_LOSS && e->reason != MRCE_RSN_RTO &&
	     e->reason != MRCE_RSN_PROBE_LOST))
		return 0;
	return first_switch_link(t, self, peer, ev, link);
}

int mrc_health_suspect_told(const struct mrc_topo *t, const struct mrc_health_obs *o,
			    uint32_t *link)
{
	return !o->ok && first_switch_link(t, o->src, o->dst, o->ev, link);
}

int mrc_health_path_crosses(const struct mrc_topo *t, uint32_t self, uint32_t peer,
			    uint32_t ev, uint32_t link)
{
	struct mrc_path p;
	if (mrc_topo_path(t, self, peer, ev, &p))
		return 0;
	for (unsigned i = 0; i < p.n_links; i++)
		if (p.links[i] == link)
			return 1;
	return 0;
}
