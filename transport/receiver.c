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

/* The NOQP token bucket (GCRA, one timestamp): at most noqp_per_s NACKs a
 * second after a burst of noqp_burst. */
static int noqp_allowed(struct mrce *e, uint64_t now)
{
	if (!e->cfg.noqp_per_s) {
		e->st.noqp_limited++;
		return 0;
	}
	uint64_t step = 1000000000ull / e->cfg.noqp_per_s;
	uint64_t burst = e->cfg.noqp_burst ? e->cfg.noqp_burst : 1;
	uint64_t tat = e->noqp_tat > now ? e->noqp_tat : now;
	if (tat - now >= step * burst) {
		e->st.noqp_limited++;
		return 0;
	}
	e->noqp_tat = tat + step;
	return 1;
}

static void send_noqp(struct mrce *e, uint32_t peer, const struct mrc_data_hdr *d,
		      uint64_t now)
{
	struct mrc__peer *p = &e->peers[peer];
	if (!noqp_allowed(e, now))
		return;
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
		      const struct mrc_data_hdr *d, uint32_t rx_flags, uint64_t now);

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
		send_noqp(e, peer, d, now);
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
	/* The ACK it carries first, as an ACK packet would be taken; one that
	 * acknowledges what was never sent makes the whole packet suspect. */
	if ((d->flags & MRC_F_PB_ACK) && mrc__pb_ack_rx(e, now, qp, d) < 0)
		return;
	if (qp->state != MRC_QPS_RTS)
		return;
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
	ack_later(e, qp, peer, d, rx_flags, now);
}

/* A QP that sent data this recently gets data of its own soon (a reply,
 * the next request, a credit): its ACKs may wait for it.  A QP that only
 * receives (a one-way stream) never holds one. */
#define PB_RECENT_NS 1000000ull

/* The receive state fits a piggybacked ACK: everything received after
 * rcv_nxt lies within MRC_PB_SACK_BITS of it, and the newest arrival (whose
 * hold pb_hold reports) is the highest PSN received, which is how the
 * sender finds the packet to take the RTT sample from.  *sack gets the
 * pb_sack bits. */
static int pb_fits(const struct mrc__qp *qp, uint16_t *sack)
{
	uint8_t b[MRC_SACK_BITS / 8];
	ring_to_sack(qp->rbits, qp->rcv_nxt, b);
	for (int i = 3; i < MRC_SACK_BITS / 8; i++)
		if (b[i])
			return 0;
	/* bit i of b is PSN rcv_nxt + i; pb_sack bit j is PSN rcv_nxt + 1 + j */
	uint32_t w = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16;
	if (w >> (MRC_PB_SACK_BITS + 1))
		return 0;
	*sack = (uint16_t)(w >> 1);
	uint32_t top = *sack ? qp->rcv_nxt + 1 + (31 - (uint32_t)__builtin_clz(*sack)) :
			       qp->rcv_nxt - 1;
	return qp->ack_trig.psn == top;
}

static void ack_list_add(struct mrce *e, struct mrc__qp *qp, uint64_t due)
{
	qp->ack_due = due;
	if (due && due < e->ack_hold_min)
		e->ack_hold_min = due;
	if (!qp->in_ack) {
		qp->in_ack = 1;
		qp->ack_next = e->ack_head;
		e->ack_head = qp;
	}
}

/* ACK coalescing: one ACK (cumulative + SACK, echoing the newest packet)
 * covers up to ack_every packets, or whatever arrived before the caller
 * next asks for packets to send (the end of its receive batch), so ACKs
 * are never held past the current turn of the caller's loop; except that
 * a QP sending data of its own holds a plain ACK up to ack_delay_ns for
 * that data to carry it (a ping-pong then sends no ACK packets). */
static void ack_later(struct mrce *e, struct mrc__qp *qp, uint32_t peer,
		      const struct mrc_data_hdr *d, uint32_t rx_flags, uint64_t now)
{
	int was = qp->in_ack && qp->ack_pending;
	qp->ack_trig = *d;
	qp->ack_rx_ts = now;
	qp->ack_flags |= rx_flags;
	qp->ack_peer = peer;
	int can_carry = mrc__qp_can_send(e, qp, now);
	if (++qp->ack_pending >= e->cfg.ack_every && !can_carry) {
		send_ack(e, qp, peer, d, MRC_NACK_NONE, qp->ack_flags);
		qp->ack_pending = 0;
		qp->ack_flags = 0;
		return;
	}
	uint16_t sack;
	/* ECN leaves at once: congestion news is not held. */
	int hold = e->cfg.ack_delay_ns && qp->data_tx_ts &&
		   now - qp->data_tx_ts <= PB_RECENT_NS &&
		   qp->ack_pending < e->cfg.ack_every &&
		   !(qp->ack_flags & MRC_RX_ECN) && pb_fits(qp, &sack);
	/* The hold runs from the oldest packet it covers. */
	uint64_t due = !hold ? 0 : was && qp->ack_due ? qp->ack_due : now + e->cfg.ack_delay_ns;
	ack_list_add(e, qp, due);
}

/* Fills the piggybacked-ACK fields of a data packet the QP is about to
 * send, when it owes a plain ACK that fits them (otherwise the ACK leaves
 * as a packet).  The hold it reports is left out of the peer's RTT
 * samples, so holding never inflates them. */
void mrc__ack_attach(struct mrce *e, struct mrc__qp *qp, uint64_t now,
		     struct mrc_data_hdr *h)
{
	uint16_t sack;
	if (!qp->ack_pending || (qp->ack_flags & MRC_RX_ECN) || !pb_fits(qp, &sack))
		return;
	uint64_t hold = now > qp->ack_rx_ts ? (now - qp->ack_rx_ts) / MRC_PB_HOLD_NS : 0;
	h->flags |= MRC_F_PB_ACK;
	h->pb_cum_psn = qp->rcv_nxt;
	h->pb_sack = sack;
	h->pb_hold = hold > UINT16_MAX ? UINT16_MAX : (uint16_t)hold;
	qp->ack_pending = 0;
	qp->ack_flags = 0;
	e->st.tx_pb_acks++;
}

void mrc__acks_flush(struct mrce *e, uint64_t now, int keep_senders)
{
	struct mrc__qp **pp = &e->ack_head;
	e->ack_hold_min = UINT64_MAX;
	while (*pp) {
		struct mrc__qp *qp = *pp;
		if (qp->ack_pending && qp->state == MRC_QPS_RTS) {
			int due = !qp->ack_due || qp->ack_due <= now;
			if (!due || (keep_senders && mrc__qp_can_send(e, qp, now))) {
				if (qp->ack_due && qp->ack_due < e->ack_hold_min)
					e->ack_hold_min = qp->ack_due;
				pp = &qp->ack_next;
				continue;
			}
			if (qp->ack_due)
				e->st.ack_delay_expired++;
			send_ack(e, qp, qp->ack_peer, &qp->ack_trig, MRC_NACK_NONE, qp->ack_flags);
		}
		*pp = qp->ack_next;
		qp->in_ack = 0;
		qp->ack_pending = 0;
		qp->ack_flags = 0;
		qp->ack_due = 0;
	}
}

/* A QP going away still owes its peer the ACK it holds for its own data:
 * dropped, the peer would retransmit into a QP that no longer exists and
 * fail with a NOQP NACK (ECONNRESET) although everything arrived. */
void mrc__ack_flush_qp(struct mrce *e, struct mrc__qp *qp)
{
	if (qp->ack_pending && qp->state == MRC_QPS_RTS) {
		if (qp->ack_due)
			e->st.ack_delay_expired++;
		send_ack(e, qp, qp->ack_peer, &qp->ack_trig, MRC_NACK_NONE, qp->ack_flags);
	}
	qp->ack_pending = 0;
}

/* Some ACK must leave at the next mrce_tx (not a held one). */
int mrc__acks_urgent(const struct mrce *e)
{
	for (const struct mrc__qp *qp = e->ack_head; qp; qp = qp->ack_next)
		if (qp->ack_pending && qp->state == MRC_QPS_RTS && !qp->ack_due)
			return 1;
	return 0;
}
