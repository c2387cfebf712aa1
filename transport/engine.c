/* The engine's front door: configuration, create/destroy, and the entry
 * points that move packets, run timers and hand out completions
 * (mrce_rx, mrce_tx, mrce_tick, mrce_wc_drain).  It dispatches to the files
 * below it and is called by none of them (docs/design.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/ack_rx.h"
#include "transport/ack_tx.h"
#include "transport/evs.h"
#include "transport/receiver.h"
#include "transport/sender.h"
#include "transport/store.h"
#include "transport/timers.h"
#include "transport/loss.h"
#include "transport/wpool.h"

void mrce_cfg_default(struct mrce_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->mtu = 4096;
	c->max_qps = 1024;
	c->max_peers = 256;
	c->max_mrs = 4096;
	c->window = 256;
	c->sq_depth = 256;
	c->rq_depth = 256;
	c->ctrl_queue = 4096;
	c->event_queue = 1024;
	c->ev_floor = 1;
	c->max_retries = 24;
	c->rto_min_ns = 1000000;
	c->rto_max_ns = 200000000;
	c->rto_init_ns = 10000000;
	c->reorder_slack_ns = 10000;
	c->tlp_min_ns = 50000;
	c->tlp_lone = 1;
	c->probe_interval_ns = 2000000;
	c->probe_max_interval_ns = 64000000;
	c->probe_ok_needed = 2;
	c->noqp_per_s = 1000;
	c->noqp_burst = 64;
	c->rnr_delay_ns = 100000;
	c->rnr_retry = MRCE_RNR_RETRY_FOREVER;
	c->no_path_timeout_ns = 1000000000;
	c->ack_every = 4;
	c->ack_delay_ns = 32000;
	c->cc = MRCE_CC_NSCC;
	c->qp_ev_stats = 64;
	c->bulk_min_pct = 10;
}

const char *mrce_tclass_name(unsigned tc)
{
	static const char *const n[MRCE_TC__COUNT] = { "default", "urgent", "bulk" };
	return tc < MRCE_TC__COUNT ? n[tc] : "?";
}

static int pow2(uint32_t v) { return v && !(v & (v - 1)); }

static int cfg_check(const struct mrce_cfg *c, const char **why)
{
#define BAD(msg) do { if (why) *why = msg; return -EINVAL; } while (0)
	if (c->mtu < 64 || c->mtu > MRC_MAX_PAYLOAD)
		BAD("mtu must be 64..9000 payload bytes");
	if (c->bulk_min_pct > 50)
		BAD("bulk_min_pct must be 0..50");
	if (c->max_qps < 1 || c->max_qps > 65535)
		BAD("max_qps must be 1..65535");
	if (c->max_peers < 1 || c->max_peers > 65535)
		BAD("max_peers must be 1..65535");
	if (c->max_mrs < 1 || c->max_mrs > MRCE_MAX_MRS)
		BAD("max_mrs must be 1..1048576");
	if (!pow2(c->window) || c->window < 4 || c->window > MRCE_MAX_WINDOW)
		BAD("window must be a power of two, 4..256 packets");
	if (!pow2(c->sq_depth) || c->sq_depth > 65536)
		BAD("sq_depth must be a power of two <= 65536");
	if (!pow2(c->rq_depth) || c->rq_depth > 65536)
		BAD("rq_depth must be a power of two <= 65536");
	if (!pow2(c->ctrl_queue) || c->ctrl_queue < 16)
		BAD("ctrl_queue must be a power of two >= 16");
	if (!pow2(c->event_queue) || c->event_queue < 16)
		BAD("event_queue must be a power of two >= 16");
	if (c->max_retries < 1 || c->max_retries > 255)
		BAD("max_retries must be 1..255");
	if (!c->rto_min_ns || c->rto_min_ns > c->rto_max_ns ||
	    c->rto_init_ns < c->rto_min_ns || c->rto_init_ns > c->rto_max_ns)
		BAD("need 0 < rto_min_ns <= rto_init_ns <= rto_max_ns");
	if (c->rnr_retry > MRCE_RNR_RETRY_FOREVER)
		BAD("rnr_retry must be 0..7 (7: forever)");
	if (!c->no_path_timeout_ns)
		BAD("no_path_timeout_ns must be > 0");
	if (c->ack_every < 1 || c->ack_every > 64)
		BAD("ack_every must be 1..64 packets");
	/* A held ACK must stay well inside the RTO, and within what pb_hold
	 * can say (RTT samples leave the hold out). */
	if (c->ack_delay_ns > 1000000 || c->ack_delay_ns > c->rto_min_ns / 4)
		BAD("ack_delay_ns must be at most 1 ms and rto_min_ns / 4");
	if (c->xack > 1)
		BAD("xack must be 0 or 1");
	if (!c->probe_interval_ns || !c->probe_ok_needed)
		BAD("probe_interval_ns and probe_ok_needed must be > 0");
	if (c->probe_max_interval_ns < c->probe_interval_ns)
		BAD("probe_max_interval_ns must be >= probe_interval_ns");
	if (c->cc != MRCE_CC_NSCC && c->cc != MRCE_CC_FIXED)
		BAD("cc must be MRCE_CC_NSCC or MRCE_CC_FIXED");
	if (c->qp_ev_stats > MRCE_MAX_EVS)
		BAD("qp_ev_stats must be 0..4096 EVs");
	if (c->spray_slot > 65536)
		BAD("spray_slot must be 0..65536");
	if (c->window_pool > c->max_qps)
		BAD("window_pool must be 0..max_qps");
	return 0;
#undef BAD
}

int mrce_create(const struct mrce_cfg *cfg, struct mrce **out,
		      const char **why)
{
	struct mrce_cfg def;
	if (!cfg) {
		mrce_cfg_default(&def);
		cfg = &def;
	}
	int rc = cfg_check(cfg, why);
	if (rc)
		return rc;
	/* Line aligned: its first two lines are what every call touches. */
	struct mrce *e = NULL;
	if (posix_memalign((void **)&e, 64, sizeof(*e)))
		return -ENOMEM;
	memset(e, 0, sizeof(*e));
	e->cfg = *cfg;
	e->cc = cfg->cc == MRCE_CC_FIXED ? &mrce_cc_fixed : &mrce_cc_nscc;
	e->wmask = cfg->window - 1;
	e->sqmask = cfg->sq_depth - 1;
	e->rqmask = cfg->rq_depth - 1;
	e->max_cwnd = cfg->window * cfg->mtu;
	e->ctrl_mask = cfg->ctrl_queue - 1;
	e->evq_mask = cfg->event_queue - 1;
	e->ack_hold_min = UINT64_MAX;
	e->mrs = calloc(cfg->max_mrs, sizeof(*e->mrs));
	e->mr_hmask = 1;
	while (e->mr_hmask < 2 * cfg->max_mrs)
		e->mr_hmask <<= 1;
	e->mr_hash = calloc(e->mr_hmask, sizeof(*e->mr_hash));
	e->mr_hmask--;
	e->peers = calloc(cfg->max_peers, sizeof(*e->peers));
	e->qps = calloc(cfg->max_qps, sizeof(*e->qps));
	/* Not zeroed: a slot is written before it is read, and untouched
	 * slots then take no memory (store.c, mrce_event_pop). */
	e->ctrl = malloc(cfg->ctrl_queue * sizeof(*e->ctrl));
	e->evq = malloc(cfg->event_queue * sizeof(*e->evq));
	if (!e->mrs || !e->mr_hash || !e->peers || !e->qps || !e->ctrl || !e->evq ||
	    mrce__timers_init(e) || mrce__wpool_init(e)) {
		mrce_destroy(e);
		return -ENOMEM;
	}
	*out = e;
	return 0;
}

void mrce_destroy(struct mrce *e)
{
	if (!e)
		return;
	for (uint32_t i = 0; i < e->qp_hwm; i++)
		if (e->qps[i].used)
			mrce_qp_close(e, e->qps[i].qpn);
	for (uint32_t i = 0; i < e->peer_hwm; i++)
		if (e->peers[i].used)
			mrce_peer_remove(e, i);
	free(e->mrs);
	free(e->mr_hash);
	free(e->peers);
	free(e->qps);
	free(e->ctrl);
	free(e->evq);
	mrce__timers_fini(e);
	mrce__wpool_fini(e);
	free(e);
}

/* ---- tx / rx / timers ----------------------------------------------- */

size_t mrce_tx_pkt_len(const struct mrce_tx_pkt *p)
{
	return (size_t)p->hdr_len + (p->plen ? p->plen + MRC_TRAILER_LEN : 0);
}

size_t mrce_tx_pkt_copy(const struct mrce_tx_pkt *p, uint8_t *out)
{
	memcpy(out, p->hdr, p->hdr_len);
	if (p->plen) {
		memcpy(out + p->hdr_len, p->payload, p->plen);
		memcpy(out + p->hdr_len + p->plen, p->trailer, MRC_TRAILER_LEN);
	}
	return mrce_tx_pkt_len(p);
}

int mrce_tx(struct mrce *e, uint64_t now, struct mrce_tx_pkt *pkts, int max)
{
	int n = 0;
	if (e->wwait_head)
		mrce__wpool_grant(e, now);   /* blocks given back since */
	/* ACKs of QPs with data to send ride on it; the rest go first. */
	mrce__acks_flush(e, now, 1);
	while (n < max && e->ctrl_head != e->ctrl_tail)
		pkts[n++] = e->ctrl[e->ctrl_head++ & e->ctrl_mask];
	/* Data: one packet per QP in turn, so QPs share the datapath fairly. */
	while (n < max) {
		struct mrce__qp *qp = mrce__active_pop(e);
		if (!qp)
			break;
		if (mrce__qp_tx_one(e, qp, now, &pkts[n])) {
			n++;
			mrce__qp_activate(e, qp, now);
		} else if (qp->state != MRCE_QPS_RTS) {
			mrce__wpool_settle(e, qp);   /* failed: it sends no more */
		}
		mrce__qp_timer_sync(e, qp);
	}
	/* Those whose data did not fit in this call (or could not carry them). */
	if (e->ack_head) {
		mrce__acks_flush(e, now, 0);
		while (n < max && e->ctrl_head != e->ctrl_tail)
			pkts[n++] = e->ctrl[e->ctrl_head++ & e->ctrl_mask];
	}
	if (e->ctrl_head == e->ctrl_tail)   /* empty: restart at slot 0 (store.c, mrce_event_pop) */
		e->ctrl_head = e->ctrl_tail = 0;
	e->st.tx_pkts += n;
	return n;
}

int mrce_tx_pending(const struct mrce *e)
{
	return e->ctrl_head != e->ctrl_tail || e->active_head[0] != NULL ||
	       e->active_head[1] != NULL || mrce__acks_urgent(e) ||
	       mrce__wpool_grantable(e);
}

/* A decoded packet from peer into the engine. */
static void rx_view(struct mrce *e, uint64_t now, uint32_t peer,
		    const struct mrc_pkt_view *v, uint32_t rx_flags)
{
	struct mrce__qp *qp = NULL;
	if (mrc_op_is_data(v->op)) {
		mrce__data_rx(e, now, peer, v, rx_flags);
		qp = mrce__qp_get(e, v->u.data.dqpn);
		/* and the QP its XACK acknowledged */
		struct mrce__qp *xq = (v->u.data.flags & MRC_F_XACK) ?
			mrce__qp_get(e, v->xack.dqpn) : NULL;
		if (xq) {
			mrce__qp_timer_sync(e, xq);
			mrce__wpool_settle(e, xq);
		}
	} else if (v->op == MRC_OP_ACK) {
		mrce__ack_rx(e, now, peer, &v->u.ack);
		qp = mrce__qp_get(e, v->u.ack.dqpn);
	} else {
		mrce__probe_rx(e, now, peer, &v->u.probe);
	}
	/* The timers this packet may have moved (timers.c), and the window
	 * state it may have made idle (wpool.c). */
	if (qp) {
		mrce__qp_timer_sync(e, qp);
		mrce__wpool_settle(e, qp);
	}
	mrce__peer_timer_sync(e, peer);
}

int mrce_rx(struct mrce *e, uint64_t now, uint32_t peer,
		  const void *pkt, size_t len, uint32_t rx_flags)
{
	struct mrc_pkt_view v;
	enum mrce_wire_drop why;
	e->st.rx_pkts++;
	/* Only the caller's flag and its own word that the peer is local
	 * together skip the payload CRC: a wire datagram never has the one. */
	int local = (rx_flags & MRCE_RX_LOCAL) && peer < e->cfg.max_peers &&
		    e->peers[peer].used && e->peers[peer].local;
	if (mrce_wire_decode_flags(pkt, len, &v, &why,
				  e->cfg.skip_payload_crc || local ? MRC_WIRE_NO_PCRC : 0)) {
		e->st.rx_drop[why < MRC_DROP__COUNT ? why : 0]++;
		return -EBADMSG;
	}
	if (peer >= e->cfg.max_peers || !e->peers[peer].used) {
		e->st.rx_bad_peer++;
		return -ENOENT;
	}
	rx_view(e, now, peer, &v, rx_flags);
	return 0;
}

int mrce_rx_split(struct mrce *e, uint64_t now, uint32_t peer, const void *hdr,
		  size_t hdr_len, const void *payload, size_t plen, uint32_t rx_flags)
{
	struct mrc_pkt_view v;
	enum mrce_wire_drop why;
	e->st.rx_pkts++;
	/* Never for a datagram that met a wire: the caller says it did not,
	 * and the peer is this very host. */
	if (!(rx_flags & MRCE_RX_LOCAL) || peer >= e->cfg.max_peers || !e->peers[peer].used ||
	    !e->peers[peer].local) {
		e->st.rx_bad_peer++;
		return -EPERM;
	}
	if (hdr_len < 2 || !mrc_op_is_data(((const uint8_t *)hdr)[1])) {
		e->st.rx_drop[MRC_DROP_OPCODE]++;
		return -EBADMSG;
	}
	if (mrce_wire_decode_flags(hdr, hdr_len, &v, &why, MRC_WIRE_SPLIT)) {
		e->st.rx_drop[why < MRC_DROP__COUNT ? why : 0]++;
		return -EBADMSG;
	}
	if (v.u.data.plen != plen || (plen && !payload)) {
		e->st.rx_drop[MRC_DROP_LENGTH]++;
		return -EBADMSG;
	}
	v.payload = plen ? payload : NULL;
	rx_view(e, now, peer, &v, rx_flags);
	return 0;
}

uint64_t mrce_next_deadline(const struct mrce *e)
{
	uint64_t d = mrce__timers_next(e);
	/* ACKs held for reverse data (ack_tx.c) are engine-wide, not a QP's */
	return e->ack_head && e->ack_hold_min < d ? e->ack_hold_min : d;
}

/* Runs what is due: held ACKs no data came for, then each peer and QP
 * whose deadline passed. */
void mrce_tick(struct mrce *e, uint64_t now)
{
	if (e->ack_head && e->ack_hold_min <= now)
		mrce__acks_flush(e, now, 0);   /* held ACKs no data came for */
	/* Peers before QPs, each in index order (timers.c). */
	uint32_t n = mrce__timers_take_due(e, now);
	uint32_t np = e->cfg.max_peers;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t id = e->tdue[k];
		if (id < np) {
			if (e->peers[id].used)
				mrce__probe_tick_peer(e, id, now);
			mrce__peer_timer_sync(e, id);
			continue;
		}
		struct mrce__qp *qp = &e->qps[id - np];
		if (qp->used && qp->state == MRCE_QPS_RTS) {
			mrce__qp_timers(e, qp, now);
			mrce__wpool_settle(e, qp);
		}
		mrce__qp_timer_sync(e, qp);
	}
}

/* ---- completions ------------------------------------------------------ */

static void wqe_release(struct mrce *e, struct mrce__wqe *w)
{
	if (w->op == MRC_OP_ATOMIC_ADD)
		return;
	struct mrce__mr *m = mrce__mr_get(e, w->lkey);
	if (m && m->refs)
		m->refs--;
}

static int reap_qp(struct mrce *e, struct mrce__qp *qp, struct mrce_wc *wc, int max)
{
	int n = 0;
	while (n < max && qp->sq_head != qp->sq_done) {
		struct mrce__wqe *w = &qp->sq[qp->sq_head++ & e->sqmask];
		/* A work request's op is its completion's (engine.h). */
		wc[n++] = (struct mrce_wc){ .wr_id = w->wr_id, .qpn = qp->qpn,
			.op = w->op, .status = w->status, .byte_len = w->len };
		wqe_release(e, w);
	}
	while (n < max && qp->rcq_head != qp->rcq_tail) {
		struct mrce__rcqe *c = &qp->rcq[qp->rcq_head++ & e->wmask];
		wc[n++] = (struct mrce_wc){ .wr_id = c->wr_id, .qpn = qp->qpn,
			.op = c->op, .has_imm = c->has_imm, .status = c->status,
			.byte_len = c->byte_len, .imm = c->imm };
	}
	/* A failed QP's posted RECVs, flushed (qp.c mrce__qp_fail). */
	while (n < max && qp->state == MRCE_QPS_ERROR && qp->rq_head != qp->rq_tail) {
		uint32_t s = qp->rq_head++;
		wc[n++] = (struct mrce_wc){ .wr_id = qp->rq[s & e->rqmask].wr_id,
			.qpn = qp->qpn, .op = MRCE_WC_RECV,
			.status = s == qp->rq_fail && qp->err == -EMSGSIZE ? -EMSGSIZE : -ECANCELED };
	}
	mrce__wpool_settle(e, qp);   /* completions polled: the receiver may be idle */
	return n;
}

/* Completions of the QP not yet handed out. */
static int has_wc(const struct mrce__qp *qp)
{
	return qp->sq_head != qp->sq_done || qp->rcq_head != qp->rcq_tail ||
	       (qp->state == MRCE_QPS_ERROR && qp->rq_head != qp->rq_tail);
}

int mrce_wc_drain(struct mrce *e, struct mrce_wc *wc, int max)
{
	int n = 0;
	while (n < max && e->ready_head) {
		struct mrce__qp *qp = e->ready_head;
		n += reap_qp(e, qp, wc + n, max - n);
		if (has_wc(qp))
			break;  /* max reached; stays first in line */
		e->ready_head = qp->ready_next;
		if (!e->ready_head)
			e->ready_tail = NULL;
		qp->in_ready = 0;
	}
	return n;
}

void mrce_stats(const struct mrce *e, struct mrce_stats *st)
{
	*st = e->st;
}

size_t mrce_qp_bytes(const struct mrce *e)
{
	const struct mrce_cfg *c = &e->cfg;
	/* The window pool's share: one block of each kind per QP unless
	 * cfg.window_pool makes the pool smaller. */
	return sizeof(struct mrce__qp) + mrce__timers_bytes_per_qp() +
	       mrce__wpool_pair_bytes(c) * e->wp_n / c->max_qps +
	       c->sq_depth * sizeof(struct mrce__wqe) +
	       c->rq_depth * sizeof(struct mrce__rwqe) +
	       c->qp_ev_stats * sizeof(struct mrce_qp_ev_stat);
}

const char *mrce_ev_state_name(uint8_t s)
{
	static const char *n[] = { "GOOD", "ASSUMED_BAD", "DENIED" };
	return s < 3 ? n[s] : "?";
}

const char *mrce_tok_kind_name(enum mrce_tok_kind k)
{
	static const char *n[MRCE_TOK__COUNT] = { "data", "ack", "noqp", "probe" };
	return (unsigned)k < MRCE_TOK__COUNT ? n[k] : "?";
}

const char *mrce_ev_reason_name(uint8_t r)
{
	static const char *n[] = { "none", "loss", "rto", "probe_ok",
		"probe_lost", "deny", "allow", "spurious" };
	return r < sizeof(n) / sizeof(n[0]) ? n[r] : "?";
}

const char *mrce_drop_name(unsigned why)
{
	return mrce_wire_drop_name((enum mrce_wire_drop)why);
}
