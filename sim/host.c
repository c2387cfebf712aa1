/* Hosts: one real MRC engine each, one NIC per plane.  The glue turns
 * engine output into fabric packets (the EV the engine chose becomes the
 * packet's source route), hands arriving packets to the engine as bytes,
 * runs its timers, and reaps completions and events.
 *
 * NIC pacing: the engine is asked for packets only while the host's NICs
 * hold fewer than nic_queue data packets per plane waiting, so its send
 * timestamps (and thus its RTT samples) do not include a deep host queue. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "sim/sim_int.h"

static inline uint64_t now_ns(const struct mrc_sim *s) { return s->now / SIM_PS_PER_NS; }

/* ---- setup ------------------------------------------------------------- */

struct pair { uint32_t h, r; };

/* Tokens stand in for what auth/ derives (the simulator has no key): a
 * nonzero mix of sender host, receiver host and connection (0: probes). */
static uint64_t sim_token(uint32_t from, uint32_t to, uint32_t conn)
{
	uint64_t x = ((uint64_t)from << 40) ^ ((uint64_t)to << 20) ^ conn;
	uint64_t t = mrc_splitmix64(&x);
	return t ? t : 1;
}

static int pair_cmp(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;
	if (x->h != y->h)
		return x->h < y->h ? -1 : 1;
	return x->r < y->r ? -1 : x->r > y->r;
}

/* EVs host a may use towards host b: those whose path exists, and with
 * paths=N a subset of N of them chosen by a hash of the unordered pair, so
 * both ends agree (ACKs return on the data packet's EV). */
static uint32_t pair_allowed(const struct mrc_sim *s, uint32_t a, uint32_t b,
			     uint8_t *ok, uint16_t *scratch)
{
	const struct sim_fabric *f = &s->fab;
	uint32_t ports[SIM_MAX_HOPS], n = 0;
	for (uint32_t ev = 0; ev < f->nev; ev++) {
		ok[ev] = sim_fabric_route(f, a, b, ev, ports) > 0;
		if (ok[ev])
			scratch[n++] = (uint16_t)ev;
	}
	if (!s->cfg.paths || s->cfg.paths >= n)
		return n;
	struct mrc_rng r;
	mrc_rng_seed(&r, sim_hash3(s->cfg.seed, a < b ? a : b, a < b ? b : a));
	for (uint32_t i = 0; i < s->cfg.paths; i++) {
		uint32_t j = i + mrc_rng_below(&r, n - i);
		uint16_t t = scratch[i];
		scratch[i] = scratch[j];
		scratch[j] = t;
	}
	for (uint32_t i = s->cfg.paths; i < n; i++)
		ok[scratch[i]] = 0;
	return s->cfg.paths;
}

/* ECMP: the EV a QP is pinned to, a hash of the flow.  A flow split over
 * several QPs pins QP i to plane i mod planes (one QP per NIC, the way a
 * collective library uses every rail), hashing the path within it. */
static uint32_t ecmp_ev(const struct mrc_sim *s, uint32_t conn, const uint8_t *ok)
{
	const struct sim_conn *c = &s->conns[conn];
	const struct sim_flow *fl = &s->flows[c->flow];
	uint32_t part = conn - fl->conn0, nev = s->fab.nev;
	uint64_t h = sim_hash3(s->cfg.seed ^ 0xec3f, c->flow, part);
	int plane = fl->nconn > 1 && s->fab.planes > 1 ?
		    (int)((h >> 32) + part) % (int)s->fab.planes : -1;
	uint32_t cnt = 0;
	for (uint32_t ev = 0; ev < nev; ev++)
		cnt += ok[ev] && (plane < 0 || s->fab.plane_of_ev[ev] == plane);
	if (!cnt)
		return (uint32_t)(h % nev);
	uint32_t pick = (uint32_t)(h % cnt);
	for (uint32_t ev = 0; ev < nev; ev++)
		if (ok[ev] && (plane < 0 || s->fab.plane_of_ev[ev] == plane) && !pick--)
			return ev;
	return 0;
}

static uint32_t peer_index(const struct mrc_sim *s, const uint32_t *off,
			   const struct pair *pr, uint32_t h, uint32_t r)
{
	(void)s;
	uint32_t lo = off[h], hi = off[h + 1];
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (pr[mid].r == r)
			return mid - off[h];
		if (pr[mid].r < r)
			lo = mid + 1;
		else
			hi = mid;
	}
	return SIM_NONE;
}

int sim_hosts_create(struct mrc_sim *s, char *err, size_t errlen)
{
	const struct sim_fabric *f = &s->fab;
	uint32_t H = f->n_hosts;
	int rc = 0;
	s->hosts = calloc(H, sizeof(*s->hosts));
	s->engs = calloc(H, sizeof(*s->engs));
	struct pair *pr = malloc(((size_t)s->n_conns * 2 + 1) * sizeof(*pr));
	uint32_t *off = calloc((size_t)H + 1, sizeof(*off));
	uint32_t *nqp = calloc(H, sizeof(*nqp));
	uint32_t *nmr = calloc(H, sizeof(*nmr));
	uint8_t *ok = malloc(f->nev);
	uint16_t *scratch = malloc(f->nev * sizeof(*scratch));
	uint8_t *plane_of = f->plane_of_ev;
	if (!s->hosts || !s->engs || !pr || !off || !nqp || !nmr || !ok || !scratch) {
		rc = mrc__errf(err, errlen, "hosts: out of memory");
		goto out;
	}
	/* Peers of each host: the distinct remote ends of its QPs, sorted. */
	size_t np = 0;
	for (uint32_t c = 0; c < s->n_conns; c++) {
		const struct sim_flow *fl = &s->flows[s->conns[c].flow];
		pr[np++] = (struct pair){ fl->src, fl->dst };
		pr[np++] = (struct pair){ fl->dst, fl->src };
		nqp[fl->src]++;
		nqp[fl->dst]++;
	}
	for (uint32_t i = 0; i < s->n_flows; i++)
		if (s->flows[i].rbuf)
			nmr[s->flows[i].dst]++;
	qsort(pr, np, sizeof(*pr), pair_cmp);
	size_t u = 0;
	for (size_t i = 0; i < np; i++)
		if (!u || pair_cmp(&pr[i], &pr[u - 1]))
			pr[u++] = pr[i];
	for (size_t i = 0; i < u; i++)
		off[pr[i].h + 1]++;
	for (uint32_t h = 0; h < H; h++)
		off[h + 1] += off[h];

	for (uint32_t h = 0; h < H; h++) {
		struct sim_host *x = &s->hosts[h];
		x->timer_at = UINT64_MAX;
		x->npeers = off[h + 1] - off[h];
		x->nqps = nqp[h];
		if (!x->nqps)
			continue;   /* idle host: no engine needed */
		struct mrce_cfg ec = s->ecfg;
		ec.max_peers = x->npeers;
		ec.max_qps = x->nqps;
		ec.max_mrs = 2 + nmr[h];
		if (s->cfg.spray_slot)
			ec.spray_slot = mrc_topo_spray_slot(s->fab.topo, h);
		const char *why = NULL;
		rc = mrce_create(&ec, &x->eng, &why);
		if (rc) {
			rc = mrc__errf(err, errlen, "engine: %s", why ? why : "create failed");
			goto out;
		}
		s->engs[h] = x->eng;
		x->peer_host = malloc(x->npeers * sizeof(uint32_t));
		x->peer_rx = malloc(x->npeers * sizeof(uint32_t));
		x->qp_conn = malloc(x->nqps * sizeof(uint32_t));
		if (!x->peer_host || !x->peer_rx || !x->qp_conn) {
			rc = mrc__errf(err, errlen, "hosts: out of memory");
			goto out;
		}
		if (mrce_mr_add(x->eng, 1, s->src_buf, s->src_len, MRCE_ACCESS_LOCAL_READ,
			       &x->src_key) ||
		    mrce_mr_add(x->eng, 1, s->sink_buf, s->sink_len,
			       MRCE_ACCESS_REMOTE_WRITE, &x->sink_key)) {
			rc = mrc__errf(err, errlen, "engine: memory registration failed");
			goto out;
		}
		if (s->step) {
			x->evmap = calloc(x->npeers, sizeof(*x->evmap));
			x->nevmap = calloc(x->npeers, sizeof(*x->nevmap));
			if (!x->evmap || !x->nevmap) {
				rc = mrc__errf(err, errlen, "hosts: out of memory");
				goto out;
			}
		}
		for (uint32_t i = 0; i < x->npeers; i++) {
			uint32_t r = pr[off[h] + i].r, peer;
			x->peer_host[i] = r;
			if (x->evmap) {
				/* Compact: only the pair's usable EVs, in fabric
				 * order (a peer's path records are 128 bytes per
				 * EV: 33 KiB at 264 EVs, most of a step's memory,
				 * while a pair in one leaf has one EV per plane). */
				pair_allowed(s, h, r, ok, scratch);
				uint32_t n = 0;
				for (uint32_t ev = 0; ev < f->nev; ev++)
					n += ok[ev];
				x->evmap[i] = malloc((n ? n : 1) * sizeof(uint16_t));
				uint8_t *pl = malloc(n ? n : 1);
				if (!x->evmap[i] || !pl) {
					free(pl);
					rc = mrc__errf(err, errlen, "hosts: out of memory");
					goto out;
				}
				n = 0;
				for (uint32_t ev = 0; ev < f->nev; ev++)
					if (ok[ev]) {
						pl[n] = plane_of[ev];
						x->evmap[i][n++] = (uint16_t)ev;
					}
				x->nevmap[i] = (uint16_t)n;
				rc = n ? mrce_peer_add(x->eng, n, pl, &peer) : -ENOENT;
				free(pl);
				if (!rc)
					rc = mrce_peer_set_probe_tokens(x->eng, peer,
						sim_token(h, r, 0), sim_token(r, h, 0));
				if (rc || peer != i) {
					rc = mrc__errf(err, errlen, "engine: peer_add for h%u -> h%u: %d", h, r, rc);
					goto out;
				}
				continue;
			}
			rc = mrce_peer_add(x->eng, f->nev, plane_of, &peer);
			if (!rc)   /* probe tokens per host pair, as auth/ gives */
				rc = mrce_peer_set_probe_tokens(x->eng, peer,
					sim_token(h, r, 0), sim_token(r, h, 0));
			if (rc || peer != i) {
				rc = mrc__errf(err, errlen, "engine: peer_add for h%u -> h%u: %d", h, r, rc);
				goto out;
			}
			pair_allowed(s, h, r, ok, scratch);
			for (uint32_t ev = 0; ev < f->nev; ev++)
				if (!ok[ev])
					mrce_ev_set_denied(x->eng, 0, i, ev, 1);
			/* Setup DENY events are configuration, not part of
			 * the run: drain them per peer (the queue is small). */
			struct mrce_event e;
			while (mrce_event_pop(x->eng, &e))
				;
		}
	}
	for (uint32_t h = 0; h < H; h++) {
		struct sim_host *x = &s->hosts[h];
		for (uint32_t i = 0; i < x->npeers; i++)
			x->peer_rx[i] = peer_index(s, off, pr, x->peer_host[i], h);
	}
	/* Receive buffers of verified flows. */
	for (uint32_t i = 0; i < s->n_flows; i++) {
		struct sim_flow *fl = &s->flows[i];
		if (!fl->rbuf) {
			fl->rkey = s->hosts[fl->dst].sink_key;
			continue;
		}
		if (mrce_mr_add(s->hosts[fl->dst].eng, 1, fl->rbuf, fl->size,
			       MRCE_ACCESS_REMOTE_WRITE, &fl->rkey)) {
			rc = mrc__errf(err, errlen, "engine: memory registration failed");
			goto out;
		}
	}
	/* QP pairs. */
	for (uint32_t c = 0; c < s->n_conns; c++) {
		struct sim_conn *cn = &s->conns[c];
		const struct sim_flow *fl = &s->flows[cn->flow];
		struct sim_host *a = &s->hosts[fl->src], *b = &s->hosts[fl->dst];
		struct mrce_qp_attr attr = { .pd = 1 };
		if (s->cfg.mode == MRC_SIM_ECMP) {
			pair_allowed(s, fl->src, fl->dst, ok, scratch);
			attr.flags = MRCE_QP_PIN_EV;
			attr.pin_ev = ecmp_ev(s, c, ok);
			if (a->evmap) {   /* the engine's index of that EV */
				uint32_t pa0 = peer_index(s, off, pr, fl->src, fl->dst), i = 0;
				while (i + 1 < a->nevmap[pa0] && a->evmap[pa0][i] != attr.pin_ev)
					i++;
				attr.pin_ev = i;
			}
		}
		uint32_t pa = peer_index(s, off, pr, fl->src, fl->dst);
		uint32_t pb = peer_index(s, off, pr, fl->dst, fl->src);
		uint32_t psn_a = (uint32_t)(c * 2654435761u), psn_b = ~psn_a;
		if (mrce_qp_open(a->eng, &attr, &cn->sqpn) ||
		    mrce_qp_open(b->eng, &attr, &cn->dqpn) ||
		    mrce_qp_set_tokens(a->eng, cn->sqpn, sim_token(fl->src, fl->dst, c + 1),
				      sim_token(fl->dst, fl->src, c + 1)) ||
		    mrce_qp_set_tokens(b->eng, cn->dqpn, sim_token(fl->dst, fl->src, c + 1),
				      sim_token(fl->src, fl->dst, c + 1)) ||
		    mrce_qp_connect(a->eng, cn->sqpn, pa, cn->dqpn, psn_a, psn_b) ||
		    mrce_qp_connect(b->eng, cn->dqpn, pb, cn->sqpn, psn_b, psn_a)) {
			rc = mrc__errf(err, errlen, "engine: QP setup failed for flow %u", cn->flow);
			goto out;
		}
		a->qp_conn[cn->sqpn & 0xffff] = c;
		b->qp_conn[cn->dqpn & 0xffff] = c;
	}
out:
	free(pr);
	free(off);
	free(nqp);
	free(nmr);
	free(ok);
	free(scratch);
	return rc;
}

void sim_hosts_free(struct mrc_sim *s)
{
	free(s->engs);
	s->engs = NULL;
	if (!s->hosts)
		return;
	for (uint32_t h = 0; h < s->fab.n_hosts; h++) {
		struct sim_host *x = &s->hosts[h];
		if (x->eng)
			mrce_destroy(x->eng);
		if (x->evmap)
			for (uint32_t i = 0; i < x->npeers; i++)
				free(x->evmap[i]);
		free(x->evmap);
		free(x->nevmap);
		free(x->peer_host);
		free(x->peer_rx);
		free(x->qp_conn);
	}
	free(s->hosts);
	s->hosts = NULL;
}

int sim_host_peer(const struct mrc_sim *s, uint32_t h, uint32_t remote, uint32_t *peer)
{
	if (h >= s->fab.n_hosts)
		return -EINVAL;
	const struct sim_host *x = &s->hosts[h];
	for (uint32_t i = 0; i < x->npeers; i++)
		if (x->peer_host[i] == remote) {
			*peer = i;
			return 0;
		}
	return -ENOENT;
}

/* ---- run time ---------------------------------------------------------- */

static void inject(struct mrc_sim *s, uint32_t h, const struct mrce_tx_pkt *t)
{
	struct sim_host *x = &s->hosts[h];
	struct sim_pkt *k = sim_pkt_alloc(s);
	if (!k) {
		s->drop_noroute++;
		return;
	}
	uint32_t r = x->peer_host[t->peer];
	uint32_t fev = x->evmap ? (t->ev < x->nevmap[t->peer] ? x->evmap[t->peer][t->ev] : UINT32_MAX) :
		       t->ev;
	int n = sim_fabric_route(&s->fab, h, r, fev, k->route);
	if (n <= 0) {
		/* The engine used an EV without a path: it only uses
		 * allowed ones, so this counts a simulator or engine bug. */
		s->drop_noroute++;
		sim_pkt_free(s, k);
		return;
	}
	k->dst = r;
	k->rx_peer = x->peer_rx[t->peer];
	k->hop = 0;
	k->nhops = (uint8_t)n;
	k->hdr_len = (uint8_t)t->hdr_len;
	memcpy(k->hdr, t->hdr, t->hdr_len);
	k->plen = (uint16_t)t->plen;
	k->wire = (uint16_t)(t->hdr_len + t->plen + (t->plen ? MRC_TRAILER_LEN : 0) +
			     s->cfg.frame_overhead);
	if (mrc_op_is_data(t->hdr[1])) {
		k->flags = PF_DATA;
		x->queued++;
	} else {
		k->flags = PF_PRIO;
	}
	if (t->plen) {
		if (t->payload >= s->src_buf && t->payload + t->plen <= s->src_buf + s->src_len) {
			k->poff = (uint32_t)(t->payload - s->src_buf);
			k->flags |= PF_SRC;
		} else if (t->plen <= SIM_INL_MAX && t->hdr_len == SIM_INL_OFF) {
			memcpy(k->hdr + SIM_INL_OFF, t->payload, t->plen);
			k->flags |= PF_INL;
		}
	}
	sim_port_enqueue(s, k->route[0], k);
}

static void host_pull(struct mrc_sim *s, uint32_t h)
{
	struct sim_host *x = &s->hosts[h];
	struct mrce_tx_pkt t;
	while (x->queued < s->nic_limit &&
	       mrce_tx(x->eng, now_ns(s), &t, 1) == 1) {
		if (s->cfg.stalls && mrc_op_is_data(t.hdr[1]))
			sim_stall_end(s, h);
		if (s->health)
			sim_health_tx(s, h, t.peer);
		inject(s, h, &t);
	}
	if (s->cfg.stalls && !x->queued)
		sim_stall_begin(s, h);
}

void sim_host_service(struct mrc_sim *s, uint32_t h)
{
	struct sim_host *x = &s->hosts[h];
	struct mrce_wc wc[32];
	int n;
	while ((n = mrce_wc_drain(x->eng, wc, 32)) > 0) {
		for (int i = 0; i < n; i++) {
			/* wr_id and imm both carry the flow id. */
			if (wc[i].op == MRCE_WC_RECV_WRITE_IMM)
				sim_flow_part_recv(s, wc[i].imm);
			else if (wc[i].op == MRCE_WC_WRITE || wc[i].op == MRCE_WC_WRITE_IMM)
				sim_flow_part_done(s, (uint32_t)wc[i].wr_id, wc[i].status);
		}
	}
	struct mrce_event ev;
	while (mrce_event_pop(x->eng, &ev)) {
		sim_record_event(s, h, &ev);
		sim_health_event(s, h, &ev);
	}
	sim_health_tick(s, h);
	host_pull(s, h);
	uint64_t d = mrce_next_deadline(x->eng);
	if (d != UINT64_MAX) {
		uint64_t t = d * SIM_PS_PER_NS;
		/* A deadline already due runs 1 ns later, so a timer that
		 * does not move forward can never spin at one instant. */
		if (t <= s->now)
			t = s->now + SIM_PS_PER_NS;
		if (x->timer_at == UINT64_MAX || t < x->timer_at) {
			x->timer_at = t;
			sim_schedule(s, t, SE_TIMER, h);
		}
	}
}

void sim_host_timer(struct mrc_sim *s, uint32_t h, uint64_t t)
{
	struct sim_host *x = &s->hosts[h];
	if (t != x->timer_at)
		return;   /* superseded by an earlier one */
	x->timer_at = UINT64_MAX;
	mrce_tick(x->eng, now_ns(s));
	sim_host_service(s, h);
}

void sim_host_nic_free(struct mrc_sim *s, uint32_t h)
{
	if (s->hosts[h].queued < s->nic_limit)
		sim_host_service(s, h);
}

static inline uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void sim_host_rx(struct mrc_sim *s, struct sim_pkt *k)
{
	uint32_t h = k->dst;
	struct sim_host *x = &s->hosts[h];
	uint8_t *b = s->rx_buf;
	size_t len = k->hdr_len;
	memcpy(b, k->hdr, len);
	if (k->plen && (k->flags & (PF_SRC | PF_INL))) {
		memcpy(b + len, (k->flags & PF_SRC) ? s->src_buf + k->poff :
				k->hdr + SIM_INL_OFF, k->plen);
		len += k->plen;
		memset(b + len, 0, MRC_TRAILER_LEN);   /* skip_payload_crc */
		len += MRC_TRAILER_LEN;
	}
	/* Goodput: bytes this packet newly placed (duplicates place none). */
	uint32_t qpn = SIM_NONE, conn = SIM_NONE;
	uint64_t before = 0, after;
	if ((k->flags & PF_DATA) && k->plen) {
		qpn = be32(k->hdr + 4);
		if ((qpn & 0xffff) < x->nqps && !mrce_qp_bytes_placed(x->eng, qpn, &before))
			conn = x->qp_conn[qpn & 0xffff];
	}
	uint32_t flags = (k->flags & PF_ECN) ? MRCE_RX_ECN : 0;
	uint32_t peer = k->rx_peer;
	sim_pkt_free(s, k);
	mrce_rx(x->eng, now_ns(s), peer, b, len, flags);
	if (conn != SIM_NONE && !mrce_qp_bytes_placed(x->eng, qpn, &after) && after > before)
		sim_goodput_add(s, s->conns[conn].flow, after - before);
	if (!s->rx_batch) {
		sim_host_service(s, h);
		return;
	}
	if (x->rx_open)
		return;
	x->rx_open = 1;
	/* A window's end is a fixed delay after now: a FIFO of the event
	 * queue, like arrivals.  A same-instant batch ends when the run
	 * leaves this instant (mrc_sim_run): no event per arrival. */
	if (s->cfg.rx_batch_ns)
		sim_schedule_in(s, s->cfg.rx_batch_ns * SIM_PS_PER_NS, SE_RXEND, h);
	else
		s->rxq[s->n_rxq++] = h;
}

void sim_host_rx_flush(struct mrc_sim *s)
{
	/* In the order the batches opened; a service cannot open another
	 * (it only sends), so the list does not grow meanwhile. */
	for (uint32_t i = 0; i < s->n_rxq; i++) {
		s->hosts[s->rxq[i]].rx_open = 0;
		sim_host_service(s, s->rxq[i]);
	}
	s->n_rxq = 0;
}

void sim_host_rx_end(struct mrc_sim *s, uint32_t h)
{
	s->hosts[h].rx_open = 0;
	sim_host_service(s, h);
}

void sim_host_plane_link(struct mrc_sim *s, uint32_t h, uint32_t plane, int down)
{
	struct sim_host *x = &s->hosts[h];
	if (!x->eng)
		return;
	if (down)
		x->denied_planes |= (uint16_t)(1u << plane);
	else
		x->denied_planes &= (uint16_t)~(1u << plane);
	/* Only the pair's usable EVs of the plane: EVs without a path (or
	 * outside the pair's subset) stay DENIED across the flap. */
	uint8_t *ok = malloc(s->fab.nev);
	uint16_t *scratch = malloc(s->fab.nev * sizeof(*scratch));
	for (uint32_t i = 0; x->evmap && i < x->npeers; i++) {
		for (uint32_t j = 0; j < x->nevmap[i]; j++)
			if (s->fab.plane_of_ev[x->evmap[i][j]] == plane)
				mrce_ev_set_denied(x->eng, now_ns(s), i, j, down);
		struct mrce_event e;
		while (mrce_event_pop(x->eng, &e))
			sim_record_event(s, h, &e);
	}
	for (uint32_t i = 0; !x->evmap && ok && scratch && i < x->npeers; i++) {
		pair_allowed(s, h, x->peer_host[i], ok, scratch);
		for (uint32_t ev = 0; ev < s->fab.nev; ev++)
			if (ok[ev] && s->fab.plane_of_ev[ev] == plane)
				mrce_ev_set_denied(x->eng, now_ns(s), i, ev, down);
		struct mrce_event e;   /* drain per peer: the queue is small */
		while (mrce_event_pop(x->eng, &e))
			sim_record_event(s, h, &e);
	}
	free(ok);
	free(scratch);
	sim_host_service(s, h);
}
