/* Peers: the hosts this daemon has paths to, and each one's EV -> uSID
 * destination table (daemon/core/node.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "auth/auth.h"
#include "daemon/core/enc.h"
#include "daemon/core/node.h"
#include "mrc/error.h"

static int peer_table(struct mrcd *d, uint32_t host, struct mrcd_peer *p)
{
	if (!d->topo) {
		/* Loopback: the only host is this one, one path through lo. */
		p->nev = 1;
		p->dst = calloc(1, sizeof(*p->dst));
		p->plane = calloc(1, 1);
		p->deny = calloc(1, 1);
		if (!p->dst || !p->plane || !p->deny)
			return -ENOMEM;
		p->dst[0] = in6addr_loopback;
		return 0;
	}
	p->nev = mrc_topo_ev_count(d->topo);
	p->dst = calloc(p->nev, sizeof(*p->dst));
	p->plane = calloc(p->nev, 1);
	p->deny = calloc(p->nev, 1);
	if (!p->dst || !p->plane || !p->deny)
		return -ENOMEM;
	for (uint32_t ev = 0; ev < p->nev; ev++) {
		uint32_t pl = 0, sp = 0;
		mrc_topo_ev_decode(d->topo, ev, &pl, &sp);
		p->plane[ev] = (uint8_t)pl;
		p->dst[ev] = mrcd_peer_dst(d, d->topo, host, ev);
	}
	return 0;
}

struct in6_addr mrcd_peer_dst(const struct mrcd *d, const struct mrc_topo *t, uint32_t host,
			      uint32_t ev)
{
	struct in6_addr a = { 0 };
	struct mrc_path path;
	struct mrc_srv6_err e;
	/* The self pair: every EV names this host, and the datagrams never
	 * leave the process (local.c), so none is missing; each EV is still
	 * a path of its own to the engine, probed and sprayed as any other. */
	if (host == d->self)
		return d->self_addr;
	if (mrc_topo_path(t, d->self, host, ev, &path) ||
	    mrc_usid_encode(&d->blk, path.usids, path.n_usids, &a, &e))
		memset(&a, 0, sizeof(a));   /* no such path (MRCD_DENY_MISSING) */
	return a;
}

/* AEAD mode: the host pair's MAC keys (PROBE, PROBE_REPLY, NOQP). */
static int enc_peer_keys(struct mrcd *d, uint32_t id, uint32_t host)
{
	uint8_t tx[MRC_AUTH_PAIR_KEY_BYTES], rx[MRC_AUTH_PAIR_KEY_BYTES];
	int rc = mrc_auth_pair_keys(d->auth, d->self, host, tx, rx);
	if (!rc)
		rc = mrcd_enc_set_peer(d->enc, id, tx, rx);
	sodium_memzero(tx, sizeof tx);
	sodium_memzero(rx, sizeof rx);
	return rc;
}

static int set_probe_tokens(struct mrcd *d, uint32_t id, uint32_t host)
{
	uint64_t ptx, prx;
	uint64_t pe = host == d->self ? d->ctrl_tx.epoch : d->host_epoch[host];
	int rc = mrc_auth_probe_tokens_epoch(d->auth, d->self, host, d->ctrl_tx.epoch, pe,
					     &ptx, &prx);
	if (!rc)
		rc = mrce_peer_set_probe_tokens(d->eng, id, ptx, prx);
	return rc;
}

void mrcd_peer_epoch(struct mrcd *d, uint32_t host, uint64_t epoch)
{
	if (host >= d->nhosts || host == d->self || d->host_epoch[host] == epoch)
		return;
	d->host_epoch[host] = epoch;
	uint32_t id = d->peer_of_host[host];
	if (id != MRCD_NO_ID && set_probe_tokens(d, id, host))
		mrcd_log(MRCD_LOG_WARNING, "host %u: probe tokens not renewed", host);
}

int mrcd_peer_of_host(struct mrcd *d, uint32_t host, uint32_t *out)
{
	if (host >= d->nhosts)
		return -EINVAL;
	if (d->peer_of_host[host] != MRCD_NO_ID) {
		*out = d->peer_of_host[host];
		return 0;
	}
	struct mrcd_peer p = { .used = 1, .host = host };
	int rc = peer_table(d, host, &p);
	uint32_t id = 0;
	if (!rc)
		rc = mrce_peer_add(d->eng, p.nev, p.plane, &id);
	if (!rc && id >= d->max_peers)
		rc = -ENOSPC;
	if (rc) {
		free(p.dst);
		free(p.plane);
		free(p.deny);
		return rc;
	}
	/* Probes carry per-host-pair tokens from the key and both boot
	 * epochs (require_tokens); the peer's is learnt from its CTRL. */
	rc = set_probe_tokens(d, id, host);
	/* Its datagrams stay in this process (local.c): no payload CRC. */
	if (!rc && host == d->self && d->self_inproc)
		rc = mrce_peer_set_local(d->eng, id, 1);
	if (!rc && d->enc)
		rc = enc_peer_keys(d, id, host);
	if (rc) {
		mrce_peer_remove(d->eng, id);
		free(p.dst);
		free(p.plane);
		free(p.deny);
		return rc;
	}
	/* Spine paths between hosts of one leaf are detours: the engine
	 * uses them only when the leaf's one-hop path of the plane is not
	 * GOOD (they add uplink load and no capacity). */
	for (uint32_t ev = 0; d->topo && ev < p.nev; ev++) {
		uint32_t pl = 0, sp = 0;
		struct mrc_path path;
		int direct;
		if (mrc_topo_ev_decode(d->topo, ev, &pl, &sp) || sp == MRC_PATH_SPINE_DIRECT ||
		    (direct = mrc_topo_ev_of(d->topo, pl, MRC_PATH_SPINE_DIRECT)) < 0 ||
		    mrc_topo_path(d->topo, d->self, host, (uint32_t)direct, &path))
			continue;
		mrce_ev_set_detour(d->eng, id, ev, 1);
	}
	d->peers[id] = p;
	d->peer_of_host[host] = id;
	/* Missing paths, a NIC down here, planes an operator disabled. */
	uint64_t now = mrcd_now();
	for (uint32_t ev = 0; ev < p.nev; ev++)
		mrcd_deny_update(d, id, ev, now);
	*out = id;
	mrcd_log(MRCD_LOG_INFO, "peer host %u added: %u paths", host, p.nev);
	return 0;
}
