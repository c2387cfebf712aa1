/* SIGHUP: a new topology file without dropping healthy QPs.  Every QP's
 * peer keeps its engine EV table; only the routes behind the EVs change
 * (uSIDs, links that appeared or went away).  A change of shape (planes,
 * host count, EV count, this host's uSID) would renumber paths or rebind
 * sockets, so it is refused with the reason and needs a restart. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/core/core.h"
#include "daemon/core/dpep.h"

static int same_shape(const struct mrcd *d, const struct mrc_topo *t, uint32_t self,
		      char *err, size_t errlen)
{
	if (t->planes != d->topo->planes || t->n_hosts != d->topo->n_hosts ||
	    mrc_topo_ev_count(t) != mrc_topo_ev_count(d->topo)) {
		snprintf(err, errlen, "the new topology changes planes, hosts or paths "
			 "(%u/%u/%u -> %u/%u/%u): restart mrcd to apply it",
			 d->topo->planes, d->topo->n_hosts, mrc_topo_ev_count(d->topo),
			 t->planes, t->n_hosts, mrc_topo_ev_count(t));
		return -EINVAL;
	}
	if (self != d->self ||
	    t->nodes[t->hosts[self]].usid != d->topo->nodes[d->topo->hosts[d->self]].usid) {
		snprintf(err, errlen, "this host's index or uSID changes: restart mrcd to apply it");
		return -EINVAL;
	}
	for (uint32_t pl = 0; pl < t->planes; pl++)
		if (strcmp(t->nodes[mrc_topo_host_leaf(t, self, pl)].name, d->plane_if[pl]) &&
		    !d->cfg.plane_ifs[0]) {
			snprintf(err, errlen, "plane %u's NIC would change from %s: restart mrcd", pl,
				 d->plane_if[pl]);
			return -EINVAL;
		}
	return 0;
}

int mrcd_topology_reload(struct mrcd *d, const char *path, char *err, size_t errlen)
{
	if (!d->topo) {
		snprintf(err, errlen, "running on the loopback fabric: restart mrcd to use a topology");
		return -EINVAL;
	}
	struct mrc_topo *t;
	int rc = mrc_topo_load(path, &t, err, errlen);
	if (rc)
		return rc;
	uint32_t self;
	if (mrc_topo_host_lookup(t, d->cfg.host, &self)) {
		snprintf(err, errlen, "host '%s' is not in %s", d->cfg.host, path);
		mrc_topo_free(t);
		return -EINVAL;
	}
	if ((rc = same_shape(d, t, self, err, errlen))) {
		mrc_topo_free(t);
		return rc;
	}
	struct mrc_topo *old = d->topo;
	d->topo = t;
	memset(d->host_of_usid, 0xff, sizeof(uint32_t) * 65536);
	for (uint32_t h = 0; h < t->n_hosts; h++)
		d->host_of_usid[t->nodes[t->hosts[h]].usid] = h;
	uint64_t now = mrcd_now();
	uint32_t changed = 0;
	for (uint32_t p = 0; p < d->max_peers; p++) {
		struct mrcd_peer *pe = &d->peers[p];
		if (!pe->used)
			continue;
		for (uint32_t ev = 0; ev < pe->nev; ev++) {
			struct in6_addr a = mrcd_peer_dst(d, t, pe->host, ev);
			changed += memcmp(&a, &pe->dst[ev], sizeof(a)) != 0;
			pe->dst[ev] = a;
		}
		/* The datapath's endpoints are keyed by path address. */
		mrcd_ep_apply(d->dp, d->nplanes, pe);
		for (uint32_t pl = 0; pl < d->nplanes; pl++)
			mrcd_plane_apply(d, p, pl, now);
	}
	/* Before the old topology goes: health/ holds a pointer to it. */
	int hrc = mrcd_health_reload(d);
	mrc_topo_free(old);
	if (hrc)
		mrcd_log(MRCD_LOG_ERR, "reload: fabric-link health off: %s", strerror(-hrc));
	mrcd_note(d, "admin", "topology %s reloaded: %u path address%s changed", path, changed,
		  changed == 1 ? "" : "es");
	return 0;
}
