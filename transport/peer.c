/* Peers: adding one (its EV table, planes and spray order) and removing
 * it, and its probe tokens.  Setup only: the data path never calls here. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/store.h"
#include "transport/timers.h"
#include "transport/zmem.h"

/* The order the spray visits a plane's EVs in: bit-reversed index order
 * (0, n/2, n/4, 3n/4, ...), so that consecutive packets take EVs far
 * apart.  Fabrics number EVs so that neighbours share the first hops (fat
 * tree: EV = core, and the 8 cores behind one aggregation switch are
 * 8 consecutive EVs at k=16): in index order a QP sent 8 packets in a row
 * into one edge uplink, and the queues those bursts built were most of a
 * 1,024-host permutation's tail (docs/sim.md).  Setup only: no allocation. */
static void spread_order(uint16_t *evs, uint32_t n)
{
	if (n < 3)
		return;
	uint32_t bits = 0;
	while ((1u << bits) < n)
		bits++;
	uint16_t tmp[MRCE_MAX_EVS];
	uint32_t m = 0;
	for (uint32_t j = 0; j < (1u << bits); j++) {
		uint32_t r = 0;
		for (uint32_t b = 0; b < bits; b++)
			r |= ((j >> b) & 1u) << (bits - 1 - b);
		if (r < n)
			tmp[m++] = evs[r];
	}
	memcpy(evs, tmp, n * sizeof(*evs));
}

int mrce_peer_add(struct mrce *e, uint32_t nev, const uint8_t *plane_of,
		 uint32_t *peer)
{
	if (!nev || nev > MRCE_MAX_EVS || !plane_of || !peer)
		return -EINVAL;
	for (uint32_t i = 0; i < nev; i++)
		if (plane_of[i] >= MRCE_MAX_PLANES)
			return -EINVAL;
	uint32_t idx;
	for (idx = 0; idx < e->cfg.max_peers && e->peers[idx].used; idx++)
		;
	if (idx == e->cfg.max_peers)
		return -ENOSPC;
	struct mrce__peer *p = &e->peers[idx];
	memset(p, 0, sizeof(*p));
	/* Line aligned (calloc's 16-byte offset put each record over three
	 * lines): the hot half of a record is then one line (store.h). */
	p->paths_mem = calloc(1, (size_t)nev * sizeof(*p->paths) + 63);
	p->paths = p->paths_mem ? (struct mrce__ev *)(((uintptr_t)p->paths_mem + 63) &
						      ~(uintptr_t)63) : NULL;
	p->cold = mrce__zalloc((size_t)nev * sizeof(*p->cold));
	uint16_t cnt[MRCE_MAX_PLANES] = { 0 };
	for (uint32_t i = 0; i < nev; i++)
		cnt[plane_of[i]]++;
	int fail = !p->paths || !p->cold;
	for (int pl = 0; pl < MRCE_MAX_PLANES && !fail; pl++)
		if (cnt[pl] && !(p->plane_evs[pl] = calloc(cnt[pl], sizeof(uint16_t))))
			fail = 1;
	if (fail) {
		p->used = 1;
		p->nev = nev;      /* the cold array's length, for its unmap */
		mrce_peer_remove(e, idx);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < nev; i++) {
		p->paths[i].plane = plane_of[i];
		p->plane_evs[plane_of[i]][p->plane_nev[plane_of[i]]++] = (uint16_t)i;
	}
	for (int pl = 0; pl < MRCE_MAX_PLANES; pl++)
		spread_order(p->plane_evs[pl], p->plane_nev[pl]);
	p->nev = p->ngood = nev;
	p->used = 1;
	if (idx >= e->peer_hwm)
		e->peer_hwm = idx + 1;
	*peer = idx;
	return 0;
}

int mrce_peer_remove(struct mrce *e, uint32_t peer)
{
	if (peer >= e->cfg.max_peers || !e->peers[peer].used)
		return -ENOENT;
	for (uint32_t i = 0; i < e->qp_hwm; i++)
		if (e->qps[i].used && e->qps[i].state != MRCE_QPS_RESET &&
		    e->qps[i].peer == peer)
			return -EBUSY;
	struct mrce__peer *p = &e->peers[peer];
	free(p->paths_mem);
	mrce__zfree(p->cold, (size_t)p->nev * sizeof(*p->cold));
	for (int pl = 0; pl < MRCE_MAX_PLANES; pl++)
		free(p->plane_evs[pl]);
	memset(p, 0, sizeof(*p));
	mrce__peer_timer_sync(e, peer);   /* unused: out of the timers */
	return 0;
}

int mrce_peer_set_local(struct mrce *e, uint32_t peer, int local)
{
	struct mrce__peer *p = mrce__peer_get(e, peer);
	if (!p)
		return -ENOENT;
	p->local = !!local;
	return 0;
}

int mrce_peer_set_probe_tokens(struct mrce *e, uint32_t peer, uint64_t tx,
			      uint64_t rx)
{
	struct mrce__peer *p = mrce__peer_get(e, peer);
	if (!p)
		return -ENOENT;
	p->probe_tx_token = tx;
	p->probe_rx_token = rx;
	return 0;
}
