/* Loss on the sender side: RACK-style detection per path that tolerates
 * spraying reorder, the RTO, the no-path bound, and the QP's timers. */
#include <errno.h>

#include "transport/loss.h"
#include "transport/evs.h"
#include "transport/qp.h"

#define NO_PATH_ERR    (-ENETUNREACH)
#define PROBE_AT       8   /* probe a late packet's path 1/PROBE_AT into its
                              reorder window */

/* PSN of the slot at index i: the unique PSN in [snd_una, snd_nxt). */
static uint32_t slot_psn(const struct mrce *e, const struct mrce__qp *qp, uint16_t i)
{
	return qp->snd_una + ((i - qp->snd_una) & e->wmask);
}

static void nopath_expire(struct mrce *e, struct mrce__qp *qp, uint64_t now)
{
	qp->nopath_deadline = 0;
	if (qp->sq_done == qp->sq_tail || mrce__peer_reachable(&e->peers[qp->peer]))
		return;   /* the work finished (ACKs still came in) or a path is back */
	/* The oldest unfinished request is the one that could not go: it
	 * carries the error, the rest are flushed behind it. */
	uint32_t first = qp->sq_done;
	mrce__qp_fail(e, qp, NO_PATH_ERR, qp->snd_una, now);
	qp->sq[first & e->sqmask].status = NO_PATH_ERR;
}

/* Queueing towards the peer that can explain a late or dropped packet:
 * ECN marks or trims lately, or recent RTTs above the base RTT.  Without
 * any, a late packet is blamed on its path at once (a dead path on an idle
 * fabric is retired as fast as before). */
static int congested(const struct mrce *e, const struct mrce__qp *qp, uint64_t now)
{
	const struct mrce__peer *p = &e->peers[qp->peer];
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
static int all_planes(const struct mrce__peer *p, const struct mrce__qp *qp)
{
	if (!qp->plane_mask)
		return 1;
	for (int pl = 0; pl < MRCE_MAX_PLANES; pl++)
		if (p->plane_nev[pl] && !(qp->plane_mask >> pl & 1))
			return 0;
	return 1;
}

void mrce__mark_lost(struct mrce *e, struct mrce__qp *qp, uint16_t i,
		      uint8_t reason, int blame, uint64_t now)
{
	struct mrce__slot *s = &qp->slots[i];
	mrce__lst_remove(qp, i);
	s->state = MRCE__S_LOST;
	/* A timeout blames a path only if nothing came back on it since the
	 * packet left: a queue that merely grew past the RTO (a burst, a busy
	 * receiver) keeps ACKing, a dead path does not. */
	const struct mrce__peer *p = &e->peers[qp->peer];
	if (blame && reason == MRCE_RSN_RTO && p->paths[s->ev].last_ack > s->sent_ts)
		blame = 0;
	/* The peer acked nothing sent since it left, on any path of any QP:
	 * the silence is the peer's (a stall), not the path's, and no path is
	 * retired for it (weak, mrce__ev_lost).  Retiring paths cannot end
	 * such a silence for a QP that sprays over every plane; a QP held to
	 * some planes (plane_mask) may need to leave a dead one, so for it
	 * only a first timeout is weak (the peer heard within two RTOs, the
	 * packet's first transmission); a QP pinned to one EV rehashes on its
	 * first timeout, as before. */
	int weak = reason == MRCE_RSN_RTO && p->acked_sent < s->sent_ts &&
		   !(qp->flags & MRCE_QP_PIN_EV) &&
		   (all_planes(p, qp) || (now - p->heard < 2 * qp->rto && !s->tries));
	s->lost_ev = blame ? s->ev : UINT16_MAX;
	if (reason == MRCE_RSN_RTO)
		s->rto_lost = 1;
	s->lost_by = reason == MRCE_RSN_RTO ? MRCE__LB_RTO : MRCE__LB_NONE;   /* callers refine */
	if (s->ev < e->cfg.qp_ev_stats)
		qp->evst[s->ev].lost_pkts++;
	else
		qp->ev_other_lost++;
	qp->inflight_pkts--;
	qp->inflight_bytes -= s->plen;
	mrce__bit_set(qp->lostmap, slot_psn(e, qp, i));
	if (blame)
		mrce__ev_lost(e, qp->peer, s->ev, s->sent_ts, reason,
			       congested(e, qp, now), weak, now);
}

/* How long past its send time a packet on this EV may still be acked.
 * own: a packet sent after it on the same EV was acked.  A path is FIFO
 * and every ACK carries the whole SACK window, so that ACK would have
 * shown it had it arrived first: lost, after the fastest round trip to
 * the peer and the slack, plus what declarations of this kind proven
 * spurious taught (reo_own: a fabric whose paths reorder), not its
 * path's smoothed RTT and variance, which a queue that builds blows up
 * to milliseconds; never later than without that evidence.  Else only packets on other paths overtook it,
 * which spraying does by design: the path's srtt plus a window that
 * covers its RTT variance, how far RTTs to the peer spread lately (queues
 * on some paths, not on others) and what declarations proven spurious
 * taught (reo_extra: ack_rx.c spurious_loss). */
static void late_after(const struct mrce *e, const struct mrce__qp *qp,
		       const struct mrce__peer *p, uint16_t ev, int own, uint64_t *srtt_out,
		       uint64_t *wnd)
{
	const struct mrce__ev *pa = &p->paths[ev];
	uint64_t slack = e->cfg.reorder_slack_ns;
	if (p->min_rtt / 4 > slack)
		slack = p->min_rtt / 4;
	uint64_t own_after = own && p->min_rtt ? p->min_rtt + slack + p->reo_own : UINT64_MAX;
	/* A path not measured yet is judged by the slowest recent RTT to
	 * the peer, not by the QP's (which may be the fastest path's, or
	 * none: a packet sent at time 0 echoes no timestamp). */
	uint64_t srtt = pa->srtt ? pa->srtt : qp->srtt > p->rtt_hi ? qp->srtt : p->rtt_hi;
	uint64_t var = pa->srtt ? pa->rttvar : qp->rttvar;
	if (p->rtt_hi - p->min_rtt > slack)
		slack = p->rtt_hi - p->min_rtt;
	slack += p->reo_extra;
	*srtt_out = srtt;
	*wnd = 4 * var > slack ? 4 * var : slack;
	if (own_after < srtt + *wnd) {
		*srtt_out = p->min_rtt;
		*wnd = own_after - p->min_rtt;
	}
}

/* One packet in flight and nothing heard from the peer since it left:
 * one silent path, no evidence of a silent peer (several packets on
 * several paths unanswered are; a QP that sends one small message per
 * phase of a step has no later packet whose ACK could tell).  Once per
 * silence: not while the RTO backs off, nor again before the peer is
 * heard (the RTO and its backoff handle a peer that stays silent). */
static int lone_tail(const struct mrce *e, const struct mrce__qp *qp,
		     const struct mrce__peer *p)
{
	return e->cfg.tlp_lone && qp->inflight_pkts == 1 && !qp->backoff &&
	       qp->tlp_ts <= p->heard;
}

/* Tail-loss probe (RFC 8985's TLP): the last packets of a flow have no
 * later packet whose ACK reveals their loss, so only the RTO would.  When
 * nothing is left to send and no ACK progress came for max(2 x srtt,
 * cfg.tlp_min_ns) after the newest transmission, that newest packet (the
 * list's tail: it is the one nothing can overtake, and the slot needs no
 * search) is resent; its ACK moves rack_seq past the packets lost before
 * it, so RACK declares them lost and blames their path as usual.  The
 * deadline shares rack_deadline (no timer of its own).  0: none due. */
static uint64_t tlp_due(const struct mrce *e, const struct mrce__qp *qp, uint64_t now)
{
	if (!e->cfg.tlp_min_ns || qp->lst_tail == MRCE__NIL || qp->sq_seg != qp->sq_tail ||
	    (qp->lostmap[0] | qp->lostmap[1] | qp->lostmap[2] | qp->lostmap[3]))
		return 0;
	const struct mrce__peer *p = &e->peers[qp->peer];
	uint64_t sent = qp->slots[qp->lst_tail].sent_ts;
	/* At most one per RTO, and only when the peer acked something after
	 * the tail left (the fabric to it delivers, this packet is missing):
	 * resends cannot end a silence, and the RTO's backoff bounds those.
	 * A tail alone in flight is the exception (lone_tail). */
	if ((qp->tlp_ts && now - qp->tlp_ts < qp->rto) ||
	    (p->heard <= sent && !lone_tail(e, qp, p)))
		return 0;
	/* Not before RACK would declare it lost had a later packet been
	 * acked (its path's RTT and reorder window), so that its path is
	 * charged by the same measure. */
	uint64_t srtt, wnd;
	late_after(e, qp, p, qp->slots[qp->lst_tail].ev, 0, &srtt, &wnd);
	/* The round trip its ACK needs: measured, or the floor where no RTT
	 * to the peer is yet. */
	uint64_t rt = 2 * srtt > srtt + wnd ? 2 * srtt : srtt + wnd;
	if (!srtt && rt < e->cfg.tlp_min_ns)
		rt = e->cfg.tlp_min_ns;
	/* Alone in flight, its ACK may be held by a peer that sent data
	 * lately (ack_delay_ns, the same on every host), with no later packet
	 * to release it: wait that out too (RFC 8985 7.2's WCDelAckT), or a
	 * ping-pong's last reply is probed every time.  The hold adds to the
	 * round trip, not to the floor: where the round trip is measured the
	 * floor need not also cover the hold, and adding both made a lone
	 * loss on a fast fabric wait a hold longer than its ACK could take
	 * (the first all-to-all phase after a fault, docs/step.md). */
	if (qp->inflight_pkts == 1)
		rt += e->cfg.ack_delay_ns;
	uint64_t wait = rt > e->cfg.tlp_min_ns ? rt : e->cfg.tlp_min_ns;
	uint64_t due = sent + wait;
	if (qp->rto_deadline && due >= qp->rto_deadline)
		return 0;   /* the RTO comes first anyway */
	return due;
}

static void tlp_fire(struct mrce *e, struct mrce__qp *qp, uint64_t now)
{
	uint64_t due = tlp_due(e, qp, now);
	if (!due || due > now)
		return;
	uint16_t i = qp->lst_tail;
	struct mrce__slot *s = &qp->slots[i];
	/* Overdue by RACK's measure with the peer heard since it left: its
	 * path is charged as RACK would (a dead one retired, a congested one
	 * probed first; mrce__ev_lost).  The resend avoids its plane
	 * (mrce__qp_tx_one, by lost_ev), and an ACK of the first transmission
	 * proves the loss spurious and brings the path back (ack_rx.c).  A
	 * lone tail with the peer unheard may be the peer's silence, not the
	 * path's: its path is probed first (out of the spray until the probe
	 * answers or times out), never retired on this alone. */
	if (e->peers[qp->peer].heard > s->sent_ts) {
		mrce__mark_lost(e, qp, i, MRCE_RSN_LOSS, 1, now);
	} else {
		uint16_t ev = s->ev;
		uint64_t sent = s->sent_ts;
		mrce__mark_lost(e, qp, i, MRCE_RSN_LOSS, 0, now);
		s->lost_ev = ev;
		mrce__ev_lost(e, qp->peer, ev, sent, MRCE_RSN_LOSS, 1, 0, now);
	}
	s->lost_by = MRCE__LB_TLP;
	qp->tlp_ts = now;
	e->st.tlp_probes++;
}

/* A packet sent with nothing else in flight: no ACK will come to run
 * mrce__detect_losses before it is answered, so its probe (lone_tail) is
 * armed here. */
void mrce__tlp_arm(struct mrce *e, struct mrce__qp *qp, uint64_t now)
{
	uint64_t tlp = tlp_due(e, qp, now);
	if (tlp && (!qp->rack_deadline || tlp < qp->rack_deadline))
		qp->rack_deadline = tlp > now ? tlp : now + 1;
}

/* Whether an ACK that acked a later transmission on s's own EV came. */
static int own_overtaken(const struct mrce__slot *s, const struct mrce__acked_evs *a)
{
	if (s->own_late || !a)
		return s->own_late;
	for (uint32_t k = 0; k < a->n; k++)
		if (a->ev[k] == s->ev && (int32_t)(a->xseq[k] - s->xseq) > 0)
			return 1;
	return 0;
}

void mrce__loss_spurious(struct mrce *e, const struct mrce__slot *s)
{
	e->st.loss_spurious++;
	switch (s->lost_by) {
	case MRCE__LB_OWN: e->st.loss_spurious_own++; break;
	case MRCE__LB_CROSS: e->st.loss_spurious_cross++; break;
	case MRCE__LB_TLP: e->st.loss_spurious_tlp++; break;
	case MRCE__LB_RTO: e->st.loss_spurious_rto++; break;
	case MRCE__LB_RTO_REST:
		e->st.loss_spurious_rto++;
		e->st.loss_spurious_rto_rest++;
		break;
	default: break;
	}
}

/* RACK-style, per path: a packet is lost once a packet sent after it has
 * been acknowledged and it is overdue for its own path's RTT.  A global
 * duplicate count would misfire, since spraying reorders by design. */
void mrce__detect_losses(struct mrce *e, struct mrce__qp *qp, uint64_t now,
			 const struct mrce__acked_evs *a)
{
	const struct mrce__peer *p = &e->peers[qp->peer];
	uint64_t next = 0;
	uint16_t i = qp->lst_head;
	while (i != MRCE__NIL) {
		struct mrce__slot *s = &qp->slots[i];
		uint16_t nx = s->next;
		/* Transmission order, not time: a batch shares one timestamp. */
		if ((int32_t)(s->xseq - qp->rack_seq) >= 0)
			break;
		s->own_late = (uint8_t)own_overtaken(s, a);
		uint64_t srtt, wnd;
		late_after(e, qp, p, s->ev, s->own_late, &srtt, &wnd);
		uint64_t due = s->sent_ts + srtt + wnd;
		/* Part way through the reorder window the path is probed
		 * (mrce__ev_check) when an ACK brings us here, so that at the
		 * deadline a live path is known alive and a dead one's probe
		 * has nearly timed out.  No timer of its own: an idle QP
		 * behaves as without it. */
		if (now >= due) {
			uint8_t by = s->own_late ? MRCE__LB_OWN : MRCE__LB_CROSS;
			if (s->own_late)
				e->st.loss_own_path++;
			else
				e->st.loss_cross_path++;
			mrce__mark_lost(e, qp, i, MRCE_RSN_LOSS, 1, now);
			s->lost_by = by;
		} else {
			if (now >= s->sent_ts + srtt + wnd / PROBE_AT)
				mrce__ev_check(e, qp->peer, s->ev, s->sent_ts, now);
			if (!next || due < next)
				next = due;
		}
		i = nx;
	}
	uint64_t tlp = tlp_due(e, qp, now);
	if (tlp && tlp <= now)
		tlp = now + 1;   /* due already: tlp_fire at the next tick */
	if (tlp && (!next || tlp < next))
		next = tlp;
	qp->rack_deadline = next;
}

/* The RTO runs from the oldest packet's send or from the last ACK of new
 * data, the later (RFC 6298 5.3's restart): a queue ahead of the oldest
 * packet that drains (ACKs of what went before it, each the end of the
 * previous RTO's backoff) would otherwise fire it at once, and then its
 * successor, one RTO each (the MPI all-to-all: 625-937 RTOs a run, most
 * under 100 us past their deadline, bench/results/rto.md).  A packet on a
 * dead path while others are acked is RACK's to declare (its reorder
 * window is capped at the RTO).  A QP pinned to one EV has no other path
 * to hear from, and its dead path is found by the RTO alone: no restart
 * (mrcsim's ECMP failover was detected 33 us later with one). */
void mrce__rto_rearm(struct mrce__qp *qp, uint64_t now)
{
	if (qp->lst_head == MRCE__NIL) {
		qp->rto_deadline = 0;
		return;
	}
	uint64_t from = qp->slots[qp->lst_head].sent_ts;
	if (qp->rto_restart > from && !(qp->flags & MRCE_QP_PIN_EV))
		from = qp->rto_restart;
	uint64_t t = from + (qp->rto << qp->backoff);
	qp->rto_deadline = t > now ? t : now + 1;
}

static void rto_fire(struct mrce *e, struct mrce__qp *qp, uint64_t now)
{
	static const uint32_t lag_us[MRCE_RTO_HIST - 1] = { 100, 250, 500, 1000, 2500, 5000,
							    10000, 25000 };
	const struct mrce__peer *p = &e->peers[qp->peer];
	uint64_t lag = now > qp->rto_deadline ? now - qp->rto_deadline : 0;
	qp->rto_fires++;
	e->st.rto_fires++;
	e->st.rto_lag[mrce__hist_bucket(lag / 1000, lag_us)]++;
	qp->rto_ts = now;   /* judged by the next ACK (ack_rx.c rto_check) */
	qp->fire_rto = mrce__sat32(qp->rto << qp->backoff);
	qp->fire_srtt = mrce__sat32(qp->srtt);
	qp->fire_rttvar = mrce__sat32(qp->rttvar);
	qp->fire_floor = mrce__sat32(qp->rto_floor);
	qp->fire_lag = mrce__sat32(lag);
	qp->fire_silent = qp->lst_head != MRCE__NIL &&
			  p->acked_sent < qp->slots[qp->lst_head].sent_ts;
	e->st.rto_silent += qp->fire_silent;
	/* The oldest packet is resent.  So is everything outstanding for a
	 * whole (un-backed-off) RTO on a path silent since it left while the
	 * peer acked a packet sent after it on others (a dead path), not one
	 * packet per RTO with backoff.  Only a later packet's ACK is evidence:
	 * ACKs of earlier ones (heard since, acked_sent older) are what a queue
	 * ahead of it drains.  A path that has acked since is delivering: its packet is
	 * queued behind those (an incast's queue outgrows the RTO) or, if
	 * dropped, its own path's next ACK tells (mrce__detect_losses).  A peer
	 * silent on every path since (a stalled host, as F-RTO assumes first)
	 * gets the oldest only: resends cannot end a stall, and the ACK of that
	 * resend, a newer transmission, lets RACK declare the rest at once if
	 * they were lost after all (a QP's only path died).  Packets sent more
	 * recently get their own chance. */
	/* The oldest as the RTO found it: marking it lost takes it off the
	 * list, and its successor is no oldest packet (taking it for one
	 * declared every packet past the RTO lost, the MPI all-to-all's
	 * queues' whole contents). */
	const uint16_t head = qp->lst_head;
	uint16_t i = head;
	while (i != MRCE__NIL) {
		const struct mrce__slot *s = &qp->slots[i];
		uint16_t nx = s->next;
		if (now - s->sent_ts >= qp->rto &&
		    (i == head ||
		     (p->paths[s->ev].last_ack <= s->sent_ts && p->acked_sent > s->sent_ts))) {
			mrce__mark_lost(e, qp, i, MRCE_RSN_RTO, 1, now);
			if (i != head) {
				e->st.rto_lost_rest++;
				qp->slots[i].lost_by = MRCE__LB_RTO_REST;
			}
		}
		i = nx;
	}
	if ((qp->rto << (qp->backoff + 1)) <= e->cfg.rto_max_ns)
		qp->backoff++;
	e->cc->on_loss(qp->cc, now);
}

void mrce__qp_timers(struct mrce *e, struct mrce__qp *qp, uint64_t now)
{
	if (qp->rnr_until && now >= qp->rnr_until)
		qp->rnr_until = 0;
	if (qp->nopath_deadline && now >= qp->nopath_deadline) {
		nopath_expire(e, qp, now);
		if (qp->state != MRCE_QPS_RTS)
			return;
	}
	if (qp->rack_deadline && now >= qp->rack_deadline) {
		tlp_fire(e, qp, now);
		mrce__detect_losses(e, qp, now, NULL);
	}
	if (qp->rto_deadline && now >= qp->rto_deadline) {
		rto_fire(e, qp, now);
		mrce__rto_rearm(qp, now);
	}
	mrce__qp_activate(e, qp, now);
}
