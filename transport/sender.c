/* Sender side of a QP: segmentation, spraying, ACK/SACK processing, loss
 * detection that tolerates spraying reorder, retransmission and RTO. */
#include <errno.h>
#include <string.h>

#include "transport/engine_int.h"

#define RETX_LIMIT_ERR (-ETIMEDOUT)
#define RNR_LIMIT_ERR  (-ENOBUFS)
#define NO_PATH_ERR    (-ENETUNREACH)
#define PROBE_AT       8   /* probe a late packet's path 1/PROBE_AT into its
                              reorder window */

static struct mrc__slot *slot_of(struct mrce *e, struct mrc__qp *qp, uint32_t psn)
{
	return &qp->slots[psn & e->wmask];
}

/* ---- send-order list of in-flight packets (oldest first) ------------ */

static void lst_append(struct mrce *e, struct mrc__qp *qp, uint32_t psn)
{
	uint16_t i = (uint16_t)(psn & e->wmask);
	struct mrc__slot *s = &qp->slots[i];
	s->next = MRC__NIL;
	s->prev = qp->lst_tail;
	if (qp->lst_tail != MRC__NIL)
		qp->slots[qp->lst_tail].next = i;
	else
		qp->lst_head = i;
	qp->lst_tail = i;
}

static void lst_remove(struct mrc__qp *qp, uint16_t i)
{
	struct mrc__slot *s = &qp->slots[i];
	if (s->prev != MRC__NIL)
		qp->slots[s->prev].next = s->next;
	else
		qp->lst_head = s->next;
	if (s->next != MRC__NIL)
		qp->slots[s->next].prev = s->prev;
	else
		qp->lst_tail = s->prev;
	s->prev = s->next = MRC__NIL;
}

/* PSN of the slot at index i: the unique PSN in [snd_una, snd_nxt). */
static uint32_t slot_psn(const struct mrce *e, const struct mrc__qp *qp, uint16_t i)
{
	return qp->snd_una + ((i - qp->snd_una) & e->wmask);
}

/* ---- transmit -------------------------------------------------------- */

/* Every path to the peer is DENIED: nothing can leave, so no ACK and (once
 * the RTO has fired) no timer would ever wake the QP again.  Arm a deadline
 * of its own: a path back before it resumes the QP (path.c, once a path is back),
 * else the QP fails (mrc__qp_timers). */
static void nopath_wait(struct mrce *e, struct mrc__qp *qp, uint64_t now)
{
	if (qp->nopath_deadline)
		return;
	qp->nopath_deadline = now + e->cfg.no_path_timeout_ns;
	mrc__event(e, &(struct mrce_event){ .type = MRC_EVT_QP_NO_PATH,
		.qpn = qp->qpn, .peer = qp->peer, .time_ns = now });
}

static void nopath_expire(struct mrce *e, struct mrc__qp *qp, uint64_t now)
{
	qp->nopath_deadline = 0;
	if (qp->sq_done == qp->sq_tail || mrc__peer_reachable(&e->peers[qp->peer]))
		return;   /* the work finished (ACKs still came in) or a path is back */
	/* The oldest unfinished request is the one that could not go: it
	 * carries the error, the rest are flushed behind it. */
	uint32_t first = qp->sq_done;
	mrc__qp_fail(e, qp, NO_PATH_ERR, qp->snd_una, now);
	qp->sq[first & e->sqmask].status = NO_PATH_ERR;
}

static void build(struct mrce *e, struct mrc__qp *qp, uint32_t psn, int ev,
		  int retx, uint64_t now, struct mrce_tx_pkt *pkt)
{
	struct mrc__slot *s = slot_of(e, qp, psn);
	struct mrc__wqe *w = &qp->sq[s->wqe & e->sqmask];
	uint32_t idx = psn - w->first_psn;
	uint64_t off = (uint64_t)idx * qp->mtu;
	uint32_t plen = (uint32_t)(w->len - off < qp->mtu ? w->len - off : qp->mtu);
	uint16_t flags = (idx == 0 ? MRC_F_FIRST : 0) |
			 (idx + 1 == w->npkts ? MRC_F_LAST : 0) | (retx ? MRC_F_RETX : 0);
	int is_send = w->op == MRC_OP_SEND || w->op == MRC_OP_SEND_IMM;
	struct mrc_data_hdr h = { .op = w->op, .flags = flags, .dqpn = qp->rqpn,
		.psn = psn, .ev = (uint16_t)ev, .plen = (uint16_t)plen, .msn = w->msn,
		.rkey = is_send ? w->ssn : w->rkey,
		.off = is_send ? off : w->roff + off, .ts = now,
		.mlen = (uint32_t)w->len, .imm = w->imm, .token = qp->tx_token };
	mrc__ack_attach(e, qp, now, &h);
	qp->data_tx_ts = now;
	pkt->peer = qp->peer;
	pkt->ev = (uint16_t)ev;
	pkt->hdr_len = (uint16_t)mrc_wire_put_data(pkt->hdr, &h);
	pkt->plen = plen;
	pkt->payload = w->op == MRC_OP_ATOMIC_ADD ? w->add_be : w->lbase + off;
	if (plen && !e->cfg.skip_payload_crc)
		mrc_wire_put_trailer(pkt->trailer, pkt->payload, plen);
	else if (plen)
		memset(pkt->trailer, 0, MRC_TRAILER_LEN);
	s->ev = (uint16_t)ev;
	s->sent_ts = now;
	s->xseq = qp->xmit_seq++;
	s->plen = (uint16_t)plen;
	s->state = MRC__S_INFLIGHT;
	lst_append(e, qp, psn);
	qp->inflight_pkts++;
	qp->inflight_bytes += plen;
	qp->tx_pkts++;
	e->peers[qp->peer].paths[ev].tx_pkts++;
	qp->plane_tx[e->peers[qp->peer].paths[ev].plane]++;
	if ((uint32_t)ev < e->cfg.qp_ev_stats)
		qp->evst[ev].tx_pkts++;
	else
		qp->ev_other_tx++;
	e->st.tx_data++;
	if (!qp->rto_deadline)
		qp->rto_deadline = now + (qp->rto << qp->backoff);
}

/* The oldest PSN waiting for retransmission. */
static int next_lost(const struct mrc__qp *qp, uint32_t *psn)
{
	uint32_t best = 256;
	for (int k = 0; k < 4; k++) {
		uint64_t m = qp->lostmap[k];
		while (m) {
			uint32_t pos = (uint32_t)(k * 64 + __builtin_ctzll(m));
			m &= m - 1;
			uint32_t d = (pos - qp->snd_una) & 255;
			if (d < best)
				best = d;
		}
	}
	if (best == 256)
		return 0;
	*psn = qp->snd_una + best;
	return 1;
}

int mrc__qp_tx_one(struct mrce *e, struct mrc__qp *qp, uint64_t now,
		   struct mrce_tx_pkt *pkt)
{
	if (!mrc__qp_can_send(e, qp, now))
		return 0;
	struct mrc__peer *p = &e->peers[qp->peer];
	uint32_t psn;
	if (next_lost(qp, &psn)) {
		struct mrc__slot *s = slot_of(e, qp, psn);
		if (!s->free_resend && s->strikes >= e->cfg.max_retries) {
			mrc__qp_fail(e, qp, RETX_LIMIT_ERR, psn, now);
			return 0;
		}
		/* Resend on another plane than the one that lost it: a loss
		 * may be the first sign of a whole plane failing. */
		int avoid = s->lost_ev < p->nev ? p->paths[s->lost_ev].plane : -1;
		int ev = mrc__path_pick(e, p, qp, avoid);
		if (ev < 0) {
			nopath_wait(e, qp, now);
			return 0;
		}
		mrc__bit_clear(qp->lostmap, psn);
		if (s->free_resend)
			s->free_resend = 0;
		else
			s->strikes++;
		if (s->tries < UINT8_MAX)
			s->tries++;
		qp->retx++;
		e->st.tx_retx++;
		build(e, qp, psn, ev, 1, now, pkt);
		return 1;
	}
	if (!mrc__new_data_ok(e, qp))
		return 0;
	int ev = mrc__path_pick(e, p, qp, -1);
	if (ev < 0) {
		nopath_wait(e, qp, now);
		return 0;
	}
	struct mrc__wqe *w = &qp->sq[qp->sq_seg & e->sqmask];
	if (!w->started) {
		w->started = 1;
		w->first_psn = qp->snd_nxt;
	}
	psn = qp->snd_nxt++;
	struct mrc__slot *s = slot_of(e, qp, psn);
	s->wqe = qp->sq_seg;
	s->tries = s->strikes = s->rnr_tries = s->free_resend = 0;
	if (psn - w->first_psn + 1 == w->npkts)
		qp->sq_seg++;
	build(e, qp, psn, ev, 0, now, pkt);
	return 1;
}

/* ---- loss ------------------------------------------------------------ */

/* Queueing towards the peer that can explain a late or dropped packet:
 * ECN marks or trims lately, or recent RTTs above the base RTT.  Without
 * any, a late packet is blamed on its path at once (a dead path on an idle
 * fabric is retired as fast as before). */
static int congested(const struct mrce *e, const struct mrc__qp *qp, uint64_t now)
{
	const struct mrc__peer *p = &e->peers[qp->peer];
	uint64_t base = p->min_rtt;
	if (!base)   /* nothing measured yet: every ACK so far was of a resend
	                (after trims), or none came */
		return p->last_cong != 0;
	/* Any peer's: a host's own links (its NIC's downlink under incast)
	 * are shared by the paths to every peer. */
	if ((p->last_cong && now - p->last_cong < 8 * base) ||
	    (e->last_cong && now - e->last_cong < 8 * base))
		return 1;
	return p->rtt_hi > base + base / 8;
}

/* The QP may send on every plane the peer has paths in. */
static int all_planes(const struct mrc__peer *p, const struct mrc__qp *qp)
{
	if (!qp->plane_mask)
		return 1;
	for (int pl = 0; pl < MRC_MAX_PLANES; pl++)
		if (p->plane_nev[pl] && !(qp->plane_mask >> pl & 1))
			return 0;
	return 1;
}

static void mark_lost(struct mrce *e, struct mrc__qp *qp, uint16_t i,
		      uint8_t reason, int blame, uint64_t now)
{
	struct mrc__slot *s = &qp->slots[i];
	lst_remove(qp, i);
	s->state = MRC__S_LOST;
	/* A timeout blames a path only if nothing came back on it since the
	 * packet left: a queue that merely grew past the RTO (a burst, a busy
	 * receiver) keeps ACKing, a dead path does not. */
	const struct mrc__peer *p = &e->peers[qp->peer];
	if (blame && reason == MRC_RSN_RTO && p->paths[s->ev].last_ack > s->sent_ts)
		blame = 0;
	/* The peer acked nothing sent since it left, on any path of any QP:
	 * the silence is the peer's (a stall), not the path's, and no path is
	 * retired for it (weak, mrc__path_lost).  Retiring paths cannot end
	 * such a silence for a QP that sprays over every plane; a QP held to
	 * some planes (plane_mask) may need to leave a dead one, so for it
	 * only a first timeout is weak (the peer heard within two RTOs, the
	 * packet's first transmission); a QP pinned to one EV rehashes on its
	 * first timeout, as before. */
	int weak = reason == MRC_RSN_RTO && p->acked_sent < s->sent_ts &&
		   !(qp->flags & MRC_QP_PIN_EV) &&
		   (all_planes(p, qp) || (now - p->heard < 2 * qp->rto && !s->tries));
	s->lost_ev = blame ? s->ev : UINT16_MAX;
	if (s->ev < e->cfg.qp_ev_stats)
		qp->evst[s->ev].lost_pkts++;
	else
		qp->ev_other_lost++;
	qp->inflight_pkts--;
	qp->inflight_bytes -= s->plen;
	mrc__bit_set(qp->lostmap, slot_psn(e, qp, i));
	if (blame)
		mrc__path_lost(e, qp->peer, s->ev, s->sent_ts, reason,
			       congested(e, qp, now), weak, now);
}

/* How long past its send time a packet on this EV may still be acked:
 * the path's srtt plus a reorder window. */
static void late_after(const struct mrce *e, const struct mrc__qp *qp,
		       const struct mrc__peer *p, uint16_t ev, uint64_t *srtt_out,
		       uint64_t *wnd)
{
	const struct mrc__path *pa = &p->paths[ev];
	/* A path not measured yet is judged by the slowest recent RTT to
	 * the peer, not by the QP's (which may be the fastest path's, or
	 * none: a packet sent at time 0 echoes no timestamp). */
	uint64_t srtt = pa->srtt ? pa->srtt : qp->srtt > p->rtt_hi ? qp->srtt : p->rtt_hi;
	uint64_t var = pa->srtt ? pa->rttvar : qp->rttvar;
	uint64_t slack = e->cfg.reorder_slack_ns;
	if (p->min_rtt / 4 > slack)
		slack = p->min_rtt / 4;
	/* Reordering across paths is bounded by how far RTTs to the peer
	 * spread lately (queues on some paths, not on others). */
	if (p->rtt_hi - p->min_rtt > slack)
		slack = p->rtt_hi - p->min_rtt;
	slack += p->reo_extra;
	*srtt_out = srtt;
	*wnd = 4 * var > slack ? 4 * var : slack;
}

/* RACK-style, per path: a packet is lost once a packet sent after it has
 * been acknowledged and it is overdue for its own path's RTT.  A global
 * duplicate count would misfire, since spraying reorders by design. */
static void detect_losses(struct mrce *e, struct mrc__qp *qp, uint64_t now)
{
	const struct mrc__peer *p = &e->peers[qp->peer];
	uint64_t next = 0;
	uint16_t i = qp->lst_head;
	while (i != MRC__NIL) {
		struct mrc__slot *s = &qp->slots[i];
		uint16_t nx = s->next;
		/* Transmission order, not time: a batch shares one timestamp. */
		if ((int32_t)(s->xseq - qp->rack_seq) >= 0)
			break;
		uint64_t srtt, wnd;
		late_after(e, qp, p, s->ev, &srtt, &wnd);
		uint64_t due = s->sent_ts + srtt + wnd;
		/* Part way through the reorder window the path is probed
		 * (mrc__path_check) when an ACK brings us here, so that at the
		 * deadline a live path is known alive and a dead one's probe
		 * has nearly timed out.  No timer of its own: an idle QP
		 * behaves as without it. */
		if (now >= due) {
			mark_lost(e, qp, i, MRC_RSN_LOSS, 1, now);
		} else {
			if (now >= s->sent_ts + srtt + wnd / PROBE_AT)
				mrc__path_check(e, qp->peer, s->ev, s->sent_ts, now);
			if (!next || due < next)
				next = due;
		}
		i = nx;
	}
	qp->rack_deadline = next;
}

static void rto_rearm(struct mrc__qp *qp, uint64_t now)
{
	if (qp->lst_head == MRC__NIL) {
		qp->rto_deadline = 0;
		return;
	}
	uint64_t t = qp->slots[qp->lst_head].sent_ts + (qp->rto << qp->backoff);
	qp->rto_deadline = t > now ? t : now + 1;
}

/* ---- acknowledgements ------------------------------------------------ */

/* hold: how long the peer held the ACK for data to carry it (pb_hold),
 * which is not part of the round trip. */
static void ack_one(struct mrce *e, struct mrc__qp *qp, uint32_t psn, uint64_t now,
		    uint64_t hold)
{
	struct mrc__slot *s = slot_of(e, qp, psn);
	if (s->state == MRC__S_INFLIGHT) {
		lst_remove(qp, (uint16_t)(psn & e->wmask));
		qp->inflight_pkts--;
		qp->inflight_bytes -= s->plen;
		if ((int32_t)(s->xseq + 1 - qp->rack_seq) > 0)
			qp->rack_seq = s->xseq + 1;
		/* Every acknowledged packet proves its path, and (sent once, so
		 * unambiguous) measures it: ACKs are coalesced and come back on
		 * the EV of the newest packet only, so the echo alone would
		 * leave most paths unmeasured. */
		struct mrc__peer *p = &e->peers[qp->peer];
		p->paths[s->ev].last_ack = now;
		if (s->sent_ts > p->acked_sent)
			p->acked_sent = s->sent_ts;
		p->heard = now;
		if (!s->tries && now > s->sent_ts + hold)
			mrc__path_rtt(e, p, s->ev, now - s->sent_ts - hold);
	}
	if (s->state == MRC__S_INFLIGHT || s->state == MRC__S_LOST)
		qp->bytes_acked += s->plen;
	s->state = MRC__S_ACKED;
	mrc__bit_set(qp->sacked, psn);
	mrc__bit_clear(qp->lostmap, psn);
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

static void rtt_sample(struct mrce *e, struct mrc__qp *qp, uint64_t rtt)
{
	mrc__rtt_update(&qp->srtt, &qp->rttvar, rtt);
	uint64_t rto = qp->srtt + 4 * qp->rttvar;
	if (rto < e->cfg.rto_min_ns)
		rto = e->cfg.rto_min_ns;
	if (rto > e->cfg.rto_max_ns)
		rto = e->cfg.rto_max_ns;
	qp->rto = rto;
}

/* An ACK triggered by an earlier transmission of a packet we already
 * declared lost: the "loss" was reordering.  Like RACK's DSACK rule, widen
 * the reorder window, and give back the path it wrongly retired. */
static void spurious_check(struct mrce *e, struct mrc__qp *qp,
			   const struct mrc_ack_hdr *h, uint64_t now)
{
	uint32_t psn = h->trig_psn;
	struct mrc__peer *p = &e->peers[qp->peer];
	if (h->nack || !mrc_psn_le(qp->snd_una, psn) || !mrc_psn_lt(psn, qp->snd_nxt)) {
		if (++p->clean_acks >= 1024 && p->reo_extra) {
			p->reo_extra /= 2;   /* decay once things are calm */
			p->clean_acks = 0;
		}
		return;
	}
	struct mrc__slot *s = slot_of(e, qp, psn);
	if (!s->tries || !h->ts_echo || h->ts_echo >= s->sent_ts ||
	    (s->state != MRC__S_INFLIGHT && s->state != MRC__S_LOST)) {
		if (++p->clean_acks >= 1024 && p->reo_extra) {
			p->reo_extra /= 2;
			p->clean_acks = 0;
		}
		return;
	}
	qp->spurious++;
	p->clean_acks = 0;
	uint64_t step = qp->srtt / 4 > e->cfg.reorder_slack_ns ? qp->srtt / 4 : e->cfg.reorder_slack_ns;
	p->reo_extra += step;
	if (p->reo_extra > 2 * qp->srtt)
		p->reo_extra = 2 * qp->srtt;
	if (s->lost_ev < p->nev) {
		struct mrc__path *pa = &p->paths[s->lost_ev];
		/* Retired by a timeout or by a late packet alike: the packet
		 * got through, so the path was delivering. */
		if (pa->state == MRC_EV_ASSUMED_BAD &&
		    (pa->reason == MRC_RSN_LOSS || pa->reason == MRC_RSN_RTO))
			mrc__path_set_state(e, qp->peer, s->lost_ev, MRC_EV_GOOD,
					    MRC_RSN_SPURIOUS, now);
		s->lost_ev = UINT16_MAX;
	}
}

static void nack_rx(struct mrce *e, struct mrc__qp *qp, const struct mrc_ack_hdr *h,
		    uint64_t now)
{
	e->st.nack_rx[h->nack]++;
	qp->nacks_rx++;
	uint32_t psn = h->trig_psn;
	int in_win = mrc_psn_le(qp->snd_una, psn) && mrc_psn_lt(psn, qp->snd_nxt);
	struct mrc__slot *s = in_win ? slot_of(e, qp, psn) : NULL;
	switch (h->nack) {
	case MRC_NACK_ACCESS:
		mrc__qp_fail(e, qp, -EACCES, psn, now);
		return;
	case MRC_NACK_TRIMMED:
		/* Congestion, not failure: resend at once, weight the path
		 * down, never retire it. */
		qp->trims_rx++;
		e->peers[qp->peer].last_cong = e->last_cong = now;
		if (h->ev < e->peers[qp->peer].nev) {
			struct mrc__path *pa = &e->peers[qp->peer].paths[h->ev];
			pa->trims++;
			if (pa->penalty < 8)
				pa->penalty += 2;
		}
		e->cc->on_trim(qp->cc, now);
		if (s && s->state == MRC__S_INFLIGHT) {
			mark_lost(e, qp, (uint16_t)(psn & e->wmask), MRC_RSN_NONE, 0, now);
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
		if (s && s->state == MRC__S_INFLIGHT) {
			if (qp->rnr_retry != MRC_RNR_RETRY_FOREVER &&
			    s->rnr_tries >= qp->rnr_retry) {
				mrc__qp_fail(e, qp, RNR_LIMIT_ERR, psn, now);
				return;
			}
			if (s->rnr_tries < UINT8_MAX)
				s->rnr_tries++;
			mark_lost(e, qp, (uint16_t)(psn & e->wmask), MRC_RSN_NONE, 0, now);
			s->free_resend = 1;
		}
		qp->rnr_until = now + (h->rnr_timer ? mrc_wire_rnr_ns(h->rnr_timer) :
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
		struct mrc__qp *qp = &e->qps[i];
		if (qp->used && qp->state == MRC_QPS_RTS && qp->peer == peer &&
		    qp->rqpn == h->dqpn) {
			if (h->token != qp->tx_token) {
				e->st.rx_bad_token[MRC_TOK_NOQP]++;
				continue;
			}
			qp->nacks_rx++;
			mrc__qp_fail(e, qp, -ECONNRESET, h->trig_psn, now);
		}
	}
}

static int ack_apply(struct mrce *e, uint64_t now, struct mrc__qp *qp,
		     const struct mrc_ack_hdr *h, uint64_t rtt, uint64_t hold);

void mrc__ack_rx(struct mrce *e, uint64_t now, uint32_t peer,
		 const struct mrc_ack_hdr *h)
{
	if (h->nack == MRC_NACK_NOQP) {
		noqp_rx(e, now, peer, h);
		return;
	}
	struct mrc__qp *qp = mrc__qp_get(e, h->dqpn);
	if (!qp || qp->state == MRC_QPS_RESET) {
		e->st.rx_unknown_qp++;
		return;
	}
	if (qp->peer != peer) {
		e->st.rx_bad_peer++;
		return;
	}
	if (h->token != qp->rx_token) {
		e->st.rx_bad_token[MRC_TOK_ACK]++;
		return;
	}
	if (qp->state != MRC_QPS_RTS)
		return;
	ack_apply(e, now, qp, h, h->ts_echo && h->ts_echo <= now ? now - h->ts_echo : 0, 0);
}

/* A piggybacked ACK, turned into the ACK packet that would have said the
 * same and taken by the same code.  It echoes no timestamp: the RTT
 * sample is taken from our own send time of the packet it was triggered
 * by (the highest PSN it covers, sent once), less the peer's hold; and
 * its EV (for PB_ECN) is the one that packet went on.  Returns -EBADMSG
 * when it acknowledges what was never sent (the caller drops the packet). */
int mrc__pb_ack_rx(struct mrce *e, uint64_t now, struct mrc__qp *qp,
		   const struct mrc_data_hdr *d)
{
	if (qp->state != MRC_QPS_RTS)
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
		const struct mrc__slot *s = slot_of(e, qp, h.trig_psn);
		h.ev = s->ev;
		if (s->state == MRC__S_INFLIGHT && !s->tries && now > s->sent_ts + hold)
			rtt = now - s->sent_ts - hold;
	}
	int rc = ack_apply(e, now, qp, &h, rtt, hold);
	if (!rc)
		e->st.rx_pb_acks++;
	return rc;
}

/* Everything an accepted ACK does (after its QP and token were checked).
 * rtt: the sample it gives, 0 for none. */
static int ack_apply(struct mrce *e, uint64_t now, struct mrc__qp *qp,
		     const struct mrc_ack_hdr *h, uint64_t rtt, uint64_t hold)
{
	struct mrc__peer *p = &e->peers[qp->peer];
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
		p->paths[h->ev].ecn++;
		if (p->paths[h->ev].penalty < 8)
			p->paths[h->ev].penalty++;
	}
	if (h->nack)
		nack_rx(e, qp, h, now);
	if (qp->state != MRC_QPS_RTS)
		return 0;
	spurious_check(e, qp, h, now);

	uint64_t before = qp->bytes_acked;
	/* Cumulative part. */
	while (mrc_psn_lt(qp->snd_una, h->cum_psn)) {
		uint32_t psn = qp->snd_una;
		ack_one(e, qp, psn, now, hold);
		mrc__bit_clear(qp->sacked, psn);
		slot_of(e, qp, psn)->state = MRC__S_FREE;
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
				ack_one(e, qp, psn, now, hold);
		}
	}
	uint32_t acked = (uint32_t)(qp->bytes_acked - before);
	if (acked || rtt) {
		e->cc->on_ack(qp->cc, &(struct mrc_cc_sample){ .now = now,
			.rtt_ns = rtt, .base_rtt_ns = p->min_rtt,
			.acked_bytes = acked, .ecn = !!(h->flags & MRC_AF_ECN) });
	}
	if (acked)
		qp->backoff = 0;
	mrc__sq_advance(e, qp);
	uint64_t lost_before = e->st.loss_detected;
	detect_losses(e, qp, now);
	if (e->st.loss_detected != lost_before)
		e->cc->on_loss(qp->cc, now);
	rto_rearm(qp, now);
	mrc__qp_activate(e, qp, now);
	return 0;
}

/* ---- timers ----------------------------------------------------------- */

static void rto_fire(struct mrce *e, struct mrc__qp *qp, uint64_t now)
{
	qp->rto_fires++;
	e->st.rto_fires++;
	/* Everything outstanding for a whole (un-backed-off) RTO is lost, not
	 * only the oldest packet: a QP whose only path died gets no ACK to
	 * trigger RACK, and resending one packet per RTO with backoff would
	 * take ages.  Packets sent more recently get their own chance. */
	uint16_t i = qp->lst_head;
	while (i != MRC__NIL) {
		uint16_t nx = qp->slots[i].next;
		if (now - qp->slots[i].sent_ts >= qp->rto)
			mark_lost(e, qp, i, MRC_RSN_RTO, 1, now);
		i = nx;
	}
	if ((qp->rto << (qp->backoff + 1)) <= e->cfg.rto_max_ns)
		qp->backoff++;
	e->cc->on_loss(qp->cc, now);
}

void mrc__qp_timers(struct mrce *e, struct mrc__qp *qp, uint64_t now)
{
	if (qp->rnr_until && now >= qp->rnr_until)
		qp->rnr_until = 0;
	if (qp->nopath_deadline && now >= qp->nopath_deadline) {
		nopath_expire(e, qp, now);
		if (qp->state != MRC_QPS_RTS)
			return;
	}
	if (qp->rack_deadline && now >= qp->rack_deadline)
		detect_losses(e, qp, now);
	if (qp->rto_deadline && now >= qp->rto_deadline) {
		rto_fire(e, qp, now);
		rto_rearm(qp, now);
	}
	mrc__qp_activate(e, qp, now);
}
