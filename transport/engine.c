/* Engine lifecycle, memory registration, queues of control packets,
 * completions and events, and the tx/rx/timer entry points. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/engine_int.h"

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
	c->probe_interval_ns = 2000000;
	c->probe_max_interval_ns = 64000000;
	c->probe_ok_needed = 2;
	c->noqp_per_s = 1000;
	c->noqp_burst = 64;
	c->rnr_delay_ns = 100000;
	c->rnr_retry = MRC_RNR_RETRY_FOREVER;
	c->no_path_timeout_ns = 1000000000;
	c->ack_every = 4;
	c->ack_delay_ns = 32000;
	c->cc = MRC_CC_NSCC;
	c->qp_ev_stats = 64;
}

static int pow2(uint32_t v) { return v && !(v & (v - 1)); }

static int cfg_check(const struct mrce_cfg *c, const char **why)
{
#define BAD(msg) do { if (why) *why = msg; return -EINVAL; } while (0)
	if (c->mtu < 64 || c->mtu > MRC_MAX_PAYLOAD)
		BAD("mtu must be 64..9000 payload bytes");
	if (c->max_qps < 1 || c->max_qps > 65535)
		BAD("max_qps must be 1..65535");
	if (c->max_peers < 1 || c->max_peers > 65535)
		BAD("max_peers must be 1..65535");
	if (c->max_mrs < 1 || c->max_mrs > MRCE_MAX_MRS)
		BAD("max_mrs must be 1..1048576");
	if (!pow2(c->window) || c->window < 4 || c->window > MRC_MAX_WINDOW)
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
	if (c->rnr_retry > MRC_RNR_RETRY_FOREVER)
		BAD("rnr_retry must be 0..7 (7: forever)");
	if (!c->no_path_timeout_ns)
		BAD("no_path_timeout_ns must be > 0");
	if (c->ack_every < 1 || c->ack_every > 64)
		BAD("ack_every must be 1..64 packets");
	/* A held ACK must stay well inside the RTO, and within what pb_hold
	 * can say (RTT samples leave the hold out). */
	if (c->ack_delay_ns > 1000000 || c->ack_delay_ns > c->rto_min_ns / 4)
		BAD("ack_delay_ns must be at most 1 ms and rto_min_ns / 4");
	if (!c->probe_interval_ns || !c->probe_ok_needed)
		BAD("probe_interval_ns and probe_ok_needed must be > 0");
	if (c->probe_max_interval_ns < c->probe_interval_ns)
		BAD("probe_max_interval_ns must be >= probe_interval_ns");
	if (c->cc != MRC_CC_NSCC && c->cc != MRC_CC_FIXED)
		BAD("cc must be MRC_CC_NSCC or MRC_CC_FIXED");
	if (c->qp_ev_stats > MRC_MAX_EVS)
		BAD("qp_ev_stats must be 0..4096 EVs");
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
	struct mrce *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->cfg = *cfg;
	e->cc = cfg->cc == MRC_CC_FIXED ? &mrc_cc_fixed : &mrc_cc_nscc;
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
	 * slots then take no memory (see mrce_poll_event). */
	e->ctrl = malloc(cfg->ctrl_queue * sizeof(*e->ctrl));
	e->evq = malloc(cfg->event_queue * sizeof(*e->evq));
	if (!e->mrs || !e->mr_hash || !e->peers || !e->qps || !e->ctrl || !e->evq ||
	    mrc__timers_init(e)) {
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
			mrce_qp_destroy(e, e->qps[i].qpn);
	for (uint32_t i = 0; i < e->peer_hwm; i++)
		if (e->peers[i].used)
			mrce_peer_remove(e, i);
	free(e->mrs);
	free(e->mr_hash);
	free(e->peers);
	free(e->qps);
	free(e->ctrl);
	free(e->evq);
	mrc__timers_fini(e);
	free(e);
}

/* ---- memory registration ------------------------------------------- */

/* A key is a 32-bit generation, not a slot number: the n-th registration
 * gets mix(n), a bijection of the 32-bit counter, so no key repeats until
 * 2^32 more registrations (and a key still registered is skipped even
 * then).  A stale key of a freed, reused slot therefore never matches.
 * The slot is found by a hash of the key (open addressing, linear probing,
 * at most half full). */
static uint32_t key_mix(uint32_t x)
{
	x *= 0x9e3779b1u;             /* odd: invertible mod 2^32 */
	x ^= x >> 16;                 /* invertible */
	return x;
}

static uint32_t key_home(const struct mrce *e, uint32_t key)
{
	return (key * 0x85ebca6bu >> 7) & e->mr_hmask;
}

/* The hash bucket holding key (its slot + 1), or the empty one it would go in. */
static uint32_t key_bucket(const struct mrce *e, uint32_t key)
{
	uint32_t b = key_home(e, key);
	while (e->mr_hash[b] && e->mrs[e->mr_hash[b] - 1].key != key)
		b = (b + 1) & e->mr_hmask;
	return b;
}

/* Linear probing's deletion: later entries of the cluster move back so a
 * lookup never stops at the hole. */
static void key_unhash(struct mrce *e, uint32_t b)
{
	e->mr_hash[b] = 0;
	for (uint32_t j = (b + 1) & e->mr_hmask; e->mr_hash[j]; j = (j + 1) & e->mr_hmask) {
		uint32_t h = key_home(e, e->mrs[e->mr_hash[j] - 1].key);
		/* moves back when its home is not within (b, j] */
		if (((j - h) & e->mr_hmask) >= ((j - b) & e->mr_hmask)) {
			e->mr_hash[b] = e->mr_hash[j];
			e->mr_hash[j] = 0;
			b = j;
		}
	}
}

int mrce_mr_reg(struct mrce *e, uint32_t pd, void *base, uint64_t len,
	       uint32_t access, uint32_t *key)
{
	if (!base || !len || !key || (access & ~0xfu) ||
	    (uintptr_t)base + len < (uintptr_t)base)
		return -EINVAL;
	uint32_t n = e->cfg.max_mrs;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = (e->mr_free + k) % n;
		struct mrc__mr *m = &e->mrs[i];
		if (m->valid)
			continue;
		uint32_t kv, b;
		do {
			kv = key_mix(++e->mr_gen);
			b = kv ? key_bucket(e, kv) : 0;
		} while (!kv || e->mr_hash[b]);   /* 0 is no key; a live key is skipped */
		*m = (struct mrc__mr){ .base = base, .len = len, .pd = pd,
			.access = access, .valid = 1, .key = kv };
		e->mr_hash[b] = i + 1;
		e->mr_free = (i + 1) % n;
		*key = kv;
		return 0;
	}
	return -ENOSPC;
}

struct mrc__mr *mrc__mr_get(struct mrce *e, uint32_t key)
{
	if (!key)
		return NULL;
	uint32_t s = e->mr_hash[key_bucket(e, key)];
	return s ? &e->mrs[s - 1] : NULL;
}

int mrce_mr_dereg(struct mrce *e, uint32_t key)
{
	struct mrc__mr *m = mrc__mr_get(e, key);
	if (!m)
		return -ENOENT;
	if (m->refs)
		return -EBUSY;
	key_unhash(e, key_bucket(e, key));
	m->valid = 0;
	m->key = 0;
	return 0;
}

/* ---- queues --------------------------------------------------------- */

void mrc__event(struct mrce *e, const struct mrce_event *ev)
{
	if (e->evq_tail - e->evq_head > e->evq_mask) {
		e->st.events_dropped++;
		return;
	}
	e->evq[e->evq_tail++ & e->evq_mask] = *ev;
}

/* An empty ring starts again at slot 0 (same FIFO order), so a queue that
 * rarely holds more than a few entries keeps using its first slots: the
 * rest is never touched (never faulted in) and the used slots stay in
 * cache.  Cycling through every slot cost thousands of engines in one
 * process (the simulator) a cache miss per control packet and 26 KiB of
 * resident memory each. */
int mrce_poll_event(struct mrce *e, struct mrce_event *ev)
{
	if (e->evq_head == e->evq_tail) {
		e->evq_head = e->evq_tail = 0;
		return 0;
	}
	*ev = e->evq[e->evq_head++ & e->evq_mask];
	return 1;
}

/* A free control packet, or NULL when the queue is full: ACKs are
 * cumulative and probes are retried, so dropping one is safe. */
struct mrce_tx_pkt *mrc__ctrl_slot(struct mrce *e)
{
	if (e->ctrl_tail - e->ctrl_head > e->ctrl_mask) {
		e->st.ctrl_overflow++;
		return NULL;
	}
	return &e->ctrl[e->ctrl_tail++ & e->ctrl_mask];
}

void mrc__qp_ready(struct mrce *e, struct mrc__qp *qp)
{
	if (qp->in_ready)
		return;
	qp->in_ready = 1;
	qp->ready_next = NULL;
	if (e->ready_tail)
		e->ready_tail->ready_next = qp;
	else
		e->ready_head = qp;
	e->ready_tail = qp;
}

void mrc__qp_activate(struct mrce *e, struct mrc__qp *qp, uint64_t now)
{
	if (qp->in_active || !mrc__qp_can_send(e, qp, now))
		return;
	qp->in_active = 1;
	qp->active_next = NULL;
	if (e->active_tail)
		e->active_tail->active_next = qp;
	else
		e->active_head = qp;
	e->active_tail = qp;
}

static struct mrc__qp *active_pop(struct mrce *e)
{
	struct mrc__qp *qp = e->active_head;
	if (!qp)
		return NULL;
	e->active_head = qp->active_next;
	if (!e->active_head)
		e->active_tail = NULL;
	qp->in_active = 0;
	return qp;
}

struct mrc__qp *mrc__qp_get(struct mrce *e, uint32_t qpn)
{
	uint32_t i = qpn & 0xffff;
	if (i >= e->qp_hwm)
		return NULL;
	struct mrc__qp *qp = &e->qps[i];
	return qp->used && qp->qpn == qpn ? qp : NULL;
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
	/* ACKs of QPs with data to send ride on it; the rest go first. */
	mrc__acks_flush(e, now, 1);
	while (n < max && e->ctrl_head != e->ctrl_tail)
		pkts[n++] = e->ctrl[e->ctrl_head++ & e->ctrl_mask];
	/* Data: one packet per QP in turn, so QPs share the datapath fairly. */
	while (n < max) {
		struct mrc__qp *qp = active_pop(e);
		if (!qp)
			break;
		if (mrc__qp_tx_one(e, qp, now, &pkts[n])) {
			n++;
			mrc__qp_activate(e, qp, now);
		}
		mrc__qp_timer_sync(e, qp);
	}
	/* Those whose data did not fit in this call (or could not carry them). */
	if (e->ack_head) {
		mrc__acks_flush(e, now, 0);
		while (n < max && e->ctrl_head != e->ctrl_tail)
			pkts[n++] = e->ctrl[e->ctrl_head++ & e->ctrl_mask];
	}
	if (e->ctrl_head == e->ctrl_tail)   /* empty: restart at slot 0 (see above) */
		e->ctrl_head = e->ctrl_tail = 0;
	e->st.tx_pkts += n;
	return n;
}

int mrce_tx_pending(const struct mrce *e)
{
	return e->ctrl_head != e->ctrl_tail || e->active_head != NULL || mrc__acks_urgent(e);
}

int mrce_rx(struct mrce *e, uint64_t now, uint32_t peer,
		  const void *pkt, size_t len, uint32_t rx_flags)
{
	struct mrc_pkt_view v;
	enum mrc_wire_drop why;
	e->st.rx_pkts++;
	if (mrc_wire_decode_flags(pkt, len, &v, &why,
				  e->cfg.skip_payload_crc ? MRC_WIRE_NO_PCRC : 0)) {
		e->st.rx_drop[why < MRC_DROP__COUNT ? why : 0]++;
		return -EBADMSG;
	}
	if (peer >= e->cfg.max_peers || !e->peers[peer].used) {
		e->st.rx_bad_peer++;
		return -ENOENT;
	}
	struct mrc__qp *qp = NULL;
	if (mrc_op_is_data(v.op)) {
		mrc__data_rx(e, now, peer, &v, rx_flags);
		qp = mrc__qp_get(e, v.u.data.dqpn);
	} else if (v.op == MRC_OP_ACK) {
		mrc__ack_rx(e, now, peer, &v.u.ack);
		qp = mrc__qp_get(e, v.u.ack.dqpn);
	} else {
		mrc__probe_rx(e, now, peer, &v.u.probe);
	}
	/* The timers this packet may have moved (timers.c). */
	if (qp)
		mrc__qp_timer_sync(e, qp);
	mrc__peer_timer_sync(e, peer);
	return 0;
}

/* ---- completions ------------------------------------------------------ */

static void wqe_release(struct mrce *e, struct mrc__wqe *w)
{
	if (w->op == MRC_OP_ATOMIC_ADD)
		return;
	struct mrc__mr *m = mrc__mr_get(e, w->lkey);
	if (m && m->refs)
		m->refs--;
}

static int reap_qp(struct mrce *e, struct mrc__qp *qp, struct mrce_wc *wc, int max)
{
	int n = 0;
	while (n < max && qp->sq_head != qp->sq_done) {
		struct mrc__wqe *w = &qp->sq[qp->sq_head++ & e->sqmask];
		/* A work request's op is its completion's (engine.h). */
		wc[n++] = (struct mrce_wc){ .wr_id = w->wr_id, .qpn = qp->qpn,
			.op = w->op, .status = w->status, .byte_len = w->len };
		wqe_release(e, w);
	}
	while (n < max && qp->rcq_head != qp->rcq_tail) {
		struct mrc__rcqe *c = &qp->rcq[qp->rcq_head++ & e->wmask];
		wc[n++] = (struct mrce_wc){ .wr_id = c->wr_id, .qpn = qp->qpn,
			.op = c->op, .has_imm = c->has_imm, .status = c->status,
			.byte_len = c->byte_len, .imm = c->imm };
	}
	return n;
}

int mrce_poll_cq(struct mrce *e, struct mrce_wc *wc, int max)
{
	int n = 0;
	while (n < max && e->ready_head) {
		struct mrc__qp *qp = e->ready_head;
		n += reap_qp(e, qp, wc + n, max - n);
		if (qp->sq_head != qp->sq_done || qp->rcq_head != qp->rcq_tail)
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
	return sizeof(struct mrc__qp) + mrc__timers_bytes_per_qp() +
	       c->window * (sizeof(struct mrc__slot) + sizeof(struct mrc__rslot) +
			    sizeof(struct mrc__rcqe)) +
	       c->sq_depth * sizeof(struct mrc__wqe) +
	       c->rq_depth * sizeof(struct mrc__rwqe) +
	       c->qp_ev_stats * sizeof(struct mrce_qp_ev_stat);
}

const char *mrce_ev_state_name(uint8_t s)
{
	static const char *n[] = { "GOOD", "ASSUMED_BAD", "DENIED" };
	return s < 3 ? n[s] : "?";
}

const char *mrce_tok_kind_name(enum mrce_tok_kind k)
{
	static const char *n[MRC_TOK__COUNT] = { "data", "ack", "noqp", "probe" };
	return (unsigned)k < MRC_TOK__COUNT ? n[k] : "?";
}

const char *mrce_ev_reason_name(uint8_t r)
{
	static const char *n[] = { "none", "loss", "rto", "probe_ok",
		"probe_lost", "deny", "allow", "spurious" };
	return r < sizeof(n) / sizeof(n[0]) ? n[r] : "?";
}
