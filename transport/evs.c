/* The EVs of each peer, one per path to it: state machine GOOD /
 * ASSUMED_BAD / DENIED, RTT per path, and probes that bring bad paths
 * back.  Spraying over them is evs_pick.c's; peers themselves are added
 * and removed in peer.c. */
#include <errno.h>
#include <string.h>

#include "transport/evs.h"
#include "transport/timers.h"


/* QPs waiting for a path to the peer (every EV was DENIED) resume. */
static void qps_path_back(struct mrce *e, uint32_t peer, uint64_t now)
{
	for (uint32_t i = 0; i < e->qp_hwm; i++) {
		struct mrce__qp *qp = &e->qps[i];
		if (!qp->used || qp->peer != peer || !qp->nopath_deadline ||
		    qp->state != MRCE_QPS_RTS)
			continue;
		qp->nopath_deadline = 0;
		mrce__event_push(e, &(struct mrce_event){ .type = MRCE_EVT_QP_PATH_BACK,
			.qpn = qp->qpn, .peer = peer, .time_ns = now });
		mrce__qp_timer_sync(e, qp);
		mrce__qp_activate(e, qp, now);
	}
}

void mrce__ev_set_state(struct mrce *e, uint32_t peer, uint32_t ev,
			 uint8_t st, uint8_t reason, uint64_t now)
{
	struct mrce__peer *p = &e->peers[peer];
	struct mrce__ev *pa = &p->paths[ev];
	struct mrce__ev_cold *pc = &p->cold[ev];
	uint8_t old = pa->state;
	if (old == st)
		return;
	int was_reachable = mrce__peer_reachable(p);
	p->ngood += (st == MRCE_EV_GOOD) - (old == MRCE_EV_GOOD);
	p->nbad += (st == MRCE_EV_ASSUMED_BAD) - (old == MRCE_EV_ASSUMED_BAD);
	pa->state = st;
	pa->reason = reason;
	if (pa->suspect) {
		pa->suspect = 0;
		p->nsuspect--;
	}
	pa->last_change = now;
	pa->probe_seq = 0;
	/* Not nonzero but while ASSUMED_BAD: setup denies the EVs a fabric
	 * lacks, and that must not even read the cold pages (store.h). */
	if (old == MRCE_EV_ASSUMED_BAD) {
		pc->ok_streak = 0;
		pc->probe_backoff = 0;
	}
	if (st == MRCE_EV_ASSUMED_BAD) {
		/* First probe soon, but not at once: a path that just lost a
		 * packet rarely heals within microseconds. */
		pc->next_probe = now + e->cfg.probe_interval_ns / 4;
		/* The first bad path resets a stale due time, but not one that
		 * suspects still keep: their probes expire sooner. */
		if ((p->nbad == 1 && !p->nsuspect) || pc->next_probe < p->next_probe_due)
			p->next_probe_due = pc->next_probe;
	}
	mrce__peer_timer_sync(e, peer);
	e->st.ev_changes++;
	mrce__event_push(e, &(struct mrce_event){ .type = MRCE_EVT_EV_STATE,
		.old_state = old, .new_state = st, .reason = reason,
		.peer = peer, .ev = ev, .time_ns = now });
	/* QPs waiting for a path (every EV was DENIED) resume at once. */
	if (!was_reachable && mrce__peer_reachable(p))
		qps_path_back(e, peer, now);
}

static void unsuspect(struct mrce__peer *p, struct mrce__ev *pa)
{
	if (pa->suspect) {
		pa->suspect = 0;
		p->nsuspect--;
	}
}

/* Retires a GOOD path, unless that would leave fewer usable paths than
 * the floor. */
static void retire(struct mrce *e, uint32_t peer, uint32_t ev, uint8_t reason,
		   uint64_t now)
{
	struct mrce__peer *p = &e->peers[peer];
	if (p->paths[ev].state != MRCE_EV_GOOD)
		return;
	if (p->ngood <= e->cfg.ev_floor) {
		mrce__event_push(e, &(struct mrce_event){ .type = MRCE_EVT_FLOOR,
			.old_state = MRCE_EV_GOOD, .new_state = MRCE_EV_GOOD,
			.reason = reason, .peer = peer, .ev = ev, .time_ns = now });
		return;
	}
	mrce__ev_set_state(e, peer, ev, MRCE_EV_ASSUMED_BAD, reason, now);
}

static void probe_send(struct mrce *e, uint32_t peer, uint32_t ev, uint64_t now);

/* How long a probe of a suspect path may take: probes travel in the
 * switches' priority queue, so a live path answers in about its base RTT
 * however deep its data queue is; a dead one never does. */
static uint64_t suspect_wait(const struct mrce *e, const struct mrce__peer *p)
{
	uint64_t base = p->min_rtt ? p->min_rtt : e->cfg.reorder_slack_ns;
	/* Without that priority queue (a fabric of plain FIFOs), answers
	 * have been seen to take longer: wait as long as they took. */
	if (p->probe_rtt_hi > base)
		base = p->probe_rtt_hi;
	return base + base / 4;
}

#define SUSPECT_EXT 4

/* Paths to the peer suspect in another plane than pa's: one link's failure
 * stays inside its plane, queues building everywhere (a burst's start,
 * before any ECN has come back) do not. */
static int suspect_elsewhere(const struct mrce__peer *p, const struct mrce__ev *pa)
{
	if (p->nsuspect < 2)
		return 0;
	for (uint32_t ev = 0; ev < p->nev; ev++)
		if (p->paths[ev].suspect && p->paths[ev].plane != pa->plane)
			return 1;
	return 0;
}

/* A suspect's probe is unanswered at suspect_until.  If ECN or trims came
 * from the peer since the probe left, the switches' queues are deep and
 * the priority queue the probe waits in carries every trimmed header too
 * (issue 34: probes answered in ~30 us on an oversubscribed fabric's
 * start-up, a 3 us base RTT, retired 1,424 live paths); so they are when
 * paths in other planes wait as well.  Then the wait doubles, at most
 * SUSPECT_EXT times (31 waits in all), and only then is the path retired.
 * A dead path with no congestion towards the peer is retired as before.
 * Returns 1 when the wait was extended. */
static int suspect_extend(struct mrce *e, const struct mrce__peer *p,
			  struct mrce__ev *pa, uint64_t now)
{
	struct mrce__ev_cold *pc = &p->cold[pa - p->paths];
	if (pc->suspect_ext >= SUSPECT_EXT ||
	    (p->last_cong <= pa->probe_ts && !suspect_elsewhere(p, pa)))
		return 0;
	e->st.suspect_extended++;
	pc->suspect_ext++;
	pc->suspect_until = now + (suspect_wait(e, p) << pc->suspect_ext);
	return 1;
}

/* A packet on a GOOD path is late (past half its reorder window): ask the
 * path directly, before the packet is declared lost, so that by then the
 * answer is known or nearly due.  One probe per path covers every packet
 * sent on it before the probe.  A suspect's probe is not replaced: its
 * answer would be dropped as stale while suspect_until still counts from
 * it, and a live path retired (test_suspect_probe_kept). */
void mrce__ev_check(struct mrce *e, uint32_t peer, uint32_t ev,
		     uint64_t sent_ts, uint64_t now)
{
	struct mrce__ev *pa = &e->peers[peer].paths[ev];
	if (pa->state != MRCE_EV_GOOD || pa->suspect || pa->alive_ts >= sent_ts ||
	    (pa->probe_seq && pa->probe_ts >= sent_ts))
		return;
	probe_send(e, peer, ev, now);
	e->st.suspect_probes++;
}

/* A packet sent at sent_ts on this path was declared lost.  Late or
 * dropped by a full buffer is congestion, not a path failure; what tells
 * them apart is a probe sent after the packet (probes travel in the
 * switches' priority queue): answered, the path is alive and stays GOOD;
 * unanswered within suspect_wait, it is retired, and until then it is out
 * of the spray.  One loss alone is no proof even with no sign of
 * congestion (cong == 0) and no probe out: on a 2:1 all-to-all's start-up
 * the first packet a path carried was often only late, and retiring it at
 * once convicted healthy links (docs/health.md).  Such a suspect (lone)
 * is retired at its next loss, though: a dead path under load loses every
 * packet it carries, and is retired as fast as before. */
void mrce__ev_lost(struct mrce *e, uint32_t peer, uint32_t ev,
		    uint64_t sent_ts, uint8_t reason, int cong, int weak, uint64_t now)
{
	struct mrce__peer *p = &e->peers[peer];
	struct mrce__ev *pa = &p->paths[ev];
	struct mrce__ev_cold *pc = &p->cold[ev];
	pc->lost++;
	e->st.loss_detected++;
	if (pa->state != MRCE_EV_GOOD)
		return;
	if (pa->suspect) {
		if (pc->lone && !cong && pa->alive_ts < sent_ts) {
			e->st.suspect_retired++;
			retire(e, peer, ev, reason, now);
			unsuspect(p, pa);   /* kept by the floor */
		}
		return;
	}
	if (pa->alive_ts >= sent_ts) {
		e->st.suspect_cleared++;
		return;
	}
	/* A timeout with every path of the peer silent (weak) says the peer
	 * or this host stalled, not which path failed: on a loaded host a
	 * scheduler stall past the RTO.  Retiring paths for it takes the
	 * plane's last one out of the spray (a spine down, a cross-leaf pair)
	 * or halves a plane's paths, for nothing: kept, reported once per
	 * path and silence as a floor event (which losses are weak:
	 * loss.c mrce__mark_lost).  Once only per path, though: a path excused
	 * before that has carried no ACK since, while the peer was heard on
	 * others, is the silent one (a dead path under sparse traffic, one
	 * packet in flight at a time), and is judged as any loss. */
	if (weak && pc->kept_ts && pa->last_ack < pc->kept_ts && p->heard > pc->kept_ts)
		weak = 0;
	if (weak) {
		if (pc->kept_ts <= p->heard)
			mrce__event_push(e, &(struct mrce_event){ .type = MRCE_EVT_FLOOR,
				.old_state = MRCE_EV_GOOD, .new_state = MRCE_EV_GOOD,
				.reason = reason, .peer = peer, .ev = ev, .time_ns = now });
		pc->kept_ts = now;
		return;
	}
	pc->blame_ts = sent_ts;
	int asked = pa->probe_seq && pa->probe_ts >= sent_ts;
	if (!asked) {
		probe_send(e, peer, ev, now);
		e->st.suspect_probes++;
	}
	/* Not asked before: the packet's ACKs came too late even to probe
	 * in its reorder window (loss.c); a path already asked is judged by
	 * its probe alone, as the losses of a late burst come together. */
	pc->lone = !asked && !cong;
	pc->suspect_ext = 0;
	pc->suspect_until = pa->probe_ts + suspect_wait(e, p);
	if (pc->suspect_until <= now && !suspect_extend(e, p, pa, now)) {
		e->st.suspect_retired++;
		retire(e, peer, ev, reason, now);
		return;
	}
	uint64_t until = pc->suspect_until;
	pa->suspect = 1;
	p->nsuspect++;
	if ((!p->nbad && p->nsuspect == 1) || until < p->next_probe_due)
		p->next_probe_due = until;
	mrce__peer_timer_sync(e, peer);
}

/* A packet sent at sent_ts on this path, declared lost, was acknowledged
 * after all (the ACK echoes its send time and EV): the path delivered it.
 * If that loss, or one of a packet sent before it, retired the path or
 * made it a suspect, the path is given back: the loss was lateness.  A
 * path retired for a packet sent after this one stays retired (it may
 * have died since). */
void mrce__ev_spurious(struct mrce *e, uint32_t peer, uint32_t ev, uint64_t sent_ts,
		       uint64_t now)
{
	struct mrce__peer *p = &e->peers[peer];
	if (ev >= p->nev)
		return;
	struct mrce__ev *pa = &p->paths[ev];
	if (sent_ts < p->cold[ev].blame_ts)
		return;
	if (pa->suspect) {
		/* As good as its probe's answer. */
		if (pa->alive_ts < sent_ts)
			pa->alive_ts = sent_ts;
		unsuspect(p, pa);
		e->st.suspect_cleared++;
	} else if (pa->state == MRCE_EV_ASSUMED_BAD &&
		   (pa->reason == MRCE_RSN_LOSS || pa->reason == MRCE_RSN_RTO)) {
		/* Retired by a timeout or by a late packet alike. */
		mrce__ev_set_state(e, peer, ev, MRCE_EV_GOOD, MRCE_RSN_SPURIOUS, now);
	}
}

/* A recent highest value: jumps up to a new high, decays towards lower
 * samples by 1/64 of the gap each (rtt_hi, probe_rtt_hi). */
static void track_hi(uint64_t *hi, uint64_t v)
{
	if (v >= *hi)
		*hi = v;
	else
		*hi -= (*hi - v) / 64;
}

void mrce__ev_rtt(struct mrce *e, struct mrce__peer *p, uint32_t ev,
		   uint64_t rtt)
{
	struct mrce__ev *pa = &p->paths[ev];
	mrce__ev_rtt_update(pa, rtt);
	if (!p->min_rtt || rtt < p->min_rtt)
		p->min_rtt = rtt;
	track_hi(&p->rtt_hi, rtt);
	/* Paths much slower than the others now get fewer packets.  Compared
	 * with the peer's current RTT, not its minimum: under load every path
	 * is above twice the minimum, and penalising them at random piles
	 * the spray onto fewer paths (docs/sim.md). */
	p->rtt_avg = p->rtt_avg ? (7 * p->rtt_avg + rtt) / 8 : rtt;
	if (rtt > p->rtt_avg + p->rtt_avg / 2 && pa->penalty < 8)
		pa->penalty++;
	(void)e;
}

int mrce_ev_set_denied(struct mrce *e, uint64_t now, uint32_t peer,
		      uint32_t ev, int deny)
{
	struct mrce__peer *p = mrce__peer_get(e, peer);
	if (!p || ev >= p->nev)
		return -EINVAL;
	uint8_t cur = p->paths[ev].state;
	if (deny && cur != MRCE_EV_DENIED)
		mrce__ev_set_state(e, peer, ev, MRCE_EV_DENIED, MRCE_RSN_DENY, now);
	else if (!deny && cur == MRCE_EV_DENIED)
		mrce__ev_set_state(e, peer, ev, MRCE_EV_ASSUMED_BAD, MRCE_RSN_ALLOW, now);
	return 0;
}

int mrce_ev_set_bad(struct mrce *e, uint64_t now, uint32_t peer, uint32_t ev)
{
	struct mrce__peer *p = mrce__peer_get(e, peer);
	if (!p || ev >= p->nev)
		return -EINVAL;
	if (p->paths[ev].state == MRCE_EV_GOOD)
		mrce__ev_set_state(e, peer, ev, MRCE_EV_ASSUMED_BAD, MRCE_RSN_DENY, now);
	return 0;
}

int mrce_plane_set_denied(struct mrce *e, uint64_t now, uint32_t peer,
			 uint32_t plane, int deny)
{
	struct mrce__peer *p = mrce__peer_get(e, peer);
	if (!p || plane >= MRCE_MAX_PLANES)
		return -EINVAL;
	for (uint32_t k = 0; k < p->plane_nev[plane]; k++)
		mrce_ev_set_denied(e, now, peer, p->plane_evs[plane][k], deny);
	return 0;
}

int mrce_ev_set_detour(struct mrce *e, uint32_t peer, uint32_t ev, int detour)
{
	struct mrce__peer *p = mrce__peer_get(e, peer);
	if (!p || ev >= p->nev)
		return -EINVAL;
	p->ndetour += !!detour - p->paths[ev].detour;
	p->paths[ev].detour = !!detour;
	return 0;
}

int mrce_ev_info(const struct mrce *e, uint32_t peer, uint32_t ev,
		struct mrce_ev_info *info)
{
	if (peer >= e->cfg.max_peers || !e->peers[peer].used || ev >= e->peers[peer].nev)
		return -EINVAL;
	const struct mrce__ev *pa = &e->peers[peer].paths[ev];
	const struct mrce__ev_cold *pc = &e->peers[peer].cold[ev];
	*info = (struct mrce_ev_info){ .state = pa->state, .plane = pa->plane,
		.last_reason = pa->reason, .detour = pa->detour, .srtt_ns = pa->srtt, .rttvar_ns = pa->rttvar,
		.last_change_ns = pa->last_change, .tx_pkts = pa->tx_pkts,
		.lost = pc->lost, .trims = pc->trims, .ecn = pc->ecn,
		.probes_sent = pa->probes_sent, .probes_ok = pa->probes_ok,
		.last_ack_ns = pa->last_ack };
	return 0;
}

/* ---- probes --------------------------------------------------------- */

static void probe_send(struct mrce *e, uint32_t peer, uint32_t ev, uint64_t now)
{
	struct mrce__peer *p = &e->peers[peer];
	struct mrce__ev *pa = &p->paths[ev];
	struct mrce_tx_pkt *t = mrce__ctrl_slot(e);
	if (!t)
		return;
	if (!++p->probe_seq)
		p->probe_seq = 1;
	pa->probe_seq = p->probe_seq;
	pa->probe_ts = now;
	pa->probes_sent++;
	e->st.tx_probes++;
	t->peer = peer;
	t->ev = (uint16_t)ev;
	t->plen = 0;
	t->payload = NULL;
	t->hdr_len = (uint16_t)mrce_wire_put_probe(t->hdr, &(struct mrc_probe_hdr){
		.op = MRC_OP_PROBE, .ev = (uint16_t)ev, .seq = p->probe_seq, .ts = now,
		.token = p->probe_tx_token });
}

int mrce_ev_probe(struct mrce *e, uint64_t now, uint32_t peer, uint32_t ev)
{
	struct mrce__peer *p = mrce__peer_get(e, peer);
	if (!p || ev >= p->nev)
		return -EINVAL;
	if (p->paths[ev].state == MRCE_EV_DENIED)
		return -ENETDOWN;
	p->paths[ev].user_probe = 1;
	probe_send(e, peer, ev, now);
	return 0;
}

/* A probe unanswered for this long is lost. */
static uint64_t probe_timeout(const struct mrce *e, const struct mrce__peer *p)
{
	uint64_t t = 4 * p->min_rtt;
	return t > e->cfg.probe_interval_ns ? t : e->cfg.probe_interval_ns;
}

/* A dead path's probes back off: the interval doubles with every probe
 * lost in a row, up to probe_max_interval_ns; an answer resets it. */
static uint64_t probe_interval(const struct mrce *e, const struct mrce__ev_cold *pc)
{
	uint64_t t = e->cfg.probe_interval_ns;
	for (uint8_t k = 0; k < pc->probe_backoff && t < e->cfg.probe_max_interval_ns; k++)
		t *= 2;
	return t < e->cfg.probe_max_interval_ns ? t : e->cfg.probe_max_interval_ns;
}

/* One peer's probes and suspects; mrce_tick calls it when the peer is due
 * (engine.c, over timers.c). */
void mrce__probe_tick_peer(struct mrce *e, uint32_t i, uint64_t now)
{
	struct mrce__peer *p = &e->peers[i];
	if (!p->used || (!p->nbad && !p->nsuspect) || now < p->next_probe_due)
		return;
	uint64_t due = UINT64_MAX;
	for (uint32_t ev = 0; ev < p->nev; ev++) {
		struct mrce__ev *pa = &p->paths[ev];
		struct mrce__ev_cold *pc = &p->cold[ev];
		if (pa->suspect && now >= pc->suspect_until)
			suspect_extend(e, p, pa, now);
		if (pa->suspect && now >= pc->suspect_until) {
			/* Its probe is unanswered: not congestion. */
			e->st.suspect_retired++;
			retire(e, i, ev, MRCE_RSN_LOSS, now);
			unsuspect(p, pa);   /* kept by the floor */
		} else if (pa->suspect && pc->suspect_until < due) {
			due = pc->suspect_until;
		}
		if (pa->state != MRCE_EV_ASSUMED_BAD)
			continue;
		if (pc->next_probe <= now) {
			if (pa->probe_seq && now - pa->probe_ts >= probe_timeout(e, p)) {
				pc->ok_streak = 0;   /* the last probe was lost */
				if (pc->probe_backoff < 32)
					pc->probe_backoff++;
			}
			probe_send(e, i, ev, now);
			pc->next_probe = now + probe_interval(e, pc);
		}
		if (pc->next_probe < due)
			due = pc->next_probe;
	}
	p->next_probe_due = due;
}

void mrce__probe_rx(struct mrce *e, uint64_t now, uint32_t peer,
		   const struct mrc_probe_hdr *h)
{
	struct mrce__peer *p = &e->peers[peer];
	/* Before anything else: a forged reply must not bring a path back,
	 * a forged probe must not make us send. */
	if (h->token != p->probe_rx_token) {
		e->st.rx_bad_token[MRCE_TOK_PROBE]++;
		return;
	}
	if (h->ev >= p->nev) {
		e->st.rx_drop[MRC_DROP_FIELD]++;
		return;
	}
	struct mrce__ev *pa = &p->paths[h->ev];
	if (h->op == MRC_OP_PROBE) {
		/* Answer on the same EV: the reply proves the reverse path. */
		if (pa->state == MRCE_EV_DENIED)
			return;
		struct mrce_tx_pkt *t = mrce__ctrl_slot(e);
		if (!t)
			return;
		t->peer = peer;
		t->ev = h->ev;
		t->plen = 0;
		t->payload = NULL;
		t->hdr_len = (uint16_t)mrce_wire_put_probe(t->hdr, &(struct mrc_probe_hdr){
			.op = MRC_OP_PROBE_REPLY, .ev = h->ev, .seq = h->seq,
			.ts = now, .ts_echo = h->ts, .token = p->probe_tx_token });
		return;
	}
	/* The answer to the one outstanding probe of this path, exactly: its
	 * seq and its send time (ts_echo, our clock).
	 * A reply recorded earlier, to an older probe or before a restart,
	 * or with ts_echo 0 or in the future, changes nothing (and the
	 * tokens are per boot epoch besides: docs/wire.md). */
	if (!pa->probe_seq || h->seq != pa->probe_seq || h->ts_echo != pa->probe_ts ||
	    h->ts_echo > now) {
		e->st.rx_probe_stale++;
		return;
	}
	uint64_t rtt = now - h->ts_echo;
	pa->probe_seq = 0;
	pa->probes_ok++;
	track_hi(&p->probe_rtt_hi, rtt);
	if (pa->state == MRCE_EV_GOOD) {
		/* Alive: whatever is late on it was sent before this probe
		 * and is queued or dropped by congestion.  A probe's RTT
		 * (priority queue, no payload) says nothing about the data
		 * queue, so it is no RTT sample. */
		pa->alive_ts = h->ts_echo;
		if (pa->suspect) {
			pa->suspect = 0;
			p->nsuspect--;
			e->st.suspect_cleared++;
			if (pa->penalty < 8)
				pa->penalty += 2;   /* slow: weight it down like trims */
		}
		if (!pa->user_probe)
			return;
	}
	mrce__ev_rtt(e, p, h->ev, rtt);
	if (pa->user_probe) {
		pa->user_probe = 0;
		mrce__event_push(e, &(struct mrce_event){ .type = MRCE_EVT_PROBE_RESULT,
			.peer = peer, .ev = h->ev, .rtt_ns = rtt, .time_ns = now,
			.old_state = pa->state, .new_state = pa->state });
	}
	if (pa->state != MRCE_EV_ASSUMED_BAD)
		return;
	struct mrce__ev_cold *pc = &p->cold[h->ev];
	pc->probe_backoff = 0;
	if (++pc->ok_streak >= e->cfg.probe_ok_needed) {
		pa->penalty = 0;
		mrce__ev_set_state(e, peer, h->ev, MRCE_EV_GOOD, MRCE_RSN_PROBE_OK, now);
	} else {
		/* Confirm quickly: the next probe goes out on the next tick. */
		pc->next_probe = now;
		p->next_probe_due = now;
	}
}
