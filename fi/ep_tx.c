/* Posting (docs/libfabric.md "Design"): sends (eager or RTS), RMA
 * writes and atomic adds, each under d->lock. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fi/mrcfi.h"
#include "fi/ep_int.h"

/* ---- posting ----------------------------------------------------------- */

static int dest_peer(struct mrcfi_ep *ep, fi_addr_t dest, struct mrcfi_peer **out)
{
	struct mrcfi_name n;
	if (!ep->av || mrcfi_av_get(ep->av, dest, &n))
		return -FI_EINVAL;
	struct mrcfi_peer *p = mrcfi_peer_get(ep, &n);
	if (!p)
		return -FI_ENOMEM;
	int r = mrcfi_peer_tx(ep, p);
	if (r)
		return r == -ETIMEDOUT ? -FI_ETIMEDOUT : r == -ECONNREFUSED ? -FI_ECONNREFUSED : r;
	*out = p;
	return 0;
}

size_t mrcfi_iov_len(const struct iovec *iov, size_t n)
{
	size_t t = 0;
	for (size_t i = 0; i < n; i++)
		t += iov[i].iov_len;
	return t;
}

/* A send's or write's request, its buffer and flags noted; NULL: none free. */
static struct mrcfi_req *tx_req(struct mrcfi_ep *ep, enum mrcfi_kind kind, const struct iovec *iov,
				size_t niov, size_t len, uint64_t data, uint64_t flags,
				void *context)
{
	struct mrcfi_req *r = mrcfi_req_new(ep, kind, context);
	if (!r)
		return NULL;
	r->flags = flags;
	r->completion = !(flags & FI_INJECT);
	r->data = data;
	r->has_data = !!(flags & FI_REMOTE_CQ_DATA);
	r->len = len;
	r->niov = niov;
	memcpy(r->iov, iov, niov * sizeof(*iov));
	return r;
}

/* The request's peer, connected (1); or 0 with the request over: mrcd is
 * gone (an FI_EIO completion, or *ret -FI_EIO when fail_now) or the peer
 * cannot be had (*ret says why). */
static int tx_peer(struct mrcfi_req *r, fi_addr_t dest, int fail_now, ssize_t *ret)
{
	if (r->ep->d->dead) {
		if (fail_now) {
			mrcfi_req_free(r);
			*ret = -FI_EIO;
		} else {
			r->err = FI_EIO;
			mrcfi_tx_done(r);
		}
		return 0;
	}
	struct mrcfi_peer *p;
	int e = dest_peer(r->ep, dest, &p);
	if (e) {
		mrcfi_req_free(r);
		*ret = e;
		return 0;
	}
	r->peer = p;
	return 1;
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
	size_t len = mrcfi_iov_len(iov, niov);
	int inject = !!(flags & FI_INJECT);
	if (inject && len > MRCFI_EAGER_MAX)
		return -FI_EINVAL;
	if (len > MRCFI_MAX_MSG)
		return -FI_EMSGSIZE;
	pthread_mutex_lock(&d->lock);
	ssize_t ret = 0;
	struct mrcfi_req *r = tx_req(ep, len <= MRCFI_EAGER_MAX ? K_SEND : K_RZ, iov, niov, len, data,
				     flags, context);
	if (!r) {
		ret = -FI_EAGAIN;
		goto out;
	}
	r->tag = tag;
	if (!tx_peer(r, dest, inject, &ret))
		goto out;
	struct mrcfi_peer *p = r->peer;
	int e;
	struct mrcfi_hdr h;
	mrcfi_hdr_init(&h, r->kind == K_SEND ? MRCFI_EAGER : MRCFI_RTS);
	h.flags = (flags & FI_TAGGED ? MRCFI_F_TAGGED : 0) | (r->has_data ? MRCFI_F_DATA : 0);
	h.tag = tag;
	h.data = data;
	h.sreq = r->id;
	if (r->kind == K_SEND)
		h.len = (uint32_t)len;
	else
		h.total = len;
	/* queued control messages go first: they may be older */
	mrcfi_pump(ep);
	e = mrcfi_post_ctl(ep, p, &h, iov, niov, r);
	if (!e && r->kind == K_RZ)
		MRCFI_TRACE(d, TEV_SEND_POST, p->name.host, r->id, len);
	if (e) {
		mrcfi_req_free(r);
		ret = e;
	} else if (r->kind == K_SEND && r->completion &&
		   !(flags & (FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE))) {
		/* The bytes are in our send slot: the buffer is free now,
		 * which is all inject-complete promises.  Waiting for mrcd's
		 * completion would wait for the peer's ACK, which its daemon
		 * may hold for a packet to ride on (docs/libfabric.md
		 * "Completions").  A later failure is logged and counted. */
		if (!(ep->txflags & FI_SELECTIVE_COMPLETION) || (r->flags & FI_COMPLETION))
			mrcfi_cq_put(ep->txcq, r, mrcfi_tx_flags(r), 0, NULL, 0, 0, FI_ADDR_NOTAVAIL, 0, 0, 0);
		mrcfi_cntr_inc(ep->c_send, 0);
		r->completion = 0;
		r->early = 1;
	}
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
	size_t len = mrcfi_iov_len(iov, niov);
	int inject = !!(flags & FI_INJECT);
	if (inject && len > MRCFI_EAGER_MAX)
		return -FI_EINVAL;
	pthread_mutex_lock(&d->lock);
	ssize_t ret = 0;
	struct mrcfi_req *r = tx_req(ep, K_WRITE, iov, niov, len, data, flags, context);
	if (!r) {
		ret = -FI_EAGAIN;
		goto out;
	}
	if (!tx_peer(r, dest, 0, &ret))
		goto out;
	struct mrcfi_peer *p = r->peer;
	/* our side 1 reaches the peer's side 0 and the other way round */
	r->rkey = p->tx == 1 ? (uint32_t)(key >> 32) : (uint32_t)key;
	r->raddr = addr;
	mrcfi_pump(ep);
	if (inject) {
		/* the bytes must be copied now: no chunk, no inject */
		struct mrcfi_side *sd = &d->side[p->tx];
		if (!sd->txc.nfree || (r->has_data && !sd->tx.nfree)) {
			mrcfi_req_free(r);
			ret = -FI_EAGAIN;
			goto out;
		}
	}
	if (mrcfi_tx_pump(r)) {
		if (!r->sent && !inject) {
			/* nothing posted yet: the application retries */
			mrcfi_req_free(r);
			ret = -FI_EAGAIN;
			goto out;
		}
		mrcfi_list_add_tail(&ep->wait_tx, r);
	} else {
		mrcfi_tx_check(r);
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
	struct mrcfi_req *r = mrcfi_req_new(ep, K_ATOMIC, context);
	if (!r) {
		ret = -FI_EAGAIN;
		goto out;
	}
	r->flags = flags;
	r->completion = !(flags & FI_INJECT);
	if (d->dead) {
		r->err = FI_EIO;
		mrcfi_tx_done(r);
		goto out;
	}
	struct mrcfi_peer *p;
	int e = dest_peer(ep, dest, &p);
	if (e) {
		mrcfi_req_free(r);
		ret = e;
		goto out;
	}
	r->peer = p;
	uint64_t v;
	memcpy(&v, buf, 8);
	uint32_t rkey = p->tx == 1 ? (uint32_t)(key >> 32) : (uint32_t)key;
	e = mrc_post_atomic_add(p->qp[p->tx], WR(WR_ATOM, p->tx, (uintptr_t)r), rkey, addr, v);
	if (e) {
		mrcfi_req_free(r);
		if (e == -EPIPE || e == -ECONNRESET)
			mrcfi_mark_dead(d);
		ret = e == -ENOSPC ? -FI_EAGAIN : e;
		goto out;
	}
	r->pending = 1;
out:
	pthread_mutex_unlock(&d->lock);
	return ret;
}
