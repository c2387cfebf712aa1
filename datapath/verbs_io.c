/* The verbs datapath's packet path (see verbs.h, verbs_int.h): UD sends
 * with one address handle per destination address (in SRv6 mode, per
 * uSID path), receives from the registered pool with the source address
 * and ECN mark read from the GRH, the peer QP table, and the regions a
 * payload may be sent from without a copy. */
#include "datapath/datapath.h"

#ifdef MRC_HAVE_VERBS
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "datapath/verbs_int.h"

/* ---- the address handle cache (set-associative) ---------------------- */

/* A multiplicative hash of both halves: uSID paths differ in the middle
 * bytes of the address, so every byte must count. */
static uint32_t hash_of(const struct in6_addr *a)
{
	uint64_t w[2];
	memcpy(w, a, 16);
	return (uint32_t)(((w[0] ^ (w[1] * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull) >> 32);
}

static struct mrc__vent *set_of(struct mrc__vent *t, uint32_t sets, const struct in6_addr *a)
{
	return &t[(hash_of(a) % sets) * MRC__VERBS_WAYS];
}

static struct mrc__vent *lookup(struct mrc__dp_verbs_dp *dp, struct mrc__vent *t,
				const struct in6_addr *a)
{
	struct mrc__vent *s = set_of(t, dp->sets, a);
	for (int w = 0; w < MRC__VERBS_WAYS; w++)
		if (s[w].valid && !memcmp(&s[w].key, a, 16)) {
			s[w].used = ++dp->clock;
			return &s[w];
		}
	return NULL;
}

/* The way a new entry for a takes: a free one, else the least recent. */
static struct mrc__vent *victim(struct mrc__dp_verbs_dp *dp, struct mrc__vent *t,
				const struct in6_addr *a)
{
	struct mrc__vent *s = set_of(t, dp->sets, a), *v = &s[0];
	for (int w = 0; w < MRC__VERBS_WAYS; w++) {
		if (!s[w].valid)
			return &s[w];
		if (s[w].used < v->used)
			v = &s[w];
	}
	return v;
}

/* ---- peer QP numbers (verbs_int.h, struct mrc__vpeers) ----------------- */

/* The slot of a, or the empty slot where it would go. */
static struct mrc__vpeer *peer_slot(const struct mrc__vpeers *t, const struct in6_addr *a)
{
	uint32_t i = hash_of(a) & (t->cap - 1);
	while (t->t[i].used && memcmp(&t->t[i].key, a, 16))
		i = (i + 1) & (t->cap - 1);
	return &t->t[i];
}

int mrc__dp_verbs_peers_init(struct mrc__vpeers *t)
{
	*t = (struct mrc__vpeers){ .cap = 64 };
	t->t = calloc(t->cap, sizeof(*t->t));
	return t->t ? 0 : -ENOMEM;
}

static int peers_grow(struct mrc__vpeers *t)
{
	struct mrc__vpeers g = { .cap = t->cap * 2, .n = t->n, .learned = t->learned };
	if (!(g.t = calloc(g.cap, sizeof(*g.t))))
		return -ENOMEM;
	for (uint32_t i = 0; i < t->cap; i++)
		if (t->t[i].used)
			*peer_slot(&g, &t->t[i].key) = t->t[i];
	free(t->t);
	*t = g;
	return 0;
}

/* Sets a's QP number; learned: from a received packet (capped). */
static int peer_put(struct mrc__dp_verbs_dp *dp, struct mrc__vpeers *t, const struct in6_addr *a,
		    uint32_t qpn, int learned)
{
	struct mrc__vpeer *e = peer_slot(t, a);
	if (!e->used) {
		if (learned && t->learned >= dp->sets * MRC__VERBS_WAYS)
			return -ENOSPC;
		if (2 * (t->n + 1) > t->cap) {
			int rc = peers_grow(t);
			if (rc)
				return rc;
			e = peer_slot(t, a);
		}
		*e = (struct mrc__vpeer){ .key = *a, .used = 1 };
		t->n++;
		t->learned += learned != 0;
	} else if (learned && e->set) {
		return 0;
	}
	e->set |= !learned;
	e->qpn = qpn;
	return 0;
}

static uint32_t peer_get(const struct mrc__vpeers *t, const struct in6_addr *a)
{
	const struct mrc__vpeer *e = peer_slot(t, a);
	return e->used ? e->qpn : 0;
}

int mrc__dp_verbs_set_peer(struct mrc_dp *base, uint32_t plane, const struct in6_addr *dst,
			   uint32_t qpn)
{
	struct mrc__dp_verbs_dp *dp = (struct mrc__dp_verbs_dp *)base;
	if (plane >= dp->n || qpn > 0xffffff)
		return -EINVAL;
	return peer_put(dp, &dp->pl[plane].peers, dst, qpn, 0);
}

int mrc__dp_verbs_ep_set(struct mrc_dp *dp, uint32_t plane, const struct in6_addr *dst, uint32_t ep)
{
	return mrc__dp_verbs_set_peer(dp, plane, dst, ep);
}

int mrc__dp_verbs_ep_local(const struct mrc_dp *base, uint32_t plane, uint32_t *ep)
{
	const struct mrc__dp_verbs_dp *dp = (const struct mrc__dp_verbs_dp *)base;
	if (plane >= dp->n)
		return -EINVAL;
	*ep = dp->pl[plane].qp->qp_num;
	return 0;
}

/* ---- send ----------------------------------------------------------- */

/* Retires send completions, freeing bounce slots. */
static void reap(struct mrc__dp_verbs_dp *dp, struct mrc__vplane *p)
{
	struct ibv_wc wc[MRC_DP_BATCH];
	int n;
	while (p->tx_done < p->tx_posted && (n = dp->ops->poll_cq(p->scq, MRC_DP_BATCH, wc)) > 0) {
		for (int i = 0; i < n; i++)
			if (wc[i].status != IBV_WC_SUCCESS) {
				dp->x.tx_wc_err++;
				dp->st.tx_errs++;
			}
		p->tx_done += (uint64_t)n;
	}
}

static uint32_t post_chain(struct mrc__dp_verbs_dp *dp, struct mrc__vplane *p, struct mrc__vchain *c)
{
	/* Retiring completions here too counts send errors promptly; polling
	 * an empty CQ costs a load or two. */
	reap(dp, p);
	if (!c->n)
		return 0;
	for (uint32_t i = 0; i + 1 < c->n; i++)
		c->wr[i].next = &c->wr[i + 1];
	c->wr[c->n - 1].next = NULL;
	struct ibv_send_wr *bad = NULL;
	uint32_t ok = c->n;
	if (dp->ops->post_send(p->qp, c->wr, &bad)) {
		/* Everything from bad on was not posted: give its slots back. */
		ok = bad ? (uint32_t)(bad - c->wr) : 0;
		dp->st.tx_errs += c->n - ok;
		p->tx_posted -= c->n - ok;
	}
	for (uint32_t i = 0; i < ok; i++)
		for (int s = 0; s < c->wr[i].num_sge; s++)
			dp->st.tx_bytes += c->wr[i].sg_list[s].length;
	dp->st.tx_pkts += ok;
	c->n = 0;
	return ok;
}

/* The address handle for dst, made on first use (the NIC resolves the
 * next hop's MAC when the AH is created; the GID is the whole uSID
 * destination, so each path gets its own).  Evicting a handle first waits
 * for the sends that name it, which the pending chain may hold. */
static struct mrc__vent *ah_get(struct mrc__dp_verbs_dp *dp, struct mrc__vplane *p,
				const struct in6_addr *dst, struct mrc__vchain *c, uint32_t *sent)
{
	struct mrc__vent *e = lookup(dp, p->ah, dst);
	if (e)
		return e;
	e = victim(dp, p->ah, dst);
	if (e->valid) {
		if (e->last_seq > p->tx_done) {
			*sent += post_chain(dp, p, c);
			/* bounded: a NIC completes a send in microseconds */
			for (long spin = 0; spin < 1000000 && e->last_seq > p->tx_done; spin++)
				reap(dp, p);
			if (e->last_seq > p->tx_done)
				return NULL;
		}
		dp->ops->destroy_ah(e->ah);
		e->valid = 0;
		dp->x.ah_evicted++;
	}
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = p->port,
		.grh = { .sgid_index = (uint8_t)p->gid_index, .hop_limit = 64,
			 /* ECT(0): switches mark instead of dropping */
			 .traffic_class = 0x02 } };
	memcpy(aa.grh.dgid.raw, dst, 16);
	struct ibv_ah *ah = dp->ops->create_ah(p->pd, &aa);
	if (!ah)
		return NULL;
	*e = (struct mrc__vent){ .key = *dst, .valid = 1, .used = ++dp->clock, .ah = ah };
	dp->x.ah_created++;
	return e;
}

void mrc__dp_verbs_drop_ahs(struct mrc__dp_verbs_dp *dp, struct mrc__vplane *p)
{
	for (size_t i = 0; i < (size_t)dp->sets * MRC__VERBS_WAYS; i++)
		if (p->ah[i].valid) {
			dp->ops->destroy_ah(p->ah[i].ah);
			p->ah[i].valid = 0;
		}
}

/* The registered region holding all of [b, b+len), or NULL.  A linear
 * scan: regions are few (one per client registration, at most 32). */
static struct mrc__vregion *region_of(struct mrc__dp_verbs_dp *dp, const void *b, size_t len)
{
	uintptr_t a = (uintptr_t)b;
	for (int r = 0; r < MRC__VERBS_MAX_REGIONS; r++) {
		struct mrc__vregion *g = &dp->reg[r];
		if (g->used && a >= g->addr && len <= g->len && a - g->addr <= g->len - len)
			return g;
	}
	return NULL;
}

/* Fills one WR for o in the next bounce slot: the payload (iov[1]) as its
 * own SGE when a registered region holds it, the other pieces copied into
 * the slot (one SGE per run of copied pieces: SGEs gather in order). */
static void build(struct mrc__dp_verbs_dp *dp, struct mrc__vplane *p, const struct mrc_dp_out *o,
		  struct ibv_ah *ah, uint32_t qpn, struct mrc__vchain *c)
{
	uint32_t k = c->n++;
	uint8_t *slot = p->sbuf + (size_t)(p->tx_posted % dp->tx_depth) * p->mtu;
	struct ibv_sge *sg = c->sge[k], *cur = NULL;
	struct mrc__vregion *g = o->iovcnt >= 2 && o->iov[1].iov_len ?
		region_of(dp, o->iov[1].iov_base, o->iov[1].iov_len) : NULL;
	int nsge = 0;
	size_t off = 0;
	for (uint32_t i = 0; i < o->iovcnt; i++) {
		size_t len = o->iov[i].iov_len;
		if (!len)
			continue;
		if (i == 1 && g) {
			sg[nsge++] = (struct ibv_sge){ .addr = (uintptr_t)o->iov[1].iov_base,
				.length = (uint32_t)len, .lkey = g->mr[p - dp->pl]->lkey };
			cur = NULL;
			continue;
		}
		if (!cur) {
			cur = &sg[nsge++];
			*cur = (struct ibv_sge){ .addr = (uintptr_t)(slot + off), .lkey = p->smr->lkey };
		}
		memcpy(slot + off, o->iov[i].iov_base, len);
		cur->length += (uint32_t)len;
		off += len;
	}
	if (g) {
		g->last_seq[p - dp->pl] = p->tx_posted + 1;   /* this send's */
		dp->x.zero_copy++;
	} else
		dp->x.copied++;
	c->wr[k] = (struct ibv_send_wr){ .wr_id = p->tx_posted, .sg_list = sg, .num_sge = nsge,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		.wr.ud = { .ah = ah, .remote_qpn = qpn, .remote_qkey = MRC__VERBS_QKEY } };
	p->tx_posted++;
}

static int send_one(struct mrc__dp_verbs_dp *dp, const struct mrc_dp_out *o, struct mrc__vchain *c,
		    uint32_t *sent)
{
	struct mrc__vplane *p = &dp->pl[o->plane];
	size_t len = 0;
	for (uint32_t i = 0; i < o->iovcnt; i++)
		len += o->iov[i].iov_len;
	if (len > p->mtu) {
		dp->x.too_big++;
		return -EMSGSIZE;
	}
	uint32_t qpn = peer_get(&p->peers, &o->dst);
	if (!qpn) {
		dp->x.no_qpn++;
		return -EHOSTUNREACH;
	}
	struct mrc__vent *ah = ah_get(dp, p, &o->dst, c, sent);
	if (!ah)
		return -EHOSTUNREACH;
	if (p->tx_posted - p->tx_done >= dp->tx_depth)
		reap(dp, p);
	if (p->tx_posted - p->tx_done >= dp->tx_depth) {
		/* Every slot is still on the wire: the NIC is the bottleneck. */
		dp->st.tx_eagain++;
		return -EAGAIN;
	}
	build(dp, p, o, ah->ah, qpn, c);
	ah->last_seq = p->tx_posted;   /* done once tx_done reaches it */
	return 0;
}

int mrc__dp_verbs_send(struct mrc_dp *base, const struct mrc_dp_out *pkts, uint32_t n)
{
	struct mrc__dp_verbs_dp *dp = (struct mrc__dp_verbs_dp *)base;
	struct mrc__vchain *ch = dp->chain;
	uint32_t sent = 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct mrc_dp_out *o = &pkts[i];
		if (o->plane >= dp->n || o->iovcnt > 3) {
			dp->st.tx_errs++;
			continue;
		}
		struct mrc__vchain *c = &ch[o->plane];
		int rc = send_one(dp, o, c, &sent);
		if (rc && rc != -EAGAIN)
			dp->st.tx_errs++;
		if (c->n == MRC_DP_BATCH)
			sent += post_chain(dp, &dp->pl[o->plane], c);
	}
	for (uint32_t p = 0; p < dp->n; p++)
		sent += post_chain(dp, &dp->pl[p], &ch[p]);
	return (int)sent;
}

/* ---- receive -------------------------------------------------------- */

static void repost(struct mrc__dp_verbs_dp *dp, struct mrc__vplane *p)
{
	struct ibv_recv_wr wr[MRC_DP_BATCH], *bad = NULL;
	struct ibv_sge sge[MRC_DP_BATCH];
	if (!p->nrepost)
		return;
	for (uint32_t i = 0; i < p->nrepost; i++) {
		uint32_t s = p->repost[i];
		sge[i] = (struct ibv_sge){ .addr = (uintptr_t)(p->rbuf + (size_t)s * p->rslot),
			.length = p->rslot, .lkey = p->rmr->lkey };
		wr[i] = (struct ibv_recv_wr){ .wr_id = s, .sg_list = &sge[i], .num_sge = 1,
			.next = i + 1 < p->nrepost ? &wr[i + 1] : NULL };
	}
	/* A failure here (QP in error) leaves the pool short; the error
	 * completions that follow are counted. */
	if (dp->ops->post_recv(p->qp, wr, &bad))
		dp->x.rx_wc_err += p->nrepost - (bad ? (uint32_t)(bad - wr) : 0);
	p->nrepost = 0;
}

int mrc__dp_verbs_recv(struct mrc_dp *base, uint32_t plane, struct mrc_dp_in *in, uint32_t max)
{
	struct mrc__dp_verbs_dp *dp = (struct mrc__dp_verbs_dp *)base;
	if (plane >= dp->n)
		return -EINVAL;
	struct mrc__vplane *p = &dp->pl[plane];
	const struct mrc__dp_verbs_ops *o = dp->ops;
	repost(dp, p);
	/* Consume the channel's events and re-arm before polling: a
	 * completion that lands after the poll then raises a new event, so
	 * none is left unseen while the loop sleeps. */
	struct ibv_cq *cq;
	void *cctx;
	unsigned ev = 0;
	while (!o->get_cq_event(p->ch, &cq, &cctx))
		ev++;
	if (ev)
		o->ack_cq_events(p->rcq, ev);
	o->req_notify_cq(p->rcq, 0);
	if (max > MRC_DP_BATCH)
		max = MRC_DP_BATCH;
	struct ibv_wc wc[MRC_DP_BATCH];
	int n = o->poll_cq(p->rcq, (int)max, wc);
	if (n < 0)
		return -EIO;
	int k = 0;
	for (int i = 0; i < n; i++) {
		uint32_t s = (uint32_t)wc[i].wr_id;
		uint8_t *b = p->rbuf + (size_t)s * p->rslot;
		if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
			p->repost[p->nrepost++] = s;
		if (wc[i].status != IBV_WC_SUCCESS || wc[i].byte_len < MRC__VERBS_GRH ||
		    !(wc[i].wc_flags & IBV_WC_GRH)) {
			dp->x.rx_wc_err++;
			continue;
		}
		/* RoCEv2 over IPv6: the GRH slot holds the IPv6 header. */
		struct mrc_dp_in *d = &in[k++];
		uint8_t tclass = (uint8_t)((b[0] & 0x0f) << 4 | b[1] >> 4);
		memcpy(&d->src, b + 8, 16);
		d->buf = b + MRC__VERBS_GRH;
		d->len = wc[i].byte_len - MRC__VERBS_GRH;
		d->sport = dp->port;      /* RoCEv2's UDP ports are the NIC's own */
		d->plane = plane;
		d->ecn_ce = (tclass & 3) == 3;
		d->urgent = 0;
		/* Replies to this address go to the QP it came from. */
		peer_put(dp, &p->peers, &d->src, wc[i].src_qp, 1);
		dp->st.rx_pkts++;
		dp->st.rx_bytes += d->len;
	}
	return k;
}

/* ---- registered regions --------------------------------------------- */

int mrc__dp_verbs_reg(struct mrc_dp *base, void *addr, size_t len, int dmabuf_fd, uint64_t off)
{
	struct mrc__dp_verbs_dp *dp = (struct mrc__dp_verbs_dp *)base;
	if (!len)
		return -EINVAL;
	int r = 0;
	while (r < MRC__VERBS_MAX_REGIONS && dp->reg[r].used)
		r++;
	if (r == MRC__VERBS_MAX_REGIONS)
		return -ENOSPC;
	struct mrc__vregion *g = &dp->reg[r];
	*g = (struct mrc__vregion){ .addr = (uintptr_t)addr, .len = len };
	for (uint32_t i = 0; i < dp->n; i++) {
		/* The NIC only reads a send's payload. */
		errno = 0;
		g->mr[i] = dmabuf_fd >= 0 ?
			dp->ops->reg_dmabuf_mr(dp->pl[i].pd, off, len, (uintptr_t)addr, dmabuf_fd, 0) :
			dp->ops->reg_mr(dp->pl[i].pd, addr, len, 0);
		if (!g->mr[i]) {
			int rc = errno > 0 ? -errno : -EIO;
			while (i--)
				dp->ops->dereg_mr(g->mr[i]);
			return rc;
		}
	}
	g->used = 1;
	return r;
}

void mrc__dp_verbs_unreg(struct mrc_dp *base, int id)
{
	struct mrc__dp_verbs_dp *dp = (struct mrc__dp_verbs_dp *)base;
	if (id < 0 || id >= MRC__VERBS_MAX_REGIONS || !dp->reg[id].used)
		return;
	struct mrc__vregion *g = &dp->reg[id];
	for (uint32_t i = 0; i < dp->n; i++) {
		struct mrc__vplane *p = &dp->pl[i];
		/* A send still reading the region would fail with a protection
		 * error once it is gone (and the caller unmaps it next): wait for
		 * it, bounded, as ah_get does (chains are empty between sends). */
		uint64_t want = g->last_seq[i] < p->tx_posted ? g->last_seq[i] : p->tx_posted;
		for (long spin = 0; spin < 1000000 && want > p->tx_done; spin++)
			reap(dp, p);
		if (want > p->tx_done)
			dp->x.unreg_busy++;
		dp->ops->dereg_mr(g->mr[i]);
	}
	g->used = 0;
}

int mrc__dp_verbs_mem_reg(struct mrc_dp *dp, void *addr, size_t len, int dmabuf_fd, uint64_t off)
{
	return mrc__dp_verbs_reg(dp, addr, len, dmabuf_fd, off);
}

void mrc__dp_verbs_mem_unreg(struct mrc_dp *dp, int id)
{
	mrc__dp_verbs_unreg(dp, id);
}
#endif
