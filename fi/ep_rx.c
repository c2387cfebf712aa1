/* Arrivals and matching (docs/libfabric.md "Design"): a message from a
 * receive slot meets a posted receive (tags, FI_DIRECTED_RECV) or joins
 * the bounded unexpected queue; fi_recv/fi_trecv, peek, claim, discard. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fi/mrcfi.h"
#include "fi/ep_int.h"

/* ---- arrivals ---------------------------------------------------------- */
static int rx_match(const struct mrcfi_req *r, const struct mrcfi_peer *p, uint64_t tag,
		    int tagged)
{
	if (r->src != FI_ADDR_UNSPEC &&
	    (r->srcname.host != p->name.host || r->srcname.sid != p->name.sid))
		return 0;
	return !tagged || !((r->tag ^ tag) & ~r->ignore);
}

void mrcfi_proto_error(struct mrcfi_ep *ep, struct mrcfi_peer *p, const char *what)
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
	mrcfi_iov_copy_to(r->iov, r->niov, 0, payload, n);
	mrcfi_rx_done(r, n, len, 0);
}

/* A multi-receive buffer m is done with: off its list, and a completion
 * with FI_MULTI_RECV and no data says so. */
static void multi_release(struct mrcfi_ep *ep, struct mrcfi_req *m)
{
	mrcfi_list_del(&ep->posted[0], m);
	mrcfi_cq_put(ep->rxcq, m, FI_RECV | FI_MSG | FI_MULTI_RECV, 0, NULL, 0, 0,
		     FI_ADDR_NOTAVAIL, 0, 0, 0);
	mrcfi_req_free(m);
}

/* A message of total bytes for the multi-receive buffer m: a receive over
 * m's next bytes, which completes as any receive does (its buf where the
 * message starts), or NULL when it does not fit, m then released.  Once
 * less than FI_OPT_MIN_MULTI_RECV is left m goes, and the carved
 * receive's completion carries FI_MULTI_RECV. */
static struct mrcfi_req *multi_carve(struct mrcfi_ep *ep, struct mrcfi_req *m, uint64_t total)
{
	struct mrcfi_req *r;
	if (total > m->len - m->moff || !(r = mrcfi_req_new(ep, K_RECV, m->context))) {
		multi_release(ep, m);
		return NULL;
	}
	r->flags = m->flags & ~(uint64_t)FI_MULTI_RECV;
	r->src = m->src;
	r->srcname = m->srcname;
	r->niov = 1;
	r->iov[0].iov_base = (char *)m->iov[0].iov_base + m->moff;
	r->iov[0].iov_len = (size_t)total;
	r->len = (size_t)total;
	m->moff += total;
	if (m->len - m->moff < ep->min_multi_recv) {
		mrcfi_list_del(&ep->posted[0], m);
		mrcfi_req_free(m);
		r->multi_last = 1;
	}
	return r;
}

static void on_msg(struct mrcfi_ep *ep, struct mrcfi_peer *p, int side, const struct mrcfi_hdr *h,
		   const void *payload)
{
	int tagged = !!(h->flags & MRCFI_F_TAGGED);
	for (struct mrcfi_req *r = ep->posted[tagged], *next; r; r = next) {
		next = r->next;
		if (!rx_match(r, p, h->tag, tagged))
			continue;
		if (r->flags & FI_MULTI_RECV) {
			r = multi_carve(ep, r, h->op == MRCFI_EAGER ? h->len : h->total);
			if (!r)
				continue;
		} else {
			mrcfi_list_del(&ep->posted[tagged], r);
		}
		if (h->op == MRCFI_EAGER) {
			eager_deliver(r, p, h->flags, h->tag, h->data, payload, h->len);
		} else {
			MRCFI_TRACE(ep->d, TEV_RTS_MATCHED, p->name.host, h->sreq, r->id);
			mrcfi_rz_start(r, p, side, h);
		}
		return;
	}
	/* Over the bound (or out of memory) the message stays in its slot,
	 * which is not reposted until a receive takes it: the peer's sends
	 * then wait in RNR (retried forever by default), nothing is lost. */
	struct mrcfi_domain *d = ep->d;
	if (h->op == MRCFI_RTS)
		MRCFI_TRACE(d, TEV_RTS_UNEXP, p->name.host, h->sreq, h->total);
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

static void on_wdata(struct mrcfi_ep *ep, struct mrcfi_peer *p, const struct mrcfi_hdr *h)
{
	mrcfi_cq_put(ep->rxcq, NULL, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA, h->len, NULL, h->data,
	       0, mrcfi_src_of(ep, p), 0, 0, 0);
}

void mrcfi_on_recv(struct mrcfi_ep *ep, struct mrcfi_peer *p, int side, const void *buf,
		    size_t n, int has_imm, uint32_t imm)
{
	struct mrcfi_hdr h;
	if (has_imm) {
		/* a compact EAGER: only if we offered to take them */
		if (!ep->d->compact ||
		    mrcfi_compact_parse(imm, n, p->rx_base_ok[side], p->rx_base[side], &h))
			mrcfi_proto_error(ep, p, "a malformed compact message");
		else
			on_msg(ep, p, side, &h, buf);
		return;
	}
	if (mrcfi_hdr_parse(buf, n, &h)) {
		mrcfi_proto_error(ep, p, "a malformed message");
		return;
	}
	if (h.op == MRCFI_EAGER || h.op == MRCFI_RTS) {
		p->compact_ok = ep->d->compact && (h.rkey & MRCFI_CAP_COMPACT);
		if (h.flags & MRCFI_F_TAGGED) {
			p->rx_base[side] = h.tag >> MRCFI_IMM_TAGBITS;
			p->rx_base_ok[side] = 1;
		}
	}
	switch (h.op) {
	case MRCFI_EAGER: case MRCFI_RTS:
		on_msg(ep, p, side, &h, (const char *)buf + sizeof(h));
		break;
	case MRCFI_CTS: mrcfi_on_cts(ep, p, &h); break;
	case MRCFI_RZDATA: mrcfi_on_rzdata(ep, p, side, &h); break;
	case MRCFI_WDATA: on_wdata(ep, p, &h); break;
	}
}

static void unexp_unlink(struct mrcfi_ep *ep, int tagged, struct mrcfi_unexp *u)
{
	struct mrcfi_unexp *prev = NULL;
	for (struct mrcfi_unexp *v = ep->unexp[tagged]; v; prev = v, v = v->next) {
		if (v != u)
			continue;
		if (prev)
			prev->next = u->next;
		else
			ep->unexp[tagged] = u->next;
		if (ep->unexp_tail[tagged] == u)
			ep->unexp_tail[tagged] = prev;
		u->next = NULL;
		return;
	}
}

/* Claimed or unclaimed unexpected message for a receive, or NULL. */
static struct mrcfi_unexp *unexp_take(struct mrcfi_ep *ep, int tagged, const struct mrcfi_req *r,
				      void *claim, int remove)
{
	for (struct mrcfi_unexp *u = ep->unexp[tagged]; u; u = u->next) {
		if (claim ? u->claim != claim : (u->claim || !rx_match(r, u->peer, u->tag, tagged)))
			continue;
		if (remove)
			unexp_unlink(ep, tagged, u);
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
		mrcfi_hdr_init(&h, MRCFI_RTS);
		h.flags = u->flags;
		h.tag = u->tag;
		h.data = u->data;
		h.sreq = u->sreq;
		h.total = u->total;
		MRCFI_TRACE(ep->d, TEV_UNEXP_TAKEN, u->peer->name.host, u->sreq, r->id);
		mrcfi_rz_start(r, u->peer, u->side, &h);
	}
	mrcfi_unexp_free(ep, u);
}

/* Discarding a rendezvous message tells its sender to stop. */
static void unexp_discard(struct mrcfi_ep *ep, struct mrcfi_unexp *u)
{
	if (u->op == MRCFI_RTS) {
		struct mrcfi_hdr h;
		mrcfi_hdr_init(&h, MRCFI_CTS);
		h.flags = MRCFI_F_END;
		h.sreq = u->sreq;
		mrcfi_ctl_send(ep, u->peer, &h);
	}
	mrcfi_unexp_free(ep, u);
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
	/* FI_MULTI_RECV (from the op flags too): untagged receives of one
	 * buffer only */
	if (tagged || (flags & (FI_PEEK | FI_CLAIM)))
		flags &= ~(uint64_t)FI_MULTI_RECV;
	if ((flags & FI_MULTI_RECV) && (niov != 1 || !(ep->caps & FI_MULTI_RECV)))
		return -FI_EINVAL;
	pthread_mutex_lock(&d->lock);
	ssize_t ret = 0;
	struct mrcfi_req *r = mrcfi_req_new(ep, K_RECV, context);
	if (!r) {
		ret = -FI_EAGAIN;
		goto out;
	}
	r->flags = flags;
	r->tag = tag;
	r->ignore = ignore;
	r->niov = niov;
	if (niov)   /* a peek may name no buffer (NULL) */
		memcpy(r->iov, iov, niov * sizeof(*iov));
	r->len = mrcfi_iov_len(iov, niov);
	r->src = FI_ADDR_UNSPEC;
	if (src != FI_ADDR_UNSPEC && (ep->caps & FI_DIRECTED_RECV)) {
		if (!ep->av || mrcfi_av_get(ep->av, src, &r->srcname)) {
			mrcfi_req_free(r);
			ret = -FI_EINVAL;
			goto out;
		}
		r->src = src;
	}
	if (d->dead) {
		mrcfi_rx_done(r, 0, 0, FI_EIO);
		goto out;
	}
	if (r->len > MRCFI_EAGER_MAX && !(flags & (FI_PEEK | FI_CLAIM)))
		MRCFI_TRACE(d, TEV_RECV_POST, 0, r->id, r->len);
	if (flags & FI_PEEK) {
		struct mrcfi_unexp *u = unexp_take(ep, tagged, r, NULL, !!(flags & FI_DISCARD));
		if (!u) {
			mrcfi_cq_put(ep->rxcq, r, FI_RECV | FI_TAGGED, 0, NULL, 0, 0, FI_ADDR_NOTAVAIL,
			       FI_ENOMSG, 0, 0);
			mrcfi_req_free(r);
			goto out;
		}
		uint64_t fl = FI_RECV | (tagged ? FI_TAGGED : FI_MSG) |
			      (u->flags & MRCFI_F_DATA ? FI_REMOTE_CQ_DATA : 0);
		mrcfi_cq_put(ep->rxcq, r, fl, u->total, NULL, u->data, u->tag, mrcfi_src_of(ep, u->peer), 0, 0,
		       0);
		if (flags & FI_DISCARD)
			unexp_discard(ep, u);
		else if (flags & FI_CLAIM)
			u->claim = context;
		mrcfi_req_free(r);
		goto out;
	}
	if (flags & FI_CLAIM) {
		struct mrcfi_unexp *u = unexp_take(ep, tagged, r, context, 1);
		if (!u) {
			mrcfi_req_free(r);
			ret = -FI_EINVAL;   /* nothing was claimed with this context */
			goto out;
		}
		if (flags & FI_DISCARD) {
			mrcfi_cq_put(ep->rxcq, r, FI_RECV | FI_TAGGED, 0, NULL, u->data, u->tag,
			       mrcfi_src_of(ep, u->peer), 0, 0, 0);
			unexp_discard(ep, u);
			mrcfi_req_free(r);
		} else {
			unexp_deliver(r, u);
		}
		goto out;
	}
	if (flags & FI_MULTI_RECV) {
		/* posted first: a carve may release it */
		mrcfi_list_add_tail(&ep->posted[0], r);
		struct mrcfi_unexp *u;
		while ((u = unexp_take(ep, 0, r, NULL, 0))) {
			struct mrcfi_req *c = multi_carve(ep, r, u->total);   /* may free r */
			if (!c)
				break;
			unexp_unlink(ep, 0, u);
			int last = c->multi_last;
			unexp_deliver(c, u);
			if (last)
				break;
		}
		goto out;
	}
	struct mrcfi_unexp *u = unexp_take(ep, tagged, r, NULL, 1);
	if (u)
		unexp_deliver(r, u);
	else
		mrcfi_list_add_tail(&ep->posted[tagged], r);
out:
	pthread_mutex_unlock(&d->lock);
	return ret;
}
