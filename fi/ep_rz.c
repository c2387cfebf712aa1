/* Rendezvous and RMA chunks (docs/libfabric.md "Design"): the receiver
 * grants chunks of its bounce region (CTS), the sender WRITEs them and
 * says so (RZDATA); fi_write's pieces take the same send chunks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fi/mrcfi.h"
#include "fi/ep_int.h"

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
			mrcfi_hdr_init(&h, MRCFI_CTS);
			h.flags = MRCFI_F_END;
			h.sreq = r->sreq;
			h.rreq = r->id;
			h.total = r->got;
			mrcfi_ctl_send(ep, r->peer, &h);
		}
		MRCFI_TRACE(ep->d, TEV_RX_DONE, r->peer->name.host, r->sreq, r->got);
		mrcfi_rx_done(r, r->got, r->total, 0);
		return;
	}
	struct mrcfi_side *sd = &ep->d->side[r->side];
	while (r->gnext < r->want && r->nch < MRCFI_PIPE) {
		int c = mrcfi_pool_get(&sd->rxc, r);
		if (c < 0) {
			/* nothing in flight: wait for another message's chunk */
			if (!r->nch && !mrcfi_on_list(ep->wait_chunk, r)) {
				MRCFI_TRACE(ep->d, TEV_CTS_WAIT, r->peer->name.host, r->sreq, r->gnext);
				mrcfi_list_add_tail(&ep->wait_chunk, r);
			}
			return;
		}
		uint64_t n = r->want - r->gnext;
		uint32_t len = n > MRCFI_CHUNK ? MRCFI_CHUNK : (uint32_t)n;
		r->ch[r->nch].idx = c;
		r->ch[r->nch].off = r->gnext;
		r->ch[r->nch].len = len;
		r->nch++;
		mrcfi_hdr_init(&h, MRCFI_CTS);
		h.sreq = r->sreq;
		h.rreq = r->id;
		h.total = r->gnext;
		h.len = len;
		h.rkey = sd->key;
		h.roff = sd->rxc.off + (uint64_t)c * MRCFI_CHUNK;
		r->gnext += len;
		MRCFI_TRACE(ep->d, TEV_CTS_OUT, r->peer->name.host, r->sreq, len);
		mrcfi_ctl_send(ep, r->peer, &h);
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

void mrcfi_rz_start(struct mrcfi_req *r, struct mrcfi_peer *p, int side,
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
	mrcfi_iov_copy_from(r->iov, r->niov, off, sd->base + sd->txc.off + (uint64_t)c * MRCFI_CHUNK,
		      len);
	int e = mrc_post_write(p->qp[p->tx], WR(WR_CHW, p->tx, c), sd->key,
			       sd->txc.off + (uint64_t)c * MRCFI_CHUNK, len, rkey, roff);
	if (e) {
		mrcfi_pool_put(&sd->txc, (uint32_t)c);
		if (e == -EPIPE || e == -ECONNRESET)
			mrcfi_mark_dead(r->ep->d);
		return e == -ENOSPC ? -FI_EAGAIN : e;
	}
	r->pending++;
	return 0;
}

/* Moves a send or write on as far as chunks and slots allow; 1 when it
 * must wait for one. */
int mrcfi_tx_pump(struct mrcfi_req *r)
{
	struct mrcfi_ep *ep = r->ep;
	struct mrcfi_side *sd = &ep->d->side[r->peer->tx];
	while (r->kind == K_RZ && r->ncts) {
		if (!sd->txc.nfree || !sd->tx.nfree) {
			MRCFI_TRACE(ep->d, TEV_TX_WAIT, r->peer->name.host, r->id, r->ncts);
			return 1;
		}
		int e = post_chunk_write(r, r->cts[0].off, r->cts[0].len, r->cts[0].rkey,
					 r->cts[0].roff);
		if (e == -FI_EAGAIN) {
			MRCFI_TRACE(ep->d, TEV_TX_WAIT, r->peer->name.host, r->id, r->ncts);
			return 1;
		}
		if (e) {
			r->err = mrcfi_err(e);
			return 0;
		}
		struct mrcfi_hdr h;
		mrcfi_hdr_init(&h, MRCFI_RZDATA);
		h.sreq = r->id;
		h.rreq = r->cts[0].rreq;
		h.total = r->cts[0].off;
		h.len = r->cts[0].len;
		e = mrcfi_post_ctl(ep, r->peer, &h, NULL, 0, r);
		if (e) {
			r->err = mrcfi_err(e == -FI_EAGAIN ? -EIO : e);
			return 0;
		}
		r->sent += r->cts[0].len;
		MRCFI_TRACE(ep->d, TEV_WRITE, r->peer->name.host, r->id, r->cts[0].len);
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
			mrcfi_hdr_init(&h, MRCFI_WDATA);
			h.flags = MRCFI_F_DATA;
			h.data = r->data;
			h.len = (uint32_t)r->len;
			h.total = r->raddr;
			int e = mrcfi_post_ctl(ep, r->peer, &h, NULL, 0, r);
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
void mrcfi_pump(struct mrcfi_ep *ep)
{
	while (ep->ctlq) {
		struct mrcfi_ctlq *q = ep->ctlq;
		if (mrcfi_post_ctl(ep, q->peer, &q->h, NULL, 0, NULL))
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
		if (mrcfi_tx_pump(w))
			mrcfi_list_add_tail(&ep->wait_tx, w);
		else
			mrcfi_tx_check(w);
		w = next;
	}
	wait_chunk_pump(ep);
}

void mrcfi_on_cts(struct mrcfi_ep *ep, struct mrcfi_peer *p, const struct mrcfi_hdr *h)
{
	struct mrcfi_req *r = mrcfi_req_find(ep, h->sreq, K_RZ, p);
	if (!r || r->ended) {
		mrcfi_proto_error(ep, p, "a CTS for no waiting send");
		return;
	}
	if (h->flags & MRCFI_F_END) {
		r->ended = 1;
		r->ncts = 0;
		mrcfi_tx_check(r);
		return;
	}
	if (h->total != r->ctsnext || h->len > r->len - r->ctsnext || r->ncts == MRCFI_PIPE) {
		mrcfi_proto_error(ep, p, "a CTS outside its message");
		return;
	}
	MRCFI_TRACE(ep->d, TEV_CTS_IN, p->name.host, r->id, h->len);
	r->cts[r->ncts].off = h->total;
	r->cts[r->ncts].len = h->len;
	r->cts[r->ncts].rkey = h->rkey;
	r->cts[r->ncts].roff = h->roff;
	r->cts[r->ncts].rreq = h->rreq;
	r->ncts++;
	r->ctsnext += h->len;
	if (mrcfi_tx_pump(r)) {
		if (!mrcfi_on_list(ep->wait_tx, r))
			mrcfi_list_add_tail(&ep->wait_tx, r);
	} else {
		mrcfi_tx_check(r);
	}
}

void mrcfi_on_rzdata(struct mrcfi_ep *ep, struct mrcfi_peer *p, int side,
		      const struct mrcfi_hdr *h)
{
	struct mrcfi_req *r = mrcfi_req_find(ep, h->rreq, K_RECV, p);
	/* only into the oldest chunk granted, by the QP it was granted for */
	if (!r || !r->nch || r->side != side || h->total != r->got || h->total != r->ch[0].off ||
	    h->len != r->ch[0].len || h->sreq != r->sreq) {
		mrcfi_proto_error(ep, p, "rendezvous data for no granted chunk");
		return;
	}
	MRCFI_TRACE(ep->d, TEV_RZDATA_IN, p->name.host, r->sreq, h->len);
	struct mrcfi_side *sd = &ep->d->side[side];
	mrcfi_iov_copy_to(r->iov, r->niov, r->got, sd->base + sd->rxc.off +
		    (uint64_t)r->ch[0].idx * MRCFI_CHUNK, h->len);
	mrcfi_pool_put(&sd->rxc, (uint32_t)r->ch[0].idx);
	memmove(&r->ch[0], &r->ch[1], (size_t)(r->nch - 1) * sizeof(r->ch[0]));
	r->nch--;
	r->got += h->len;
	grant(r);
	wait_chunk_pump(ep);
}
