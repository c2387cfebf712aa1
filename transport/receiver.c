/* Receiver side of a QP: validation and placement on arrival in any order,
 * duplicate suppression, in-order effects (IMM, SEND, atomic) once every
 * earlier PSN is placed.  The ACKs it owes are ack_tx.c's. */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "transport/ack_rx.h"
#include "transport/ack_tx.h"
#include "transport/qp.h"
#include "transport/receiver.h"
#include "transport/wpool.h"

static int is_send(uint8_t op) { return op == MRC_OP_SEND || op == MRC_OP_SEND_IMM; }

/* Checks a remote access and returns where it lands, or NULL. */
static uint8_t *remote_target(struct mrce *e, struct mrce__qp *qp, uint32_t rkey,
			      uint64_t off, uint64_t len, uint32_t right)
{
	struct mrce__mr *m = mrce__mr_get(e, rkey);
	if (!m || m->pd != qp->pd || !(m->access & right) || off > m->len ||
	    len > m->len - off)
		return NULL;
	return m->base + off;
}

static void fail_access(struct mrce *e, struct mrce__qp *qp, uint32_t peer,
			const struct mrc_data_hdr *d, int err, uint32_t rx_flags, uint64_t now)
{
	e->st.access_errors++;
	mrce__ack_send(e, qp, peer, d, MRC_NACK_ACCESS, rx_flags);
	mrce__qp_fail(e, qp, err, d->psn, now);
}

/* Runs the effect of a message whose every PSN up to its last one is now
 * placed: this is what orders IMM, SEND and atomics after earlier WRITEs. */
static void effect(struct mrce *e, struct mrce__qp *qp, struct mrce__rslot *r,
		   uint32_t psn, uint64_t now)
{
	struct mrce__rcqe c = { 0 };
	switch (r->op) {
	case MRC_OP_WRITE_IMM:
		c = (struct mrce__rcqe){ .op = MRCE_WC_RECV_WRITE_IMM, .has_imm = 1,
			.imm = r->imm, .byte_len = r->mlen };
		break;
	case MRC_OP_SEND:
	case MRC_OP_SEND_IMM: {
		struct mrce__rwqe *rw = &qp->rq[qp->rq_head & e->rqmask];
		c = (struct mrce__rcqe){ .op = MRCE_WC_RECV, .wr_id = rw->wr_id,
			.has_imm = r->op == MRC_OP_SEND_IMM, .imm = r->imm,
			.byte_len = r->mlen };
		struct mrce__mr *m = mrce__mr_get(e, rw->lkey);
		if (m && m->refs)
			m->refs--;
		qp->rq_head++;
		qp->ssn_base++;
		break;
	}
	case MRC_OP_ATOMIC_ADD: {
		/* Re-checked: the region may have been deregistered since the
		 * packet arrived. */
		uint8_t *t = remote_target(e, qp, r->rkey, r->off, 8, MRCE_ACCESS_REMOTE_ATOMIC);
		if (!t || ((uintptr_t)t & 7)) {
			e->st.access_errors++;
			mrce__qp_fail(e, qp, -EACCES, psn, now);
			return;
		}
		__atomic_fetch_add((uint64_t *)(void *)t, r->add, __ATOMIC_RELEASE);
		r->has = 0;
		return;
	}
	}
	r->has = 0;
	qp->rcq[qp->rcq_tail++ & e->wmask] = c;
	mrce__qp_ready(e, qp);
}

/* The QP a data packet is for, once every check that does not depend on
 * its PSN passed and the ACK it carries was taken (NULL: dropped or
 * answered here). */
static struct mrce__qp *rx_qp(struct mrce *e, uint64_t now, uint32_t peer,
			     const struct mrc_pkt_view *v, uint32_t rx_flags)
{
	const struct mrc_data_hdr *d = &v->u.data;
	struct mrce__qp *qp = mrce__qp_get(e, d->dqpn);
	if (!qp) {
		/* Gone (its owner died): tell the sender at once rather than
		 * let it retry to exhaustion.  A QP still in RESET is not
		 * answered: it is about to be connected. */
		e->st.rx_unknown_qp++;
		mrce__ack_noqp(e, peer, d, now);
		return NULL;
	}
	if (qp->state == MRCE_QPS_RESET) {
		e->st.rx_unknown_qp++;
		return NULL;
	}
	if (qp->peer != peer) {
		e->st.rx_bad_peer++;
		return NULL;
	}
	if (d->token != qp->rx_token) {
		e->st.rx_bad_token[MRCE_TOK_DATA]++;
		return NULL;
	}
	if (rx_flags & MRCE_RX_ECN)
		e->st.rx_ecn++;
	if (qp->state == MRCE_QPS_ERROR) {
		/* Repeat the NACK so the sender learns even if one was lost,
		 * naming the PSN that failed (not this one), so the sender
		 * charges the right work request whatever order NACKs take. */
		e->st.rx_qp_error++;
		struct mrc_data_hdr first = *d;
		first.psn = qp->err_psn;
		mrce__ack_send(e, qp, peer, &first, MRC_NACK_ACCESS, rx_flags);
		return NULL;
	}
	/* The ACKs it carries first (another QP's, whose token is checked
	 * before anything has an effect, then its own), as ACK packets would
	 * be taken; one that acknowledges what was never sent makes the whole
	 * packet suspect. */
	if ((d->flags & MRC_F_XACK) && mrce__xack_rx(e, now, peer, d, &v->xack) < 0)
		return NULL;
	if ((d->flags & MRC_F_PB_ACK) && mrce__pb_ack_rx(e, now, qp, d) < 0)
		return NULL;
	return qp->state == MRCE_QPS_RTS ? qp : NULL;
}

/* The PSN against the receive window: 0 when it is new and fits, -1 when
 * the packet was answered instead (duplicate, out of window, no room for
 * its completion, trimmed). */
static int rx_window(struct mrce *e, struct mrce__qp *qp, uint32_t peer,
		     const struct mrc_pkt_view *v, uint32_t rx_flags)
{
	const struct mrc_data_hdr *d = &v->u.data;
	uint32_t dist = d->psn - qp->rcv_nxt;
	if ((int32_t)dist < 0 || (dist < e->cfg.window && mrce__bit_test(qp->rbits, d->psn))) {
		qp->rx_dups++;
		e->st.rx_dup++;
		mrce__ack_send(e, qp, peer, d, MRC_NACK_NONE, rx_flags);
		return -1;
	}
	if (dist >= e->cfg.window) {
		e->st.rx_oow++;
		mrce__ack_send(e, qp, peer, d, MRC_NACK_OOW, rx_flags);
		return -1;
	}
	/* Each PSN yields at most one receive completion, so completions not
	 * yet polled shrink the window instead of overflowing. */
	if (dist >= e->cfg.window - (qp->rcq_tail - qp->rcq_head)) {
		mrce__ack_send(e, qp, peer, d, MRC_NACK_RNR, rx_flags);
		return -1;
	}
	if (v->trimmed) {
		e->st.rx_trimmed++;
		mrce__ack_send(e, qp, peer, d, MRC_NACK_TRIMMED, rx_flags);
		return -1;
	}
	return 0;
}

/* The receive block the packet's effect record goes in (wpool.c).  With
 * none free the packet is refused as by a receiver not ready: the sender
 * sends it again after the RNR delay, and nothing was placed. */
static int rx_block(struct mrce *e, struct mrce__qp *qp, uint32_t peer,
		    const struct mrc_data_hdr *d, uint32_t rx_flags)
{
	if (qp->rslots || !mrce__wpool_recv_get(e, qp))
		return 0;
	e->st.wpool_rnr++;
	mrce__ack_send(e, qp, peer, d, MRC_NACK_RNR, rx_flags);
	return -1;
}

/* Checks where the packet lands, places its payload and records the
 * effect its message has once complete.  -1: refused (answered). */
static int rx_place(struct mrce *e, uint64_t now, struct mrce__qp *qp, uint32_t peer,
		    const struct mrc_pkt_view *v, uint32_t rx_flags)
{
	const struct mrc_data_hdr *d = &v->u.data;
	uint8_t *dst = NULL;
	struct mrce__rslot *r = &qp->rslots[d->psn & e->wmask];
	if (is_send(d->op)) {
		uint32_t k = d->rkey - qp->ssn_base;
		if ((int32_t)k < 0) {   /* a SEND already completed: protocol bug */
			e->st.rx_drop[MRC_DROP_FIELD]++;
			return -1;
		}
		if (k >= qp->rq_tail - qp->rq_head) {
			mrce__ack_send(e, qp, peer, d, MRC_NACK_RNR, rx_flags);
			return -1;
		}
		struct mrce__rwqe *rw = &qp->rq[(qp->rq_head + k) & e->rqmask];
		if (d->mlen > rw->len) {
			fail_access(e, qp, peer, d, -EMSGSIZE, rx_flags, now);
			return -1;
		}
		dst = rw->base + d->off;
	} else if (d->op == MRC_OP_ATOMIC_ADD) {
		if (!remote_target(e, qp, d->rkey, d->off, 8, MRCE_ACCESS_REMOTE_ATOMIC)) {
			fail_access(e, qp, peer, d, -EACCES, rx_flags, now);
			return -1;
		}
		uint64_t be;
		memcpy(&be, v->payload, 8);
		*r = (struct mrce__rslot){ .op = d->op, .has = 1, .rkey = d->rkey,
			.off = d->off, .add = be64toh(be) };
	} else {
		dst = remote_target(e, qp, d->rkey, d->off, d->plen, MRCE_ACCESS_REMOTE_WRITE);
		if (!dst) {
			fail_access(e, qp, peer, d, -EACCES, rx_flags, now);
			return -1;
		}
	}
	if (dst && d->plen) {
		/* memmove: a local packet's payload is the sender's region itself
		 * (mrce_rx_split), which may overlap the target */
		memmove(dst, v->payload, d->plen);
		qp->bytes_placed += d->plen;
		e->st.bytes_placed += d->plen;
	}
	if ((d->flags & MRC_F_LAST) && d->op != MRC_OP_WRITE && d->op != MRC_OP_ATOMIC_ADD)
		*r = (struct mrce__rslot){ .op = d->op, .has = 1, .imm = d->imm,
			.mlen = d->mlen };
	else if (d->op != MRC_OP_ATOMIC_ADD)
		r->has = 0;
	return 0;
}

/* PSN is placed: rcv_nxt moves over every PSN placed in a row, running
 * the effects they complete.  -1: an effect failed the QP. */
static int rx_advance(struct mrce *e, uint64_t now, struct mrce__qp *qp, uint32_t psn)
{
	mrce__bit_set(qp->rbits, psn);
	while (mrce__bit_test(qp->rbits, qp->rcv_nxt)) {
		struct mrce__rslot *c = &qp->rslots[qp->rcv_nxt & e->wmask];
		mrce__bit_clear(qp->rbits, qp->rcv_nxt);
		qp->rcv_nxt++;
		if (c->has)
			effect(e, qp, c, qp->rcv_nxt - 1, now);
		if (qp->state != MRCE_QPS_RTS)
			return -1;
	}
	return 0;
}

void mrce__data_rx(struct mrce *e, uint64_t now, uint32_t peer,
		  const struct mrc_pkt_view *v, uint32_t rx_flags)
{
	const struct mrc_data_hdr *d = &v->u.data;
	struct mrce__qp *qp = rx_qp(e, now, peer, v, rx_flags);
	if (!qp)
		return;
	qp->rx_pkts++;
	if (rx_window(e, qp, peer, v, rx_flags) || rx_block(e, qp, peer, d, rx_flags) ||
	    rx_place(e, now, qp, peer, v, rx_flags) ||
	    rx_advance(e, now, qp, d->psn))
		return;
	mrce__ack_later(e, qp, peer, d, rx_flags, now);
}
