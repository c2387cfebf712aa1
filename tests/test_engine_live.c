/* Engine liveness and ordering through the in-memory channel: a QP whose
 * every path is DENIED fails within no_path_timeout_ns (with a deadline
 * armed all along) and resumes when a path returns in time; RNR NACKs are
 * retried apart from max_retries (rnr_retry, 7 = forever), trims never
 * fail a QP; a fenced WRITE after an ATOMIC_ADD lands after it.
 * Seed: MRC_TEST_SEED=<n> replays a run; it is printed with every failure. */
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

#include "mrc/error.h"
#include "tests/support/etest_case.h"

static uint32_t peer01(struct etest *t) { return t->ch->node[0].peer[1]; }

static const struct mrce_event *find_evt(struct etest *t, int n, uint8_t type, int32_t err)
{
	for (size_t i = 0; i < t->ch->node[n].nevt; i++) {
		const struct mrce_event *x = &t->ch->node[n].evt[i];
		if (x->type == type && x->err == err)
			return x;
	}
	return NULL;
}

static void deny_all(struct etest *t, int deny)
{
	for (uint32_t ev = 0; ev < t->ch->cfg.nev; ev++)
		CHECK_EQ(mrce_ev_set_denied(E(t, 0), t->ch->now, peer01(t), ev, deny), 0);
}

/* ---- liveness: every path DENIED -------------------------------------- */

/* The engine never leaves work without a way forward: a QP with work has
 * a timer armed or a packet to send (else the caller would never call it
 * again and the QP would hang). */
static int armed(struct mrce *e)
{
	return !mrce_busy_qps(e) || mrce_next_deadline(e) != UINT64_MAX ||
	       mrce_tx_pending(e);
}

struct watch {
	struct etest *t;
	uint64_t want_wcs;
	uint64_t unarmed;          /* steps seen with work and no deadline */
};

static int pred_watch(struct chan *ch, void *arg)
{
	struct watch *w = arg;
	if (!armed(ch->node[0].e))
		w->unarmed++;
	return ch->node[0].wc_total >= w->want_wcs;
}

/* Runs for span in 1 ms slices (no predicate: it cannot end early), with
 * the armed check after each. */
static void run_watched(struct etest *t, uint64_t span)
{
	for (uint64_t done = 0; done < span; done += MS) {
		CHECK_EQ(chan_run(t->ch, NULL, NULL, MS, ETEST_MAX_STEPS), 0);
		if (!armed(E(t, 0)))
			fail_msg("work outstanding but no deadline at t=%" PRIu64 " (seed %" PRIu64 ")",
				 t->ch->now, g_seed);
	}
}

/* Posts a 4 MiB WRITE and lets part of it be acknowledged. */
static int pred_some_acked(struct chan *ch, void *arg)
{
	struct etest *t = arg;
	struct mrce_qp_info qi;
	return mrce_qp_info(ch->node[0].e, t->qa, &qi) == 0 && qi.bytes_acked >= (256u << 10);
}

static void start_transfer(struct etest *t, uint64_t len)
{
	CHECK_EQ(etest_post(t->ch, 0, t->qa, MRC_SQE_WRITE, 1, t->lkey, 0, len, t->rkey, 0, 0, 0), 0);
	CHECK_EQ(chan_run(t->ch, pred_some_acked, t, 1 * SEC, ETEST_MAX_STEPS), 0);
}

/* Every path of node 0 to node 1 DENIED, with a WRITE of len bytes posted
 * after the outage began or already under way. */
static void outage(struct etest *t, int in_flight, uint64_t len)
{
	if (in_flight) {
		start_transfer(t, len);
		deny_all(t, 1);
	} else {
		deny_all(t, 1);
		CHECK_EQ(etest_post(t->ch, 0, t->qa, MRC_SQE_WRITE, 1, t->lkey, 0, len, t->rkey,
				    0, 0, 0), 0);
	}
}

static void nopath_fails(int in_flight, uint64_t bound)
{
	struct chan_cfg cc;
	static struct etest t;   /* static: the teardown may finish it after a failed CHECK */
	struct mrce_qp_info qi;
	const uint64_t len = 4 << 20;

	chan_cfg_default(&cc, g_seed);
	if (bound) {
		cc.ecfg.no_path_timeout_ns = bound;
	} else {
		bound = cc.ecfg.no_path_timeout_ns;
		CHECK_EQ(bound, 1 * SEC);          /* the default */
	}
	CHECK_EQ(etest_init(&t, &cc, len, len, 0), 0);
	outage(&t, in_flight, len);
	CHECK_EQ(etest_post(t.ch, 0, t.qa, MRC_SQE_WRITE, 2, t.lkey, 0, 64, t.rkey, 0, 0, 0), 0);
	uint64_t t0 = t.ch->now;

	/* Before the fix this returned -EDEADLK: no completion, no timer. */
	struct watch w = { .t = &t, .want_wcs = 2 };
	CHECK_EQ(chan_run(t.ch, pred_watch, &w, bound + 10 * SEC, ETEST_MAX_STEPS), 0);
	CHECK_EQ(w.unarmed, 0);
	CHECK_EQ(WC(&t, 0, 0)->wr_id, 1);
	CHECK_EQ(WC(&t, 0, 0)->status, -ENETUNREACH);
	CHECK_EQ(WC(&t, 0, 1)->status, -ECANCELED);
	CHECK_EQ(mrce_qp_info(E(&t, 0), t.qa, &qi), 0);
	CHECK_EQ(qi.state, MRCE_QPS_ERROR);
	CHECK_EQ(qi.error, -ENETUNREACH);
	CHECK(strstr(mrc_strerror(-ENETUNREACH), "no usable path") != NULL);

	/* The wait began when the QP first had nothing to send on (at once,
	 * or once its RTO declared the packets in flight lost) and lasted
	 * exactly the bound. */
	const struct mrce_event *wait = find_evt(&t, 0, MRCE_EVT_QP_NO_PATH, 0);
	const struct mrce_event *err = find_evt(&t, 0, MRCE_EVT_QP_ERROR, -ENETUNREACH);
	CHECK(wait != NULL && err != NULL);
	CHECK_EQ(wait->qpn, t.qa);
	CHECK_EQ(err->qpn, t.qa);
	if (in_flight)
		CHECK(wait->time_ns >= t0 && wait->time_ns - t0 <= cc.ecfg.rto_max_ns);
	else
		CHECK_EQ(wait->time_ns, t0);
	CHECK_EQ(err->time_ns - wait->time_ns, bound);
	CHECK(find_evt(&t, 0, MRCE_EVT_QP_PATH_BACK, 0) == NULL);
	etest_fini(&t);
}

static void test_nopath_before_post(void **s) { nopath_fails(0, 50 * MS); }
static void test_nopath_in_flight(void **s) { nopath_fails(1, 50 * MS); }
static void test_nopath_default_bound(void **s) { nopath_fails(1, 0); }

/* A path allowed again before the bound resumes the QP: the transfer
 * completes, and nothing fails later. */
static void nopath_resumes(int in_flight)
{
	struct chan_cfg cc;
	static struct etest t;   /* static: the teardown may finish it after a failed CHECK */
	struct mrce_qp_info qi;
	const uint64_t len = 4 << 20, bound = 200 * MS;

	chan_cfg_default(&cc, g_seed);
	cc.ecfg.no_path_timeout_ns = bound;
	CHECK_EQ(etest_init(&t, &cc, len, len, 0), 0);
	outage(&t, in_flight, len);
	uint64_t t0 = t.ch->now;
	run_watched(&t, bound / 2);
	CHECK_EQ(t.ch->node[0].wc_total, 0);
	CHECK(find_evt(&t, 0, MRCE_EVT_QP_NO_PATH, 0) != NULL);
	CHECK_EQ(mrce_qp_info(E(&t, 0), t.qa, &qi), 0);
	CHECK_EQ(qi.state, MRCE_QPS_RTS);

	/* One EV back (ASSUMED_BAD: used at once, probed back to GOOD). */
	uint64_t t_back = t.ch->now;
	CHECK_EQ(mrce_ev_set_denied(E(&t, 0), t.ch->now, peer01(&t), 5, 0), 0);
	struct watch w = { .t = &t, .want_wcs = 1 };
	CHECK_EQ(chan_run(t.ch, pred_watch, &w, 10 * SEC, ETEST_MAX_STEPS), 0);
	CHECK_EQ(w.unarmed, 0);
	const struct mrce_event *back = find_evt(&t, 0, MRCE_EVT_QP_PATH_BACK, 0);
	CHECK(back != NULL);
	CHECK_EQ(back->time_ns, t_back);
	CHECK_EQ(back->qpn, t.qa);
	CHECK_EQ(WC(&t, 0, 0)->status, 0);
	if (memcmp(t.src.p, t.dst.p, len))
		fail_msg("data misplaced after the path came back (seed %" PRIu64 ")", g_seed);
	/* Well past the original bound: still healthy, EV 5 GOOD again. */
	if (t.ch->now < t0 + 2 * bound)
		run_watched(&t, t0 + 2 * bound - t.ch->now);
	CHECK_EQ(mrce_qp_info(E(&t, 0), t.qa, &qi), 0);
	CHECK_EQ(qi.state, MRCE_QPS_RTS);
	CHECK_EQ(chan_count_evt(t.ch, 0, MRCE_EVT_QP_ERROR), 0);
	struct mrce_ev_info ei;
	CHECK_EQ(mrce_ev_info(E(&t, 0), peer01(&t), 5, &ei), 0);
	CHECK_EQ(ei.state, MRCE_EV_GOOD);
	/* More work goes through the one path left. */
	CHECK_EQ(etest_post(t.ch, 0, t.qa, MRC_SQE_WRITE, 3, t.lkey, 0, 65536, t.rkey, 0, 0, 0), 0);
	CHECK_EQ(etest_run2(t.ch, 2, 0, 10 * SEC), 0);
	CHECK_EQ(WC(&t, 0, 1)->status, 0);
	etest_fini(&t);
}

static void test_nopath_resume_before_post(void **s) { nopath_resumes(0); }
static void test_nopath_resume_in_flight(void **s) { nopath_resumes(1); }

/* A QP without work is not failed by an outage it never tried to use. */
static void test_nopath_idle(void **s)
{
	struct chan_cfg cc;
	static struct etest t;   /* static: the teardown may finish it after a failed CHECK */
	struct mrce_qp_info qi;

	chan_cfg_default(&cc, g_seed);
	cc.ecfg.no_path_timeout_ns = 20 * MS;
	CHECK_EQ(etest_init(&t, &cc, 4096, 4096, 0), 0);
	deny_all(&t, 1);
	run_watched(&t, 100 * MS);
	CHECK_EQ(mrce_qp_info(E(&t, 0), t.qa, &qi), 0);
	CHECK_EQ(qi.state, MRCE_QPS_RTS);
	CHECK_EQ(chan_count_evt(t.ch, 0, MRCE_EVT_QP_NO_PATH), 0);
	deny_all(&t, 0);
	CHECK_EQ(etest_post(t.ch, 0, t.qa, MRC_SQE_WRITE, 1, t.lkey, 0, 4096, t.rkey, 0, 0, 0), 0);
	CHECK_EQ(etest_run2(t.ch, 1, 0, 1 * SEC), 0);
	CHECK_EQ(WC(&t, 0, 0)->status, 0);
	etest_fini(&t);
}

/* ---- RNR ---------------------------------------------------------------- */

/* The receiver posts its RECV 50 ms late (it was descheduled): with
 * rnr_retry 7 (the default, forever) the SEND waits and completes.  Its
 * packet was refused far more often than max_retries, which used to fail
 * the QP with -ETIMEDOUT 3 ms after posting. */
static void test_rnr_recv_late_50ms(void **s)
{
	struct chan_cfg cc;
	static struct etest t;   /* static: the teardown may finish it after a failed CHECK */
	struct mrce_qp_info qi;
	const uint64_t len = 6000;

	chan_cfg_default(&cc, g_seed);
	CHECK_EQ(cc.ecfg.rnr_retry, MRCE_RNR_RETRY_FOREVER);
	CHECK_EQ(etest_init(&t, &cc, 1 << 16, 1 << 16, 0), 0);
	CHECK_EQ(etest_post(t.ch, 0, t.qa, MRC_SQE_SEND, 4, t.lkey, 0, len, 0, 0, 0, 0), 0);
	run_watched(&t, 50 * MS);
	CHECK_EQ(t.ch->node[0].wc_total, 0);
	CHECK_EQ(mrce_qp_info(E(&t, 0), t.qa, &qi), 0);
	CHECK_EQ(qi.state, MRCE_QPS_RTS);
	CHECK_EQ(mrce_qp_post_recv(E(&t, 1), t.qb, 5, t.dst_lkey, 0, 8192), 0);
	CHECK_EQ(etest_run2(t.ch, 1, 1, 1 * SEC), 0);
	CHECK_EQ(WC(&t, 0, 0)->status, 0);
	CHECK_EQ(WC(&t, 1, 0)->status, 0);
	CHECK_EQ(WC(&t, 1, 0)->byte_len, len);
	if (memcmp(t.src.p, t.dst.p, len))
		fail_msg("SEND misplaced (seed %" PRIu64 ")", g_seed);
	CHECK_EQ(mrce_qp_info(E(&t, 0), t.qa, &qi), 0);
	if (qi.rnr_rx <= 4 * cc.ecfg.max_retries || qi.retx <= cc.ecfg.max_retries)
		fail_msg("only %" PRIu64 " RNR NACKs / %" PRIu64 " resends in 50 ms "
			 "(max_retries %u, seed %" PRIu64 ")", qi.rnr_rx, qi.retx,
			 cc.ecfg.max_retries, g_seed);
	etest_fini(&t);
}

/* The sender waits the delay the receiver advertises in its RNR NACK, not
 * its own: a receiver that wants 2 ms between tries (code 10: 5.12 ms ...
 * rounded up to the next power-of-two step, here 2.56 ms) gets about 10 in
 * 25 ms, where the sender's own 100 us would have made about 250. */
static void test_rnr_receiver_delay(void **s)
{
	struct chan_cfg cc;
	static struct etest t;   /* static: the teardown may finish it after a failed CHECK */
	struct mrce_qp_info qi;

	chan_cfg_default(&cc, g_seed);
	cc.node_rnr_delay_ns[1] = 2 * MS;
	CHECK_EQ(cc.ecfg.rnr_delay_ns, 100 * 1000);
	CHECK_EQ(mrce_wire_rnr_ns(mrce_wire_rnr_code(2 * MS)), 2560 * 1000);
	CHECK_EQ(etest_init(&t, &cc, 1 << 16, 1 << 16, 0), 0);
	CHECK_EQ(etest_post(t.ch, 0, t.qa, MRC_SQE_SEND, 4, t.lkey, 0, 100, 0, 0, 0, 0), 0);
	run_watched(&t, 25 * MS);
	CHECK_EQ(mrce_qp_info(E(&t, 0), t.qa, &qi), 0);
	if (qi.rnr_rx < 5 || qi.rnr_rx > 12)
		fail_msg("%" PRIu64 " RNR NACKs in 25 ms: the receiver's 2.56 ms delay was not "
			 "followed (seed %" PRIu64 ")", qi.rnr_rx, g_seed);
	CHECK_EQ(mrce_qp_post_recv(E(&t, 1), t.qb, 5, t.dst_lkey, 0, 8192), 0);
	CHECK_EQ(etest_run2(t.ch, 1, 1, 1 * SEC), 0);
	CHECK_EQ(WC(&t, 0, 0)->status, 0);
	etest_fini(&t);
}

/* rnr_retry n < 7: the (n+1)th RNR NACK fails the QP with -ENOBUFS, a
 * distinct error; set per QP or for the engine.  Every path equally long:
 * with 5-20 us drawn per path, the SEND on a slow path was declared lost
 * (the WRITE behind it acked first on a fast one) and resent before its
 * RNR NACK came back, and that resend drew a NACK of its own, which is
 * counted but is no retry (chan seed 4, that is MRC_TEST_SEED 1-3 at
 * n = 3-1: n + 2 NACKs, n RNR retries). */
static void rnr_exhaust(uint32_t n, int per_qp)
{
	struct chan_cfg cc;
	static struct etest t;   /* static: the teardown may finish it after a failed CHECK */
	struct mrce_qp_info qi;
	uint32_t qa, qb;

	chan_cfg_default(&cc, g_seed + n);
	cc.delay_min = cc.delay_max = 5000;
	if (!per_qp)
		cc.ecfg.rnr_retry = n;
	CHECK_EQ(etest_init(&t, &cc, 1 << 16, 1 << 16, 0), 0);
	if (per_qp) {
		struct mrce_qp_attr a = { .pd = ETEST_PD, .flags = MRCE_QP_RNR_RETRY, .rnr_retry = n };
		struct mrce_qp_attr b = { .pd = ETEST_PD };
		CHECK_EQ(chan_qp_pair(t.ch, 0, 1, &a, &b, &qa, &qb), 0);
	} else {
		qa = t.qa;
	}
	/* One packet, so every RNR NACK is for the same PSN. */
	CHECK_EQ(etest_post(t.ch, 0, qa, MRC_SQE_SEND, 9, t.lkey, 0, 100, 0, 0, 0, 0), 0);
	CHECK_EQ(etest_post(t.ch, 0, qa, MRC_SQE_WRITE, 10, t.lkey, 0, 100, t.rkey, 0, 0, 0), 0);
	CHECK_EQ(etest_run2(t.ch, 2, 0, 1 * SEC), 0);
	CHECK_EQ(WC(&t, 0, 0)->wr_id, 9);
	CHECK_EQ(WC(&t, 0, 0)->status, -ENOBUFS);
	CHECK_EQ(WC(&t, 0, 1)->status, -ECANCELED);
	CHECK_EQ(mrce_qp_info(E(&t, 0), qa, &qi), 0);
	CHECK_EQ(qi.state, MRCE_QPS_ERROR);
	CHECK_EQ(qi.error, -ENOBUFS);
	CHECK_EQ(qi.rnr_rx, n + 1);
	CHECK_EQ(qi.retx, n);   /* every resend was an RNR retry */
	/* Each retry waited the RNR delay. */
	const struct mrce_event *err = find_evt(&t, 0, MRCE_EVT_QP_ERROR, -ENOBUFS);
	CHECK(err != NULL);
	CHECK(err->time_ns - CHAN_T0 >= n * cc.ecfg.rnr_delay_ns);
	etest_fini(&t);
}

static void test_rnr_retry_exhausts(void **s)
{
	for (uint32_t n = 0; n < MRCE_RNR_RETRY_FOREVER; n++) {
		rnr_exhaust(n, 1);
		rnr_exhaust(n, 0);
	}
	CHECK(strstr(mrc_strerror(-ENOBUFS), "rnr_retry") != NULL);
	CHECK(strcmp(mrc_strerror(-ENOBUFS), mrc_strerror(-ETIMEDOUT)) != 0);
	/* A CQ overflow says what to do (lib/post.c mrc_poll_cq). */
	CHECK(strstr(mrc_strerror(-EOVERFLOW), "cq_entries") != NULL);
}

static void test_rnr_cfg_checks(void **s)
{
	struct mrce_cfg c;
	struct mrce *e = NULL;
	const char *why = NULL;

	mrce_cfg_default(&c);
	c.rnr_retry = 8;
	CHECK_EQ(mrce_create(&c, &e, &why), -EINVAL);
	CHECK(why && strstr(why, "rnr_retry"));
	mrce_cfg_default(&c);
	c.no_path_timeout_ns = 0;
	CHECK_EQ(mrce_create(&c, &e, &why), -EINVAL);
	CHECK(why && strstr(why, "no_path_timeout_ns"));
	mrce_cfg_default(&c);
	CHECK_EQ(mrce_create(&c, &e, &why), 0);
	uint32_t q;
	struct mrce_qp_attr a = { .pd = 1, .flags = MRCE_QP_RNR_RETRY, .rnr_retry = 8 };
	CHECK_EQ(mrce_qp_open(e, &a, &q), -EINVAL);
	a.rnr_retry = 7;
	CHECK_EQ(mrce_qp_open(e, &a, &q), 0);
	mrce_destroy(e);
}

/* ---- trims ---------------------------------------------------------------- */

struct psn_count {
	uint32_t hits[1 << 16];
	uint32_t max;
};

static void on_tx_count(struct chan *ch, uint32_t src, uint32_t dst, uint16_t ev,
			const uint8_t *pkt, size_t len, void *arg)
{
	struct psn_count *pc = arg;
	if (src != 0 || len < MRC_DATA_HDR_LEN || !mrc_op_is_data(pkt[1]))
		return;
	uint32_t psn = (uint32_t)pkt[8] << 24 | (uint32_t)pkt[9] << 16 |
		       (uint32_t)pkt[10] << 8 | pkt[11];
	uint32_t h = ++pc->hits[psn & 0xffff];
	if (h > pc->max)
		pc->max = h;
}

/* Half the data packets are trimmed (congestion), nothing is lost:
 * packets are sent many more times than max_retries allows for losses,
 * and the transfer completes. */
static void test_trims_never_fail(void **s)
{
	struct chan_cfg cc;
	static struct etest t;   /* static: the teardown may finish it after a failed CHECK */
	struct mrce_qp_info qi;
	static struct psn_count pc;
	const uint64_t len = 2 << 20;

	memset(&pc, 0, sizeof(pc));
	chan_cfg_default(&cc, g_seed);
	cc.ecfg.max_retries = 1;
	cc.delay_min = cc.delay_max = 0;  /* no reordering: no spurious losses */
	cc.path.delay_ns = 10 * US;
	cc.path.trim = 0.5;
	CHECK_EQ(etest_init(&t, &cc, len, len, 0), 0);
	t.ch->on_tx = on_tx_count;
	t.ch->hook_arg = &pc;
	CHECK_EQ(etest_post(t.ch, 0, t.qa, MRC_SQE_WRITE, 1, t.lkey, 0, len, t.rkey, 0, 0, 0), 0);
	CHECK_EQ(etest_run2(t.ch, 1, 0, 60 * SEC), 0);
	CHECK_EQ(WC(&t, 0, 0)->status, 0);
	if (memcmp(t.src.p, t.dst.p, len))
		fail_msg("data misplaced (seed %" PRIu64 ")", g_seed);
	CHECK_EQ(mrce_qp_info(E(&t, 0), t.qa, &qi), 0);
	CHECK(qi.trims_rx > 100);
	if (pc.max <= cc.ecfg.max_retries + 2)
		fail_msg("no packet was trimmed more than max_retries + 1 times (max %u sends,"
			 " seed %" PRIu64 ")", pc.max, g_seed);
	etest_fini(&t);
}

/* ---- ordering: FENCE -------------------------------------------------- */

#define FENCE_SEEDS 200
#define X_OFF 64

/* ATOMIC_ADD(x, +1) then WRITE(x := 0) under 20% loss: returns x. */
static uint64_t atomic_then_write(uint64_t seed, int fence)
{
	struct chan_cfg cc;
	static struct etest t;   /* static: the teardown may finish it after a failed CHECK */
	uint64_t x;

	chan_cfg_default(&cc, seed);
	cc.path.loss = 0.2;
	CHECK_EQ(etest_init(&t, &cc, 4096, 4096, 0), 0);
	memset(t.src.p, 0, 8);
	memset(t.dst.p + X_OFF, 0, 8);
	CHECK_EQ(etest_post(t.ch, 0, t.qa, MRC_SQE_ATOMIC_ADD, 1, 0, 0, 0, t.rkey, X_OFF, 0, 1), 0);
	struct mrc_sqe wr = { .wr_id = 2, .op = MRC_SQE_WRITE, .lkey = t.lkey, .loff = 0,
		.len = 8, .rkey = t.rkey, .roff = X_OFF, .flags = fence ? MRC_SQE_F_FENCE : 0 };
	CHECK_EQ(mrce_qp_post(E(&t, 0), t.ch->now, t.qa, &wr), 0);
	if (etest_run2(t.ch, 2, 0, 60 * SEC))
		fail_msg("seed %" PRIu64 " (fence %d): no completion", seed, fence);
	for (int i = 0; i < 2; i++)
		if (WC(&t, 0, i)->status != 0 || WC(&t, 0, i)->wr_id != (uint64_t)i + 1)
			fail_msg("seed %" PRIu64 " (fence %d): completion %d: wr_id %" PRIu64
				 " status %d", seed, fence, i, WC(&t, 0, i)->wr_id,
				 WC(&t, 0, i)->status);
	memcpy(&x, t.dst.p + X_OFF, 8);
	etest_fini(&t);
	return x;
}

static void test_fence_orders_atomic_write(void **s)
{
	int reordered = 0;
	for (uint64_t i = 0; i < FENCE_SEEDS; i++) {
		uint64_t seed = g_seed * 1000 + i;
		uint64_t x = atomic_then_write(seed, 1);
		if (x != 0)
			fail_msg("fenced WRITE landed before the ATOMIC_ADD: x == %" PRIu64
				 " (seed %" PRIu64 ")", x, seed);
		x = atomic_then_write(seed, 0);
		if (x != 0 && x != 1)
			fail_msg("x == %" PRIu64 " without fence (seed %" PRIu64 ")", x, seed);
		reordered += x == 1;
	}
	/* Without the fence the reordering is real (a lost atomic is applied
	 * after the WRITE that followed it): the fence is what orders them. */
	printf("fence: without it, %d of %d seeds ended with x == 1\n", reordered, FENCE_SEEDS);
	if (reordered == 0)
		fail_msg("no seed reordered ATOMIC then WRITE without a fence (seeds %" PRIu64
			 "..%" PRIu64 ")", g_seed * 1000, g_seed * 1000 + FENCE_SEEDS - 1);
}

/* A fenced request does not leave before every earlier one completed. */
struct fence_watch {
	uint32_t write_op_seen_before_ack;
	struct etest *t;
};

static void on_tx_fence(struct chan *ch, uint32_t src, uint32_t dst, uint16_t ev,
			const uint8_t *pkt, size_t len, void *arg)
{
	struct fence_watch *fw = arg;
	struct mrce_qp_info qi;
	if (src != 0 || len < MRC_DATA_HDR_LEN || pkt[1] != MRC_OP_WRITE)
		return;
	/* The ATOMIC's 8 bytes must be acknowledged before the WRITE starts. */
	if (mrce_qp_info(ch->node[0].e, fw->t->qa, &qi) || qi.bytes_acked < 8 + 64 * 1024)
		fw->write_op_seen_before_ack++;
}

static void test_fence_waits_for_completion(void **s)
{
	struct chan_cfg cc;
	static struct etest t;   /* static: the teardown may finish it after a failed CHECK */
	struct fence_watch fw = { 0 };

	chan_cfg_default(&cc, g_seed);
	CHECK_EQ(etest_init(&t, &cc, 1 << 17, 1 << 17, 0), 0);
	fw.t = &t;
	/* A 64 KiB WRITE_IMM, an ATOMIC, then a fenced WRITE. */
	CHECK_EQ(etest_post(t.ch, 0, t.qa, MRC_SQE_WRITE_IMM, 1, t.lkey, 0, 64 * 1024, t.rkey,
			    4096, 7, 0), 0);
	CHECK_EQ(etest_post(t.ch, 0, t.qa, MRC_SQE_ATOMIC_ADD, 2, 0, 0, 0, t.rkey, 0, 0, 5), 0);
	struct mrc_sqe wr = { .wr_id = 3, .op = MRC_SQE_WRITE, .lkey = t.lkey, .len = 100,
		.rkey = t.rkey, .roff = 80000, .flags = MRC_SQE_F_FENCE };
	CHECK_EQ(mrce_qp_post(E(&t, 0), t.ch->now, t.qa, &wr), 0);
	wr.flags = 0x80;
	CHECK_EQ(mrce_qp_post(E(&t, 0), t.ch->now, t.qa, &wr), -EINVAL);
	t.ch->on_tx = on_tx_fence;
	t.ch->hook_arg = &fw;
	CHECK_EQ(etest_run2(t.ch, 3, 1, 1 * SEC), 0);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(WC(&t, 0, i)->status, 0);
		CHECK_EQ(WC(&t, 0, i)->wr_id, i + 1);
	}
	CHECK_EQ(fw.write_op_seen_before_ack, 0);
	etest_fini(&t);
}

int main(void)
{
	etest_seed("test_engine_live", 20240612);
	const struct CMUnitTest tests[] = {
		T(test_nopath_before_post),
		T(test_nopath_in_flight),
		T(test_nopath_default_bound),
		T(test_nopath_resume_before_post),
		T(test_nopath_resume_in_flight),
		T(test_nopath_idle),
		T(test_rnr_recv_late_50ms),
		T(test_rnr_receiver_delay),
		T(test_rnr_retry_exhausts),
		T(test_rnr_cfg_checks),
		T(test_trims_never_fail),
		T(test_fence_orders_atomic_write),
		T(test_fence_waits_for_completion),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
