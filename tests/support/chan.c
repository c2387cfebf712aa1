/* In-memory multipath network for engine tests; see chan.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/chan.h"
#include "transport/timers.h"

#define CHAN_SMALL_CAP 128      /* control packets and atomics */
#define CHAN_TX_BATCH  64
#define CHAN_RX_BATCH  64       /* deliveries between two tx drains */

struct chan_pkt {
	struct chan_pkt *next;  /* free list */
	uint64_t t;             /* delivery time */
	uint32_t src, dst;
	uint32_t len, plen, rx_flags;
	uint16_t ev;
	uint8_t big;
	uint8_t corrupt;        /* a bit flip every check must catch */
	uint8_t buf[];
};

void chan_cfg_default(struct chan_cfg *cfg, uint64_t seed)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->nodes = 2;
	cfg->nev = 8;
	cfg->planes = 2;
	cfg->seed = seed;
	mrce_cfg_default(&cfg->ecfg);
	cfg->ecfg.require_tokens = 1;   /* as authenticated daemons run */
	cfg->delay_min = 5000;
	cfg->delay_max = 20000;
	cfg->keep_logs = 1;
}

/* ---- packet pool and heap ------------------------------------------- */

static struct chan_pkt *pkt_get(struct chan *ch, size_t len)
{
	int big = len > CHAN_SMALL_CAP;
	struct chan_pkt **fl = big ? &ch->free_big : &ch->free_small;
	struct chan_pkt *p = *fl;

	if (len > ch->big_cap) {
		fprintf(stderr, "chan: engine handed over a %zu-byte packet, above "
			"header + mtu + trailer (%zu)\n", len, ch->big_cap);
		abort();
	}
	if (p) {
		*fl = p->next;
	} else {
		p = malloc(sizeof(*p) + (big ? ch->big_cap : CHAN_SMALL_CAP));
		if (!p)
			abort();
	}
	p->big = (uint8_t)big;
	return p;
}

static void pkt_put(struct chan *ch, struct chan_pkt *p)
{
	struct chan_pkt **fl = p->big ? &ch->free_big : &ch->free_small;
	p->next = *fl;
	*fl = p;
}

static void heap_push(struct chan *ch, struct chan_pkt *p)
{
	struct mrc__heap_ent x = { .t = p->t, .key = ch->seq++, .v.p = p };
	if (mrc__heap_push(&ch->heap, &x))
		abort();
}

static struct chan_pkt *heap_pop(struct chan *ch)
{
	struct mrc__heap_ent x;
	mrc__heap_pop(&ch->heap, &x);
	return x.v.p;
}

/* ---- setup ------------------------------------------------------------ */

int chan_create(const struct chan_cfg *cfg, struct chan **out, const char **why)
{
	const char *dummy;
	struct chan *ch;
	int rc;

	if (!why)
		why = &dummy;
	*why = NULL;
	if (cfg->nodes < 2 || cfg->nodes > CHAN_MAX_NODES || cfg->nev == 0 ||
	    cfg->nev > MRCE_MAX_EVS || cfg->planes == 0 || cfg->planes > MRCE_MAX_PLANES ||
	    cfg->delay_min > cfg->delay_max) {
		*why = "chan: bad channel config";
		return -EINVAL;
	}
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	if (mrc__heap_init(&ch->heap, 1024)) {
		free(ch);
		return -ENOMEM;
	}
	ch->cfg = *cfg;
	ch->now = CHAN_T0;
	mrc_rng_seed(&ch->rng, cfg->seed);
	uint32_t mtu = cfg->ecfg.mtu > 64 ? cfg->ecfg.mtu : 64;
	ch->big_cap = MRCE_TX_HDR_MAX + mtu + MRC_TRAILER_LEN;

	size_t npaths = (size_t)cfg->nodes * cfg->nodes * cfg->nev;
	ch->paths = calloc(npaths, sizeof(*ch->paths));
	ch->plane_of = calloc(cfg->nev, 1);
	ch->ev_tx_bytes = calloc(cfg->nev, sizeof(uint64_t));
	ch->ev_rx_bytes = calloc(cfg->nev, sizeof(uint64_t));
	if (!ch->paths || !ch->plane_of || !ch->ev_tx_bytes || !ch->ev_rx_bytes) {
		chan_destroy(ch);
		return -ENOMEM;
	}
	for (uint32_t ev = 0; ev < cfg->nev; ev++)
		ch->plane_of[ev] = (uint8_t)(ev % cfg->planes);
	for (size_t i = 0; i < npaths; i++)
		ch->paths[i].cfg = cfg->path;
	/* Symmetric per-EV delays: the ACK of EV e comes back on EV e. */
	if (cfg->delay_max > 0) {
		for (uint32_t a = 0; a < cfg->nodes; a++)
			for (uint32_t b = a + 1; b < cfg->nodes; b++)
				for (uint32_t ev = 0; ev < cfg->nev; ev++) {
					uint64_t d = mrc_rng_range(&ch->rng, cfg->delay_min,
								    cfg->delay_max);
					chan_path(ch, a, b, ev)->cfg.delay_ns = d;
					chan_path(ch, b, a, ev)->cfg.delay_ns = d;
				}
	}
	for (uint32_t i = 0; i < cfg->nodes; i++) {
		struct mrce_cfg ec = cfg->ecfg;
		if (cfg->node_rnr_delay_ns[i])
			ec.rnr_delay_ns = cfg->node_rnr_delay_ns[i];
		rc = mrce_create(&ec, &ch->node[i].e, why);
		if (rc < 0) {
			chan_destroy(ch);
			return rc;
		}
	}
	for (uint32_t i = 0; i < cfg->nodes; i++)
		for (uint32_t j = 0; j < cfg->nodes; j++) {
			ch->node[i].peer[j] = UINT32_MAX;
			if (i == j)
				continue;
			rc = mrce_peer_add(ch->node[i].e, cfg->nev, ch->plane_of,
					  &ch->node[i].peer[j]);
			if (rc == 0)
				rc = mrce_peer_set_probe_tokens(ch->node[i].e,
					ch->node[i].peer[j], chan_probe_token(ch, i, j),
					chan_probe_token(ch, j, i));
			if (rc < 0) {
				*why = "chan: mrce_peer_add failed";
				chan_destroy(ch);
				return rc;
			}
		}
	*out = ch;
	return 0;
}

static void free_list(struct chan_pkt *p)
{
	while (p) {
		struct chan_pkt *n = p->next;
		free(p);
		p = n;
	}
}

void chan_destroy(struct chan *ch)
{
	if (!ch)
		return;
	for (uint32_t i = 0; i < CHAN_MAX_NODES; i++) {
		if (ch->node[i].e)
			mrce_destroy(ch->node[i].e);
		free(ch->node[i].wc);
		free(ch->node[i].evt);
	}
	for (size_t i = 0; i < ch->heap.n; i++)
		free(ch->heap.e[i].v.p);
	mrc__heap_free(&ch->heap);
	free_list(ch->free_small);
	free_list(ch->free_big);
	free(ch->paths);
	free(ch->plane_of);
	free(ch->ev_tx_bytes);
	free(ch->ev_rx_bytes);
	free(ch);
}

void chan_set_all(struct chan *ch, const struct chan_path_cfg *cfg, int keep_delay)
{
	size_t npaths = (size_t)ch->cfg.nodes * ch->cfg.nodes * ch->cfg.nev;
	for (size_t i = 0; i < npaths; i++) {
		uint64_t d = ch->paths[i].cfg.delay_ns;
		ch->paths[i].cfg = *cfg;
		if (keep_delay)
			ch->paths[i].cfg.delay_ns = d;
	}
}

void chan_blackhole_ev(struct chan *ch, uint32_t a, uint32_t b, uint32_t ev,
		       uint64_t from, uint64_t until)
{
	struct chan_path *p = chan_path(ch, a, b, ev), *q = chan_path(ch, b, a, ev);
	p->cfg.bh_from = q->cfg.bh_from = from;
	p->cfg.bh_until = q->cfg.bh_until = until;
}

void chan_blackhole_plane(struct chan *ch, uint32_t plane, uint64_t from, uint64_t until)
{
	for (uint32_t a = 0; a < ch->cfg.nodes; a++)
		for (uint32_t b = a + 1; b < ch->cfg.nodes; b++)
			for (uint32_t ev = 0; ev < ch->cfg.nev; ev++)
				if (ch->plane_of[ev] == plane)
					chan_blackhole_ev(ch, a, b, ev, from, until);
}

void chan_blackhole_all(struct chan *ch, uint64_t from, uint64_t until)
{
	for (uint32_t p = 0; p < ch->cfg.planes; p++)
		chan_blackhole_plane(ch, p, from, until);
}

uint64_t chan_max_rtt(const struct chan *ch)
{
	uint64_t m = 0;
	size_t npaths = (size_t)ch->cfg.nodes * ch->cfg.nodes * ch->cfg.nev;
	for (size_t i = 0; i < npaths; i++) {
		uint64_t d = ch->paths[i].cfg.delay_ns + ch->paths[i].cfg.jitter_ns;
		if (d > m)
			m = d;
	}
	return 2 * m;
}

/* Tokens stand in for what auth/ derives: a function of the seed and the
 * endpoints, so they take nothing from the channel's random stream. */
static uint64_t token_mix(uint64_t seed, uint64_t x, uint64_t y)
{
	uint64_t s = seed ^ (x * 0x9e3779b97f4a7c15ull) ^ (y * 0xc2b2ae3d27d4eb4full);
	uint64_t t = mrc_splitmix64(&s);
	return t ? t : 1;
}

uint64_t chan_probe_token(const struct chan *ch, uint32_t from, uint32_t to)
{
	return token_mix(ch->cfg.seed, from, (uint64_t)to << 32 | 0x9b0e);
}

uint64_t chan_qp_token(const struct chan *ch, uint32_t from, uint32_t from_qpn,
		       uint32_t to, uint32_t to_qpn)
{
	return token_mix(ch->cfg.seed, (uint64_t)from << 32 | from_qpn,
			 (uint64_t)to << 32 | to_qpn);
}

int chan_qp_pair(struct chan *ch, uint32_t a, uint32_t b, const struct mrce_qp_attr *aa,
		 const struct mrce_qp_attr *ab, uint32_t *qa, uint32_t *qb)
{
	uint32_t psn[2];
	int rc;

	for (int i = 0; i < 2; i++)
		psn[i] = mrc_rng_chance(&ch->rng, 0.5)
			 ? (uint32_t)(UINT32_MAX - mrc_rng_below(&ch->rng, 2000))
			 : (uint32_t)mrc_rng_next(&ch->rng);
	rc = mrce_qp_open(ch->node[a].e, aa, qa);
	if (rc < 0)
		return rc;
	rc = mrce_qp_open(ch->node[b].e, ab, qb);
	if (rc < 0)
		return rc;
	uint64_t ab_tok = chan_qp_token(ch, a, *qa, b, *qb);
	uint64_t ba_tok = chan_qp_token(ch, b, *qb, a, *qa);
	rc = mrce_qp_set_tokens(ch->node[a].e, *qa, ab_tok, ba_tok);
	if (rc == 0)
		rc = mrce_qp_set_tokens(ch->node[b].e, *qb, ba_tok, ab_tok);
	if (rc < 0)
		return rc;
	rc = mrce_qp_connect(ch->node[a].e, *qa, ch->node[a].peer[b], *qb, psn[0], psn[1]);
	if (rc < 0)
		return rc;
	return mrce_qp_connect(ch->node[b].e, *qb, ch->node[b].peer[a], *qa, psn[1], psn[0]);
}

/* ---- the network ------------------------------------------------------ */

static uint32_t node_of_peer(const struct chan *ch, uint32_t src, uint32_t peer)
{
	for (uint32_t j = 0; j < ch->cfg.nodes; j++)
		if (j != src && ch->node[src].peer[j] == peer)
			return j;
	return UINT32_MAX;
}

static void flip_bit(struct chan *ch, struct chan_pkt *p)
{
	uint64_t bit = mrc_rng_below(&ch->rng, (uint64_t)p->len * 8);
	/* The header CRC deliberately excludes a data packet's TRIMMED bit
	 * (switches set it); a flip there is a legal-looking trim, not
	 * corruption the CRCs must catch. */
	int trim_bit = bit == 3 * 8 + 3 && mrc_op_is_data(p->buf[1]);
	p->buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	p->corrupt = !trim_bit;
	ch->st.corrupted++;
}

static void hand_over(struct chan *ch, uint32_t src, const struct mrce_tx_pkt *tp)
{
	uint32_t dst = node_of_peer(ch, src, tp->peer);
	size_t len = mrce_tx_pkt_len(tp);

	if (dst == UINT32_MAX || tp->ev >= ch->cfg.nev || tp->hdr_len > MRCE_TX_HDR_MAX) {
		fprintf(stderr, "chan: node %u sent to unknown peer %u / ev %u / hdr_len %u\n",
			src, tp->peer, tp->ev, tp->hdr_len);
		abort();
	}
	struct chan_pkt *p = pkt_get(ch, len);
	mrce_tx_pkt_copy(tp, p->buf);
	p->src = src;
	p->dst = dst;
	p->ev = tp->ev;
	p->len = (uint32_t)len;
	p->rx_flags = ch->cfg.rx_flags;
	p->corrupt = 0;
	int data = mrc_op_is_data(tp->hdr[1]);
	p->plen = data ? tp->plen : 0;

	struct chan_path *path = chan_path(ch, src, dst, tp->ev);
	struct chan_path_cfg *c = &path->cfg;
	uint8_t plane = ch->plane_of[tp->ev];
	ch->st.handed++;
	path->tx_pkts++;
	path->tx_bytes += p->plen;
	ch->ev_tx_bytes[tp->ev] += p->plen;
	ch->plane_tx_bytes[plane] += p->plen;
	ch->plane_tx_pkts[plane]++;
	ch->hold_ns = 0;
	if (ch->on_tx)
		ch->on_tx(ch, src, dst, tp->ev, p->buf, len, ch->hook_arg);
	uint64_t hold = ch->hold_ns;

	if (ch->now >= c->bh_from && ch->now < c->bh_until) {
		ch->st.blackholed++;
		pkt_put(ch, p);
		return;
	}
	if (mrc_rng_chance(&ch->rng, c->loss)) {
		ch->st.lost++;
		pkt_put(ch, p);
		return;
	}
	uint64_t depart = ch->now;
	if (c->rate > 0) {
		uint64_t queued = path->busy_until > ch->now
			? (uint64_t)((double)(path->busy_until - ch->now) * c->rate) : 0;
		if (queued > ch->st.max_queued)
			ch->st.max_queued = queued;
		if (c->q_drop && queued + len > c->q_drop) {
			ch->st.q_dropped++;
			pkt_put(ch, p);
			return;
		}
		if (c->q_trim && queued > c->q_trim && p->plen) {
			p->len = (uint32_t)mrce_wire_trim(p->buf, p->len);
			p->plen = 0;
			ch->st.trimmed++;
		}
		if (c->q_ecn && queued > c->q_ecn) {
			p->rx_flags |= MRCE_RX_ECN;
			ch->st.ecn_marked++;
		}
		uint64_t start = path->busy_until > ch->now ? path->busy_until : ch->now;
		path->busy_until = start + (uint64_t)((double)p->len / c->rate + 0.999);
		depart = path->busy_until;
	}
	if (p->plen && mrc_rng_chance(&ch->rng, c->trim)) {
		p->len = (uint32_t)mrce_wire_trim(p->buf, p->len);
		p->plen = 0;
		ch->st.trimmed++;
	}
	if (mrc_rng_chance(&ch->rng, c->corrupt))
		flip_bit(ch, p);
	if (mrc_rng_chance(&ch->rng, c->ecn) && !(p->rx_flags & MRCE_RX_ECN)) {
		p->rx_flags |= MRCE_RX_ECN;
		ch->st.ecn_marked++;
	}
	p->t = depart + hold + c->delay_ns + mrc_rng_below(&ch->rng, c->jitter_ns);
	if (mrc_rng_chance(&ch->rng, c->dup)) {
		struct chan_pkt *d = pkt_get(ch, p->len);
		memcpy(d, p, sizeof(*p) + p->len);
		d->big = p->len > CHAN_SMALL_CAP;
		d->t = depart + c->delay_ns + mrc_rng_below(&ch->rng, c->jitter_ns + 1000);
		ch->st.dups++;
		heap_push(ch, d);
	}
	heap_push(ch, p);
}

static void deliver(struct chan *ch, struct chan_pkt *p)
{
	struct chan_node *n = &ch->node[p->dst];
	struct chan_path *path = chan_path(ch, p->src, p->dst, p->ev);

	ch->st.delivered++;
	path->rx_pkts++;
	path->rx_bytes += p->plen;
	ch->ev_rx_bytes[p->ev] += p->plen;
	ch->plane_rx_bytes[ch->plane_of[p->ev]] += p->plen;
	int r;
	uint32_t pl = p->len >= 16 ? (uint32_t)p->buf[14] << 8 | p->buf[15] : 0;
	if (ch->cfg.split && p->len >= 2 && mrc_op_is_data(p->buf[1]) && pl &&
	    p->len > pl + MRC_TRAILER_LEN) {
		/* as mrcd's local.c hands it over: the header, and the payload
		 * from elsewhere (a copy, so nothing reads it next to the header) */
		static uint8_t apart[MRC_MAX_PAYLOAD];
		uint32_t hl = p->len - pl - MRC_TRAILER_LEN;
		memcpy(apart, p->buf + hl, pl);
		r = mrce_rx_split(n->e, ch->now, n->peer[p->src], p->buf, hl, apart, pl,
				  p->rx_flags);
	} else {
		r = mrce_rx(n->e, ch->now, n->peer[p->src], p->buf, p->len, p->rx_flags);
	}
	if (r < 0)
		n->rx_err++;
	else if (p->corrupt)
		ch->st.corrupt_accepted++;
	pkt_put(ch, p);
}

static void log_push(void **arr, size_t *n, size_t *cap, const void *x, size_t sz)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 256;
		*arr = realloc(*arr, *cap * sz);
		if (!*arr)
			abort();
	}
	memcpy((char *)*arr + *n * sz, x, sz);
	(*n)++;
}

void chan_pump(struct chan *ch)
{
	struct mrce_tx_pkt pk[CHAN_TX_BATCH];
	struct mrce_wc wc[32];
	struct mrce_event ev;

	for (uint32_t i = 0; i < ch->cfg.nodes; i++) {
		struct chan_node *n = &ch->node[i];
		int k, rounds = 0;

		while ((k = mrce_tx(n->e, ch->now, pk, CHAN_TX_BATCH)) > 0) {
			for (int j = 0; j < k; j++)
				hand_over(ch, i, &pk[j]);
			if (++rounds > 1000000) {
				fprintf(stderr, "chan: node %u never stops transmitting\n", i);
				abort();
			}
		}
		while ((k = mrce_wc_drain(n->e, wc, 32)) > 0)
			for (int j = 0; j < k; j++) {
				n->wc_total++;
				if (ch->cfg.keep_logs)
					log_push((void **)&n->wc, &n->nwc, &n->wc_cap, &wc[j],
						 sizeof(wc[j]));
				if (ch->on_wc)
					ch->on_wc(ch, i, &wc[j], ch->hook_arg);
			}
		while (mrce_event_pop(n->e, &ev) > 0) {
			n->evt_total++;
			if (ch->cfg.keep_logs)
				log_push((void **)&n->evt, &n->nevt, &n->evt_cap, &ev, sizeof(ev));
			if (ch->on_evt)
				ch->on_evt(ch, i, &ev, ch->hook_arg);
		}
	}
}

int chan_run(struct chan *ch, chan_pred_fn done, void *arg, uint64_t max_ns,
	     uint64_t max_steps)
{
	uint64_t t_end = ch->now + max_ns, steps = 0;
	const char *why;
	int rc;

	for (;;) {
		chan_pump(ch);
		if (done && done(ch, arg))
			return 0;
		if (steps++ >= max_steps) {
			rc = -E2BIG;
			why = "step bound reached";
			break;
		}
		uint64_t t = ch->heap.n ? ch->heap.e[0].t : UINT64_MAX;
		for (uint32_t i = 0; i < ch->cfg.nodes; i++) {
			/* The engine's timer heap against a scan of every QP
			 * and peer (transport/timers.c): no key stale. */
			if (mrce__timers_check(ch->node[i].e)) {
				rc = -EPROTO;
				why = "engine timer heap out of step with its QPs";
				goto out;
			}
			uint64_t d = mrce_next_deadline(ch->node[i].e);
			if (d < t)
				t = d;
		}
		if (t == UINT64_MAX || t > t_end) {
			if (!done) {
				ch->now = t_end;
				return 0;
			}
			rc = t == UINT64_MAX ? -EDEADLK : -ETIMEDOUT;
			why = t == UINT64_MAX ? "nothing pending, predicate still false"
					      : "virtual-time bound reached";
			break;
		}
		if (t > ch->now)
			ch->now = t;
		ch->steps++;
		for (int k = 0; k < CHAN_RX_BATCH && ch->heap.n && ch->heap.e[0].t <= ch->now; k++)
			deliver(ch, heap_pop(ch));
		for (uint32_t i = 0; i < ch->cfg.nodes; i++)
			if (mrce_next_deadline(ch->node[i].e) <= ch->now)
				mrce_tick(ch->node[i].e, ch->now);
	}
out:
	fprintf(stderr, "chan_run: %s (seed %" PRIu64 ", %" PRIu64 " steps)\n", why,
		ch->cfg.seed, steps);
	chan_dump(ch, stderr);
	return rc;
}

