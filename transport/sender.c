/* Sender side of a QP, transmit: segmentation, spraying, retransmission of
 * what loss.c declared lost.  ACKs it receives are ack_rx.c's. */
#include <errno.h>
#include <string.h>

#include "transport/ack_tx.h"
#include "transport/evs.h"
#include "transport/loss.h"
#include "transport/qp.h"
#include "transport/sender.h"

#define RETX_LIMIT_ERR (-ETIMEDOUT)

/* ---- send-order list of in-flight packets (oldest first) ------------ */

static void lst_append(struct mrce *e, struct mrce__qp *qp, uint32_t psn)
{
	uint16_t i = (uint16_t)(psn & e->wmask);
	struct mrce__slot *s = &qp->slots[i];
	s->next = MRCE__NIL;
	s->prev = qp->lst_tail;
	if (qp->lst_tail != MRCE__NIL)
		qp->slots[qp->lst_tail].next = i;
	else
		qp->lst_head = i;
	qp->lst_tail = i;
}

/* ---- transmit -------------------------------------------------------- */

/* Every path to the peer is DENIED: nothing can leave, so no ACK and (once
 * the RTO has fired) no timer would ever wake the QP again.  Arm a deadline
 * of its own: a path back before it resumes the QP (evs.c, once a path is back),
 * else the QP fails (mrce__qp_timers). */
static void nopath_wait(struct mrce *e, struct mrce__qp *qp, uint64_t now)
{
	if (qp->nopath_deadline)
		return;
	qp->nopath_deadline = now + e->cfg.no_path_timeout_ns;
	mrce__event_push(e, &(struct mrce_event){ .type = MRCE_EVT_QP_NO_PATH,
		.qpn = qp->qpn, .peer = qp->peer, .time_ns = now });
}

static void build(struct mrce *e, struct mrce__qp *qp, uint32_t psn, int ev,
		  int retx, uint64_t now, struct mrce_tx_pkt *pkt)
{
	struct mrce__slot *s = mrce__slot_of(e, qp, psn);
	struct mrce__wqe *w = &qp->sq[s->wqe & e->sqmask];
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
	mrce__ack_attach(e, qp, now, &h);
	struct mrc_xack x = { 0 };
	mrce__xack_attach(e, qp, now, &h, &x);
	qp->data_tx_ts = now;
	pkt->peer = qp->peer;
	pkt->ev = (uint16_t)ev;
	pkt->tclass = qp->tclass;
	e->st.tx_class[qp->tclass]++;
	pkt->hdr_len = (uint16_t)mrce_wire_put_data_x(pkt->hdr, &h, &x);
	pkt->plen = plen;
	pkt->payload = w->op == MRC_OP_ATOMIC_ADD ? w->add_be : w->lbase + off;
	/* A local peer's datagrams meet no wire (mrce_peer_set_local). */
	if (plen && !e->cfg.skip_payload_crc && !e->peers[qp->peer].local)
		mrce_wire_put_trailer(pkt->trailer, pkt->payload, plen);
	else if (plen)
		memset(pkt->trailer, 0, MRC_TRAILER_LEN);
	s->ev = (uint16_t)ev;
	s->sent_ts = now;
	s->xseq = qp->xmit_seq++;
	s->own_late = 0;
	s->plen = (uint16_t)plen;
	s->state = MRCE__S_INFLIGHT;
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
	if (qp->inflight_pkts == 1 && e->cfg.tlp_min_ns && e->cfg.tlp_lone)
		mrce__tlp_arm(e, qp, now);   /* loss.c lone_tail */
}

/* The oldest PSN waiting for retransmission. */
static int next_lost(const struct mrce__qp *qp, uint32_t *psn)
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

int mrce__qp_tx_one(struct mrce *e, struct mrce__qp *qp, uint64_t now,
		   struct mrce_tx_pkt *pkt)
{
	if (!mrce__qp_can_send(e, qp, now))
		return 0;
	struct mrce__peer *p = &e->peers[qp->peer];
	uint32_t psn;
	if (next_lost(qp, &psn)) {
		struct mrce__slot *s = mrce__slot_of(e, qp, psn);
		if (!s->free_resend && s->strikes >= e->cfg.max_retries) {
			mrce__qp_fail(e, qp, RETX_LIMIT_ERR, psn, now);
			return 0;
		}
		/* Resend on another plane than the one that lost it: a loss
		 * may be the first sign of a whole plane failing. */
		int avoid = s->lost_ev < p->nev ? p->paths[s->lost_ev].plane : -1;
		int ev = mrce__ev_pick(e, p, qp, avoid);
		if (ev < 0) {
			nopath_wait(e, qp, now);
			return 0;
		}
		mrce__bit_clear(qp->lostmap, psn);
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
	if (!mrce__new_data_ok(e, qp))
		return 0;
	int ev = mrce__ev_pick(e, p, qp, -1);
	if (ev < 0) {
		nopath_wait(e, qp, now);
		return 0;
	}
	struct mrce__wqe *w = &qp->sq[qp->sq_seg & e->sqmask];
	if (!w->started) {
		w->started = 1;
		w->first_psn = qp->snd_nxt;
	}
	psn = qp->snd_nxt++;
	struct mrce__slot *s = mrce__slot_of(e, qp, psn);
	s->wqe = qp->sq_seg;
	s->tries = s->strikes = s->rnr_tries = s->free_resend = s->rto_lost = s->lost_by = 0;
	if (psn - w->first_psn + 1 == w->npkts)
		qp->sq_seg++;
	build(e, qp, psn, ev, 0, now, pkt);
	return 1;
}
