/* The RDM endpoint's core (docs/libfabric.md "Design"): requests, their
 * completions, peers and their QPs, control messages; fi/ep_int.h names
 * the other parts of the data path: fi/ep_tx.c (posting), fi/ep_rx.c
 * (arrivals, matching, the unexpected queue), fi/ep_rz.c (rendezvous and
 * RMA chunks), fi/ep_prog.c (progress and failed QPs). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fi/mrcfi.h"
#include "fi/ep_int.h"

/* ---- requests -------------------------------------------------------- */
struct mrcfi_req *mrcfi_req_new(struct mrcfi_ep *ep, enum mrcfi_kind kind, void *context)
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

void mrcfi_req_free(struct mrcfi_req *r)
{
	r->ep->reqs[r->id & 0xffff] = NULL;
	free(r);
}

/* The live request id names, of this kind and peer, or NULL. */
struct mrcfi_req *mrcfi_req_find(struct mrcfi_ep *ep, uint32_t id, enum mrcfi_kind kind,
				  struct mrcfi_peer *peer)
{
	uint32_t i = id & 0xffff;
	if (i >= MRCFI_MAX_REQS || !ep->reqs[i] || ep->reqs[i]->id != id)
		return NULL;
	struct mrcfi_req *r = ep->reqs[i];
	return r->kind == kind && r->peer == peer ? r : NULL;
}

void mrcfi_list_del(struct mrcfi_req **head, struct mrcfi_req *r)
{
	for (struct mrcfi_req **p = head; *p; p = &(*p)->next)
		if (*p == r) {
			*p = r->next;
			r->next = NULL;
			return;
		}
}

int mrcfi_on_list(struct mrcfi_req *head, struct mrcfi_req *r)
{
	for (; head; head = head->next)
		if (head == r)
			return 1;
	return 0;
}

void mrcfi_list_add_tail(struct mrcfi_req **head, struct mrcfi_req *r)
{
	struct mrcfi_req **p = head;
	while (*p)
		p = &(*p)->next;
	r->next = NULL;
	*p = r;
}

/* Copies len bytes between the iovecs, from byte off of theirs, and buf:
 * into the iovecs (to) or out of them; how many fitted. */
static size_t iov_copy(const struct iovec *iov, size_t niov, size_t off, char *buf, size_t len,
		       int to)
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
		char *v = (char *)iov[i].iov_base + off;
		memcpy(to ? v : buf + done, to ? buf + done : v, n);
		done += n;
		off = 0;
	}
	return done;
}

size_t mrcfi_iov_copy_to(const struct iovec *iov, size_t niov, size_t off, const void *src,
			 size_t len)
{
	return iov_copy(iov, niov, off, (char *)src, len, 1);
}

size_t mrcfi_iov_copy_from(const struct iovec *iov, size_t niov, size_t off, void *dst, size_t len)
{
	return iov_copy(iov, niov, off, dst, len, 0);
}

/* ---- completions ----------------------------------------------------- */
void mrcfi_cq_put(struct mrcfi_cq *cq, struct mrcfi_req *r, uint64_t flags, size_t len,
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

uint64_t mrcfi_tx_flags(const struct mrcfi_req *r)
{
	switch (r->kind) {
	case K_WRITE: return FI_RMA | FI_WRITE;
	case K_ATOMIC: return FI_ATOMIC | FI_WRITE;
	default: return FI_SEND | (r->flags & FI_TAGGED ? FI_TAGGED : FI_MSG);
	}
}

/* A transmit request is over (its last mrc work completed). */
void mrcfi_tx_done(struct mrcfi_req *r)
{
	struct mrcfi_ep *ep = r->ep;
	struct mrcfi_cntr *c = r->kind == K_WRITE || r->kind == K_ATOMIC ? ep->c_write : ep->c_send;
	if (r->err && r->early) {
		MRCFI_WARN(FI_LOG_EP_DATA, "a send reported done failed later: %s\n",
			   fi_strerror(r->err));
		ep->late_errors++;
	} else if (r->err) {
		mrcfi_cq_put(ep->txcq, r, mrcfi_tx_flags(r), 0, NULL, 0, 0, FI_ADDR_NOTAVAIL, r->err, 0,
		       -r->err);
	} else if (r->completion &&
		   (!(ep->txflags & FI_SELECTIVE_COMPLETION) || (r->flags & FI_COMPLETION))) {
		mrcfi_cq_put(ep->txcq, r, mrcfi_tx_flags(r), 0, NULL, 0, 0, FI_ADDR_NOTAVAIL, 0, 0, 0);
	}
	if (!r->early)
		mrcfi_cntr_inc(c, r->err);
	mrcfi_list_del(&ep->wait_tx, r);
	mrcfi_req_free(r);
}

void mrcfi_tx_check(struct mrcfi_req *r)
{
	if (!r->pending && r->kind == K_RZ && (r->err || r->ended || r->sent == r->len))
		MRCFI_TRACE(r->ep->d, TEV_TX_DONE, r->peer ? r->peer->name.host : 0, r->id, r->sent);
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
		mrcfi_tx_done(r);
}

fi_addr_t mrcfi_src_of(struct mrcfi_ep *ep, struct mrcfi_peer *p)
{
	return p ? mrcfi_av_rev(ep->av, &p->name) : FI_ADDR_NOTAVAIL;
}

/* A receive is over: len bytes landed (of total sent). */
void mrcfi_rx_done(struct mrcfi_req *r, size_t len, uint64_t total, int err)
{
	struct mrcfi_ep *ep = r->ep;
	uint64_t fl = FI_RECV | (r->flags & FI_TAGGED ? FI_TAGGED : FI_MSG) |
		      (r->has_data ? FI_REMOTE_CQ_DATA : 0) | (r->multi_last ? FI_MULTI_RECV : 0);
	void *buf = r->niov ? r->iov[0].iov_base : NULL;
	if (!err && total > len)
		err = FI_ETRUNC;
	if (err)
		mrcfi_cq_put(ep->rxcq, r, fl, len, buf, r->data, r->tag, mrcfi_src_of(ep, r->peer), err,
		       err == FI_ETRUNC ? (size_t)(total - len) : 0, -err);
	else if (!(ep->rxflags & FI_SELECTIVE_COMPLETION) || (r->flags & FI_COMPLETION))
		mrcfi_cq_put(ep->rxcq, r, fl, len, buf, r->data, r->tag, mrcfi_src_of(ep, r->peer), 0, 0, 0);
	mrcfi_cntr_inc(ep->c_recv, err);
	for (int k = 0; k < r->nch; k++)
		mrcfi_pool_put(&ep->d->side[r->side].rxc, (uint32_t)r->ch[k].idx);
	r->nch = 0;
	mrcfi_list_del(&ep->wait_chunk, r);
	mrcfi_req_free(r);
}

/* ---- peers and QPs --------------------------------------------------- */
static struct mrcfi_peer *peer_find(struct mrcfi_ep *ep, const struct mrcfi_name *n)
{
	for (struct mrcfi_peer *p = ep->peers; p; p = p->next)
		if (p->name.host == n->host && p->name.sid == n->sid)
			return p;
	return NULL;
}

struct mrcfi_peer *mrcfi_peer_get(struct mrcfi_ep *ep, const struct mrcfi_name *n)
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
	p->slots[s] = calloc(ep->d->rx_max, sizeof(uint32_t));
	if (!p->slots[s])
		return -FI_ENOMEM;
	p->qp[s] = qp;
	p->nslots[s] = ep->d->rx_posted;
	/* a new QP: no tag base either way; what p takes is said again */
	p->tx_base_ok[s] = p->rx_base_ok[s] = 0;
	p->compact_ok = 0;
	for (uint32_t k = 0; k < ep->d->rx_posted; k++) {
		int i = mrcfi_pool_get(&sd->rx, p);
		if (i < 0) {
			MRCFI_WARN(FI_LOG_EP_CTRL, "out of receive slots (FI_MRC_RX_SLOTS)\n");
			p->slots[s][k] = UINT32_MAX;
			continue;
		}
		p->slots[s][k] = (uint32_t)i;
		int r = rx_slot_post(sd, qp, s, (uint32_t)i);
		if (r)
			return r;
	}
	return 0;
}

/* Every slot of qp[s] was used before one drain saw them: a burst larger
 * than its slots, the rest of which waits in RNR at the sender (100 us a
 * try), so the QP gets as many again, up to FI_MRC_RX_POSTED_MAX.  Only
 * while its side keeps half its pool free: peers that connect later
 * still get their FI_MRC_RX_POSTED.  Grown slots stay with the QP until
 * it goes. */
void mrcfi_qp_grow(struct mrcfi_ep *ep, struct mrcfi_peer *p, int s)
{
	struct mrcfi_domain *d = ep->d;
	struct mrcfi_side *sd = &d->side[s];
	uint32_t n = p->nslots[s], add = n < d->rx_max - n ? n : d->rx_max - n;
	for (uint32_t k = 0; k < add && sd->rx.nfree > sd->rx.n / 2; k++) {
		int i = mrcfi_pool_get(&sd->rx, p);
		if (rx_slot_post(sd, p->qp[s], s, (uint32_t)i)) {
			mrcfi_pool_put(&sd->rx, (uint32_t)i);
			return;
		}
		p->slots[s][p->nslots[s]++] = (uint32_t)i;
		ep->rx_grown++;
	}
}

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
void mrcfi_unexp_free(struct mrcfi_ep *ep, struct mrcfi_unexp *u)
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

void mrcfi_qp_detach(struct mrcfi_ep *ep, struct mrcfi_peer *p, int s)
{
	if (!p->qp[s])
		return;
	unexp_unhold(ep, p, s);
	(void)mrc_destroy_qp(p->qp[s]);
	p->qp[s] = NULL;
	for (uint32_t k = 0; p->slots[s] && k < p->nslots[s]; k++)
		if (p->slots[s][k] != UINT32_MAX)
			mrcfi_pool_put(&ep->d->side[s].rx, p->slots[s][k]);
	free(p->slots[s]);
	p->slots[s] = NULL;
	p->nslots[s] = 0;
}

void mrcfi_ep_accepted(struct mrcfi_domain *d, struct mrcfi_ep *ep, struct mrc_qp *qp,
		       const struct mrc_qp_addr *remote)
{
	struct mrcfi_name n = { remote->host, remote->priv };
	struct mrcfi_peer *p = mrcfi_peer_get(ep, &n);
	if (!p) {
		(void)mrc_destroy_qp(qp);
		return;
	}
	/* A peer connects to us once per QP of its own; again only after
	 * its QP failed, so ours is dead too even if we have not seen it. */
	if (p->qp[0])
		mrcfi_peer_reset(ep, p, 0);
	if (qp_attach(ep, p, 0, qp))
		mrcfi_qp_detach(ep, p, 0);
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
int mrcfi_peer_tx(struct mrcfi_ep *ep, struct mrcfi_peer *p)
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
			mrcfi_qp_detach(ep, p, 1);
		else
			(void)mrc_destroy_qp(qp);
		return r;
	}
	p->tx = 1;
	return 0;
}

/* ---- sending control messages ----------------------------------------- */
void mrcfi_mark_dead(struct mrcfi_domain *d)
{
	if (!d->dead) {
		d->dead = 1;
		mrcfi_fail_all(d, FI_EIO);
	}
}

/* Posts h (+ payload) from a send slot of p's tx side; -FI_EAGAIN without
 * a free slot. */
int mrcfi_post_ctl(struct mrcfi_ep *ep, struct mrcfi_peer *p, const struct mrcfi_hdr *h,
		    const struct iovec *iov, size_t niov, struct mrcfi_req *owner)
{
	struct mrcfi_side *sd = &ep->d->side[p->tx];
	/* a slot of ours names its request, or (low bit set) the peer of a
	 * control message, so that a failed QP gives both back */
	int i = mrcfi_pool_get(&sd->tx, owner ? (void *)owner : (void *)((uintptr_t)p | 1));
	if (i < 0)
		return -FI_EAGAIN;
	char *b = slot_addr(sd, &sd->tx, (uint32_t)i);
	int s = p->tx, tagged = !!(h->flags & MRCFI_F_TAGGED);
	uint64_t hi = h->tag >> MRCFI_IMM_TAGBITS;
	uint64_t loff = sd->tx.off + (uint64_t)i * MRCFI_SLOT;
	int r;
	if (h->op == MRCFI_EAGER && p->compact_ok && !(h->flags & MRCFI_F_DATA) &&
	    (!tagged || (p->tx_base_ok[s] && p->tx_base[s] == hi))) {
		/* the payload alone: a 4 KiB message is one packet */
		mrcfi_iov_copy_from(iov, niov, 0, b, h->len);
		uint32_t imm = MRCFI_IMM_COMPACT |
			       (tagged ? MRCFI_IMM_TAGGED | ((uint32_t)h->tag & MRCFI_IMM_TAGMASK) : 0);
		r = mrc_post_send_imm(p->qp[s], WR(WR_TX, s, i), sd->key, loff, h->len, imm);
		if (!r)
			ep->compact_sent++;
	} else {
		memcpy(b, h, sizeof(*h));
		if (h->op == MRCFI_EAGER || h->op == MRCFI_RTS)
			((struct mrcfi_hdr *)(void *)b)->rkey = ep->d->compact ? MRCFI_CAP_COMPACT : 0;
		if (h->op == MRCFI_EAGER)
			mrcfi_iov_copy_from(iov, niov, 0, b + sizeof(*h), h->len);
		r = mrc_post_send(p->qp[s], WR(WR_TX, s, i), sd->key, loff,
				  sizeof(*h) + (h->op == MRCFI_EAGER ? h->len : 0));
		if (!r && tagged && (h->op == MRCFI_EAGER || h->op == MRCFI_RTS)) {
			p->tx_base[s] = hi;
			p->tx_base_ok[s] = 1;
		}
	}
	if (r) {
		mrcfi_pool_put(&sd->tx, (uint32_t)i);
		if (r == -EPIPE || r == -ECONNRESET)
			mrcfi_mark_dead(ep->d);
		return r == -ENOSPC ? -FI_EAGAIN : r;
	}
	if (owner)
		owner->pending++;
	return 0;
}

/* A provider's own message (CTS, END): sent now, or queued in order. */
void mrcfi_ctl_send(struct mrcfi_ep *ep, struct mrcfi_peer *p, const struct mrcfi_hdr *h)
{
	if (p->tx < 0 && mrcfi_peer_tx(ep, p))
		return;
	if (!ep->ctlq && !mrcfi_post_ctl(ep, p, h, NULL, 0, NULL))
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

void mrcfi_hdr_init(struct mrcfi_hdr *h, uint8_t op)
{
	memset(h, 0, sizeof(*h));
	h->magic = MRCFI_MAGIC;
	h->op = op;
	h->hlen = sizeof(*h);
}

int mrcfi_cancel(struct mrcfi_ep *ep, void *context)
{
	for (int t = 0; t < 2; t++)
		for (struct mrcfi_req *q = ep->posted[t]; q; q = q->next)
			if (q->context == context) {
				mrcfi_list_del(&ep->posted[t], q);
				mrcfi_rx_done(q, 0, 0, FI_ECANCELED);
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
				mrcfi_pools_release(&d->side[s], ep->reqs[i]);
		for (struct mrcfi_peer *p = ep->peers; p; p = p->next)
			mrcfi_pools_release(&d->side[s], (void *)((uintptr_t)p | 1));
	}
	while (ep->peers) {
		struct mrcfi_peer *p = ep->peers;
		ep->peers = p->next;
		mrcfi_qp_detach(ep, p, 0);
		mrcfi_qp_detach(ep, p, 1);
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
