/* Progress (docs/libfabric.md "Design"): drains every QP's completions,
 * attaches accepted connections, resets a failed QP's peer and fails
 * everything when mrcd is gone. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fi/mrcfi.h"
#include "fi/ep_int.h"

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
		mrcfi_on_recv(ep, p, s, slot_addr(sd, &sd->rx, i), c->byte_len,
			      !!(c->flags & MRC_CQE_F_IMM), c->imm);
		/* the slot goes back to the same QP, unless an unexpected
		 * message over the bound stays in it */
		if (ep->rx_held || !p->qp[s])
			return;
		if (rx_slot_post(sd, p->qp[s], s, i))
			MRCFI_WARN(FI_LOG_EP_DATA, "cannot repost a receive slot\n");
		else
			ep->rx_reposted++;
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
		mrcfi_tx_check(r);
	}
	mrcfi_pump(ep);
}

/* Gives back every piece of side s's pools that serves owner. */
void mrcfi_pools_release(struct mrcfi_side *sd, const void *owner)
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
void mrcfi_peer_reset(struct mrcfi_ep *ep, struct mrcfi_peer *p, int s)
{
	struct mrcfi_domain *d = ep->d;
	MRCFI_WARN(FI_LOG_EP_DATA, "the QP to mrc://%u:%u failed; its requests fail\n",
		   p->name.host, p->name.sid);
	for (uint32_t i = 0; i < MRCFI_MAX_REQS; i++) {
		struct mrcfi_req *r = ep->reqs[i];
		if (!r || r->peer != p)
			continue;
		mrcfi_list_del(&ep->wait_tx, r);
		mrcfi_list_del(&ep->wait_chunk, r);
		if (r->kind == K_RECV) {
			mrcfi_rx_done(r, r->got, r->got, FI_EIO);
			continue;
		}
		for (int k = 0; k < 2; k++)
			mrcfi_pools_release(&d->side[k], r);
		if (!r->err)
			r->err = FI_EIO;
		r->pending = 0;
		r->ncts = 0;
		mrcfi_tx_done(r);
	}
	for (int k = 0; k < 2; k++)
		mrcfi_pools_release(&d->side[k], (void *)((uintptr_t)p | 1));
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
				mrcfi_unexp_free(ep, u);
			} else {
				prev = u;
			}
			u = next;
		}
	}
	mrcfi_qp_detach(ep, p, s);
	p->broken[s] = 0;
	if (p->tx == s)
		p->tx = -1;
}

static int drain_qp(struct mrcfi_ep *ep, struct mrcfi_peer *p, int s)
{
	struct mrc_completion c[16];
	int n = 0, total = 0;
	ep->rx_reposted = 0;
	while (p->qp[s] && (n = mrc_poll_cq(p->qp[s], c, 16)) > 0) {
		for (int k = 0; k < n; k++)
			on_completion(ep, p, s, &c[k]);
		total += n;
	}
	/* the QP's slots ran dry before we looked (messages held over the
	 * unexpected bound do not count: RNR is their back-pressure) */
	if (p->qp[s] && !p->broken[s] && ep->rx_reposted >= p->nslots[s] &&
	    p->nslots[s] < ep->d->rx_max)
		mrcfi_qp_grow(ep, p, s);
	if (p->qp[s] && n < 0 && n != -EOVERFLOW)
		mrcfi_mark_dead(ep->d);
	else if (p->qp[s] && p->broken[s] && !ep->d->dead)
		mrcfi_peer_reset(ep, p, s);
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
				mrcfi_rx_done(r, 0, 0, err);
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
				mrcfi_rx_done(r, 0, 0, err);
			} else {
				r->err = err;
				r->pending = 0;
				mrcfi_tx_done(r);
			}
		}
	}
}
