/* The core's read-only views (mrcd.h, "read-only views"): what the rooms
 * above may read of struct mrcd without including core.h. */
#include <errno.h>
#include <string.h>

#include "daemon/core/core.h"
#include "daemon/core/enc.h"

const struct mrcd_cfg *mrcd_config(const struct mrcd *d) { return &d->cfg; }
uint64_t mrcd_started_ns(const struct mrcd *d) { return d->started_ns; }
uint32_t mrcd_local_down(const struct mrcd *d) { return d->local_down; }
uint32_t mrcd_admin_planes(const struct mrcd *d) { return d->admin_planes; }

const char *mrcd_plane_if(const struct mrcd *d, uint32_t plane)
{
	return d->topo && plane < MRC_DP_MAX_PLANES ? d->plane_if[plane] : "";
}

int mrcd_host_addr(const struct mrcd *d, uint32_t host, struct in6_addr *a)
{
	*a = in6addr_loopback;
	if (!d->topo)
		return 0;
	memset(a, 0, sizeof(*a));
	if (host >= d->topo->n_hosts)
		return -ENOENT;
	uint16_t u = d->topo->nodes[d->topo->hosts[host]].usid;
	struct mrc_srv6_err e;
	if (mrc_usid_encode(&d->blk, &u, 1, a, &e)) {
		memset(a, 0, sizeof(*a));
		return -EINVAL;
	}
	return 0;
}

void mrcd_stats_get(const struct mrcd *d, struct mrcd_stats *st) { *st = d->st; }

int mrcd_aead_stats(const struct mrcd *d, struct mrce_seal_stats *st)
{
	if (!d->enc)
		return -ENOENT;
	mrcd_enc_get_stats(d->enc, st);
	return 0;
}

int mrcd_peer_get(const struct mrcd *d, uint32_t peer, struct mrcd_peer_view *v)
{
	if (peer >= d->max_peers || !d->peers[peer].used)
		return -ENOENT;
	const struct mrcd_peer *p = &d->peers[peer];
	*v = (struct mrcd_peer_view){ .id = peer, .host = p->host, .nev = p->nev,
				      .remote_down = p->remote_down, .dst = p->dst,
				      .deny = p->deny };
	return 0;
}

int mrcd_peer_next(const struct mrcd *d, uint32_t *it, struct mrcd_peer_view *v)
{
	for (; *it < d->max_peers; ++*it)
		if (!mrcd_peer_get(d, *it, v)) {
			++*it;
			return 1;
		}
	return 0;
}

uint32_t mrcd_peer_find(const struct mrcd *d, uint32_t host)
{
	return host < d->nhosts ? d->peer_of_host[host] : UINT32_MAX;
}

int mrcd_qp_bound_next(const struct mrcd *d, uint32_t *it, uint32_t *qpn)
{
	for (; *it < 65536; ++*it)
		if (d->qpb[*it].fn) {
			*qpn = d->qpb[(*it)++].qpn;
			return 1;
		}
	return 0;
}
