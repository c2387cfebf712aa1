/* The RDM endpoint: peers (one QP each, made on first send or accepted),
 * eager messages and rendezvous, software tag matching, RMA write and
 * atomic add, and the progress that drives them (docs/libfabric.md
 * "Design"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fi/mrcfi.h"

/* wr_id: kind in the top 4 bits, the side in bit 59, then an index (slot,
 * chunk) or, for atomics, the request's address. */
enum { WR_RX = 1, WR_TX = 2, WR_CHW = 3, WR_ATOM = 4 };
#define WR(k, s, v) ((uint64_t)(k) << 60 | (uint64_t)(s) << 59 | (uint64_t)(v))
#define WR_KIND(w)  ((unsigned)((w) >> 60))
#define WR_SIDE(w)  ((int)(((w) >> 59) & 1))
#define WR_VAL(w)   ((w) & ((1ull << 59) - 1))

static void *slot_addr(struct mrcfi_side *s, struct mrcfi_pool *p, uint32_t i)
{
	return s->base + p->off + (uint64_t)i * p->size;
}

/* ---- requests -------------------------------------------------------- */
static struct mrcfi_req *req_new(struct mrcfi_ep *ep, enum mrcfi_kind kind, void *context)
{
	uint32_t i = ep->req_next;
	for (uint32_t k = 0; k < MRCFI_MAX_REQS; k++, i = (i + 1) % MRCFI_MAX_REQS)
		if (!ep->reqs[i])
			break;
	if (ep->reqs[i])
		return NULL;
	struct mrcfi_req *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	ep->req_next = (i + 1) % MRCFI_MAX_REQS;
	ep->reqs[i] = r;
	ep->gen[i]++;
	r->id = i | (uint32_t)ep->gen[i] << 16;
	r->ep = ep;
	r->kind = kind;
	r->context = context;
	r->completion = 1;
	return r;
}

static void req_free(struct mrcfi_req *r)
{
	r->ep->reqs[r->id & 0xffff] = NULL;
	free(r);
}

/* The live request id names, of this kind and peer, or NULL. */
static struct mrcfi_req *req_find(struct mrcfi_ep *ep, uint32_t id, enum mrcfi_kind kind,
				  struct mrcfi_peer *peer)
{
	uint32_t i = id & 0xffff;
	if (i >= MRCFI_MAX_REQS || !ep->reqs[i] || ep->reqs[i]->id != id)
		return NULL;
	struct mrcfi_req *r = ep->reqs[i];
	return r->kind == kind && r->peer == peer ? r : NULL;
}

static void list_del(struct mrcfi_req **head, struct mrcfi_req *r)
{
	for (struct mrcfi_req **p = head; *p; p = &(*p)->next)
		if (*p == r) {
			*p = r->next;
			r->next = NULL;
			return;
		}
}

static int on_list(struct mrcfi_req *head, struct mrcfi_req *r)
{
	for (; head; head = head->next)
		if (head == r)
			return 1;
	return 0;
}

static void list_add_tail(struct mrcfi_req **head, struct mrcfi_req *r)
{
	struct mrcfi_req **p = head;
	while (*p)
		p = &(*p)->next;
	r->next = NULL;
	*p = r;
}

static size_t iov_copy_to(const struct iovec *iov, size_t niov, size_t off, const void *src,
			  size_t len)
{
	size_t done = 0;
	for (size_t i = 0; i < niov && done < len; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		size_t n = iov[i].iov_len - off;
		if (n > len - done)
			n = len - done;
		memcpy((char *)iov[i].iov_base + off, (const char *)src + done, n);
		done += n;
		off = 0;
	}
	return done;
}

static size_t iov_copy_from(const struct iovec *iov, size_t niov, size_t off, void *dst, size_t len)
{
	size_t done = 0;
	for (size_t i = 0; i < niov && done < len; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		size_t n = iov[i].iov_len - off;
		if (n > len - done)
			n = len - done;
		memcpy((char *)dst + done, (const char *)iov[i].iov_base + off, n);
		done += n;
		off = 0;
	}
	return done;
}

/* ---- completions ----------------------------------------------------- */
static void cq_put(struct mrcfi_cq *cq, struct mrcfi_req *r, uint64_t flags, size_t len,
		   void *buf, uint64_t data, uint64_t tag, fi_addr_t src, int err, size_t olen,
		   int prov_errno)
{
	if (!cq)
		return;
	struct mrcfi_cqe c = {
		.e = { .op_context = r ? r->context : NULL, .flags = flags, .len = len,
		       .buf = buf, .data = data, .tag = tag },
		.src = src, .err = err, .olen = olen, .prov_errno = prov_errno,
	};
	mrcfi_cq_add(cq, &c);
}

static uint64_t tx_flags(const struct mrcfi_req *r)
{
	switch (r->kind) {
	case K_WRITE: return FI_RMA | FI_WRITE;
	case K_ATOMIC: return FI_ATOMIC | FI_WRITE;
	default: return FI_SEND | (r->flags & FI_TAGGED ? FI_TAGGED : FI_MSG);
	}
}

/* A transmit request is over (its last mrc work completed). */
static void tx_done(struct mrcfi_req *r)
{
	struct mrcfi_ep *ep = r->ep;
	struct mrcfi_cntr *c = r->kind == K_WRITE || r->kind == K_ATOMIC ? ep->c_write : ep->c_send;
	if (r->err && r->early) {
		MRCFI_WARN(FI_LOG_EP_DATA, "a send reported done failed later: %s\n",
			   fi_strerror(r->err));
		ep->late_errors++;
	} else if (r->err) {
		cq_put(ep->txcq, r, tx_flags(r), 0, NULL, 0, 0, FI_ADDR_NOTAVAIL, r->err, 0,
		       -r->err);
	} else if (r->completion &&
		   (!(ep->txflags & FI_SELECTIVE_COMPLETION) || (r->flags & FI_COMPLETION))) {
		cq_put(ep->txcq, r, tx_flags(r), 0, NULL, 0, 0, FI_ADDR_NOTAVAIL, 0, 0, 0);
	}
	if (!r->early)
		mrcfi_cntr_inc(c, r->err);
	list_del(&ep->wait_tx, r);
	req_free(r);
}

static void tx_check(struct mrcfi_req *r)
{
	if (r->pending)
		return;
	int over;
	switch (r->kind) {
	case K_SEND: case K_ATOMIC: over = 1; break;
	case K_RZ: over = r->err || r->ended || r->sent == r->len; break;
	case K_WRITE: over = r->err || (r->sent == r->len && (!r->has_data || r->ended)); break;
	default: over = 0;
	}
	if (over)
		tx_done(r);
}

static fi_addr_t src_of(struct mrcfi_ep *ep, struct mrcfi_peer *p)
{
	return p ? mrcfi_av_rev(ep->av, &p->name) : FI_ADDR_NOTAVAIL;
}

/* A receive is over: len bytes landed (of total sent). */
static void rx_done(struct mrcfi_req *r, size_t len, uint64_t total, int err)
{
	struct mrcfi_ep *ep = r->ep;
	uint64_t fl = FI_RECV | (r->flags & FI_TAGGED ? FI_TAGGED : FI_MSG) |
		      (r->has_data ? FI_REMOTE_CQ_DATA : 0);
	void *buf = r->niov ? r->iov[0].iov_base : NULL;
	if (!err && total > len)
		err = FI_ETRUNC;
	if (err)
		cq_put(ep->rxcq, r, fl, len, buf, r->data, r->tag, src_of(ep, r->peer), err,
		       err == FI_ETRUNC ? (size_t)(total - len) : 0, -err);
	else if (!(ep->rxflags & FI_SELECTIVE_COMPLETION) || (r->flags & FI_COMPLETION))
		cq_put(ep->rxcq, r, fl, len, buf, r->data, r->tag, src_of(ep, r->peer), 0, 0, 0);
	mrcfi_cntr_inc(ep->c_recv, err);
	for (int k = 0; k < r->nch; k++)
		mrcfi_pool_put(&ep->d->side[r->side].rxc, (uint32_t)r->ch[k].idx);
	r->nch = 0;
	list_del(&ep->wait_chunk, r);
	req_free(r);
}

/* ---- peers and QPs --------------------------------------------------- */
static struct mrcfi_peer *peer_find(struct mrcfi_ep *ep, const struct mrcfi_name *n)
{
	for (struct mrcfi_peer *p = ep->peers; p; p = p->next)
		if (p->name.host == n->host && p->name.sid == n->sid)
			return p;
	return NULL;
}

static struct mrcfi_peer *peer_get(struct mrcfi_ep *ep, const struct mrcfi_name *n)
{
	struct mrcfi_peer *p = peer_find(ep, n);
	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->name = *n;
	p->tx = -1;
	p->next = ep->peers;
	ep->peers = p;
	return p;
}

/* Gives qp (of side s) its receive slots. */
static int qp_attach(struct mrcfi_ep *ep, struct mrcfi_peer *p, int s, struct mrc_qp *qp)
{
	struct mrcfi_side *sd = &ep->d->side[s];
	p->slots[s] = calloc(MRCFI_RX_POSTED, sizeof(uint32_t));
	if (!p->slots[s])
		return -FI_ENOMEM;
	p->qp[s] = qp;
	for (uint32_t k = 0; k < MRCFI_RX_POSTED; k++) {
		int i = mrcfi_pool_get(&sd->rx, p);
		if (i < 0) {
			MRCFI_WARN(FI_LOG_EP_CTRL, "out of receive slots (FI_MRC_RX_SLOTS)\n");
			p->slots[s][k] = UINT32_MAX;
			continue;
		}
		p->slots[s][k] = (uint32_t)i;
		int r = mrc_post_recv(qp, WR(WR_RX, s, i), sd->key,
				      sd->rx.off + (uint64_t)i * MRCFI_SLOT, MRCFI_SLOT);
		if (r)
			return r;
	}
	return 0;
}

static void peer_reset(struct mrcfi_ep *ep, struct mrcfi_peer *p, int s);

/* Side s's QP to p goes, and its slots back to the pool: the messages
 * held in them are copied out first (over the bound, but not lost). */
static void unexp_unhold(struct mrcfi_ep *ep, struct mrcfi_peer *p, int s)
{
	for (int t = 0; t < 2; t++)
		for (struct mrcfi_unexp *u = ep->unexp[t]; u; u = u->next) {
			if (!u->held || u->peer != p || u->side != s)
				continue;
			void *c = NULL;
			if (u->op == MRCFI_EAGER && u->total && (c = malloc(u->total)))
				memcpy(c, u->payload, u->total);
			if (u->op == MRCFI_EAGER && u->total && !c) {
				MRCFI_WARN(FI_LOG_EP_DATA, "out of memory: a held unexpected "
					   "message's bytes are lost; it completes truncated\n");
				u->total = 0;
				ep->proto_errors++;
			}
			u->payload = c;
			u->held = 0;
			ep->unexp_bytes += c ? u->total : 0;
		}
}

/* An unexpected entry is done with: its held slot goes back to its QP. */
static void unexp_free(struct mrcfi_ep *ep, struct mrcfi_unexp *u)
{
	ep->unexp_n--;
	if (u->held) {
		struct mrcfi_side *sd = &ep->d->side[u->side];
		struct mrc_qp *qp = u->peer->qp[u->side];
		if (qp && mrc_post_recv(qp, WR(WR_RX, u->side, u->hslot), sd->key,
					sd->rx.off + (uint64_t)u->hslot * MRCFI_SLOT, MRCFI_SLOT))
			MRCFI_WARN(FI_LOG_EP_DATA, "cannot repost a receive slot\n");
	} else {
		if (u->op == MRCFI_EAGER)
			ep->unexp_bytes -= u->total;
		free(u->payload);
	}
	free(u);
}

static void qp_detach(struct mrcfi_ep *ep, struct mrcfi_peer *p, int s)
{
	if (!p->qp[s])
		return;
	unexp_unhold(ep, p, s);
	(void)mrc_destroy_qp(p->qp[s]);
	p->qp[s] = NULL;
	for (uint32_t k = 0; p->slots[s] && k < MRCFI_RX_POSTED; k++)
		if (p->slots[s][k] != UINT32_MAX)
			mrcfi_pool_put(&ep->d->side[s].rx, p->slots[s][k]);
	free(p->slots[s]);
	p->slots[s] = NULL;
}

void mrcfi_ep_accepted(struct mrcfi_domain *d, struct mrcfi_ep *ep, struct mrc_qp *qp,
		       const struct mrc_qp_addr *remote)
{
	struct mrcfi_name n = { remote->host, remote->priv };
	struct mrcfi_peer *p = peer_get(ep, &n);
	if (!p) {
		(void)mrc_destroy_qp(qp);
		return;
	}
	/* A peer connects to us once per QP of its own; again only after
	 * its QP failed, so ours is dead too even if we have not seen it. */
	if (p->qp[0])
		peer_reset(ep, p, 0);
	if (qp_attach(ep, p, 0, qp))
		qp_detach(ep, p, 0);
}

static int64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The QP we send to p on: the one p connected to us if there is one,
 * else a new one we connect (under d->lock: the accept threads of every
 * provider run without their domain's lock, so this cannot deadlock). */
static int peer_tx(struct mrcfi_ep *ep, struct mrcfi_peer *p)
{
	if (p->tx >= 0)
		return 0;
	/* a connection from p may be waiting to be attached */
	mrcfi_accept_drain(ep->d);
	if (p->qp[0]) {
		p->tx = 0;
		return 0;
	}
	struct mrcfi_domain *d = ep->d;
	struct mrc_qp *qp;
	int r = mrc_create_qp(d->side[1].ctx, NULL, &qp);
	if (r)
		return r;
	struct mrc_qp_addr remote;
	int64_t end = now_ms() + 5000;
	for (unsigned ms = 1;; ms = ms < 64 ? ms * 2 : ms) {
		r = mrc_connect(qp, p->name.host, p->name.sid, ep->name.sid, &remote);
		/* refused: the listener's backlog is full for now */
		if (r != -ECONNREFUSED || now_ms() > end)
			break;
		usleep(ms * 1000);
	}
	if (!r)
		r = qp_attach(ep, p, 1, qp);
	if (r) {
		MRCFI_WARN(FI_LOG_EP_CTRL, "connect to mrc://%u:%u: %s (%s)\n", p->name.host,
			   p->name.sid, mrc_strerror(r), mrc_last_error(d->side[1].ctx));
		if (p->qp[1])
			qp_detach(ep, p, 1);
		else
			(void)mrc_destroy_qp(qp);
		return r;
	}
	p->tx = 1;
	return 0;
}

/* ---- sending control messages ----------------------------------------- */
static void mark_dead(struct mrcfi_domain *d)
{
	if (!d->dead) {
		d->dead = 1;
		mrcfi_fail_all(d, FI_EIO);
	}
}

/* Posts h (+ payload) from a send slot of p's tx side; -FI_EAGAIN without
 * a free slot. */
static int post_ctl(struct mrcfi_ep *ep, struct mrcfi_peer *p, const struct mrcfi_hdr *h,
		    const struct iovec *iov, size_t niov, struct mrcfi_req *owner)
{
	struct mrcfi_side *sd = &ep->d->side[p->tx];
	/* a slot of ours names its request, or (low bit set) the peer of a
	 * control message, so that a failed QP gives both back */
	int i = mrcfi_pool_get(&sd->tx, owner ? (void *)owner : (void *)((uintptr_t)p | 1));
	if (i < 0)
		return -FI_EAGAIN;
	char *b = slot_addr(sd, &sd->tx, (uint32_t)i);
	memcpy(b, h, sizeof(*h));
	if (h->op == MRCFI_EAGER)
		iov_copy_from(iov, niov, 0, b + sizeof(*h), h->len);
	int r = mrc_post_send(p->qp[p->tx], WR(WR_TX, p->tx, i), sd->key,
			      sd->tx.off + (uint64_t)i * MRCFI_SLOT,
			      sizeof(*h) + (h->op == MRCFI_EAGER ? h->len : 0));
	if (r) {
		mrcfi_pool_put(&sd->tx, (uint32_t)i);
		if (r == -EPIPE || r == -ECONNRESET)
			mark_dead(ep->d);
		return r == -ENOSPC ? -FI_EAGAIN : r;
	}
	if (owner)
		owner->pending++;
	return 0;
}

/* A provider's own message (CTS, END): sent now, or queued in order. */
static void ctl_send(struct mrcfi_ep *ep, struct mrcfi_peer *p, const struct mrcfi_hdr *h)
{
	if (p->tx < 0 && peer_tx(ep, p))
		return;
	if (!ep->ctlq && !post_ctl(ep, p, h, NULL, 0, NULL))
		return;
	struct mrcfi_ctlq *q = calloc(1, sizeof(*q));
	if (!q) {
		MRCFI_WARN(FI_LOG_EP_DATA, "out of memory: control message lost\n");
		return;
	}
	q->peer = p;
	q->h = *h;
	if (ep->ctlq_tail)
		ep->ctlq_tail->next = q;
	else
		ep->ctlq = q;
	ep->ctlq_tail = q;
}

static void hdr_init(struct mrcfi_hdr *h, uint8_t op)
{
	memset(h, 0, sizeof(*h));
	h->magic = MRCFI_MAGIC;
	h->op = op;
	h->hlen = sizeof(*h);
}

/* ---- rendezvous, receiver side ----------------------------------------- */
/* Grants the sender chunks of our bounce region, up to MRCFI_PIPE in
 * flight; completes the receive when every wanted byte is in. */
static void grant(struct mrcfi_req *r)
{
	struct mrcfi_ep *ep = r->ep;
	struct mrcfi_hdr h;
	if (r->got == r->want) {
		if (r->want < r->total) {
			/* truncated: the sender may stop */
			hdr_init(&h, MRCFI_CTS);
			h.flags = MRCFI_F_END;
			h.sreq = r->sreq;
			h.rreq = r->id;
			h.total = r->got;
			ctl_send(ep, r->peer, &h);
		}
		rx_done(r, r->got, r->total, 0);
		return;
	}
	struct mrcfi_side *sd = &ep->d->side[r->side];
	while (r->gnext < r->want && r->nch < MRCFI_PIPE) {
		int c = mrcfi_pool_get(&sd->rxc, r);
		if (c < 0) {
			/* nothing in flight: wait for another message's chunk */
			if (!r->nch && !on_list(ep->wait_chunk, r))
				list_add_tail(&ep->wait_chunk, r);
			return;
		}
		uint64_t n = r->want - r->gnext;
		uint32_t len = n > MRCFI_CHUNK ? MRCFI_CHUNK : (uint32_t)n;
		r->ch[r->nch].idx = c;
		r->ch[r->nch].off = r->gnext;
		r->ch[r->nch].len = len;
		r->nch++;
		hdr_init(&h, MRCFI_CTS);
		h.sreq = r->sreq;
		h.rreq = r->id;
		h.total = r->gnext;
		h.len = len;
		h.rkey = sd->key;
		h.roff = sd->rxc.off + (uint64_t)c * MRCFI_CHUNK;
		r->gnext += len;
		ctl_send(ep, r->peer, &h);
	}
}

static void wait_chunk_pump(struct mrcfi_ep *ep)
{
	while (ep->wait_chunk) {
		struct mrcfi_req *r = ep->wait_chunk;
		if (!ep->d->side[r->side].rxc.nfree)
			return;
		ep->wait_chunk = r->next;
		r->next = NULL;
		grant(r);
	}
}

static void rz_start(struct mrcfi_req *r, struct mrcfi_peer *p, int side,
		     const struct mrcfi_hdr *h)
{
	r->peer = p;
	r->side = side;
	r->sreq = h->sreq;
	r->tag = h->tag;
	r->data = h->data;
	r->has_data = !!(h->flags & MRCFI_F_DATA);
	r->total = h->total;
	r->want = h->total < r->len ? h->total : r->len;
	r->got = 0;
	r->gnext = 0;
	grant(r);
}

/* ---- rendezvous and RMA, sender side ----------------------------------- */
static int post_chunk_write(struct mrcfi_req *r, uint64_t off, uint32_t len, uint32_t rkey,
			    uint64_t roff)
{
	struct mrcfi_peer *p = r->peer;
	struct mrcfi_side *sd = &r->ep->d->side[p->tx];
	int c = mrcfi_pool_get(&sd->txc, r);
	if (c < 0)
		return -FI_EAGAIN;
	iov_copy_from(r->iov, r->niov, off, sd->base + sd->txc.off + (uint64_t)c * MRCFI_CHUNK,
		      len);
	int e = mrc_post_write(p->qp[p->tx], WR(WR_CHW, p->tx, c), sd->key,
			       sd->txc.off + (uint64_t)c * MRCFI_CHUNK, len, rkey, roff);
	if (e) {
		mrcfi_pool_put(&sd->txc, (uint32_t)c);
		if (e == -EPIPE || e == -ECONNRESET)
			mark_dead(r->ep->d);
		return e == -ENOSPC ? -FI_EAGAIN : e;
	}
	r->pending++;
	return 0;
}

/* Moves a send or write on as far as chunks and slots allow; 1 when it
 * must wait for one. */
static int tx_pump(struct mrcfi_req *r)
{
	struct mrcfi_ep *ep = r->ep;
	struct mrcfi_side *sd = &ep->d->side[r->peer->tx];
	while (r->kind == K_RZ && r->ncts) {
		if (!sd->txc.nfree || !sd->tx.nfree)
			return 1;
		int e = post_chunk_write(r, r->cts[0].off, r->cts[0].len, r->cts[0].rkey,
					 r->cts[0].roff);
		if (e == -FI_EAGAIN)
			return 1;
		if (e) {
			r->err = mrcfi_err(e);
			return 0;
		}
		struct mrcfi_hdr h;
		hdr_init(&h, MRCFI_RZDATA);
		h.sreq = r->id;
		h.rreq = r->cts[0].rreq;
		h.total = r->cts[0].off;
		h.len = r->cts[0].len;
		e = post_ctl(ep, r->peer, &h, NULL, 0, r);
		if (e) {
			r->err = mrcfi_err(e == -FI_EAGAIN ? -EIO : e);
			return 0;
		}
		r->sent += r->cts[0].len;
		memmove(&r->cts[0], &r->cts[1], (size_t)(r->ncts - 1) * sizeof(r->cts[0]));
		r->ncts--;
	}
	if (r->kind == K_WRITE) {
		while (r->sent < r->len) {
			uint64_t n = r->len - r->sent;
			if (n > MRCFI_CHUNK)
				n = MRCFI_CHUNK;
			int e = post_chunk_write(r, r->sent, (uint32_t)n, r->rkey, r->raddr + r->sent);
			if (e == -FI_EAGAIN)
				return 1;
			if (e) {
				r->err = mrcfi_err(e);
				return 0;
			}
			r->sent += n;
		}
		if (r->has_data && !r->ended) {
			struct mrcfi_hdr h;
			hdr_init(&h, MRCFI_WDATA);
			h.flags = MRCFI_F_DATA;
			h.data = r->data;
			h.len = (uint32_t)r->len;
			h.total = r->raddr;
			int e = post_ctl(ep, r->peer, &h, NULL, 0, r);
			if (e == -FI_EAGAIN)
				return 1;
			if (e) {
				r->err = mrcfi_err(e);
				return 0;
			}
			r->ended = 1;
		}
	}
	return 0;
}

/* Resources came free: queued control messages first, then waiting
 * transmits, then receives waiting for a chunk. */
static void pump(struct mrcfi_ep *ep)
{
	while (ep->ctlq) {
		struct mrcfi_ctlq *q = ep->ctlq;
		if (post_ctl(ep, q->peer, &q->h, NULL, 0, NULL))
			break;
		ep->ctlq = q->next;
		if (!ep->ctlq)
			ep->ctlq_tail = NULL;
		free(q);
	}
	struct mrcfi_req *w = ep->wait_tx;
	ep->wait_tx = NULL;
	while (w) {
		struct mrcfi_req *next = w->next;
		w->next = NULL;
		if (tx_pump(w))
			list_add_tail(&ep->wait_tx, w);
		else
			tx_check(w);
		w = next;
	}
	wait_chunk_pump(ep);
}

/* ---- arrivals ---------------------------------------------------------- */
static int rx_match(const struct mrcfi_req *r, const struct mrcfi_peer *p, uint64_t tag,
		    int tagged)
{
	if (r->src != FI_ADDR_UNSPEC &&
	    (r->srcname.host != p->name.host || r->srcname.sid != p->name.sid))
		return 0;
	return !tagged || !((r->tag ^ tag) & ~r->ignore);
}

static void proto_error(struct mrcfi_ep *ep, struct mrcfi_peer *p, const char *what)
{
	ep->proto_errors++;
	MRCFI_WARN(FI_LOG_EP_DATA, "mrc://%u:%u sent %s: dropped\n", p->name.host, p->name.sid,
		   what);
}

static void eager_deliver(struct mrcfi_req *r, struct mrcfi_peer *p, uint8_t flags, uint64_t tag,
			  uint64_t data, const void *payload, size_t len)
{
	r->peer = p;
	r->tag = tag;
	r->data = data;
	r->has_data = !!(flags & MRCFI_F_DATA);
	size_t n = len < r->len ? len : r->len;
	iov_copy_to(r->iov, r->niov, 0, payload, n);
	rx_done(r, n, len, 0);
}

static void on_msg(struct mrcfi_ep *ep, struct mrcfi_peer *p, int side, const struct mrcfi_hdr *h,
		   const void *payload)
{
	int tagged = !!(h->flags & MRCFI_F_TAGGED);
	for (struct mrcfi_req *r = ep->posted[tagged]; r; r = r->next) {
		if (!rx_match(r, p, h->tag, tagged))
			continue;
		list_del(&ep->posted[tagged], r);
		if (h->op == MRCFI_EAGER)
			eager_deliver(r, p, h->flags, h->tag, h->data, payload, h->len);
		else
			rz_start(r, p, side, h);
		return;
	}
	/* Over the bound (or out of memory) the message stays in its slot,
	 * which is not reposted until a receive takes it: the peer's sends
	 * then wait in RNR (retried forever by default), nothing is lost. */
	struct mrcfi_domain *d = ep->d;
	size_t copy = h->op == MRCFI_EAGER ? h->len : 0;
	int hold = ep->unexp_n >= d->unexp_max || ep->unexp_bytes + copy > d->unexp_bytes_max;
	struct mrcfi_unexp *u = calloc(1, sizeof(*u));
	if (u && !hold && copy && !(u->payload = malloc(copy)))
		hold = 1;
	if (!u) {
		/* nothing to hold it with: the slot is reposted, the message lost */
		MRCFI_WARN(FI_LOG_EP_DATA, "out of memory: unexpected message dropped\n");
		ep->proto_errors++;
		return;
	}
	if (hold) {
		u->held = 1;
		u->hslot = ep->rx_slot;
		u->payload = (void *)payload;
		ep->rx_held = 1;
		ep->unexp_held++;
	} else {
		ep->unexp_bytes += copy;
		if (copy)
			memcpy(u->payload, payload, copy);
	}
	ep->unexp_n++;
	u->peer = p;
	u->side = side;
	u->op = h->op;
	u->flags = h->flags;
	u->tag = h->tag;
	u->data = h->data;
	u->sreq = h->sreq;
	u->total = h->op == MRCFI_EAGER ? h->len : h->total;
	if (ep->unexp_tail[tagged])
		ep->unexp_tail[tagged]->next = u;
	else
		ep->unexp[tagged] = u;
	ep->unexp_tail[tagged] = u;
}

static void on_cts(struct mrcfi_ep *ep, struct mrcfi_peer *p, const struct mrcfi_hdr *h)
{
	struct mrcfi_req *r = req_find(ep, h->sreq, K_RZ, p);
	if (!r || r->ended) {
		proto_error(ep, p, "a CTS for no waiting send");
		return;
	}
	if (h->flags & MRCFI_F_END) {
		r->ended = 1;
		r->ncts = 0;
		tx_check(r);
		return;
	}
	if (h->total != r->ctsnext || h->len > r->len - r->ctsnext || r->ncts == MRCFI_PIPE) {
		proto_error(ep, p, "a CTS outside its message");
		return;
	}
	r->cts[r->ncts].off = h->total;
	r->cts[r->ncts].len = h->len;
	r->cts[r->ncts].rkey = h->rkey;
	r->cts[r->ncts].roff = h->roff;
	r->cts[r->ncts].rreq = h->rreq;
	r->ncts++;
	r->ctsnext += h->len;
	if (tx_pump(r)) {
		if (!on_list(ep->wait_tx, r))
			list_add_tail(&ep->wait_tx, r);
	} else {
		tx_check(r);
	}
}

static void on_rzdata(struct mrcfi_ep *ep, struct mrcfi_peer *p, int side,
		      const struct mrcfi_hdr *h)
{
	struct mrcfi_req *r = req_find(ep, h->rreq, K_RECV, p);
	/* only into the oldest chunk granted, by the QP it was granted for */
	if (!r || !r->nch || r->side != side || h->total != r->got || h->total != r->ch[0].off ||
	    h->len != r->ch[0].len || h->sreq != r->sreq) {
		proto_error(ep, p, "rendezvous data for no granted chunk");
		return;
	}
	struct mrcfi_side *sd = &ep->d->side[side];
	iov_copy_to(r->iov, r->niov, r->got, sd->base + sd->rxc.off +
		    (uint64_t)r->ch[0].idx * MRCFI_CHUNK, h->len);
	mrcfi_pool_put(&sd->rxc, (uint32_t)r->ch[0].idx);
	memmove(&r->ch[0], &r->ch[1], (size_t)(r->nch - 1) * sizeof(r->ch[0]));
	r->nch--;
	r->got += h->len;
	grant(r);
	wait_chunk_pump(ep);
}

static void on_wdata(struct mrcfi_ep *ep, struct mrcfi_peer *p, const struct mrcfi_hdr *h)
{
	cq_put(ep->rxcq, NULL, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA, h->len, NULL, h->data,
	       0, src_of(ep, p), 0, 0, 0);
}

static void on_recv(struct mrcfi_ep *ep, struct mrcfi_peer *p, int side, const void *buf,
		    size_t n)
{
	struct mrcfi_hdr h;
	if (mrcfi_hdr_parse(buf, n, &h)) {
		proto_error(ep, p, "a malformed message");
		return;
	}
	switch (h.op) {
	case MRCFI_EAGER: case MRCFI_RTS:
		on_msg(ep, p, side, &h, (const char *)buf + sizeof(h));
		break;
	case MRCFI_CTS: on_cts(ep, p, &h); break;
	case MRCFI_RZDATA: on_rzdata(ep, p, side, &h); break;
	case MRCFI_WDATA: on_wdata(ep, p, &h); break;
	}
}

static void on_completion(struct mrcfi_ep *ep, struct mrcfi_peer *p, int s,
			  const struct mrc_completion *c)
{
	struct mrcfi_side *sd = &ep->d->side[WR_SIDE(c->wr_id)];
	uint32_t i = (uint32_t)WR_VAL(c->wr_id);
	struct mrcfi_req *r = NULL;
	switch (WR_KIND(c->wr_id)) {
	case WR_RX:
		if (c->status) {
			p->broken[s] = 1;   /* flushed: the QP failed */
			return;
		}
		ep->rx_slot = i;
		ep->rx_held = 0;
		on_recv(ep, p, s, slot_addr(sd, &sd->rx, i), c->byte_len);
		/* the slot goes back to the same QP, unless an unexpected
		 * message over the bound stays in it */
		if (!ep->rx_held && p->qp[s] && mrc_post_recv(p->qp[s], c->wr_id, sd->key,
					      sd->rx.off + (uint64_t)i * MRCFI_SLOT, MRCFI_SLOT))
			MRCFI_WARN(FI_LOG_EP_DATA, "cannot repost a receive slot\n");
		return;
	case WR_TX:
		r = ((uintptr_t)sd->tx.owner[i] & 1) ? NULL : sd->tx.owner[i];
		mrcfi_pool_put(&sd->tx, i);
		break;
	case WR_CHW:
		r = sd->txc.owner[i];
		mrcfi_pool_put(&sd->txc, i);
		break;
	case WR_ATOM:
		r = (struct mrcfi_req *)(uintptr_t)WR_VAL(c->wr_id);
		break;
	default:
		return;
	}
	if (c->status)
		p->broken[s] = 1;
	if (r) {
		r->pending--;
		if (c->status && !r->err)
			r->err = mrcfi_err(c->status);
		tx_check(r);
	}
	pump(ep);
}

/* Gives back every piece of side s's pools that serves owner. */
static void pools_release(struct mrcfi_side *sd, const void *owner)
{
	struct mrcfi_pool *pools[] = { &sd->tx, &sd->txc, &sd->rxc };
	for (int k = 0; k < 3; k++)
		for (uint32_t i = 0; i < pools[k]->n; i++)
			if (pools[k]->owner[i] == owner)
				mrcfi_pool_put(pools[k], i);
}

/* A QP of p failed: mrc fails an RC QP at its first error (an access
 * violation, a peer gone) with all its work.  Everything of p in flight
 * fails with FI_EIO, the QP goes, and the next send to p connects anew,
 * so one bad write does not cut the peer off for good. */
static void peer_reset(struct mrcfi_ep *ep, struct mrcfi_peer *p, int s)
{
	struct mrcfi_domain *d = ep->d;
	MRCFI_WARN(FI_LOG_EP_DATA, "the QP to mrc://%u:%u failed; its requests fail\n",
		   p->name.host, p->name.sid);
	for (uint32_t i = 0; i < MRCFI_MAX_REQS; i++) {
		struct mrcfi_req *r = ep->reqs[i];
		if (!r || r->peer != p)
			continue;
		list_del(&ep->wait_tx, r);
		list_del(&ep->wait_chunk, r);
		if (r->kind == K_RECV) {
			rx_done(r, r->got, r->got, FI_EIO);
			continue;
		}
		for (int k = 0; k < 2; k++)
			pools_release(&d->side[k], r);
		if (!r->err)
			r->err = FI_EIO;
		r->pending = 0;
		r->ncts = 0;
		tx_done(r);
	}
	for (int k = 0; k < 2; k++)
		pools_release(&d->side[k], (void *)((uintptr_t)p | 1));
	for (struct mrcfi_ctlq **q = &ep->ctlq; *q;) {
		if ((*q)->peer == p) {
			struct mrcfi_ctlq *dead = *q;
			*q = dead->next;
			free(dead);
		} else {
			q = &(*q)->next;
		}
	}
	ep->ctlq_tail = NULL;
	for (struct mrcfi_ctlq *q = ep->ctlq; q; q = q->next)
		ep->ctlq_tail = q;
	/* unexpected rendezvous messages of p: nobody will serve them */
	for (int t = 0; t < 2; t++) {
		struct mrcfi_unexp *prev = NULL;
		for (struct mrcfi_unexp *u = ep->unexp[t]; u;) {
			struct mrcfi_unexp *next = u->next;
			if (u->peer == p && u->op == MRCFI_RTS) {
				if (prev)
					prev->next = next;
				else
					ep->unexp[t] = next;
				if (ep->unexp_tail[t] == u)
					ep->unexp_tail[t] = prev;
				unexp_free(ep, u);
			} else {
				prev = u;
			}
			u = next;
		}
	}
	qp_detach(ep, p, s);
	p->broken[s] = 0;
	if (p->tx == s)
		p->tx = -1;
}

static int drain_qp(struct mrcfi_ep *ep, struct mrcfi_peer *p, int s)
{
	struct mrc_completion c[16];
	int n = 0, total = 0;
	while (p->qp[s] && (n = mrc_poll_cq(p->qp[s], c, 16)) > 0) {
		for (int k = 0; k < n; k++)
			on_completion(ep, p, s, &c[k]);
		total += n;
	}
	if (p->qp[s] && n < 0 && n != -EOVERFLOW)
		mark_dead(ep->d);
	else if (p->qp[s] && p->broken[s] && !ep->d->dead)
		peer_reset(ep, p, s);
	return total;
}

void mrcfi_accept_drain(struct mrcfi_domain *d)
{
	pthread_mutex_lock(&d->sidlock);
	struct mrcfi_acc *a = d->accq;
	d->accq = NULL;
	pthread_mutex_unlock(&d->sidlock);
	while (a) {
		struct mrcfi_acc *next = a->next;
		struct mrcfi_ep *ep = d->eps;
		while (ep && ep->name.sid != a->sid)
			ep = ep->next;
		if (ep)
			mrcfi_ep_accepted(d, ep, a->qp, &a->remote);
		else
			(void)mrc_destroy_qp(a->qp);
		free(a);
		a = next;
	}
}

void mrcfi_progress(struct mrcfi_domain *d, int arm)
{
	if (__atomic_load_n(&d->dead_pending, __ATOMIC_ACQUIRE) && !d->dead) {
		d->dead = 1;
		mrcfi_fail_all(d, FI_EIO);
	}
	if (d->dead)
		return;
	mrcfi_accept_drain(d);
	for (int round = 0; round < 64; round++) {
		int again = 0;
		for (struct mrcfi_ep *ep = d->eps; ep; ep = ep->next)
			for (struct mrcfi_peer *p = ep->peers; p; p = p->next)
				for (int s = 0; s < 2; s++)
					if (p->qp[s]) {
						drain_qp(ep, p, s);
						/* a failed QP is gone after its drain */
						if (arm && p->qp[s] && mrc_arm_cq(p->qp[s]) == 1)
							again = 1;
					}
		if (!again || d->dead)
			return;
	}
}

void mrcfi_fail_all(struct mrcfi_domain *d, int err)
{
	for (struct mrcfi_ep *ep = d->eps; ep; ep = ep->next) {
		for (int t = 0; t < 2; t++) {
			while (ep->posted[t]) {
				struct mrcfi_req *r = ep->posted[t];
				ep->posted[t] = r->next;
				rx_done(r, 0, 0, err);
			}
		}
		ep->wait_tx = NULL;
		ep->wait_chunk = NULL;
		for (uint32_t i = 0; i < MRCFI_MAX_REQS; i++) {
			struct mrcfi_req *r = ep->reqs[i];
			if (!r)
				continue;
			r->next = NULL;
			if (r->kind == K_RECV) {
				rx_done(r, 0, 0, err);
			} else {
				r->err = err;
				r->pending = 0;
				tx_done(r);
			}
		}
	}
}

/* ---- posting ----------------------------------------------------------- */

static int dest_peer(struct mrcfi_ep *ep, fi_addr_t dest, struct mrcfi_peer **out)
{
	struct mrcfi_name n;
	if (!ep->av || mrcfi_av_get(ep->av, dest, &n))
		return -FI_EINVAL;
	struct mrcfi_peer *p = peer_get(ep, &n);
	if (!p)
		return -FI_ENOMEM;
	int r = peer_tx(ep, p);
	if (r)
		return r == -ETIMEDOUT ? -FI_ETIMEDOUT : r == -ECONNREFUSED ? -FI_ECONNREFUSED : r;
	*out = p;
	return 0;
}

static size_t iov_len(const struct iovec *iov, size_t n)
{
	size_t t = 0;
	for (size_t i = 0; i < n; i++)
		t += iov[i].iov_len;
	return t;
}

/* Every send: eager within a slot, else RTS and rendezvous. */
ssize_t mrcfi_do_send(struct mrcfi_ep *ep, const struct iovec *iov, size_t niov, fi_addr_t dest,
		       uint64_t tag, uint64_t data, uint64_t flags, void *context)
{
	struct mrcfi_domain *d = ep->d;
	if (niov > 4)
		return -FI_EINVAL;
	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	size_t len = iov_len(iov, niov);
	int inject = !!(flags & FI_INJECT);
	if (inject && len > MRCFI_EAGER_MAX)
		return -FI_EINVAL;
	if (len > MRCFI_MAX_MSG)
		return -FI_EMSGSIZE;
	pthread_mutex_lock(&d->lock);
	ssize_t ret = 0;
	struct mrcfi_req *r = req_new(ep, len <= MRCFI_EAGER_MAX ? K_SEND : K_RZ, context);
	if (!r) {
		ret = -FI_EAGAIN;
		goto out;
	}
	r->flags = flags;
	r->completion = !inject;
	r->tag = tag;
	r->data = data;
	r->has_data = !!(flags & FI_REMOTE_CQ_DATA);
	r->len = len;
	r->niov = niov;
	memcpy(r->iov, iov, niov * sizeof(*iov));
	if (d->dead) {
		if (inject) {
			req_free(r);
			ret = -FI_EIO;
		} else {
			r->err = FI_EIO;
			tx_done(r);
		}
		goto out;
	}
	struct mrcfi_peer *p;
	int e = dest_peer(ep, dest, &p);
	if (e) {
		req_free(r);
		ret = e;
		goto out;
	}
	r->peer = p;
	struct mrcfi_hdr h;
	hdr_init(&h, r->kind == K_SEND ? MRCFI_EAGER : MRCFI_RTS);
	h.flags = (flags & FI_TAGGED ? MRCFI_F_TAGGED : 0) | (r->has_data ? MRCFI_F_DATA : 0);
	h.tag = tag;
	h.data = data;
	h.sreq = r->id;
	if (r->kind == K_SEND)
		h.len = (uint32_t)len;
	else
		h.total = len;
	/* queued control messages go first: they may be older */
	pump(ep);
	e = post_ctl(ep, p, &h, iov, niov, r);
	if (e) {
		req_free(r);
		ret = e;
	} else if (r->kind == K_SEND && r->completion &&
		   !(flags & (FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE))) {
		/* The bytes are in our send slot: the buffer is free now,
		 * which is all inject-complete promises.  Waiting for mrcd's
		 * completion would wait for the peer's ACK, which its daemon
		 * may hold for a packet to ride on (docs/libfabric.md
		 * "Completions").  A later failure is logged and counted. */
		if (!(ep->txflags & FI_SELECTIVE_COMPLETION) || (r->flags & FI_COMPLETION))
			cq_put(ep->txcq, r, tx_flags(r), 0, NULL, 0, 0, FI_ADDR_NOTAVAIL, 0, 0, 0);
		mrcfi_cntr_inc(ep->c_send, 0);
		r->completion = 0;
		r->early = 1;
	}
out:
	pthread_mutex_unlock(&d->lock);
	return ret;
}

/* Claimed or unclaimed unexpected message for a receive, or NULL. */
static struct mrcfi_unexp *unexp_take(struct mrcfi_ep *ep, int tagged, const struct mrcfi_req *r,
				      void *claim, int remove)
{
	struct mrcfi_unexp *prev = NULL;
	for (struct mrcfi_unexp *u = ep->unexp[tagged]; u; prev = u, u = u->next) {
		if (claim ? u->claim != claim : (u->claim || !rx_match(r, u->peer, u->tag, tagged)))
			continue;
		if (remove) {
			if (prev)
				prev->next = u->next;
			else
				ep->unexp[tagged] = u->next;
			if (ep->unexp_tail[tagged] == u)
				ep->unexp_tail[tagged] = prev;
			u->next = NULL;
		}
		return u;
	}
	return NULL;
}

static void unexp_deliver(struct mrcfi_req *r, struct mrcfi_unexp *u)
{
	struct mrcfi_ep *ep = r->ep;   /* an eager delivery frees r */
	if (u->op == MRCFI_EAGER) {
		eager_deliver(r, u->peer, u->flags, u->tag, u->data, u->payload, u->total);
	} else {
		struct mrcfi_hdr h;
		hdr_init(&h, MRCFI_RTS);
		h.flags = u->flags;
		h.tag = u->tag;
		h.data = u->data;
		h.sreq = u->sreq;
		h.total = u->total;
		rz_start(r, u->peer, u->side, &h);
	}
	unexp_free(ep, u);
}

/* Discarding a rendezvous message tells its sender to stop. */
static void unexp_discard(struct mrcfi_ep *ep, struct mrcfi_unexp *u)
{
	if (u->op == MRCFI_RTS) {
		struct mrcfi_hdr h;
		hdr_init(&h, MRCFI_CTS);
		h.flags = MRCFI_F_END;
		h.sreq = u->sreq;
		ctl_send(ep, u->peer, &h);
	}
	unexp_free(ep, u);
}

ssize_t mrcfi_do_recv(struct mrcfi_ep *ep, const struct iovec *iov, size_t niov, fi_addr_t src,
		       uint64_t tag, uint64_t ignore, uint64_t flags, void *context)
{
	struct mrcfi_domain *d = ep->d;
	if (niov > 4)
		return -FI_EINVAL;
	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	int tagged = !!(flags & FI_TAGGED);
	if (flags & FI_MULTI_RECV)
		return -FI_EOPNOTSUPP;
	pthread_mutex_lock(&d->lock);
	ssize_t ret = 0;
	struct mrcfi_req *r = req_new(ep, K_RECV, context);
	if (!r) {
		ret = -FI_EAGAIN;
		goto out;
	}
	r->flags = flags;
	r->tag = tag;
	r->ignore = ignore;
	r->niov = niov;
	memcpy(r->iov, iov, niov * sizeof(*iov));
	r->len = iov_len(iov, niov);
	r->src = FI_ADDR_UNSPEC;
	if (src != FI_ADDR_UNSPEC && (ep->caps & FI_DIRECTED_RECV)) {
		if (!ep->av || mrcfi_av_get(ep->av, src, &r->srcname)) {
			req_free(r);
			ret = -FI_EINVAL;
			goto out;
		}
		r->src = src;
	}
	if (d->dead) {
		rx_done(r, 0, 0, FI_EIO);
		goto out;
	}
	if (flags & FI_PEEK) {
		struct mrcfi_unexp *u = unexp_take(ep, tagged, r, NULL, !!(flags & FI_DISCARD));
		if (!u) {
			cq_put(ep->rxcq, r, FI_RECV | FI_TAGGED, 0, NULL, 0, 0, FI_ADDR_NOTAVAIL,
			       FI_ENOMSG, 0, 0);
			req_free(r);
			goto out;
		}
		uint64_t fl = FI_RECV | (tagged ? FI_TAGGED : FI_MSG) |
			      (u->flags & MRCFI_F_DATA ? FI_REMOTE_CQ_DATA : 0);
		cq_put(ep->rxcq, r, fl, u->total, NULL, u->data, u->tag, src_of(ep, u->peer), 0, 0,
		       0);
		if (flags & FI_DISCARD)
			unexp_discard(ep, u);
		else if (flags & FI_CLAIM)
			u->claim = context;
		req_free(r);
		goto out;
	}
	if (flags & FI_CLAIM) {
		struct mrcfi_unexp *u = unexp_take(ep, tagged, r, context, 1);
		if (!u) {
			req_free(r);
			ret = -FI_EINVAL;   /* nothing was claimed with this context */
			goto out;
		}
		if (flags & FI_DISCARD) {
			cq_put(ep->rxcq, r, FI_RECV | FI_TAGGED, 0, NULL, u->data, u->tag,
			       src_of(ep, u->peer), 0, 0, 0);
			unexp_discard(ep, u);
			req_free(r);
		} else {
			unexp_deliver(r, u);
		}
		goto out;
	}
	struct mrcfi_unexp *u = unexp_take(ep, tagged, r, NULL, 1);
	if (u)
		unexp_deliver(r, u);
	else
		list_add_tail(&ep->posted[tagged], r);
out:
	pthread_mutex_unlock(&d->lock);
	return ret;
}

ssize_t mrcfi_do_write(struct mrcfi_ep *ep, const struct iovec *iov, size_t niov, fi_addr_t dest,
			uint64_t addr, uint64_t key, uint64_t data, uint64_t flags, void *context)
{
	struct mrcfi_domain *d = ep->d;
	if (niov > 4)
		return -FI_EINVAL;
	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (!(ep->caps & FI_RMA))
		return -FI_EOPNOTSUPP;
	size_t len = iov_len(iov, niov);
	int inject = !!(flags & FI_INJECT);
	if (inject && len > MRCFI_EAGER_MAX)
		return -FI_EINVAL;
	pthread_mutex_lock(&d->lock);
	ssize_t ret = 0;
	struct mrcfi_req *r = req_new(ep, K_WRITE, context);
	if (!r) {
		ret = -FI_EAGAIN;
		goto out;
	}
	r->flags = flags;
	r->completion = !inject;
	r->data = data;
	r->has_data = !!(flags & FI_REMOTE_CQ_DATA);
	r->len = len;
	r->niov = niov;
	memcpy(r->iov, iov, niov * sizeof(*iov));
	if (d->dead) {
		r->err = FI_EIO;
		tx_done(r);
		goto out;
	}
	struct mrcfi_peer *p;
	int e = dest_peer(ep, dest, &p);
	if (e) {
		req_free(r);
		ret = e;
		goto out;
	}
	r->peer = p;
	/* our side 1 reaches the peer's side 0 and the other way round */
	r->rkey = p->tx == 1 ? (uint32_t)(key >> 32) : (uint32_t)key;
	r->raddr = addr;
	pump(ep);
	if (inject) {
		/* the bytes must be copied now: no chunk, no inject */
		struct mrcfi_side *sd = &d->side[p->tx];
		if (!sd->txc.nfree || (r->has_data && !sd->tx.nfree)) {
			req_free(r);
			ret = -FI_EAGAIN;
			goto out;
		}
	}
	if (tx_pump(r)) {
		if (!r->sent && !inject) {
			/* nothing posted yet: the application retries */
			req_free(r);
			ret = -FI_EAGAIN;
			goto out;
		}
		list_add_tail(&ep->wait_tx, r);
	} else {
		tx_check(r);
	}
out:
	pthread_mutex_unlock(&d->lock);
	return ret;
}

ssize_t mrcfi_do_atomic(struct mrcfi_ep *ep, const void *buf, size_t count, fi_addr_t dest,
			 uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op,
			 uint64_t flags, void *context)
{
	struct mrcfi_domain *d = ep->d;
	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (!(ep->caps & FI_ATOMIC) || !mrcfi_atomic_ok(dt, op))
		return -FI_EOPNOTSUPP;
	if (count != 1 || (addr & 7))
		return -FI_EINVAL;
	pthread_mutex_lock(&d->lock);
	ssize_t ret = 0;
	struct mrcfi_req *r = req_new(ep, K_ATOMIC, context);
	if (!r) {
		ret = -FI_EAGAIN;
		goto out;
	}
	r->flags = flags;
	r->completion = !(flags & FI_INJECT);
	if (d->dead) {
		r->err = FI_EIO;
		tx_done(r);
		goto out;
	}
	struct mrcfi_peer *p;
	int e = dest_peer(ep, dest, &p);
	if (e) {
		req_free(r);
		ret = e;
		goto out;
	}
	r->peer = p;
	uint64_t v;
	memcpy(&v, buf, 8);
	uint32_t rkey = p->tx == 1 ? (uint32_t)(key >> 32) : (uint32_t)key;
	e = mrc_post_atomic_add(p->qp[p->tx], WR(WR_ATOM, p->tx, (uintptr_t)r), rkey, addr, v);
	if (e) {
		req_free(r);
		if (e == -EPIPE || e == -ECONNRESET)
			mark_dead(d);
		ret = e == -ENOSPC ? -FI_EAGAIN : e;
		goto out;
	}
	r->pending = 1;
out:
	pthread_mutex_unlock(&d->lock);
	return ret;
}

int mrcfi_cancel(struct mrcfi_ep *ep, void *context)
{
	for (int t = 0; t < 2; t++)
		for (struct mrcfi_req *q = ep->posted[t]; q; q = q->next)
			if (q->context == context) {
				list_del(&ep->posted[t], q);
				rx_done(q, 0, 0, FI_ECANCELED);
				return 0;
			}
	return -FI_ENOENT;
}

unsigned mrcfi_ep_tx_pending(struct mrcfi_ep *ep)
{
	unsigned n = ep->ctlq != NULL;
	for (uint32_t i = 0; i < MRCFI_MAX_REQS; i++)
		if (ep->reqs[i] && ep->reqs[i]->kind != K_RECV)
			n++;
	return n;
}

void mrcfi_ep_teardown(struct mrcfi_ep *ep)
{
	struct mrcfi_domain *d = ep->d;
	/* the QPs go with their work: give back what it held */
	for (int s = 0; s < 2; s++) {
		for (uint32_t i = 0; i < MRCFI_MAX_REQS; i++)
			if (ep->reqs[i])
				pools_release(&d->side[s], ep->reqs[i]);
		for (struct mrcfi_peer *p = ep->peers; p; p = p->next)
			pools_release(&d->side[s], (void *)((uintptr_t)p | 1));
	}
	while (ep->peers) {
		struct mrcfi_peer *p = ep->peers;
		ep->peers = p->next;
		qp_detach(ep, p, 0);
		qp_detach(ep, p, 1);
		free(p);
	}
	for (uint32_t i = 0; i < MRCFI_MAX_REQS; i++)
		free(ep->reqs[i]);
	for (int t = 0; t < 2; t++)
		while (ep->unexp[t]) {
			struct mrcfi_unexp *u = ep->unexp[t];
			ep->unexp[t] = u->next;
			if (!u->held)   /* held ones were copied out by qp_detach */
				free(u->payload);
			free(u);
		}
	while (ep->ctlq) {
		struct mrcfi_ctlq *q = ep->ctlq;
		ep->ctlq = q->next;
		free(q);
	}
}
