/* Receiver side of a QP: validation and placement on arrival in any order,
 * duplicate suppression, in-order effects (IMM, SEND, atomic) once every
 * earlier PSN is placed, and ACK/SACK/NACK generation. */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "transport/engine_int.h"

/* The receive ring is indexed by psn & 255; the SACK bitmap starts at
 * base: rotate the ring right by base & 255, then lay it out bytewise. */
static void ring_to_sack(const uint64_t ring[4], uint32_t base, uint8_t *sack)
{
	uint32_t r = base & 255, q = r / 64, sh = r % 64;
	for (int k = 0; k < 4; k++) {
		uint64_t w = ring[(k + q) % 4] >> sh;
		if (sh)
			w |= ring[(k + q + 1) % 4] << (64 - sh);
		for (int b = 0; b < 8; b++)
			sack[k * 8 + b] = (uint8_t)(w >> (8 * b));
	}
}

/* Fills a queued control packet with an ACK/NACK and counts it. */
static void put_ack(struct mrce *e, struct mrce_tx_pkt *t, uint32_t peer, int ev,
		    const struct mrc_ack_hdr *h)
{
	t->peer = peer;
	t->ev = (uint16_t)ev;
	t->plen = 0;
	t->payload = NULL;
	t->hdr_len = (uint16_t)mrc_wire_put_ack(t->hdr, h);
	e->st.tx_acks++;
	if (h->nack)
		e->st.nack_tx[h->nack]++;
}

/* ACKs go back on the EV of the packet they answer (same plane and spine
 * in reverse), unless our side of that path is administratively down. */
static void send_ack(struct mrce *e, struct mrc__qp *qp, uint32_t peer,
		     const struct mrc_data_hdr *d, uint8_t nack, uint32_t rx_flags)
{
	struct mrc__peer *p = &e->peers[peer];
	int ev = d->ev < p->nev ? d->ev : -1;
	if (ev < 0 || p->paths[ev].state == MRC_EV_DENIED)
		ev = mrc__path_pick(e, p, NULL, -1);
	if (ev < 0)
		return;
	struct mrce_tx_pkt *t = mrc__ctrl_slot(e);
	if (!t)
		return;
	struct mrc_ack_hdr h = { .flags = (rx_flags & MRC_RX_ECN) ? MRC_AF_ECN : 0,
		.nack = nack, .dqpn = qp ? qp->rqpn : 0,
		.cum_psn = qp ? qp->rcv_nxt : 0, .trig_psn = d->psn,
		.sack_base = qp ? qp->rcv_nxt : 0, .ev = d->ev, .ts_echo = d->ts,
		.token = qp ? qp->tx_token : 0,
		.rnr_timer = nack == MRC_NACK_RNR ? mrc_wire_rnr_code(e->cfg.rnr_delay_ns) : 0 };
	if (qp)
		ring_to_sack(qp->rbits, qp->rcv_nxt, h.sack);
	put_ack(e, t, peer, ev, &h);
}

static void send_noqp(struct mrce *e, uint32_t peer, const struct mrc_data_hdr *d)
{
	struct mrc__peer *p = &e->peers[peer];
	int ev = d->ev < p->nev && p->paths[d->ev].state != MRC_EV_DENIED ? d->ev :
		mrc__path_pick(e, p, NULL, -1);
	struct mrce_tx_pkt *t = ev < 0 ? NULL : mrc__ctrl_slot(e);
	if (!t)
		return;
	/* The echoed token proves to the sender that this answers its own
	 * packet: a forger who does not know it cannot tear the QP down. */
	struct mrc_ack_hdr h = { .nack = MRC_NACK_NOQP, .dqpn = d->dqpn,
		.trig_psn = d->psn, .ev = d->ev, .ts_echo = d->ts, .token = d->token };
	put_ack(e, t, peer, ev, &h);
}

static int is_send(uint8_t op) { return op == MRC_OP_SEND || op == MRC_OP_SEND_IMM; }

/* Checks a remote access and returns where it lands, or NULL. */
static uint8_t *remote_target(struct mrce *e, struct mrc__qp *qp, uint32_t rkey,
			      uint64_t off, uint64_t len, uint32_t right)
{
	struct mrc__mr *m = mrc__mr_get(e, rkey);
	if (!m || m->pd != qp->pd || !(m->access & right) || off > m->len ||
	    len > m->len - off)
		return NULL;
	return m->base + off;
}

static void fail_access(struct mrce *e, struct mrc__qp *qp, uint32_t peer,
			const struct mrc_data_hdr *d, int err, uint32_t rx_flags, uint64_t now)
{
	e->st.access_errors++;
	send_ack(e, qp, peer, d, MRC_NACK_ACCESS, rx_flags);
	mrc__qp_fail(e, qp, err, d->psn, now);
}

/* Runs the effect of a message whose every PSN up to its last one is now
 * placed: this is what orders IMM, SEND and atomics after earlier WRITEs. */
static void effect(struct mrce *e, struct mrc__qp *qp, struct mrc__rslot *r,
		   uint32_t psn, uint64_t now)
{
	struct mrc__rcqe c = { 0 };
	switch (r->op) {
	case MRC_OP_WRITE_IMM:
		c = (struct mrc__rcqe){ .op = MRC_WC_RECV_WRITE_IMM, .has_imm = 1,
			.imm = r->imm, .byte_len = r->mlen };
		break;
	case MRC_OP_SEND:
	case MRC_OP_SEND_IMM: {
		struct mrc__rwqe *rw = &qp->rq[qp->rq_head & e->rqmask];
		c = (struct mrc__rcqe){ .op = MRC_WC_RECV, .wr_id = rw->wr_id,
			.has_imm = r->op == MRC_OP_SEND_IMM, .imm = r->imm,
			.byte_len = r->mlen };
		struct mrc__mr *m = mrc__mr_get(e, rw->lkey);
		if (m && m->refs)
			m->refs--;
		qp->rq_head++;
		qp->ssn_base++;
		break;
	}
	case MRC_OP_ATOMIC_ADD: {
		/* Re-checked: the region may have been deregistered since the
		 * packet arrived. */
		uint8_t *t = remote_target(e, qp, r->rkey, r->off, 8, MRC_ACCESS_REMOTE_ATOMIC);
		if (!t || ((uintptr_t)t & 7)) {
			e->st.access_errors++;
			mrc__qp_fail(e, qp, -EACCES, psn, now);
			return;
		}
		__atomic_fetch_add((uint64_t *)(void *)t, r->add, __ATOMIC_RELEASE);
		r->has = 0;
		return;
	}
	}
	r->has = 0;
	qp->rcq[qp->rcq_tail++ & e->wmask] = c;
	mrc__qp_ready(e, qp);
}

static void ack_later(struct mrce *e, struct mrc__qp *qp, uint32_t peer,
		      const struct mrc_data_hdr *d, uint32_t rx_flags);

void mrc__data_rx(struct mrce *e, uint64_t now, uint32_t peer,
		  const struct mrc_pkt_view *v, uint32_t rx_flags)
{
	const struct mrc_data_hdr *d = &v->u.data;
	struct mrc__qp *qp = mrc__qp_get(e, d->dqpn);
	if (!qp) {
		/* Gone (its owner died): tell the sender at once rather than
		 * let it retry to exhaustion.  A QP still in RESET is not
		 * answered: it is about to be connected. */
		e->st.rx_unknown_qp++;
		send_noqp(e, peer, d);
		return;
	}
	if (qp->state == MRC_QPS_RESET) {
		e->st.rx_unknown_qp++;
		return;
	}
	if (qp->peer != peer) {
		e->st.rx_bad_peer++;
		return;
	}
	if (d->token != qp->rx_token) {
		e->st.rx_bad_token[MRC_TOK_DATA]++;
		return;
	}
	if (rx_flags & MRC_RX_ECN)
		e->st.rx_ecn++;
	if (qp->state == MRC_QPS_ERROR) {
		/* Repeat the NACK so the sender learns even if one was lost,
		 * naming the PSN that failed (not this one), so the sender
		 * charges the right work request whatever order NACKs take. */
		e->st.rx_qp_error++;
		struct mrc_data_hdr first = *d;
		first.psn = qp->err_psn;
		send_ack(e, qp, peer, &first, MRC_NACK_ACCESS, rx_flags);
		return;
	}
	qp->rx_pkts++;
	uint32_t dist = d->psn - qp->rcv_nxt;
	if ((int32_t)dist < 0 || (dist < e->cfg.window && mrc__bit_test(qp->rbits, d->psn))) {
		qp->rx_dups++;
		e->st.rx_dup++;
		send_ack(e, qp, peer, d, MRC_NACK_NONE, rx_flags);
		return;
	}
	if (dist >= e->cfg.window) {
		e->st.rx_oow++;
		send_ack(e, qp, peer, d, MRC_NACK_OOW, rx_flags);
		return;
	}
	/* Each PSN yields at most one receive completion, so completions not
	 * yet polled shrink the window instead of overflowing. */
	if (dist >= e->cfg.window - (qp->rcq_tail - qp->rcq_head)) {
		send_ack(e, qp, peer, d, MRC_NACK_RNR, rx_flags);
		return;
	}
	if (v->trimmed) {
		e->st.rx_trimmed++;
		send_ack(e, qp, peer, d, MRC_NACK_TRIMMED, rx_flags);
		return;
	}
	uint8_t *dst = NULL;
	struct mrc__rslot *r = &qp->rslots[d->psn & e->wmask];
	if (is_send(d->op)) {
		uint32_t k = d->rkey - qp->ssn_base;
		if ((int32_t)k < 0) {   /* a SEND already completed: protocol bug */
			e->st.rx_drop[MRC_DROP_FIELD]++;
			return;
		}
		if (k >= qp->rq_tail - qp->rq_head) {
			send_ack(e, qp, peer, d, MRC_NACK_RNR, rx_flags);
			return;
		}
		struct mrc__rwqe *rw = &qp->rq[(qp->rq_head + k) & e->rqmask];
		if (d->mlen > rw->len) {
			fail_access(e, qp, peer, d, -EMSGSIZE, rx_flags, now);
			return;
		}
		dst = rw->base + d->off;
	} else if (d->op == MRC_OP_ATOMIC_ADD) {
		if (!remote_target(e, qp, d->rkey, d->off, 8, MRC_ACCESS_REMOTE_ATOMIC)) {
			fail_access(e, qp, peer, d, -EACCES, rx_flags, now);
			return;
		}
		uint64_t be;
		memcpy(&be, v->payload, 8);
		*r = (struct mrc__rslot){ .op = d->op, .has = 1, .rkey = d->rkey,
			.off = d->off, .add = be64toh(be) };
	} else {
		dst = remote_target(e, qp, d->rkey, d->off, d->plen, MRC_ACCESS_REMOTE_WRITE);
		if (!dst) {
			fail_access(e, qp, peer, d, -EACCES, rx_flags, now);
			return;
		}
	}
	if (dst && d->plen) {
		memcpy(dst, v->payload, d->plen);
		qp->bytes_placed += d->plen;
		e->st.bytes_placed += d->plen;
	}
	if ((d->flags & MRC_F_LAST) && d->op != MRC_OP_WRITE && d->op != MRC_OP_ATOMIC_ADD)
		*r = (struct mrc__rslot){ .op = d->op, .has = 1, .imm = d->imm,
			.mlen = d->mlen };
	else if (d->op != MRC_OP_ATOMIC_ADD)
		r->has = 0;
	mrc__bit_set(qp->rbits, d->psn);
	while (mrc__bit_test(qp->rbits, qp->rcv_nxt)) {
		struct mrc__rslot *c = &qp->rslots[qp->rcv_nxt & e->wmask];
		mrc__bit_clear(qp->rbits, qp->rcv_nxt);
		qp->rcv_nxt++;
		if (c->has)
			effect(e, qp, c, qp->rcv_nxt - 1, now);
		if (qp->state != MRC_QPS_RTS)
			return;
	}
	ack_later(e, qp, peer, d, rx_flags);
}

/* ACK coalescing: one ACK (cumulative + SACK, echoing the newest packet)
 * covers up to ack_every packets, or whatever arrived before the caller
 * next asks for packets to send (the end of its receive batch), so ACKs
 * are never held past the current turn of the caller's loop. */
static void ack_later(struct mrce *e, struct mrc__qp *qp, uint32_t peer,
		      const struct mrc_data_hdr *d, uint32_t rx_flags)
{
	qp->ack_trig = *d;
	qp->ack_flags |= rx_flags;
	qp->ack_peer = peer;
	if (++qp->ack_pending >= e->cfg.ack_every) {
		send_ack(e, qp, peer, d, MRC_NACK_NONE, qp->ack_flags);
		qp->ack_pending = 0;
		qp->ack_flags = 0;
		return;
	}
	if (!qp->in_ack) {
		qp->in_ack = 1;
		qp->ack_next = e->ack_head;
		e->ack_head = qp;
	}
}

void mrc__acks_flush(struct mrce *e)
{
	while (e->ack_head) {
		struct mrc__qp *qp = e->ack_head;
		e->ack_head = qp->ack_next;
		qp->in_ack = 0;
		if (qp->ack_pending && qp->state == MRC_QPS_RTS)
			send_ack(e, qp, qp->ack_peer, &qp->ack_trig, MRC_NACK_NONE, qp->ack_flags);
		qp->ack_pending = 0;
		qp->ack_flags = 0;
	}
}
