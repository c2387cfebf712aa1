/* Queue pairs: creation, connection, posting work, completion bookkeeping
 * and the error state. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/ack_tx.h"
#include "transport/qp.h"
#include "transport/timers.h"
#include "transport/wpool.h"
#include "transport/zmem.h"

/* A QP's own arrays, its send and receive queues, in one block (zmem.c:
 * mapped when a page or more, zero pages until written): a QP that only
 * receives WRITEs writes neither.  The send queue starts the block, the
 * receive queue on the next page if it is a page or more, else on a cache
 * line.  The window state is the window pool's (wpool.c), held only while
 * the QP has work.  Returns the block's length (the ring sizes are the
 * engine's: free knows it). */
static size_t qp_layout(const struct mrce *e, size_t *rq_off)
{
	const struct mrce_cfg *c = &e->cfg;
	size_t sq = c->sq_depth * sizeof(struct mrce__wqe);
	size_t rq = c->rq_depth * sizeof(struct mrce__rwqe);
	size_t a = rq >= MRCE__ZMEM_PAGE ? MRCE__ZMEM_PAGE : 64;
	*rq_off = (sq + a - 1) & ~(a - 1);
	return *rq_off + rq;
}

static void qp_free_arrays(const struct mrce *e, struct mrce__qp *qp)
{
	size_t rq_off;
	mrce__zfree(qp->sq, qp_layout(e, &rq_off));
	free(qp->evst);
}

int mrce_qp_open(struct mrce *e, const struct mrce_qp_attr *attr, uint32_t *qpn)
{
	if (!attr || !qpn || (attr->flags & ~(MRCE_QP_PIN_EV | MRCE_QP_RNR_RETRY)) ||
	    ((attr->flags & MRCE_QP_RNR_RETRY) && attr->rnr_retry > MRCE_RNR_RETRY_FOREVER) ||
	    (attr->plane_mask >> MRCE_MAX_PLANES) || attr->tclass >= MRCE_TC__COUNT)
		return -EINVAL;
	uint32_t i;
	for (i = 0; i < e->cfg.max_qps && e->qps[i].used; i++)
		;
	if (i == e->cfg.max_qps)
		return -ENOSPC;
	struct mrce__qp *qp = &e->qps[i];
	memset(qp, 0, sizeof(*qp));
	size_t rq_off;
	uint8_t *blk = mrce__zalloc(qp_layout(e, &rq_off));
	if (blk) {
		qp->sq = (struct mrce__wqe *)blk;
		qp->rq = (struct mrce__rwqe *)(blk + rq_off);
	}
	qp->evst = e->cfg.qp_ev_stats ? calloc(e->cfg.qp_ev_stats, sizeof(*qp->evst)) : NULL;
	if (!blk || (e->cfg.qp_ev_stats && !qp->evst)) {
		qp_free_arrays(e, qp);
		return -ENOMEM;
	}
	/* The QPN carries a generation so packets for a destroyed QP never
	 * reach a new one that reuses its slot. */
	e->qp_gen = (e->qp_gen + 1) & 0x7fff;
	if (!e->qp_gen)
		e->qp_gen = 1;
	qp->qpn = (e->qp_gen << 16) | i;
	qp->used = 1;
	qp->state = MRCE_QPS_RESET;
	qp->pd = attr->pd;
	qp->flags = attr->flags;
	qp->pin_ev = attr->pin_ev;
	qp->plane_mask = attr->plane_mask;
	qp->tclass = (uint8_t)attr->tclass;
	qp->rnr_retry = (attr->flags & MRCE_QP_RNR_RETRY) ? attr->rnr_retry : e->cfg.rnr_retry;
	qp->lst_head = qp->lst_tail = MRCE__NIL;
	qp->rto = e->cfg.rto_init_ns;
	qp->win = (uint16_t)e->cfg.window;   /* <= MRCE_MAX_WINDOW */
	qp->mtu = (uint16_t)e->cfg.mtu;      /* <= MRC_MAX_PAYLOAD */
	e->cc->init(qp->cc, &(struct mrce_cc_params){ .mtu = e->cfg.mtu,
		.min_cwnd = e->cfg.mtu, .max_cwnd = e->max_cwnd });
	if (i >= e->qp_hwm)
		e->qp_hwm = i + 1;
	*qpn = qp->qpn;
	return 0;
}

static void unlink_list(struct mrce__qp **head, struct mrce__qp **tail,
			struct mrce__qp *qp, size_t next_off)
{
	struct mrce__qp *prev = NULL;
	for (struct mrce__qp *c = *head; c; prev = c,
	     c = *(struct mrce__qp **)((char *)c + next_off)) {
		if (c != qp)
			continue;
		struct mrce__qp *nx = *(struct mrce__qp **)((char *)c + next_off);
		if (prev)
			*(struct mrce__qp **)((char *)prev + next_off) = nx;
		else
			*head = nx;
		if (*tail == qp)
			*tail = prev;
		return;
	}
}

int mrce_qp_close(struct mrce *e, uint32_t qpn)
{
	struct mrce__qp *qp = mrce__qp_get(e, qpn);
	if (!qp)
		return -ENOENT;
	/* Release the memory references of unreaped work. */
	for (uint32_t s = qp->sq_head; s != qp->sq_tail; s++) {
		struct mrce__wqe *w = &qp->sq[s & e->sqmask];
		struct mrce__mr *m = w->op == MRC_OP_ATOMIC_ADD ? NULL : mrce__mr_get(e, w->lkey);
		if (m && m->refs)
			m->refs--;
	}
	/* A failed QP's RECVs gave theirs back when it failed (qp_fail). */
	for (uint32_t s = qp->rq_head; qp->state != MRCE_QPS_ERROR && s != qp->rq_tail; s++) {
		struct mrce__mr *m = mrce__mr_get(e, qp->rq[s & e->rqmask].lkey);
		if (m && m->refs)
			m->refs--;
	}
	if (qp->in_active)
		unlink_list(&e->active_head[mrce__band(qp->tclass)],
			    &e->active_tail[mrce__band(qp->tclass)], qp,
			    offsetof(struct mrce__qp, active_next));
	if (qp->in_ready)
		unlink_list(&e->ready_head, &e->ready_tail, qp,
			    offsetof(struct mrce__qp, ready_next));
	if (qp->in_ack) {
		struct mrce__qp *no_tail = NULL;   /* the ACK list keeps no tail */
		mrce__ack_flush_qp(e, qp);
		unlink_list(&e->ack_head, &no_tail, qp, offsetof(struct mrce__qp, ack_next));
	}
	mrce__wpool_drop(e, qp);
	qp_free_arrays(e, qp);
	memset(qp, 0, sizeof(*qp));
	mrce__qp_timer_sync(e, qp);   /* unused: out of the timers */
	return 0;
}

/* Every host of a job starts its spray at once; from the same place in the
 * EV order they would all hit the same core link in the same packet slot,
 * for the whole transfer (mrcsim: queues of 64 packets on every uplink of
 * a pod at k=16).  A QP's connection moves its peer's starting point by a
 * hash of its QPN and initial PSN (on the wire anyway), so hosts spray out
 * of step.  Deterministic: no random source in the engine. */
static void spray_phase(struct mrce__peer *p, uint32_t qpn, uint32_t psn, uint32_t slot)
{
	uint32_t h = (psn ^ qpn * 0x85ebca6bu) * 2654435761u;
	h ^= h >> 15;
	h *= 2246822519u;
	h ^= h >> 13;
	p->plane_rr += h & 0xffff;
	/* Random phases still collide: of 32 hosts on a leaf, about a third
	 * share a spine with another in each slot, for as long as they send
	 * in step (mrcsim, 8-plane Clos: slowest flow 1.20 -> 1.15 x ideal
	 * with distinct slots; docs/sim.md).  A known slot makes them
	 * distinct: consecutive positions of the bit-reversed order are
	 * distinct EVs and, in a fat tree, distinct aggregation switches. */
	for (int pl = 0; pl < MRCE_MAX_PLANES; pl++)
		p->plane_cur[pl] = (uint16_t)(slot ? slot - 1 : p->plane_cur[pl] + (h >> 16));
}

/* Planes a QP's spray can use: the peer's planes with an EV that is not
 * DENIED, within the QP's plane mask; one for a pinned QP. */
static uint32_t qp_planes(const struct mrce__peer *p, const struct mrce__qp *qp)
{
	if (qp->flags & MRCE_QP_PIN_EV)
		return 1;
	uint32_t n = 0;
	for (uint32_t pl = 0; pl < MRCE_MAX_PLANES; pl++) {
		if (qp->plane_mask && !(qp->plane_mask >> pl & 1))
			continue;
		for (uint32_t i = 0; i < p->plane_nev[pl]; i++)
			if (p->paths[p->plane_evs[pl][i]].state != MRCE_EV_DENIED) {
				n++;
				break;
			}
	}
	return n;
}

int mrce_qp_connect(struct mrce *e, uint32_t qpn, uint32_t peer, uint32_t rqpn,
		   uint32_t sq_psn, uint32_t rq_psn)
{
	struct mrce__qp *qp = mrce__qp_get(e, qpn);
	if (!qp)
		return -ENOENT;
	if (qp->state != MRCE_QPS_RESET)
		return -EISCONN;
	if (peer >= e->cfg.max_peers || !e->peers[peer].used)
		return -EINVAL;
	if (e->cfg.require_tokens && (!qp->tx_token || !qp->rx_token ||
	    !e->peers[peer].probe_tx_token || !e->peers[peer].probe_rx_token))
		return -EPERM;
	qp->peer = peer;
	qp->rqpn = rqpn;
	qp->snd_una = qp->snd_nxt = sq_psn;
	qp->rcv_nxt = rq_psn;
	qp->state = MRCE_QPS_RTS;
	spray_phase(&e->peers[peer], qpn, sq_psn, e->cfg.spray_slot);
	/* Now that the peer is known, the congestion window starts from the
	 * number of planes the QP will spray over (cc_nscc.c). */
	e->cc->init(qp->cc, &(struct mrce_cc_params){ .mtu = qp->mtu,
		.min_cwnd = qp->mtu, .max_cwnd = (uint32_t)qp->win * qp->mtu,
		.planes = qp_planes(&e->peers[peer], qp) });
	return 0;
}

int mrce_qp_set_limits(struct mrce *e, uint32_t qpn, uint32_t window, uint32_t mtu)
{
	struct mrce__qp *qp = mrce__qp_get(e, qpn);
	if (!qp)
		return -ENOENT;
	if (qp->state != MRCE_QPS_RESET)
		return -EISCONN;
	if (window < 4 || window > e->cfg.window || (window & (window - 1)) ||
	    mtu < 64 || mtu > e->cfg.mtu)
		return -EINVAL;
	qp->win = (uint16_t)window;
	qp->mtu = (uint16_t)mtu;
	/* The congestion window never exceeds what the QP may have in flight. */
	e->cc->init(qp->cc, &(struct mrce_cc_params){ .mtu = mtu, .min_cwnd = mtu,
		.max_cwnd = window * mtu });
	return 0;
}

int mrce_qp_set_tokens(struct mrce *e, uint32_t qpn, uint64_t tx, uint64_t rx)
{
	struct mrce__qp *qp = mrce__qp_get(e, qpn);
	if (!qp)
		return -ENOENT;
	if (qp->state != MRCE_QPS_RESET)
		return -EISCONN;
	qp->tx_token = tx;
	qp->rx_token = rx;
	return 0;
}

static int64_t wqe_npkts(const struct mrce__qp *qp, uint64_t len)
{
	return len ? (int64_t)((len + qp->mtu - 1) / qp->mtu) : 1;
}

int mrce_qp_post(struct mrce *e, uint64_t now, uint32_t qpn, const struct mrc_sqe *wr)
{
	struct mrce__qp *qp = mrce__qp_get(e, qpn);
	if (!qp || !wr)
		return -EINVAL;
	if (qp->state == MRCE_QPS_RESET)
		return -ENOTCONN;
	if (qp->state == MRCE_QPS_ERROR)
		return qp->err ? qp->err : -EIO;
	if (wr->op < MRC_SQE_WRITE || wr->op > MRC_SQE_ATOMIC_ADD ||
	    (wr->flags & ~MRC_SQE_F_FENCE))
		return -EINVAL;
	if (qp->sq_tail - qp->sq_head > e->sqmask)
		return -ENOSPC;
	struct mrce__wqe w = { .wr_id = wr->wr_id, .op = wr->op, .len = wr->len,
		.loff = wr->loff, .lkey = wr->lkey, .rkey = wr->rkey,
		.roff = wr->roff, .imm = wr->imm, .fence = !!(wr->flags & MRC_SQE_F_FENCE) };
	if (wr->op != MRC_SQE_WRITE_IMM && wr->op != MRC_SQE_SEND_IMM)
		w.imm = 0;
	struct mrce__mr *m = NULL;
	if (wr->op == MRC_SQE_ATOMIC_ADD) {
		if (wr->roff % 8)
			return -EINVAL;
		uint64_t be = htobe64(wr->add);
		memcpy(w.add_be, &be, 8);
		w.len = 8;
	} else {
		if (wr->len > MRCE_MAX_MSG)
			return -EMSGSIZE;
		m = mrce__mr_get(e, wr->lkey);
		if (!m || m->pd != qp->pd)
			return -EACCES;
		if (!(m->access & MRCE_ACCESS_LOCAL_READ) || wr->loff > m->len ||
		    wr->len > m->len - wr->loff)
			return -EACCES;
		if ((wr->op == MRC_SQE_WRITE || wr->op == MRC_SQE_WRITE_IMM) &&
		    wr->roff + wr->len < wr->roff)
			return -EINVAL;
		w.lbase = m->base + wr->loff;
	}
	if (wr->op == MRC_SQE_SEND || wr->op == MRC_SQE_SEND_IMM)
		w.ssn = qp->next_ssn++;
	w.msn = qp->next_msn++;
	w.npkts = (uint32_t)wqe_npkts(qp, w.len);
	if (m)
		m->refs++;
	qp->sq[qp->sq_tail++ & e->sqmask] = w;
	/* Without a send block the QP waits for one (posted work stays
	 * queued; mrce__wpool_grant lets it send). */
	mrce__wpool_send_get(e, qp);
	mrce__qp_activate(e, qp, now);
	return 0;
}

int mrce_qp_post_recv(struct mrce *e, uint32_t qpn, uint64_t wr_id,
		     uint32_t lkey, uint64_t off, uint64_t len)
{
	struct mrce__qp *qp = mrce__qp_get(e, qpn);
	if (!qp)
		return -EINVAL;
	if (qp->state == MRCE_QPS_ERROR)
		return qp->err ? qp->err : -EIO;
	if (qp->rq_tail - qp->rq_head > e->rqmask)
		return -ENOSPC;
	struct mrce__mr *m = mrce__mr_get(e, lkey);
	if (!m || m->pd != qp->pd || !(m->access & MRCE_ACCESS_LOCAL_WRITE) ||
	    off > m->len || len > m->len - off)
		return -EACCES;
	m->refs++;
	qp->rq[qp->rq_tail++ & e->rqmask] = (struct mrce__rwqe){ .wr_id = wr_id,
		.len = len, .base = m->base + off, .lkey = lkey };
	return 0;
}

/* Completes, in order, every WQE whose last packet is acknowledged. */
void mrce__sq_advance(struct mrce *e, struct mrce__qp *qp)
{
	int any = 0;
	while (qp->sq_done != qp->sq_seg) {
		struct mrce__wqe *w = &qp->sq[qp->sq_done & e->sqmask];
		if (!mrc_psn_le(w->first_psn + w->npkts, qp->snd_una))
			break;
		w->state = MRCE__WQE_DONE;
		w->status = 0;
		qp->sq_done++;
		e->st.msgs_completed++;
		any = 1;
	}
	if (any)
		mrce__qp_ready(e, qp);
}

/* Moves the QP to ERROR: the WQE holding bad_psn (when known) completes
 * with err, every other unfinished WQE and posted RECV is flushed with
 * -ECANCELED.  Nothing is sent any more. */
void mrce__qp_fail(struct mrce *e, struct mrce__qp *qp, int err,
		  uint32_t bad_psn, uint64_t now)
{
	if (qp->state == MRCE_QPS_ERROR)
		return;
	qp->state = MRCE_QPS_ERROR;
	qp->err = err;
	qp->err_psn = bad_psn;
	for (uint32_t s = qp->sq_done; s != qp->sq_tail; s++) {
		struct mrce__wqe *w = &qp->sq[s & e->sqmask];
		int hit = w->started && mrc_psn_le(w->first_psn, bad_psn) &&
			  mrc_psn_lt(bad_psn, w->first_psn + w->npkts);
		w->status = hit ? err : -ECANCELED;
		w->state = MRCE__WQE_DONE;
	}
	qp->sq_done = qp->sq_seg = qp->sq_tail;
	/* Posted RECVs stay where they are and are flushed as they are
	 * polled (engine.c reap_qp), after the completions already queued:
	 * a failed QP may hold no receive block to queue them in. */
	for (uint32_t s = qp->rq_head; s != qp->rq_tail; s++) {
		struct mrce__mr *m = mrce__mr_get(e, qp->rq[s & e->rqmask].lkey);
		if (m && m->refs)
			m->refs--;
	}
	qp->rq_fail = qp->rq_head;
	qp->inflight_pkts = 0;
	qp->inflight_bytes = 0;
	qp->lst_head = qp->lst_tail = MRCE__NIL;
	memset(qp->lostmap, 0, sizeof(qp->lostmap));
	qp->rto_deadline = qp->rack_deadline = qp->rnr_until = qp->nopath_deadline = 0;
	mrce__qp_timer_sync(e, qp);
	mrce__qp_ready(e, qp);
	mrce__event_push(e, &(struct mrce_event){ .type = MRCE_EVT_QP_ERROR,
		.qpn = qp->qpn, .peer = qp->peer, .err = err, .time_ns = now });
}

int mrce_qp_info(const struct mrce *e, uint32_t qpn, struct mrce_qp_info *info)
{
	const struct mrce__qp *qp = mrce__qp_get((struct mrce *)e, qpn);
	if (!qp)
		return -ENOENT;
	*info = (struct mrce_qp_info){ .state = qp->state, .error = qp->err,
		.peer = qp->peer, .rqpn = qp->rqpn, .inflight = qp->inflight_pkts,
		.cwnd_bytes = e->cc->cwnd(qp->cc), .srtt_ns = qp->srtt, .rto_ns = qp->rto,
		.tx_pkts = qp->tx_pkts, .retx = qp->retx, .rto_fires = qp->rto_fires,
		.trims_rx = qp->trims_rx, .nacks_rx = qp->nacks_rx, .rnr_rx = qp->rnr_rx,
		.bytes_acked = qp->bytes_acked, .spurious = qp->spurious, .rto_spurious = qp->rto_spurious,
		.reorder_extra_ns = e->peers[qp->peer].reo_extra, .rx_pkts = qp->rx_pkts,
		.rx_dups = qp->rx_dups, .bytes_placed = qp->bytes_placed,
		.plane_mask = qp->plane_mask, .tclass = qp->tclass, .ev_other_tx = qp->ev_other_tx,
		.ev_other_lost = qp->ev_other_lost };
	memcpy(info->plane_tx, qp->plane_tx, sizeof(info->plane_tx));
	return 0;
}

int mrce_qp_bytes_placed(const struct mrce *e, uint32_t qpn, uint64_t *bytes)
{
	const struct mrce__qp *qp = mrce__qp_get((struct mrce *)e, qpn);
	if (!qp)
		return -ENOENT;
	*bytes = qp->bytes_placed;
	return 0;
}

int mrce_qp_ev_stats(const struct mrce *e, uint32_t qpn, struct mrce_qp_ev_stat *st,
		     uint32_t max)
{
	const struct mrce__qp *qp = mrce__qp_get((struct mrce *)e, qpn);
	if (!qp)
		return -ENOENT;
	if (qp->state == MRCE_QPS_RESET)
		return 0;
	uint32_t n = e->peers[qp->peer].nev;
	if (n > e->cfg.qp_ev_stats)
		n = e->cfg.qp_ev_stats;
	if (n > max)
		n = max;
	memcpy(st, qp->evst, n * sizeof(*st));
	return (int)n;
}

int mrce_qp_abort(struct mrce *e, uint64_t now, uint32_t qpn, int err)
{
	struct mrce__qp *qp = mrce__qp_get(e, qpn);
	if (!qp || err >= 0)
		return -EINVAL;
	if (qp->state == MRCE_QPS_ERROR)
		return 0;
	uint32_t first = qp->sq_done;
	mrce__qp_fail(e, qp, err, qp->snd_nxt, now);
	for (uint32_t s = first; s != qp->sq_tail; s++)
		qp->sq[s & e->sqmask].status = err;
	mrce__wpool_settle(e, qp);
	return 0;
}

uint32_t mrce_busy_qps(const struct mrce *e)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < e->qp_hwm; i++) {
		const struct mrce__qp *qp = &e->qps[i];
		n += qp->used && qp->state == MRCE_QPS_RTS && qp->sq_done != qp->sq_tail;
	}
	return n;
}

uint32_t mrce_abort_all(struct mrce *e, uint64_t now, int err)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < e->qp_hwm; i++) {
		struct mrce__qp *qp = &e->qps[i];
		if (qp->used && qp->state == MRCE_QPS_RTS && qp->sq_done != qp->sq_tail) {
			mrce_qp_abort(e, now, qp->qpn, err);
			n++;
		}
	}
	return n;
}
