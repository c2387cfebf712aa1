/* Path denial.  Whether an EV of a peer may carry traffic depends on five
 * inputs: the topology (the pair may have no such path), our NIC of the
 * EV's plane, the peer's NIC (its PLANES beacon), and two operator
 * settings (plane disable, path deny).  Each is one bit of the peer's
 * deny[ev]; mrcd_deny_update is the one place that tells the engine, so a
 * path comes back only when no reason is left. */
#include <errno.h>
#include <string.h>

#include "daemon/core/core.h"

/* The reasons that follow from the core's state; ADMIN_PATH is the only
 * one stored for its own sake. */
static uint8_t derived(const struct mrcd *d, const struct mrcd_peer *p, uint32_t ev)
{
	static const struct in6_addr none;
	uint32_t bit = 1u << p->plane[ev];
	uint8_t m = 0;
	if (d->topo && !memcmp(&p->dst[ev], &none, sizeof(none)))
		m |= MRCD_DENY_MISSING;
	/* The self pair's datagrams use no NIC (local.c): links and plane
	 * settings do not concern them; only an operator's path deny does. */
	if (d->topo && p->host == d->self)
		return m;
	if (d->local_down & bit)
		m |= MRCD_DENY_LOCAL_LINK;
	if (p->remote_down & bit)
		m |= MRCD_DENY_REMOTE_LINK;
	if (d->admin_planes & bit)
		m |= MRCD_DENY_ADMIN_PLANE;
	if (mrcd_health_denies(d, p->host, ev))
		m |= MRCD_DENY_HEALTH;
	return m;
}

uint8_t mrcd_deny_update(struct mrcd *d, uint32_t peer, uint32_t ev, uint64_t now)
{
	struct mrcd_peer *p = &d->peers[peer];
	p->deny[ev] = (uint8_t)((p->deny[ev] & MRCD_DENY_ADMIN_PATH) | derived(d, p, ev));
	/* Fabric health alone takes the path out of use (ASSUMED_BAD) but
	 * does not DENY it: a DENIED EV answers no probe, so a peer probing
	 * its side of the path never saw it heal and kept its failures, and
	 * so the denial, alive (docs/health.md "Healing"). */
	uint8_t hard = p->deny[ev] & (uint8_t)~MRCD_DENY_HEALTH;
	mrce_ev_set_denied(d->eng, now, peer, ev, hard != 0);
	if (!hard && p->deny[ev])
		mrce_ev_set_bad(d->eng, now, peer, ev);
	return p->deny[ev];
}

void mrcd_plane_apply(struct mrcd *d, uint32_t peer, uint32_t plane, uint64_t now)
{
	struct mrcd_peer *p = &d->peers[peer];
	for (uint32_t ev = 0; ev < p->nev; ev++)
		if (p->plane[ev] == plane)
			mrcd_deny_update(d, peer, ev, now);
}

int mrcd_admin_plane(struct mrcd *d, uint32_t plane, int disable, uint32_t *npeers,
		     uint32_t *nev)
{
	if (plane >= d->nplanes)
		return -EINVAL;
	uint32_t bit = 1u << plane;
	d->admin_planes = disable ? d->admin_planes | bit : d->admin_planes & ~bit;
	uint64_t now = mrcd_now();
	*npeers = *nev = 0;
	for (uint32_t p = 0; p < d->max_peers; p++) {
		const struct mrcd_peer *pe = &d->peers[p];
		if (!pe->used)
			continue;
		(*npeers)++;
		for (uint32_t ev = 0; ev < pe->nev; ev++) {
			if (pe->plane[ev] != plane)
				continue;
			/* Disabling counts every EV of the plane, enabling those
			 * that no other reason keeps denied. */
			uint8_t m = mrcd_deny_update(d, p, ev, now);
			*nev += disable ? !!(m & MRCD_DENY_ADMIN_PLANE) : !m;
		}
	}
	return 0;
}

int mrcd_admin_path(struct mrcd *d, uint32_t peer, uint32_t ev, int deny)
{
	if (peer >= d->max_peers || !d->peers[peer].used || ev >= d->peers[peer].nev)
		return -EINVAL;
	struct mrcd_peer *p = &d->peers[peer];
	p->deny[ev] = deny ? p->deny[ev] | MRCD_DENY_ADMIN_PATH : p->deny[ev] & ~MRCD_DENY_ADMIN_PATH;
	mrcd_deny_update(d, peer, ev, mrcd_now());
	return 0;
}

const char *mrcd_deny_name(unsigned bit)
{
	switch (bit) {
	case MRCD_DENY_MISSING: return "missing";
	case MRCD_DENY_LOCAL_LINK: return "local_link";
	case MRCD_DENY_REMOTE_LINK: return "remote_link";
	case MRCD_DENY_ADMIN_PLANE: return "admin_plane";
	case MRCD_DENY_ADMIN_PATH: return "admin_path";
	case MRCD_DENY_HEALTH: return "health";
	}
	return "?";
}
