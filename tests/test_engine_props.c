/* Property checks of the engine over many seeds per scenario: a random mix
 * of WRITE, WRITE_IMM, SEND/SEND_IMM and ATOMIC_ADD on 1..3 QPs, under
 * loss, reordering, duplication, trimming, corruption, a plane blackhole,
 * a total outage that heals, access violations, and rate-limited paths
 * whose queues mark ECN, trim and drop.  Each seed checks:
 * every byte placed where intended and nowhere else (reference model and
 * guard bytes), no PSN placed twice (bytes_placed == unique bytes), every
 * completion exactly once and in posting order, IMM/SEND/atomic effects
 * never ahead of an earlier WRITE of the QP, atomics applied exactly once.
 *
 * MRC_PROP_SEEDS=<n> seeds per scenario (default 200), MRC_PROP_SEED=<s>
 * replays one seed, MRC_PROP_SCEN=<name> runs one scenario. */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/support/skip.h"

#include "tests/support/etest.h"

#define MS 1000000ull
#define US 1000ull
#define MAXQ 3
#define MAXOPS 200          /* per QP (sq_depth and rq_depth are 256) */
#define NCNT 4              /* atomic counters per QP */
#define MAXBITS 48          /* atomics per counter: one bit each */

enum scen {
	SC_CLEAN, SC_LOSS1, SC_LOSS10, SC_REORDER, SC_DUP, SC_TRIM, SC_CORRUPT,
	SC_BH_PLANE, SC_ALL_DEAD_HEAL, SC_ACCESS, SC_CONGEST, SC__N
};
static const char *scen_name[SC__N] = {
	"clean", "loss1", "loss10", "reorder", "dup", "trim", "corrupt",
	"blackhole_plane", "all_dead_heal", "access", "congest",
};

struct pop {
	uint8_t op;            /* enum mrc_wr_op */
	uint8_t bad;           /* the access violation of SC_ACCESS */
	uint8_t cnt, bit;      /* ATOMIC_ADD: counter and its bit */
	uint64_t loff, roff, len, rlen;  /* rlen: RECV buffer of a SEND */
	uint32_t imm;
	int32_t status;        /* sender completion (once seen) */
	uint8_t done, verified;
};

struct pqp {
	uint32_t qa, qb;
	struct pop op[MAXOPS];
	uint32_t nop;
	uint32_t next_sc;      /* next sender completion expected */
	uint32_t rc[MAXOPS];   /* ops that complete at the receiver, in order */
	uint32_t nrc, next_rc;
	uint32_t verified_upto;/* every WRITE below this index is placed */
	uint64_t cnt_off;      /* NCNT u64 counters in dst */
	uint32_t nbits[NCNT];
	int bad_at;            /* index of the bad op, -1 if none */
	int rx_flushed;        /* its receiver flushed the remaining RECVs */
};

struct world {
	enum scen sc;
	uint64_t seed;
	struct mrc_rng r;
	struct etest t;
	struct pqp q[MAXQ];
	uint32_t nq;
	uint64_t total_bytes, tx_data_bytes, trigger_bytes;
	uint32_t bad_key;
	char err[512];
	/* blackhole bookkeeping (node 0's view of its peer node 1) */
	int bh_on;
	uint32_t bh_plane;
	uint64_t bh_from, bh_len;
	uint64_t *first_tx, *det_t, *after_det, *after_bh_by_plane;
	uint64_t after_bh_total;
};

/* Scenario-wide CRC evidence of the corruption scenario. */
static uint64_t g_crc_drops[2], g_corrupted;

static int failf(struct world *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int failf(struct world *w, const char *fmt, ...)
{
	va_list ap;
	if (w->err[0])
		return 1;
	va_start(ap, fmt);
	vsnprintf(w->err, sizeof(w->err), fmt, ap);
	va_end(ap);
	return 1;
}

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *s = getenv(name);
	return s && *s ? strtoull(s, NULL, 0) : def;
}

/* ---- workload generation ---------------------------------------------- */

static uint64_t pick_len(struct mrc_rng *r, uint32_t mtu)
{
	uint64_t k = mrc_rng_below(r, 100);
	if (k < 4)
		return 0;
	if (k < 40)
		return mrc_rng_range(r, 1, 300);
	if (k < 55)  /* around packet boundaries */
		return mtu * mrc_rng_range(r, 1, 3) + mrc_rng_range(r, 0, 2) - 1;
	if (k < 80)
		return mrc_rng_range(r, 301, 3 * mtu);
	return mrc_rng_range(r, 3 * mtu, 48 << 10);
}

/* Bump allocator of disjoint dst ranges, so the reference model holds
 * whatever order packets land in. */
static uint64_t bump(struct mrc_rng *r, uint64_t *cur, uint64_t len)
{
	uint64_t off = *cur + mrc_rng_below(r, 64);
	*cur = off + len;
	return off;
}

static void gen(struct world *w, uint64_t budget, uint32_t mtu, uint64_t src_len,
		uint64_t *dst_len)
{
	struct mrc_rng *r = &w->r;
	uint64_t cur = 0, spent = 0;

	for (uint32_t i = 0; i < w->nq; i++) {
		w->q[i].cnt_off = (bump(r, &cur, NCNT * 8 + 8) + 7) & ~7ull;
		cur = w->q[i].cnt_off + NCNT * 8;
		w->q[i].bad_at = -1;
	}
	while (spent < budget) {
		struct pqp *q = &w->q[mrc_rng_below(r, w->nq)];
		if (q->nop == MAXOPS)
			break;
		struct pop *o = &q->op[q->nop];
		uint64_t k = mrc_rng_below(r, 100);
		memset(o, 0, sizeof(*o));
		o->op = k < 45 ? MRC_SQE_WRITE : k < 65 ? MRC_SQE_WRITE_IMM : k < 75 ? MRC_SQE_SEND
		      : k < 82 ? MRC_SQE_SEND_IMM : MRC_SQE_ATOMIC_ADD;
		if (o->op == MRC_SQE_ATOMIC_ADD) {
			o->cnt = (uint8_t)mrc_rng_below(r, NCNT);
			if (q->nbits[o->cnt] == MAXBITS)
				continue;
			o->bit = (uint8_t)q->nbits[o->cnt]++;
			o->len = 8;
			o->roff = q->cnt_off + 8 * o->cnt;
		} else {
			o->len = pick_len(r, mtu);
			if (o->op == MRC_SQE_SEND || o->op == MRC_SQE_SEND_IMM)
				o->len = o->len > (16 << 10) ? (16 << 10) : o->len;
			o->loff = mrc_rng_below(r, src_len - o->len + 1);
			o->rlen = o->len;
			if (o->op == MRC_SQE_SEND || o->op == MRC_SQE_SEND_IMM)
				o->rlen += mrc_rng_below(r, 3) ? 0 : mrc_rng_below(r, 5000);
			o->roff = bump(r, &cur, o->rlen);
			o->imm = (uint32_t)mrc_rng_next(r);
			spent += o->len;
		}
		if (o->op != MRC_SQE_WRITE && o->op != MRC_SQE_ATOMIC_ADD)
			q->rc[q->nrc++] = q->nop;
		q->nop++;
	}
	*dst_len = cur + (64 << 10);   /* slack: an out-of-bounds WRITE lands its
					   in-bounds part here */
	w->total_bytes = spent;
}

/* ---- checks ------------------------------------------------------------- */

static int is_write(uint8_t op) { return op == MRC_SQE_WRITE || op == MRC_SQE_WRITE_IMM; }
static int is_send(uint8_t op) { return op == MRC_SQE_SEND || op == MRC_SQE_SEND_IMM; }

static int placed(struct world *w, const struct pop *o)
{
	return !o->len || !memcmp(w->t.dst.p + o->roff, w->t.src.p + o->loff, o->len);
}

/* Every WRITE of q before index upto must be in the target buffer now. */
static int require_writes(struct world *w, struct pqp *q, uint32_t upto, const char *why)
{
	for (; q->verified_upto < upto; q->verified_upto++) {
		struct pop *o = &q->op[q->verified_upto];
		if (!is_write(o->op) || o->verified || o->bad || o->status == -ECANCELED)
			continue;
		if (!placed(w, o))
			return failf(w, "%s before earlier WRITE #%u (qp %u, %" PRIu64 " bytes at %"
				     PRIu64 ") was placed", why, q->verified_upto, q->qa, o->len,
				     o->roff);
		o->verified = 1;
	}
	return 0;
}

/* Atomic counters show which adds took effect (one bit each); every
 * earlier WRITE of the QP must already be placed. */
static void check_atomics(struct world *w)
{
	for (uint32_t i = 0; i < w->nq; i++) {
		struct pqp *q = &w->q[i];
		uint32_t hi = 0;
		for (uint32_t j = 0; j < q->nop; j++) {
			struct pop *o = &q->op[j];
			uint64_t v;
			if (o->op != MRC_SQE_ATOMIC_ADD)
				continue;
			memcpy(&v, w->t.dst.p + q->cnt_off + 8 * o->cnt, 8);
			if (v >> o->bit & 1)
				hi = j;
		}
		if (hi && w->sc != SC_ACCESS)
			require_writes(w, q, hi, "atomic applied");
	}
}

static struct pqp *qp_of(struct world *w, uint32_t node, uint32_t qpn)
{
	for (uint32_t i = 0; i < w->nq; i++)
		if ((node == 0 ? w->q[i].qa : w->q[i].qb) == qpn)
			return &w->q[i];
	return NULL;
}

static const uint8_t wc_op_of[] = {
	[MRC_SQE_WRITE] = MRCE_WC_WRITE, [MRC_SQE_WRITE_IMM] = MRCE_WC_WRITE_IMM,
	[MRC_SQE_SEND] = MRCE_WC_SEND, [MRC_SQE_SEND_IMM] = MRCE_WC_SEND_IMM,
	[MRC_SQE_ATOMIC_ADD] = MRCE_WC_ATOMIC_ADD,
};

static void on_sender_wc(struct world *w, struct pqp *q, const struct mrce_wc *c)
{
	if (q->next_sc >= q->nop) {
		failf(w, "extra sender completion wr_id %" PRIu64 " on qp %u", c->wr_id, q->qa);
		return;
	}
	uint32_t idx = q->next_sc++;
	struct pop *o = &q->op[idx];
	if (c->wr_id != idx || c->op != wc_op_of[o->op]) {
		failf(w, "qp %u: completion wr_id %" PRIu64 " op %u, expected #%u op %u (order)",
		      q->qa, c->wr_id, c->op, idx, wc_op_of[o->op]);
		return;
	}
	o->status = c->status;
	o->done = 1;
	if (w->sc == SC_ACCESS && q->bad_at >= 0) {
		int32_t want = (int)idx == q->bad_at ? -EACCES : (int)idx > q->bad_at ? -ECANCELED : 0;
		if (c->status != want && !(want == 0 && c->status == -ECANCELED)) {
			failf(w, "qp %u #%u: status %d, expected %d", q->qa, idx, c->status, want);
			return;
		}
	} else if (c->status != 0) {
		failf(w, "qp %u #%u (op %u, %" PRIu64 " bytes): status %d", q->qa, idx, o->op,
		      o->len, c->status);
		return;
	}
	if (c->status == 0 && o->op != MRC_SQE_ATOMIC_ADD && c->byte_len != o->len) {
		failf(w, "qp %u #%u: byte_len %" PRIu64 " != %" PRIu64, q->qa, idx, c->byte_len, o->len);
		return;
	}
	/* A successful completion means the bytes are at the target. */
	if (c->status == 0 && is_write(o->op) && !placed(w, o))
		failf(w, "qp %u #%u completed but its %" PRIu64 " bytes are not placed", q->qa,
		      idx, o->len);
}

static void on_recv_wc(struct world *w, struct pqp *q, const struct mrce_wc *c)
{
	if (q->rx_flushed)
		return;
	if (q->next_rc >= q->nrc) {
		failf(w, "extra receive completion op %u on qp %u", c->op, q->qb);
		return;
	}
	uint32_t idx = q->rc[q->next_rc++];
	struct pop *o = &q->op[idx];
	if (q->bad_at >= 0 && c->status != 0) {
		q->rx_flushed = 1;      /* the failed QP's receiver flushed */
		return;
	}
	int want_op = is_send(o->op) ? MRCE_WC_RECV : MRCE_WC_RECV_WRITE_IMM;
	int want_imm = o->op == MRC_SQE_WRITE_IMM || o->op == MRC_SQE_SEND_IMM;
	if (c->op != want_op || c->status != 0 || c->byte_len != o->len ||
	    c->has_imm != want_imm || (want_imm && c->imm != o->imm) ||
	    (is_send(o->op) && c->wr_id != idx)) {
		failf(w, "qp %u receive completion for #%u: op %u status %d len %" PRIu64
		      " imm %d/%08x wr_id %" PRIu64 "; expected op %d len %" PRIu64 " imm %d/%08x",
		      q->qb, idx, c->op, c->status, c->byte_len, c->has_imm, c->imm, c->wr_id,
		      want_op, o->len, want_imm, o->imm);
		return;
	}
	if (!placed(w, o)) {
		failf(w, "qp %u receive completion for #%u (op %u) before its own data", q->qb,
		      idx, o->op);
		return;
	}
	require_writes(w, q, idx, is_send(o->op) ? "SEND delivered" : "WRITE_IMM delivered");
}

static void on_wc(struct chan *ch, uint32_t n, const struct mrce_wc *c, void *arg)
{
	struct world *w = arg;
	struct pqp *q = qp_of(w, n, c->qpn);
	if (w->err[0])
		return;
	if (!q) {
		failf(w, "completion for unknown qp %u on node %u", c->qpn, n);
		return;
	}
	if (n == 0)
		on_sender_wc(w, q, c);
	else
		on_recv_wc(w, q, c);
	check_atomics(w);
}

static void on_evt(struct chan *ch, uint32_t n, const struct mrce_event *ev, void *arg)
{
	struct world *w = arg;
	if (n != 0 || ev->type != MRCE_EVT_EV_STATE || !w->det_t || !w->bh_on)
		return;
	if (ev->new_state == MRCE_EV_ASSUMED_BAD && ev->time_ns >= w->bh_from &&
	    !w->det_t[ev->ev])
		w->det_t[ev->ev] = ev->time_ns;
}

/* Counts data per EV and starts the outage once a share of the data left. */
static void on_tx(struct chan *ch, uint32_t src, uint32_t dst, uint16_t ev,
		  const uint8_t *pkt, size_t len, void *arg)
{
	struct world *w = arg;
	if (src != 0 || !mrc_op_is_data(pkt[1]) || len <= MRC_DATA_HDR_LEN)
		return;
	uint64_t plen = len - MRC_DATA_HDR_LEN - MRC_TRAILER_LEN;
	w->tx_data_bytes += plen;
	if (!w->bh_on && w->trigger_bytes && w->tx_data_bytes >= w->trigger_bytes) {
		w->bh_on = 1;
		w->bh_from = ch->now;
		if (w->sc == SC_BH_PLANE)
			chan_blackhole_plane(ch, w->bh_plane, ch->now, UINT64_MAX);
		else
			chan_blackhole_all(ch, ch->now, ch->now + w->bh_len);
	}
	if (!w->bh_on || !w->first_tx)
		return;
	w->after_bh_total += plen;
	w->after_bh_by_plane[ch->plane_of[ev]] += plen;
	if (ch->plane_of[ev] == w->bh_plane) {
		if (!w->first_tx[ev])
			w->first_tx[ev] = ch->now;
		if (w->det_t[ev])
			w->after_det[ev] += plen;
	}
}

static int pred_done(struct chan *ch, void *arg)
{
	struct world *w = arg;
	if (w->err[0])
		return 1;
	for (uint32_t i = 0; i < w->nq; i++)
		if (w->q[i].next_sc < w->q[i].nop ||
		    (w->q[i].bad_at < 0 && w->q[i].next_rc < w->q[i].nrc))
			return 0;
	return 1;
}

/* ---- one seed ----------------------------------------------------------- */

static void setup_chan(struct world *w, struct chan_cfg *cc, uint32_t *mtu, uint64_t *budget)
{
	struct mrc_rng *r = &w->r;
	static const uint32_t nevs[] = { 4, 8, 16, 64 };
	chan_cfg_default(cc, w->seed);
	cc->keep_logs = 0;
	cc->nev = nevs[mrc_rng_below(r, 4)];
	cc->planes = (uint32_t)(1u << mrc_rng_below(r, 3));
	if (cc->planes > cc->nev)
		cc->planes = cc->nev;
	*mtu = mrc_rng_below(r, 4) ? 4096 : 1024;
	*budget = mrc_rng_range(r, 192 << 10, 640 << 10);
	if (*mtu == 1024)
		*budget /= 2;
	switch (w->sc) {
	case SC_LOSS1: cc->path.loss = 0.01; break;
	case SC_LOSS10: cc->path.loss = 0.10; break;
	case SC_REORDER: cc->path.jitter_ns = 60 * US; break;
	case SC_DUP: cc->path.dup = 0.05; cc->path.jitter_ns = 10 * US; break;
	case SC_TRIM: cc->path.trim = 0.05; break;
	case SC_CORRUPT: cc->path.corrupt = 0.03; break;
	case SC_BH_PLANE:
		cc->nev = 256;
		cc->planes = 8;
		*mtu = 4096;
		*budget = mrc_rng_range(r, 1536 << 10, 2 << 20);
		break;
	case SC_ALL_DEAD_HEAL: break;
	case SC_CONGEST:
		/* Slow paths with finite queues: ECN marks, switch trims and
		 * tail drops all come from queueing, as in a real fabric. */
		cc->nev = 4;
		cc->planes = 2;
		cc->path.rate = 0.1;             /* 800 Mbit/s per path */
		cc->path.q_ecn = 8 << 10;
		cc->path.q_trim = 32 << 10;
		cc->path.q_drop = 64 << 10;
		break;
	default: break;
	}
	cc->ecfg.mtu = *mtu;
}

static void final_checks(struct world *w)
{
	struct chan *ch = w->t.ch;
	uint8_t *exp = malloc(w->t.dst.len);
	uint8_t *skip = calloc(w->t.dst.len, 1);
	uint64_t placed_want = 0;

	for (uint64_t i = 0; i < w->t.dst.len; i++)
		exp[i] = chan_gbuf_byte(w->t.dst.seed, i);
	for (uint32_t i = 0; i < w->nq && !w->err[0]; i++) {
		struct pqp *q = &w->q[i];
		uint64_t sum[NCNT] = { 0 };
		int uncertain[NCNT] = { 0 };
		struct mrce_qp_info qi;
		for (uint32_t j = 0; j < q->nop; j++) {
			struct pop *o = &q->op[j];
			int ok = o->status == 0 && !o->bad;
			if (o->op == MRC_SQE_ATOMIC_ADD) {
				sum[o->cnt] += ok ? 1ull << o->bit : 0;
				uncertain[o->cnt] |= !ok;
				continue;
			}
			if (ok) {
				memcpy(exp + o->roff, w->t.src.p + o->loff, o->len);
				placed_want += o->len;
			} else {
				memset(skip + o->roff, 1, o->bad ? w->t.dst.len - o->roff : o->rlen);
			}
		}
		for (int c = 0; c < NCNT; c++) {
			uint64_t v, init = 0;
			memcpy(&v, w->t.dst.p + q->cnt_off + 8 * c, 8);
			if (!uncertain[c] && v != init + sum[c])
				failf(w, "qp %u counter %d: %016" PRIx64 ", expected %016" PRIx64
				      " (an atomic applied twice or not at all)", q->qa, c, v,
				      init + sum[c]);
			memset(skip + q->cnt_off + 8 * c, 1, 8);
		}
		if (w->sc != SC_ACCESS) {
			mrce_qp_info(ch->node[1].e, q->qb, &qi);
			uint64_t want = 0;
			for (uint32_t j = 0; j < q->nop; j++)
				want += q->op[j].op == MRC_SQE_ATOMIC_ADD ? 0 : q->op[j].len;
			if (qi.bytes_placed != want)
				failf(w, "qp %u: bytes_placed %" PRIu64 " != %" PRIu64
				      " unique payload bytes (a PSN placed twice or lost)", q->qb,
				      qi.bytes_placed, want);
			mrce_qp_info(ch->node[0].e, q->qa, &qi);
			if (qi.state != MRCE_QPS_RTS)
				failf(w, "qp %u ended in state %u (error %d)", q->qa, qi.state, qi.error);
		}
	}
	for (uint64_t i = 0; i < w->t.dst.len && !w->err[0]; i++)
		if (!skip[i] && w->t.dst.p[i] != exp[i])
			failf(w, "dst byte %" PRIu64 " is %02x, reference model says %02x", i,
			      w->t.dst.p[i], exp[i]);
	if (chan_gbuf_guard_bad(&w->t.dst) >= 0 || chan_gbuf_guard_bad(&w->t.src) >= 0)
		failf(w, "guard bytes around registered memory changed");
	(void)placed_want;
	free(exp);
	free(skip);
}

static void bh_checks(struct world *w)
{
	struct chan *ch = w->t.ch;
	const struct mrce_cfg *ec = &ch->cfg.ecfg;
	uint32_t peer = ch->node[0].peer[1];
	struct mrce_ev_info ei;
	/* A lost packet is declared lost one RTT plus the reorder slack after
	 * a later packet is acked; with nothing sent after it (a tail loss)
	 * only the RTO (>= rto_min) finds it.  So: a few RTTs, the slack, and
	 * one RTO at its floor. */
	uint64_t bound = env_u64("MRC_PROP_BH_BOUND_NS",
				 4 * chan_max_rtt(ch) + 2 * ec->reorder_slack_ns + ec->rto_min_ns);
	uint64_t after_det = 0, used = 0;

	if (!w->bh_on) {
		failf(w, "the outage never started");
		return;
	}
	for (uint32_t ev = 0; ev < ch->cfg.nev; ev++) {
		mrce_ev_info(ch->node[0].e, peer, ev, &ei);
		if (ch->plane_of[ev] != w->bh_plane) {
			if (ei.state != MRCE_EV_GOOD)
				failf(w, "ev %u of healthy plane %u still %s at the end", ev,
				      ch->plane_of[ev], mrce_ev_state_name(ei.state));
			continue;
		}
		after_det += w->after_det[ev];
		if (!w->first_tx[ev])
			continue;   /* never used after the blackhole: nothing to see */
		used++;
		if (!w->det_t[ev] || ei.state == MRCE_EV_GOOD)
			failf(w, "blackholed ev %u (plane %u) carried data at +%" PRIu64
			      " ns but is %s", ev, w->bh_plane, w->first_tx[ev] - w->bh_from,
			      mrce_ev_state_name(ei.state));
		else if (w->det_t[ev] > w->first_tx[ev] + bound)
			failf(w, "blackholed ev %u detected %" PRIu64 " ns after its first lost "
			      "packet (bound %" PRIu64 ")", ev, w->det_t[ev] - w->first_tx[ev], bound);
	}
	if (getenv("MRC_PROP_VERBOSE")) {
		uint64_t worst = 0;
		for (uint32_t ev = 0; ev < ch->cfg.nev; ev++)
			if (w->first_tx[ev] && w->det_t[ev] > w->first_tx[ev] &&
			    w->det_t[ev] - w->first_tx[ev] > worst)
				worst = w->det_t[ev] - w->first_tx[ev];
		printf("  bh plane %u: %" PRIu64 " EVs used after the blackhole, worst detection "
		       "%" PRIu64 " ns (bound %" PRIu64 "), %" PRIu64 "/%" PRIu64
		       " bytes after detection\n", w->bh_plane, used, worst, bound, after_det,
		       w->after_bh_total);
	}
	if (!used)
		failf(w, "no data crossed the blackholed plane after the blackhole");
	/* After detection the dead plane carries (almost) nothing new. */
	if (after_det * 100 > w->after_bh_total)
		failf(w, "blackholed plane carried %" PRIu64 " of %" PRIu64 " bytes after detection",
		      after_det, w->after_bh_total);
	for (uint32_t p = 0; p < ch->cfg.planes; p++)
		if (p != w->bh_plane && !w->after_bh_by_plane[p])
			failf(w, "surviving plane %u carried nothing after the blackhole", p);
}

static int run_seed(enum scen sc, uint64_t seed, char *msg, size_t msz)
{
	struct world *w = calloc(1, sizeof(*w));
	struct chan_cfg cc;
	uint32_t mtu;
	uint64_t budget, dst_len, src_len = 256 << 10;
	struct mrce_qp_attr attr = { .pd = ETEST_PD };

	w->sc = sc;
	w->seed = seed;
	mrc_rng_seed(&w->r, seed ^ 0x70726f7073ull);
	setup_chan(w, &cc, &mtu, &budget);
	w->nq = 1 + (uint32_t)mrc_rng_below(&w->r, MAXQ);
	gen(w, budget, mtu, src_len, &dst_len);
	if (etest_init(&w->t, &cc, src_len, dst_len, 0) < 0) {
		failf(w, "setup failed");
		goto out;
	}
	struct chan *ch = w->t.ch;
	/* Counters start at 0 so each bit tells whether its add took effect. */
	for (uint32_t i = 0; i < w->nq; i++)
		memset(w->t.dst.p + w->q[i].cnt_off, 0, NCNT * 8);
	w->q[0].qa = w->t.qa;
	w->q[0].qb = w->t.qb;
	for (uint32_t i = 1; i < w->nq; i++)
		if (chan_qp_pair(ch, 0, 1, &attr, &attr, &w->q[i].qa, &w->q[i].qb) < 0) {
			failf(w, "qp setup failed");
			goto out;
		}
	if (sc == SC_BH_PLANE || sc == SC_ALL_DEAD_HEAL) {
		w->trigger_bytes = w->total_bytes / 4 + 1;
		w->bh_plane = sc == SC_BH_PLANE ? (uint32_t)mrc_rng_below(&w->r, cc.planes) : UINT32_MAX;
		w->bh_len = mrc_rng_range(&w->r, 3 * MS, 40 * MS);
		w->first_tx = calloc(cc.nev, 8);
		w->det_t = calloc(cc.nev, 8);
		w->after_det = calloc(cc.nev, 8);
		w->after_bh_by_plane = calloc(MRCE_MAX_PLANES, 8);
	}
	if (sc == SC_ACCESS) {
		/* One WRITE of one QP goes wrong: unknown key, other pd, or past
		 * the end of the region. */
		struct pqp *q = &w->q[mrc_rng_below(&w->r, w->nq)];
		for (uint32_t tries = 0; tries < 32 && q->bad_at < 0; tries++) {
			uint32_t j = (uint32_t)mrc_rng_below(&w->r, q->nop);
			if (is_write(q->op[j].op) && q->op[j].len > 0)
				q->bad_at = (int)j;
		}
		if (q->bad_at >= 0) {
			struct pop *o = &q->op[q->bad_at];
			uint64_t kind = mrc_rng_below(&w->r, 3);
			o->bad = 1;
			if (kind == 0) {
				w->bad_key = w->t.rkey + 1000003;
			} else if (kind == 1) {
				mrce_mr_add(ch->node[1].e, ETEST_PD + 1, w->t.dst.p, dst_len,
					   MRCE_ACCESS_REMOTE_WRITE, &w->bad_key);
			} else {
				w->bad_key = w->t.rkey;
				o->roff = dst_len - (o->len + 1) / 2;
			}
		}
	}
	ch->on_wc = on_wc;
	ch->on_evt = on_evt;
	ch->on_tx = on_tx;
	ch->hook_arg = w;
	for (uint32_t i = 0; i < w->nq; i++) {
		struct pqp *q = &w->q[i];
		for (uint32_t j = 0; j < q->nop; j++) {
			struct pop *o = &q->op[j];
			if (is_send(o->op) &&
			    mrce_qp_post_recv(ch->node[1].e, q->qb, j, w->t.dst_lkey, o->roff, o->rlen)) {
				failf(w, "post_recv failed");
				goto out;
			}
		}
	}
	for (uint32_t i = 0; i < w->nq; i++) {
		struct pqp *q = &w->q[i];
		for (uint32_t j = 0; j < q->nop; j++) {
			struct pop *o = &q->op[j];
			int rc = etest_post(ch, 0, q->qa, o->op, j, w->t.lkey, o->loff, o->len,
					    o->bad ? w->bad_key : w->t.rkey, o->roff, o->imm,
					    1ull << o->bit);
			if (rc) {
				failf(w, "post #%u failed: %d", j, rc);
				goto out;
			}
		}
	}
	int rc = chan_run(ch, pred_done, w, 120 * 1000 * MS, 50000000);
	if (rc && !w->err[0])
		failf(w, "run did not finish: %d", rc);
	if (w->err[0])
		goto out;
	check_atomics(w);
	/* Settle: probes bring falsely suspected paths back. */
	if (sc == SC_BH_PLANE || sc == SC_ALL_DEAD_HEAL)
		chan_run(ch, NULL, NULL, 30 * MS, 50000000);
	final_checks(w);
	if (sc == SC_BH_PLANE && !w->err[0])
		bh_checks(w);
	if (sc == SC_ALL_DEAD_HEAL && !w->err[0]) {
		if (!w->bh_on || !ch->st.blackholed)
			failf(w, "the outage never hit any packet");
		for (uint32_t ev = 0; ev < cc.nev && !w->err[0]; ev++) {
			struct mrce_ev_info ei;
			mrce_ev_info(ch->node[0].e, ch->node[0].peer[1], ev, &ei);
			if (ei.state != MRCE_EV_GOOD)
				failf(w, "ev %u still %s 30 ms after the end", ev,
				      mrce_ev_state_name(ei.state));
		}
	}
	if (getenv("MRC_PROP_VERBOSE")) {
		struct mrce_stats s0, s1;
		mrce_stats(ch->node[0].e, &s0);
		mrce_stats(ch->node[1].e, &s1);
		printf("%s seed %" PRIu64 ": %u qps, %" PRIu64 " bytes, %.3f ms virtual, "
		       "tx_data %" PRIu64 " retx %" PRIu64 " rto %" PRIu64 " placed %" PRIu64
		       " lost %" PRIu64 " bh %" PRIu64 " dups %" PRIu64 " trims %" PRIu64
		       " corrupt %" PRIu64 " drops h/p %" PRIu64 "/%" PRIu64 "\n",
		       scen_name[sc], seed, w->nq, w->total_bytes,
		       (double)(ch->now - CHAN_T0) / 1e6, s0.tx_data, s0.tx_retx, s0.rto_fires,
		       s1.bytes_placed, ch->st.lost, ch->st.blackholed, ch->st.dups,
		       ch->st.trimmed, ch->st.corrupted,
		       s0.rx_drop[MRC_DROP_HCRC] + s1.rx_drop[MRC_DROP_HCRC],
		       s0.rx_drop[MRC_DROP_PCRC] + s1.rx_drop[MRC_DROP_PCRC]);
	}
	if (sc == SC_CORRUPT && ch->st.corrupt_accepted)
		failf(w, "%" PRIu64 " corrupted packets were accepted", ch->st.corrupt_accepted);
out:
	if (w->err[0]) {
		snprintf(msg, msz, "scenario %s seed %" PRIu64 ": %s", scen_name[sc], seed, w->err);
		if (w->t.ch)
			chan_dump(w->t.ch, stderr);
	}
	int failed = w->err[0] != 0;
	if (w->t.ch && sc == SC_CORRUPT) {
		/* aggregate for the scenario-level check */
		for (uint32_t n = 0; n < 2; n++) {
			struct mrce_stats st;
			mrce_stats(w->t.ch->node[n].e, &st);
			g_crc_drops[0] += st.rx_drop[MRC_DROP_HCRC];
			g_crc_drops[1] += st.rx_drop[MRC_DROP_PCRC];
		}
		g_corrupted += w->t.ch->st.corrupted;
	}
	etest_fini(&w->t);
	free(w->first_tx);
	free(w->det_t);
	free(w->after_det);
	free(w->after_bh_by_plane);
	free(w);
	return failed ? -1 : 0;
}

static void run_scenario(enum scen sc)
{
	const char *only = getenv("MRC_PROP_SCEN");
	uint64_t n = env_u64("MRC_PROP_SEEDS", 200), one = env_u64("MRC_PROP_SEED", 0);
	char msg[1024];

	if (only && *only && strcmp(only, scen_name[sc]))
		MRC_SKIP("MRC_PROP_SCEN=%s selects another scenario", only);
	for (uint64_t i = 0; i < (one ? 1 : n); i++) {
		uint64_t seed = one ? one : (uint64_t)sc * 1000003 + i + 1;
		if (run_seed(sc, seed, msg, sizeof(msg)))
			fail_msg("%s (replay: MRC_PROP_SCEN=%s MRC_PROP_SEED=%" PRIu64 ")", msg,
				 scen_name[sc], seed);
	}
	if (sc == SC_CORRUPT && g_corrupted > 20) {
		/* Corruptions hit headers and payloads; both CRCs must catch some. */
		assert_true(g_crc_drops[0] > 0);
		assert_true(g_crc_drops[1] > 0);
	}
}

static void test_clean(void **s) { run_scenario(SC_CLEAN); }
static void test_loss1(void **s) { run_scenario(SC_LOSS1); }
static void test_loss10(void **s) { run_scenario(SC_LOSS10); }
static void test_reorder(void **s) { run_scenario(SC_REORDER); }
static void test_dup(void **s) { run_scenario(SC_DUP); }
static void test_trim(void **s) { run_scenario(SC_TRIM); }
static void test_corrupt(void **s) { run_scenario(SC_CORRUPT); }
static void test_blackhole_plane(void **s) { run_scenario(SC_BH_PLANE); }
static void test_all_dead_heal(void **s) { run_scenario(SC_ALL_DEAD_HEAL); }
static void test_access(void **s) { run_scenario(SC_ACCESS); }
static void test_congest(void **s) { run_scenario(SC_CONGEST); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean),
		cmocka_unit_test(test_loss1),
		cmocka_unit_test(test_loss10),
		cmocka_unit_test(test_reorder),
		cmocka_unit_test(test_dup),
		cmocka_unit_test(test_trim),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_blackhole_plane),
		cmocka_unit_test(test_all_dead_heal),
		cmocka_unit_test(test_access),
		cmocka_unit_test(test_congest),
	};
	printf("test_engine_props: %" PRIu64 " seeds per scenario (MRC_PROP_SEEDS)\n",
	       env_u64("MRC_PROP_SEEDS", 200));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
