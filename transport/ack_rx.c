/* The ACKs a sender receives: cumulative and selective acknowledgement,
 * NACKs (access, trimmed, RNR, NOQP), RTT samples, spurious losses, and
 * the ACKs that ride on reverse data. */
#include <errno.h>

#include "transport/ack_rx.h"
#include "transport/loss.h"
#include "transport/evs.h"
#include "transport/qp.h"

#define RNR_LIMIT_ERR  (-ENOBUFS)

/* A loss declaration proved wrong, rtt after the copy the peer had was
 * sent: counted once (lost_by cleared), and like RACK's DSACK rule the
 * tolerance of the rule that declared it widens: reordering across paths
 * (reo_extra) or within one (reo_own, which FIFO paths never need), by a
 * quarter of the RTT and at once to cover this packet's lateness past the
 * base RTT, up to the RTO (which would fire first anyway).  Both halve
 * again after 1024 calm ACKs (calm_ack). */
static void spurious_loss(struct mrce *e, struct mrce__qp *qp, struct mrce__slot *s,
			  uint64_t rtt)
{
	struct mrce__peer *p = &e->peers[qp->peer];
	uint64_t *reo = s->lost_by == MRCE__LB_OWN ? &p->reo_own : &p->reo_extra;
	qp->spurious++;
	mrce__loss_spurious(e, s);
	s->lost_by = MRCE__LB_NONE;
	p->clean_acks = 0;
	uint64_t step = qp->srtt / 4 > e->cfg.reorder_slack_ns ? qp->srtt / 4 : e->cfg.reorder_slack_ns;
	uint64_t late = rtt > p->min_rtt ? rtt - p->min_rtt : 0;
	*reo += step;
	if (*reo < late)
		*reo = late;
	if (*reo > qp->rto)
		*reo = qp->rto;
}

/* hold: how long the peer held the ACK for data to carry it (pb_hold),
 * which is not part of the round trip. */
static void ack_one(struct mrce *e, struct mrce__qp *qp, uint32_t psn, uint64_t now,
		    uint64_t hold, struct mrce__acked_evs *a)
{
	struct mrce__slot *s = mrce__slot_of(e, qp, psn);
	/* A first transmission only: an ACK of a resent packet may be its
	 * original's, which went on another EV. */
	if (s->state == MRCE__S_INFLIGHT && !s->tries) {
		uint32_t k = 0;
		while (k < a->n && a->ev[k] != s->ev)
			k++;
		if (k < a->n) {
			if ((int32_t)(s->xseq - a->xseq[k]) > 0)
				a->xseq[k] = s->xseq;
		} else if (k < MRCE__ACKED_EVS) {
			a->ev[k] = s->ev;
			a->xseq[k] = s->xseq;
			a->n++;
		}
	}
	if (s->state == MRCE__S_INFLIGHT) {
		mrce__lst_remove(qp, (uint16_t)(psn & e->wmask));
		qp->inflight_pkts--;
		qp->inflight_bytes -= s->plen;
		if ((int32_t)(s->xseq + 1 - qp->rack_seq) > 0)
			qp->rack_seq = s->xseq + 1;
		/* Every acknowledged packet proves its path, and (sent once, so
		 * unambiguous) measures it: ACKs are coalesced and come back on
		 * the EV of the newest packet only, so the echo alone would
		 * leave most paths unmeasured. */
		struct mrce__peer *p = &e->peers[qp->peer];
		p->paths[s->ev].last_ack = now;
		if (s->sent_ts > p->acked_sent)
			p->acked_sent = s->sent_ts;
		p->heard = now;
		if (!s->tries && now > s->sent_ts + hold)
			mrce__ev_rtt(e, p, s->ev, now - s->sent_ts - hold);
	}
	/* Declared lost and acked before its resend left: the peer had an
	 * earlier copy (trims and RNR NACKs are no declaration). */
	if (s->state == MRCE__S_LOST && s->lost_by != MRCE__LB_NONE)
		spurious_loss(e, qp, s, now - s->sent_ts);
	if (s->state == MRCE__S_INFLIGHT || s->state == MRCE__S_LOST)
		qp->bytes_acked += s->plen;
	s->state = MRCE__S_ACKED;
	mrce__bit_set(qp->sacked, psn);
	mrce__bit_clear(qp->lostmap, psn);
}

/* Rotates a 256-bit bitmap whose bit i stands for base+i so that it is
 * indexed like the rings (by psn & 255). */
static void sack_to_ring(const uint8_t *sack, uint32_t base, uint64_t out[4])
{
	uint64_t in[4];
	for (int k = 0; k < 4; k++) {
		uint64_t w = 0;
		for (int b = 7; b >= 0; b--)
			w = (w << 8) | sack[k * 8 + b];
		in[k] = w;
	}
	uint32_t r = base & 255, q = r / 64, sh = r % 64;
	for (int k = 0; k < 4; k++)
		out[k] = 0;
	for (int k = 0; k < 4; k++) {
		out[(k + q) % 4] |= in[k] << sh;
		if (sh)
			out[(k + q + 1) % 4] |= in[k] >> (64 - sh);
	}
}

/* The RTO from srtt and rttvar, no lower than the QP's floor (rto_check)
 * and within the configured bounds. */
static void rto_set(struct mrce *e, struct mrce__qp *qp)
{
	uint64_t rto = qp->srtt + 4 * qp->rttvar;
	if (rto < qp->rto_floor)
		rto = qp->rto_floor;
	if (rto < e->cfg.rto_min_ns)
		rto = e->cfg.rto_min_ns;
	if (rto > e->cfg.rto_max_ns)
		rto = e->cfg.rto_max_ns;
	qp->rto = rto;
}

static void rtt_sample(struct mrce *e, struct mrce__qp *qp, uint64_t rtt)
{
	mrce__rtt_update(&qp->srtt, &qp->rttvar, rtt);
	rto_set(e, qp);
}

/* The ACK h echoes a transmission of slot s that was declared lost: the
 * path that try went on (h->ev, with its send time h->ts_echo) delivered
 * it, so it is given back if that loss retired it.  Not s->lost_ev: that
 * is the newest try's, and a late ACK often echoes an earlier one. */
static void give_back_path(struct mrce *e, struct mrce__qp *qp, struct mrce__slot *s,
			   const struct mrc_ack_hdr *h, uint64_t now)
{
	mrce__ev_spurious(e, qp->peer, h->ev, h->ts_echo, now);
	s->lost_ev = UINT16_MAX;
}

static void calm_ack(struct mrce__peer *p)
{
	if (++p->clean_acks >= 1024 && (p->reo_extra || p->reo_own)) {
		p->reo_extra /= 2;   /* decay once things are calm */
		p->reo_own /= 2;
		p->clean_acks = 0;
	}
}

/* An ACK triggered by an earlier transmission of a packet we declared
 * lost and resent: the "loss" was reordering.  Counted and the window
 * widened (spurious_loss); the path it wrongly retired is given back
 * while the packet is outstanding.  Also once the resend's ACK came
 * first (the original arrived after it, a duplicate), as long as the
 * slot still holds that PSN.  One declared lost and not yet resent is
 * judged by ack_one. */
static void spurious_check(struct mrce *e, struct mrce__qp *qp,
			   const struct mrc_ack_hdr *h, uint64_t now)
{
	uint32_t psn = h->trig_psn;
	struct mrce__peer *p = &e->peers[qp->peer];
	/* An acked PSN's slot is read only while the QP still holds the send
	 * block it went out from (the window pool may have lent it since). */
	if (h->nack || !mrc_psn_lt(psn, qp->snd_nxt) ||
	    qp->snd_nxt - psn > e->wmask + 1u || !qp->slots ||
	    mrc_psn_lt(psn, qp->slots_from)) {
		calm_ack(p);
		return;
	}
	struct mrce__slot *s = mrce__slot_of(e, qp, psn);
	if (!s->tries || !h->ts_echo || h->ts_echo >= s->sent_ts || h->ts_echo > now) {
		calm_ack(p);
		return;
	}
	int out = mrc_psn_le(qp->snd_una, psn) &&
		  (s->state == MRCE__S_INFLIGHT || s->state == MRCE__S_LOST);
	if (s->lost_by != MRCE__LB_NONE && (!out || s->state == MRCE__S_INFLIGHT))
		spurious_loss(e, qp, s, now - h->ts_echo);
	if (out)
		give_back_path(e, qp, s, h, now);
}

/* A spurious RTO's evidence (mrce_stats rto_sp_*): how long after the
 * fire its ACK came, its late round trip rtt against the RTO that fired,
 * and the QP's estimate then. */
static void rto_evidence(struct mrce *e, const struct mrce__qp *qp, uint64_t rtt, uint64_t now)
{
	static const uint32_t after_us[MRCE_RTO_HIST - 1] = { 100, 250, 500, 1000, 2500, 5000,
							      10000, 25000 };
	static const uint32_t ratio_k[MRCE_RTO_HIST - 1] = { 1250, 1500, 2000, 3000, 4000, 8000,
							     16000, 32000 };
	struct mrce_stats *st = &e->st;
	st->rto_sp_after[mrce__hist_bucket((now - qp->rto_ts) / 1000, after_us)]++;
	if (qp->fire_rto)
		st->rto_sp_ratio[mrce__hist_bucket(rtt * 1000 / qp->fire_rto, ratio_k)]++;
	st->rto_sp_rto_ns += qp->fire_rto;
	st->rto_sp_srtt_ns += qp->fire_srtt;
	st->rto_sp_rttvar_ns += qp->fire_rttvar;
	st->rto_sp_floor_ns += qp->fire_floor;
	st->rto_sp_lag_ns += qp->fire_lag;
	st->rto_sp_silent += qp->fire_silent;
}

/* Eifel / F-RTO undo (RFC 3522, 4015, 5682): the first ACK after an RTO
 * of a packet it declared lost tells whether the RTO was needed.  Echoing
 * a transmission from before the RTO (ts_echo < rto_ts: every earlier one
 * was at least an RTO older), the original got through, only late (a
 * stalled host, a long queue): count it, give its path and strike back,
 * and take the RTO up to the late RTT (RFC 4015's response: srtt and
 * rttvar from that sample) with a floor that later samples do not decay,
 * so that the same lateness does not fire it again.  Echoing the resend,
 * the RTO was needed: the floor halves.  Resends still queued for what
 * the ACK covers are dropped by ack_one (the lost bit cleared). */
static void rto_check(struct mrce *e, struct mrce__qp *qp,
		      const struct mrc_ack_hdr *h, uint64_t now)
{
	uint32_t psn = h->trig_psn;
	if (!qp->rto_ts || !h->ts_echo || h->ts_echo > now || h->nack ||
	    !mrc_psn_le(qp->snd_una, psn) || !mrc_psn_lt(psn, qp->snd_nxt))
		return;
	struct mrce__slot *s = mrce__slot_of(e, qp, psn);
	if (!s->rto_lost || (s->state != MRCE__S_INFLIGHT && s->state != MRCE__S_LOST))
		return;
	if (h->ts_echo >= qp->rto_ts) {
		qp->rto_ts = 0;
		qp->rto_floor /= 2;
		return;
	}
	uint64_t rtt = now - h->ts_echo, cap = e->cfg.rto_max_ns;
	rto_evidence(e, qp, rtt, now);
	qp->rto_ts = 0;
	qp->rto_spurious++;
	e->st.rto_spurious++;
	if (qp->srtt < rtt)
		qp->srtt = rtt;
	if (qp->rttvar < rtt / 2)
		qp->rttvar = rtt / 2;
	qp->rto_floor = rtt + rtt / 4 < cap ? rtt + rtt / 4 : cap;
	rto_set(e, qp);
	qp->backoff = 0;
	if (s->tries && s->strikes)
		s->strikes--;   /* its resend was not needed */
	give_back_path(e, qp, s, h, now);
}

static void nack_rx(struct mrce *e, struct mrce__qp *qp, const struct mrc_ack_hdr *h,
		    uint64_t now)
{
	e->st.nack_rx[h->nack]++;
	qp->nacks_rx++;
	uint32_t psn = h->trig_psn;
	int in_win = mrc_psn_le(qp->snd_una, psn) && mrc_psn_lt(psn, qp->snd_nxt);
	struct mrce__slot *s = in_win ? mrce__slot_of(e, qp, psn) : NULL;
	switch (h->nack) {
	case MRC_NACK_ACCESS:
		mrce__qp_fail(e, qp, -EACCES, psn, now);
		return;
	case MRC_NACK_TRIMMED:
		/* Congestion, not failure: resend at once, weight the path
		 * down, never retire it. */
		qp->trims_rx++;
		e->peers[qp->peer].last_cong = e->last_cong = now;
		if (h->ev < e->peers[qp->peer].nev) {
			struct mrce__ev *pa = &e->peers[qp->peer].paths[h->ev];
			e->peers[qp->peer].cold[h->ev].trims++;
			if (pa->penalty < 8)
				pa->penalty += 2;
		}
		e->cc->on_trim(qp->cc, now);
		if (s && s->state == MRCE__S_INFLIGHT) {
			mrce__mark_lost(e, qp, (uint16_t)(psn & e->wmask), MRCE_RSN_NONE, 0, now);
			s->free_resend = 1;   /* the packet got there: not a loss */
		}
		return;
	case MRC_NACK_RNR:
		/* As RDMA RC: the receiver is alive but has no RECV posted (or
		 * no room for completions).  Retry after its RNR delay,
		 * counted apart from losses, rnr_retry times (7: forever).
		 * The delay is the one the receiver advertises in the NACK
		 * (its rnr_delay_ns); our own only if it advertises none. */
		qp->rnr_rx++;
		if (s && s->state == MRCE__S_INFLIGHT) {
			if (qp->rnr_retry != MRCE_RNR_RETRY_FOREVER &&
			    s->rnr_tries >= qp->rnr_retry) {
				mrce__qp_fail(e, qp, RNR_LIMIT_ERR, psn, now);
				return;
			}
			if (s->rnr_tries < UINT8_MAX)
				s->rnr_tries++;
			mrce__mark_lost(e, qp, (uint16_t)(psn & e->wmask), MRCE_RSN_NONE, 0, now);
			s->free_resend = 1;
		}
		qp->rnr_until = now + (h->rnr_timer ? mrce_wire_rnr_ns(h->rnr_timer) :
						     e->cfg.rnr_delay_ns);
		return;
	default:
		return;   /* OOW: counted; the RTO repairs whatever caused it */
	}
}

/* The peer says the QP we send to is gone: fail ours, which is the one
 * connected to that QP of that peer (a rare event; a scan is fine), and
 * only if the NACK echoes our own token: a QP number is no secret. */
static void noqp_rx(struct mrce *e, uint64_t now, uint32_t peer,
		    const struct mrc_ack_hdr *h)
{
	e->st.nack_rx[MRC_NACK_NOQP]++;
	for (uint32_t i = 0; i < e->qp_hwm; i++) {
		struct mrce__qp *qp = &e->qps[i];
		if (qp->used && qp->state == MRCE_QPS_RTS && qp->peer == peer &&
		    qp->rqpn == h->dqpn) {
			if (h->token != qp->tx_token) {
				e->st.rx_bad_token[MRCE_TOK_NOQP]++;
				continue;
			}
			qp->nacks_rx++;
			mrce__qp_fail(e, qp, -ECONNRESET, h->trig_psn, now);
		}
	}
}

/* Everything an accepted ACK does (after its QP and token were checked).
 * rtt: the sample it gives, 0 for none. */
static int ack_apply(struct mrce *e, uint64_t now, struct mrce__qp *qp,
		     const struct mrc_ack_hdr *h, uint64_t rtt, uint64_t hold)
{
	struct mrce__peer *p = &e->peers[qp->peer];
	/* An ACK may never acknowledge what was not sent. */
	if (mrc_psn_lt(qp->snd_nxt, h->cum_psn) || mrc_psn_lt(h->cum_psn, qp->snd_una - e->cfg.window)) {
		e->st.rx_drop[MRC_DROP_FIELD]++;
		return -EBADMSG;
	}
	if (rtt)
		rtt_sample(e, qp, rtt);
	if (h->flags & MRC_AF_ECN)
		p->last_cong = e->last_cong = now;
	if ((h->flags & MRC_AF_ECN) && h->ev < p->nev) {
		p->cold[h->ev].ecn++;
		if (p->paths[h->ev].penalty < 8)
			p->paths[h->ev].penalty++;
	}
	if (h->nack)
		nack_rx(e, qp, h, now);
	if (qp->state != MRCE_QPS_RTS)
		return 0;
	spurious_check(e, qp, h, now);
	rto_check(e, qp, h, now);

	uint64_t before = qp->bytes_acked;
	struct mrce__acked_evs a = { .n = 0 };
	/* Cumulative part. */
	while (mrc_psn_lt(qp->snd_una, h->cum_psn)) {
		uint32_t psn = qp->snd_una;
		ack_one(e, qp, psn, now, hold, &a);
		mrce__bit_clear(qp->sacked, psn);
		mrce__slot_of(e, qp, psn)->state = MRCE__S_FREE;
		qp->snd_una++;
	}
	/* Selective part: only bits we have not seen yet. */
	uint64_t ring[4];
	sack_to_ring(h->sack, h->sack_base, ring);
	uint32_t span = qp->snd_nxt - qp->snd_una;
	for (int k = 0; k < 4 && span; k++) {
		uint64_t fresh = ring[k] & ~qp->sacked[k];
		while (fresh) {
			uint32_t pos = (uint32_t)(k * 64 + __builtin_ctzll(fresh));
			fresh &= fresh - 1;
			uint32_t d = (pos - qp->snd_una) & 255;
			uint32_t psn = qp->snd_una + d;
			uint32_t rel = psn - h->sack_base;
			if (d < span && rel < MRC_SACK_BITS)
				ack_one(e, qp, psn, now, hold, &a);
		}
	}
	uint32_t acked = (uint32_t)(qp->bytes_acked - before);
	if (acked || rtt) {
		e->cc->on_ack(qp->cc, &(struct mrce_cc_sample){ .now = now,
			.rtt_ns = rtt, .base_rtt_ns = p->min_rtt,
			.acked_bytes = acked, .ecn = !!(h->flags & MRC_AF_ECN) });
	}
	if (acked) {
		qp->backoff = 0;
		qp->rto_restart = now;
	}
	mrce__sq_advance(e, qp);
	uint64_t lost_before = e->st.loss_detected;
	mrce__detect_losses(e, qp, now, &a);
	if (e->st.loss_detected != lost_before)
		e->cc->on_loss(qp->cc, now);
	mrce__rto_rearm(qp, now);
	mrce__qp_activate(e, qp, now);
	return 0;
}

void mrce__ack_rx(struct mrce *e, uint64_t now, uint32_t peer,
		 const struct mrc_ack_hdr *h)
{
	if (h->nack == MRC_NACK_NOQP) {
		noqp_rx(e, now, peer, h);
		return;
	}
	struct mrce__qp *qp = mrce__qp_get(e, h->dqpn);
	if (!qp || qp->state == MRCE_QPS_RESET) {
		e->st.rx_unknown_qp++;
		return;
	}
	if (qp->peer != peer) {
		e->st.rx_bad_peer++;
		return;
	}
	if (h->token != qp->rx_token) {
		e->st.rx_bad_token[MRCE_TOK_ACK]++;
		return;
	}
	if (qp->state != MRCE_QPS_RTS)
		return;
	ack_apply(e, now, qp, h, h->ts_echo && h->ts_echo <= now ? now - h->ts_echo : 0, 0);
}

/* A piggybacked ACK, turned into the ACK packet that would have said the
 * same and taken by the same code.  It echoes no timestamp: the RTT
 * sample is taken from our own send time of the packet it was triggered
 * by (the highest PSN it covers, sent once), less the peer's hold; and
 * its EV (for PB_ECN) is the one that packet went on.  Returns -EBADMSG
 * when it acknowledges what was never sent (the caller drops the packet). */
int mrce__pb_ack_rx(struct mrce *e, uint64_t now, struct mrce__qp *qp,
		   const struct mrc_data_hdr *d)
{
	if (qp->state != MRCE_QPS_RTS)
		return 0;
	struct mrc_ack_hdr h = { .flags = (d->flags & MRC_F_PB_ECN) ? MRC_AF_ECN : 0,
		.dqpn = qp->qpn, .cum_psn = d->pb_cum_psn, .sack_base = d->pb_cum_psn,
		.ev = UINT16_MAX, .token = d->token };
	for (uint32_t j = 0; j < MRC_PB_SACK_BITS; j++)
		if (d->pb_sack >> j & 1)
			h.sack[(j + 1) / 8] |= (uint8_t)(1u << ((j + 1) % 8));
	h.trig_psn = d->pb_sack ? d->pb_cum_psn + 1 + (31 - (uint32_t)__builtin_clz(d->pb_sack)) :
				  d->pb_cum_psn - 1;
	if (d->pb_sack && !mrc_psn_lt(h.trig_psn, qp->snd_nxt)) {
		e->st.rx_drop[MRC_DROP_FIELD]++;   /* SACKs what was never sent */
		return -EBADMSG;
	}
	uint64_t hold = (uint64_t)d->pb_hold * MRC_PB_HOLD_NS, rtt = 0;
	if (mrc_psn_le(qp->snd_una, h.trig_psn) && mrc_psn_lt(h.trig_psn, qp->snd_nxt)) {
		const struct mrce__slot *s = mrce__slot_of(e, qp, h.trig_psn);
		h.ev = s->ev;
		if (s->state == MRCE__S_INFLIGHT && !s->tries && now > s->sent_ts + hold)
			rtt = now - s->sent_ts - hold;
	}
	int rc = ack_apply(e, now, qp, &h, rtt, hold);
	if (!rc)
		e->st.rx_pb_acks++;
	return rc;
}

/* A cross-QP ACK (XACK) on a data packet of another QP from the same peer,
 * whose token was checked: taken as the ACK packet of QP x_dqpn would be,
 * under that QP's own ACK token.  -EBADMSG (the caller drops the whole
 * packet): it names a QP of another peer, or the carrier itself, carries
 * the wrong token, or acknowledges what was never sent.  A QP that is gone
 * makes it moot, as it would an ACK packet; the data part stands. */
int mrce__xack_rx(struct mrce *e, uint64_t now, uint32_t peer,
		  const struct mrc_data_hdr *d, const struct mrc_xack *xa)
{
	if (xa->dqpn == d->dqpn) {
		e->st.rx_drop[MRC_DROP_FIELD]++;
		return -EBADMSG;
	}
	struct mrce__qp *o = mrce__qp_get(e, xa->dqpn);
	if (!o || o->state == MRCE_QPS_RESET) {
		e->st.rx_unknown_qp++;
		return 0;
	}
	if (o->peer != peer) {
		e->st.rx_bad_peer++;
		return -EBADMSG;
	}
	if (xa->token != o->rx_token) {
		e->st.rx_bad_token[MRCE_TOK_ACK]++;
		return -EBADMSG;
	}
	struct mrc_data_hdr x = { .token = xa->token, .pb_cum_psn = xa->cum_psn,
		.pb_sack = xa->sack, .pb_hold = xa->hold };
	int rc = mrce__pb_ack_rx(e, now, o, &x);
	if (!rc && o->state == MRCE_QPS_RTS)
		e->st.rx_xacks++;
	return rc;
}
