/* The ACKs a receiver sends: ACK/SACK/NACK packets, coalescing, ACKs held
 * for reverse data to carry (piggybacked), the NOQP NACK and its rate. */
#include <errno.h>
#include <string.h>

#include "transport/ack_tx.h"
#include "transport/evs.h"

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
	t->hdr_len = (uint16_t)mrce_wire_put_ack(t->hdr, h);
	e->st.tx_acks++;
	if (h->nack)
		e->st.nack_tx[h->nack]++;
}

/* A packet the QP's next ACK may go back on: the newest one in another
 * plane than the last ACK's, else the newest on another EV. */
static void ack_ev_seen(const struct mrce__peer *p, struct mrce__qp *qp, uint16_t ev)
{
	if (ev >= p->nev || ev + 1 == qp->ack_ev_last)
		return;
	if (!qp->ack_ev_last || !qp->ack_ev_alt ||
	    p->paths[ev].plane != p->paths[qp->ack_ev_last - 1].plane ||
	    p->paths[qp->ack_ev_alt - 1].plane == p->paths[qp->ack_ev_last - 1].plane)
		qp->ack_ev_alt = (uint16_t)(ev + 1);
}

/* ACKs go back on the EV of a packet they answer (same plane and spine in
 * reverse): the newest one's, unless the QP's last ACK went on that plane
 * (or EV) and a packet since came on another.  Always the newest's, with
 * planes sprayed in turn and ack_every packets an ACK, is always the same
 * plane: that plane's path dead both ways took every ACK with it, and
 * the sender, hearing nothing, waited for its RTO (1 ms) to retire it.
 * Not an EV our side of which is administratively down. */
static int ack_ev(struct mrce *e, struct mrce__peer *p, struct mrce__qp *qp,
		  const struct mrc_data_hdr *d)
{
	int ev = d->ev < p->nev ? d->ev : -1;
	if (qp && ev >= 0) {
		ack_ev_seen(p, qp, (uint16_t)ev);
		int last = qp->ack_ev_last - 1, alt = qp->ack_ev_alt - 1;
		if (last >= 0 && alt >= 0 && p->paths[alt].state != MRCE_EV_DENIED &&
		    (ev == last || p->paths[ev].plane == p->paths[last].plane))
			ev = alt;
	}
	if (ev < 0 || p->paths[ev].state == MRCE_EV_DENIED)
		ev = mrce__ev_pick(e, p, NULL, -1);
	if (qp && ev >= 0) {
		qp->ack_ev_last = (uint16_t)(ev + 1);
		qp->ack_ev_alt = 0;
	}
	return ev;
}

void mrce__ack_send(struct mrce *e, struct mrce__qp *qp, uint32_t peer,
		     const struct mrc_data_hdr *d, uint8_t nack, uint32_t rx_flags)
{
	struct mrce__peer *p = &e->peers[peer];
	/* A NACK answers its one packet, on that packet's EV. */
	int ev = ack_ev(e, p, nack == MRC_NACK_NONE ? qp : NULL, d);
	if (ev < 0)
		return;
	struct mrce_tx_pkt *t = mrce__ctrl_slot(e);
	if (!t)
		return;
	struct mrc_ack_hdr h = { .flags = (rx_flags & MRCE_RX_ECN) ? MRC_AF_ECN : 0,
		.nack = nack, .dqpn = qp ? qp->rqpn : 0,
		.cum_psn = qp ? qp->rcv_nxt : 0, .trig_psn = d->psn,
		.sack_base = qp ? qp->rcv_nxt : 0, .ev = d->ev, .ts_echo = d->ts,
		.token = qp ? qp->tx_token : 0,
		.rnr_timer = nack == MRC_NACK_RNR ? mrce_wire_rnr_code(e->cfg.rnr_delay_ns) : 0 };
	if (qp)
		ring_to_sack(qp->rbits, qp->rcv_nxt, h.sack);
	put_ack(e, t, peer, ev, &h);
	t->tclass = qp ? qp->tclass : MRCE_TC_DEFAULT;
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

void mrce__ack_noqp(struct mrce *e, uint32_t peer, const struct mrc_data_hdr *d,
		      uint64_t now)
{
	struct mrce__peer *p = &e->peers[peer];
	if (!noqp_allowed(e, now))
		return;
	int ev = d->ev < p->nev && p->paths[d->ev].state != MRCE_EV_DENIED ? d->ev :
		mrce__ev_pick(e, p, NULL, -1);
	struct mrce_tx_pkt *t = ev < 0 ? NULL : mrce__ctrl_slot(e);
	if (!t)
		return;
	/* The echoed token proves to the sender that this answers its own
	 * packet: a forger who does not know it cannot tear the QP down. */
	struct mrc_ack_hdr h = { .nack = MRC_NACK_NOQP, .dqpn = d->dqpn,
		.trig_psn = d->psn, .ev = d->ev, .ts_echo = d->ts, .token = d->token };
	put_ack(e, t, peer, ev, &h);
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
static int pb_fits(const struct mrce__qp *qp, uint16_t *sack)
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

static void ack_list_add(struct mrce *e, struct mrce__qp *qp, uint64_t due)
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
void mrce__ack_later(struct mrce *e, struct mrce__qp *qp, uint32_t peer,
		      const struct mrc_data_hdr *d, uint32_t rx_flags, uint64_t now)
{
	int was = qp->in_ack && qp->ack_pending;
	ack_ev_seen(&e->peers[peer], qp, d->ev);
	qp->ack_trig = *d;
	qp->ack_rx_ts = now;
	qp->ack_flags |= rx_flags;
	qp->ack_peer = peer;
	int can_carry = mrce__qp_can_send(e, qp, now);
	if (++qp->ack_pending >= e->cfg.ack_every && !can_carry) {
		mrce__ack_send(e, qp, peer, d, MRC_NACK_NONE, qp->ack_flags);
		qp->ack_pending = 0;
		qp->ack_flags = 0;
		return;
	}
	uint16_t sack;
	/* With xack, data of any QP to the peer may carry it (NCCL's two
	 * one-way QPs per comm pair: the reply goes on the other one). */
	struct mrce__peer *p = &e->peers[peer];
	uint64_t sent = qp->data_tx_ts;
	if (e->cfg.xack) {
		/* Not the data being acknowledged: on a loopback fabric the
		 * peer is this engine, whose QP qp->rqpn sent it. */
		uint64_t other = p->data_tx_qpn != qp->rqpn ? p->data_tx_ts : p->data_tx_prev;
		if (other > sent)
			sent = other;
	}
	/* ECN leaves at once: congestion news is not held. */
	int hold = e->cfg.ack_delay_ns && sent && now - sent <= PB_RECENT_NS &&
		   qp->ack_pending < e->cfg.ack_every &&
		   !(qp->ack_flags & MRCE_RX_ECN) && pb_fits(qp, &sack);
	/* The hold runs from the oldest packet it covers. */
	uint64_t due = !hold ? 0 : was && qp->ack_due ? qp->ack_due : now + e->cfg.ack_delay_ns;
	ack_list_add(e, qp, due);
	if (hold && e->cfg.xack) {
		p->xack_qpn = qp->qpn;
		p->xack_set = 1;
	}
}

/* Fills the piggybacked-ACK fields of a data packet the QP is about to
 * send, when it owes a plain ACK that fits them (otherwise the ACK leaves
 * as a packet).  The hold it reports is left out of the peer's RTT
 * samples, so holding never inflates them. */
void mrce__ack_attach(struct mrce *e, struct mrce__qp *qp, uint64_t now,
		     struct mrc_data_hdr *h)
{
	uint16_t sack;
	if (!qp->ack_pending || (qp->ack_flags & MRCE_RX_ECN) || !pb_fits(qp, &sack))
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

/* Data of QP qp to its peer carries the ACK another QP to that peer holds
 * (the one in the peer's xack slot), in the XACK extension, with that
 * QP's own ACK token: as authenticated as its ACK packet would be. */
void mrce__xack_attach(struct mrce *e, struct mrce__qp *qp, uint64_t now,
		       struct mrc_data_hdr *h, struct mrc_xack *x)
{
	/* The peer's data_tx_* record is read only with xack (ack_later):
	 * without it, nothing to keep on every data packet built. */
	if (!e->cfg.xack)
		return;
	struct mrce__peer *p = &e->peers[qp->peer];
	if (p->data_tx_qpn != qp->qpn) {
		p->data_tx_prev = p->data_tx_ts;
		p->data_tx_qpn = qp->qpn;
	}
	p->data_tx_ts = now;
	if (!p->xack_set)
		return;
	p->xack_set = 0;
	struct mrce__qp *o = p->xack_qpn != qp->qpn ? mrce__qp_get(e, p->xack_qpn) : NULL;
	uint16_t sack;
	if (!o || !o->ack_pending || o->state != MRCE_QPS_RTS || o->peer != qp->peer ||
	    (o->ack_flags & MRCE_RX_ECN) || !pb_fits(o, &sack))
		return;
	uint64_t hold = now > o->ack_rx_ts ? (now - o->ack_rx_ts) / MRC_PB_HOLD_NS : 0;
	h->flags |= MRC_F_XACK;
	x->dqpn = o->rqpn;
	x->cum_psn = o->rcv_nxt;
	x->sack = sack;
	x->hold = hold > UINT16_MAX ? UINT16_MAX : (uint16_t)hold;
	x->token = o->tx_token;
	o->ack_pending = 0;
	o->ack_flags = 0;
	e->st.tx_pb_acks++;
	e->st.tx_xacks++;
}

void mrce__acks_flush(struct mrce *e, uint64_t now, int keep_senders)
{
	struct mrce__qp **pp = &e->ack_head;
	e->ack_hold_min = UINT64_MAX;
	while (*pp) {
		struct mrce__qp *qp = *pp;
		if (qp->ack_pending && qp->state == MRCE_QPS_RTS) {
			int due = !qp->ack_due || qp->ack_due <= now;
			if (!due || (keep_senders && mrce__qp_can_send(e, qp, now))) {
				if (qp->ack_due && qp->ack_due < e->ack_hold_min)
					e->ack_hold_min = qp->ack_due;
				pp = &qp->ack_next;
				continue;
			}
			if (qp->ack_due)
				e->st.ack_delay_expired++;
			mrce__ack_send(e, qp, qp->ack_peer, &qp->ack_trig, MRC_NACK_NONE, qp->ack_flags);
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
void mrce__ack_flush_qp(struct mrce *e, struct mrce__qp *qp)
{
	if (qp->ack_pending && qp->state == MRCE_QPS_RTS) {
		if (qp->ack_due)
			e->st.ack_delay_expired++;
		mrce__ack_send(e, qp, qp->ack_peer, &qp->ack_trig, MRC_NACK_NONE, qp->ack_flags);
	}
	qp->ack_pending = 0;
}

/* Some ACK must leave at the next mrce_tx (not a held one). */
int mrce__acks_urgent(const struct mrce *e)
{
	for (const struct mrce__qp *qp = e->ack_head; qp; qp = qp->ack_next)
		if (qp->ack_pending && qp->state == MRCE_QPS_RTS && !qp->ack_due)
			return 1;
	return 0;
}
