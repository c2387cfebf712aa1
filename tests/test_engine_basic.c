/* Engine unit tests through the in-memory multipath channel: config
 * validation, memory registration, every operation at its size edges,
 * RNR, access violations, completion order (EV/plane admin and path
 * health: test_engine_paths.c).
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

#include "tests/support/etest_case.h"
#include "transport/store.h"   /* mr_gen: forced wraparound */

static void test_cfg_validation(void **state)
{
	struct mrce_cfg c;
	struct mrce *e = NULL;
	const char *why = NULL;

	mrce_cfg_default(&c);
	CHECK_EQ(mrce_create(&c, &e, &why), 0);
	CHECK(e != NULL);
	CHECK(mrce_qp_bytes(e) > 0);
	mrce_destroy(e);

	for (int k = 0; k < 12; k++) {
		mrce_cfg_default(&c);
		switch (k) {
		case 0: c.mtu = 0; break;
		case 1: c.mtu = MRC_MAX_PAYLOAD + 1; break;
		case 2: c.window = 0; break;
		case 3: c.window = 6; break;                  /* not a power of 2 */
		case 4: c.window = MRCE_MAX_WINDOW * 2; break; /* beyond the SACK bitmap */
		case 5: c.sq_depth = 0; break;
		case 6: c.sq_depth = 100; break;
		case 7: c.rq_depth = 3; break;
		case 8: c.rto_min_ns = c.rto_max_ns + 1; break;
		case 9: c.max_qps = 0; break;
		case 10: c.qp_ev_stats = MRCE_MAX_EVS + 1; break;
		case 11: c.probe_max_interval_ns = c.probe_interval_ns - 1; break;
		}
		e = NULL;
		why = NULL;
		int rc = mrce_create(&c, &e, &why);
		if (rc != -EINVAL)
			fail_msg("bad config case %d accepted (rc %d)", k, rc);
		CHECK(why != NULL && why[0] != 0);
		CHECK(e == NULL);
	}
}

static void test_mr_reg_dereg(void **state)
{
	struct chan_cfg cc;
	struct etest t;
	uint32_t key2;

	cfg_two(&cc, 8, 2);
	CHECK_EQ(etest_init(&t, &cc, 1 << 20, 1 << 20, 0), 0);
	CHECK(mrce_mr_remove(E(&t, 0), t.lkey + 1000003) < 0);      /* unknown key */
	CHECK_EQ(mrce_mr_add(E(&t, 0), ETEST_PD, t.src.p, 4096, MRCE_ACCESS_LOCAL_READ, &key2), 0);
	CHECK(key2 != t.lkey);
	CHECK_EQ(mrce_mr_remove(E(&t, 0), key2), 0);
	CHECK(mrce_mr_remove(E(&t, 0), key2) < 0);                   /* twice */
	CHECK(etest_post(t.ch, 0, t.qa, MRC_SQE_WRITE, 1, key2, 0, 16, t.rkey, 0, 0, 0) < 0);

	/* A posted WRITE references lkey until it completes. */
	CHECK_EQ(etest_post(t.ch, 0, t.qa, MRC_SQE_WRITE, 1, t.lkey, 0, 300000, t.rkey, 0, 0, 0), 0);
	CHECK_EQ(mrce_mr_remove(E(&t, 0), t.lkey), -EBUSY);
	/* A posted RECV references its region too. */
	CHECK_EQ(mrce_qp_post_recv(E(&t, 1), t.qb, 9, t.dst_lkey, 0, 4096), 0);
	CHECK_EQ(mrce_mr_remove(E(&t, 1), t.dst_lkey), -EBUSY);

	CHECK_EQ(etest_run2(t.ch, 1, 0, 1 * SEC), 0);
	CHECK_EQ(WC(&t, 0, 0)->status, 0);
	CHECK_EQ(mrce_mr_remove(E(&t, 0), t.lkey), 0);
	check_placed(&t, 0, 0, 300000);
	etest_fini(&t);
}

static void test_post_errors(void **state)
{
	struct chan_cfg cc;
	struct etest t;
	struct mrce_qp_attr attr = { .pd = ETEST_PD };
	uint32_t q;

	cfg_two(&cc, 8, 2);
	cc.ecfg.sq_depth = 8;
	CHECK_EQ(etest_init(&t, &cc, 1 << 16, 1 << 16, 0), 0);
	CHECK_EQ(mrce_qp_open(E(&t, 0), &attr, &q), 0);
	CHECK_EQ(etest_post(t.ch, 0, q, MRC_SQE_WRITE, 1, t.lkey, 0, 16, t.rkey, 0, 0, 0),
		 -ENOTCONN);
	CHECK_EQ(mrce_qp_close(E(&t, 0), q), 0);
	CHECK(etest_post(t.ch, 0, t.qa, MRC_SQE_WRITE, 1, t.lkey + 77, 0, 16, t.rkey, 0, 0, 0) < 0);
	CHECK(etest_post(t.ch, 0, t.qa, MRC_SQE_WRITE, 1, t.lkey, 1 << 16, 1, t.rkey, 0, 0, 0) < 0);
	CHECK(etest_post(t.ch, 0, t.qa, MRC_SQE_WRITE, 1, t.lkey, 0, MRCE_MAX_MSG + 1, t.rkey,
			 0, 0, 0) < 0);
	CHECK(mrce_qp_post_recv(E(&t, 1), t.qb, 1, t.dst_lkey, 1 << 15, 1 << 16) < 0);
	for (int i = 0; i < 8; i++)
		CHECK_EQ(etest_post(t.ch, 0, t.qa, MRC_SQE_WRITE, i, t.lkey, 0, 64, t.rkey, 0, 0, 0), 0);
	CHECK_EQ(etest_post(t.ch, 0, t.qa, MRC_SQE_WRITE, 8, t.lkey, 0, 64, t.rkey, 0, 0, 0),
		 -ENOSPC);
	CHECK_EQ(etest_run2(t.ch, 8, 0, 1 * SEC), 0);
	for (int i = 0; i < 8; i++)
		CHECK_EQ(WC(&t, 0, i)->status, 0);
	etest_fini(&t);
}

/* ---- WRITE at every size edge ---------------------------------------- */

static void write_once(uint64_t len, uint64_t loff, uint64_t roff, int sparse)
{
	struct chan_cfg cc;
	struct etest t;
	struct mrce_qp_info qi;

	cfg_two(&cc, 8, 2);
	cc.keep_logs = 1;
	uint64_t tail = sparse ? 0 : 4096;
	CHECK_EQ(etest_init(&t, &cc, loff + len + (sparse ? 0 : 64), roff + len + tail, sparse), 0);
	if (sparse) {
		/* Sparse source: a seeded set of 8-byte stamps over zero pages. */
		struct mrc_rng r;
		mrc_rng_seed(&r, g_seed);
		for (int i = 0; i < 4096; i++) {
			uint64_t off = mrc_rng_below(&r, len - 8);
			uint64_t v = mrc_rng_next(&r);
			memcpy(t.src.p + loff + off, &v, 8);
		}
	}
	CHECK_EQ(etest_post(t.ch, 0, t.qa, MRC_SQE_WRITE, 77, t.lkey, loff, len, t.rkey, roff,
			    0, 0), 0);
	CHECK_EQ(etest_run2(t.ch, 1, 0, 60 * SEC), 0);
	const struct mrce_wc *w = WC(&t, 0, 0);
	CHECK_EQ(w->wr_id, 77);
	CHECK_EQ(w->status, 0);
	CHECK_EQ(w->op, MRCE_WC_WRITE);
	CHECK_EQ(w->qpn, t.qa);
	CHECK_EQ(w->byte_len, len);
	CHECK_EQ(t.ch->node[0].nwc, 1);
	CHECK_EQ(t.ch->node[1].nwc, 0);               /* a plain WRITE is silent */
	check_placed(&t, loff, roff, len);
	if (!sparse) {
		check_dst_untouched(&t, 0, roff);
		check_dst_untouched(&t, roff + len, roff + len + tail);
	}
	check_guards(&t);
	CHECK_EQ(mrce_qp_info(E(&t, 1), t.qb, &qi), 0);
	CHECK_EQ(qi.bytes_placed, len);
	etest_fini(&t);
}

static void test_write_0(void **s) { write_once(0, 0, 100, 0); }
static void test_write_1(void **s) { write_once(1, 3, 5, 0); }
static void test_write_mtu_minus_1(void **s) { write_once(4095, 1, 0, 0); }
static void test_write_mtu(void **s) { write_once(4096, 0, 0, 0); }
static void test_write_mtu_plus_1(void **s) { write_once(4097, 7, 4093, 0); }
static void test_write_multi_mib(void **s) { write_once((5u << 20) + 333, 11, 4097, 0); }
static void test_write_1gib(void **s) { write_once(MRCE_MAX_MSG, 0, 0, 1); }

/* ---- WRITE_IMM, SEND/RECV, ATOMIC ------------------------------------- */

struct imm_check {
	struct etest *t;
	uint64_t loff, roff, len;
	int seen, data_ok;
};

/* At the moment the receive completion is polled the data must be there. */
static void on_wc_imm(struct chan *ch, uint32_t n, const struct mrce_wc *w, void *arg)
{
	struct imm_check *c = arg;
	if (n == 1 && w->op == MRCE_WC_RECV_WRITE_IMM) {
		c->seen++;
		c->data_ok = !memcmp(c->t->src.p + c->loff, c->t->dst.p + c->roff, c->len);
	}
}

static void test_write_imm(void **s)
{
	struct chan_cfg cc;
	struct etest t;
	struct imm_check ic = { .loff = 5, .roff = 9, .len = 3 * 4096 + 17 };

	cfg_two(&cc, 8, 2);
	CHECK_EQ(etest_init(&t, &cc, 1 << 16, 1 << 16, 0), 0);
	ic.t = &t;
	t.ch->on_wc = on_wc_imm;
	t.ch->hook_arg = &ic;
	CHECK_EQ(etest_post(t.ch, 0, t.qa, MRC_SQE_WRITE_IMM, 3, t.lkey, ic.loff, ic.len, t.rkey,
			    ic.roff, 0xdeadbeef, 0), 0);
	CHECK_EQ(etest_run2(t.ch, 1, 1, 1 * SEC), 0);
	CHECK_EQ(WC(&t, 0, 0)->op, MRCE_WC_WRITE_IMM);
	CHECK_EQ(WC(&t, 0, 0)->status, 0);
	const struct mrce_wc *r = WC(&t, 1, 0);
	CHECK_EQ(r->op, MRCE_WC_RECV_WRITE_IMM);
	CHECK_EQ(r->qpn, t.qb);
	CHECK_EQ(r->status, 0);
	CHECK_EQ(r->has_imm, 1);
	CHECK_EQ(r->imm, 0xdeadbeef);
	CHECK_EQ(r->byte_len, ic.len);
	CHECK_EQ(ic.seen, 1);
	CHECK(ic.data_ok);
	check_dst_untouched(&t, 0, ic.roff);
	check_dst_untouched(&t, ic.roff + ic.len, 1 << 16);
	check_guards(&t);
	etest_fini(&t);
}

static void send_recv(int with_imm, int recv_late)
{
	struct chan_cfg cc;
	struct etest t;
	const uint64_t len = 5000, roff = 100, rlen = 8192, loff = 7;

	cfg_two(&cc, 8, 2);
	CHECK_EQ(etest_init(&t, &cc, 1 << 16, 1 << 16, 0), 0);
	if (!recv_late)
		CHECK_EQ(mrce_qp_post_recv(E(&t, 1), t.qb, 5, t.dst_lkey, roff, rlen), 0);
	CHECK_EQ(etest_post(t.ch, 0, t.qa, with_imm ? MRC_SQE_SEND_IMM : MRC_SQE_SEND, 4, t.lkey,
			    loff, len, 0, 0, 0x1234, 0), 0);
	if (recv_late) {
		/* Receiver not ready: nothing may complete, nothing is placed. */
		CHECK_EQ(chan_run(t.ch, NULL, NULL, 400 * US, ETEST_MAX_STEPS), 0);
		CHECK_EQ(t.ch->node[0].wc_total, 0);
		CHECK_EQ(t.ch->node[1].wc_total, 0);
		check_dst_untouched(&t, 0, 1 << 16);
		struct mrce_stats st;
		mrce_stats(E(&t, 1), &st);
		CHECK(st.nack_tx[MRC_NACK_RNR] > 0);
		CHECK_EQ(mrce_qp_post_recv(E(&t, 1), t.qb, 5, t.dst_lkey, roff, rlen), 0);
	}
	CHECK_EQ(etest_run2(t.ch, 1, 1, 1 * SEC), 0);
	CHECK_EQ(WC(&t, 0, 0)->op, with_imm ? MRCE_WC_SEND_IMM : MRCE_WC_SEND);
	CHECK_EQ(WC(&t, 0, 0)->wr_id, 4);
	CHECK_EQ(WC(&t, 0, 0)->status, 0);
	const struct mrce_wc *r = WC(&t, 1, 0);
	CHECK_EQ(r->op, MRCE_WC_RECV);
	CHECK_EQ(r->wr_id, 5);
	CHECK_EQ(r->status, 0);
	CHECK_EQ(r->byte_len, len);
	CHECK_EQ(r->has_imm, with_imm);
	if (with_imm)
		CHECK_EQ(r->imm, 0x1234);
	check_placed(&t, loff, roff, len);
	check_dst_untouched(&t, 0, roff);
	check_dst_untouched(&t, roff + len, 1 << 16);
	check_guards(&t);
	etest_fini(&t);
}

static void test_send_recv(void **s) { send_recv(0, 0); }
static void test_send_imm(void **s) { send_recv(1, 0); }
static void test_send_rnr(void **s) { send_recv(0, 1); }

static void test_send_too_big(void **s)
{
	struct chan_cfg cc;
	struct etest t;
	struct mrce_qp_info qi;

	cfg_two(&cc, 8, 2);
	CHECK_EQ(etest_init(&t, &cc, 1 << 16, 1 << 16, 0), 0);
	CHECK_EQ(mrce_qp_post_recv(E(&t, 1), t.qb, 5, t.dst_lkey, 0, 1000), 0);
	CHECK_EQ(etest_post(t.ch, 0, t.qa, MRC_SQE_SEND, 4, t.lkey, 0, 3000, 0, 0, 0, 0), 0);
	CHECK_EQ(etest_run2(t.ch, 1, 0, 1 * SEC), 0);
	const struct mrce_wc *w = WC(&t, 0, 0);
	if (w->status != -EMSGSIZE && w->status != -EACCES)
		fail_msg("oversized SEND completed with %d (seed %" PRIu64 ")", w->status, g_seed);
	CHECK_EQ(mrce_qp_info(E(&t, 0), t.qa, &qi), 0);
	CHECK_EQ(qi.state, MRCE_QPS_ERROR);
	/* Let the receiver settle, then: its RECV (if completed) failed, and
	 * nothing past the 1000-byte receive buffer was written. */
	CHECK_EQ(chan_run(t.ch, NULL, NULL, 10 * MS, ETEST_MAX_STEPS), 0);
	for (size_t i = 0; i < t.ch->node[1].nwc; i++)
		CHECK(WC(&t, 1, i)->status < 0);
	check_dst_untouched(&t, 1000, 1 << 16);
	check_guards(&t);
	etest_fini(&t);
}

static void test_atomic_add(void **s)
{
	struct chan_cfg cc;
	struct etest t;
	struct mrc_rng r;
	uint64_t v0, sum = 0, v;

	cfg_two(&cc, 8, 2);
	CHECK_EQ(etest_init(&t, &cc, 4096, 4096, 0), 0);
	mrc_rng_seed(&r, g_seed);
	v0 = mrc_rng_next(&r);
	memcpy(t.dst.p + 64, &v0, 8);
	for (int i = 0; i < 16; i++) {
		uint64_t a = mrc_rng_next(&r);  /* wraps: the add is mod 2^64 */
		sum += a;
		CHECK_EQ(etest_post(t.ch, 0, t.qa, MRC_SQE_ATOMIC_ADD, i, 0, 0, 8, t.rkey, 64, 0, a), 0);
	}
	CHECK_EQ(etest_run2(t.ch, 16, 0, 1 * SEC), 0);
	for (int i = 0; i < 16; i++) {
		CHECK_EQ(WC(&t, 0, i)->wr_id, i);
		CHECK_EQ(WC(&t, 0, i)->op, MRCE_WC_ATOMIC_ADD);
		CHECK_EQ(WC(&t, 0, i)->status, 0);
	}
	memcpy(&v, t.dst.p + 64, 8);
	CHECK(v == v0 + sum);
	check_dst_untouched(&t, 0, 64);
	check_dst_untouched(&t, 72, 4096);
	check_guards(&t);
	/* A misaligned atomic is refused at post time. */
	CHECK(etest_post(t.ch, 0, t.qa, MRC_SQE_ATOMIC_ADD, 99, 0, 0, 8, t.rkey, 65, 0, 1) < 0);
	etest_fini(&t);
}

/* ---- access violations ------------------------------------------------- */

enum { AV_BAD_KEY, AV_OOB, AV_NO_WRITE_RIGHT, AV_OTHER_PD, AV_ATOMIC_NO_RIGHT, AV__N };

static void access_case(int kind)
{
	struct chan_cfg cc;
	struct etest t;
	struct mrce_qp_info qi;
	const uint64_t dlen = 1 << 16, good_off = 1 << 15;
	uint64_t roff = 0, len = 3 * 4096;
	uint32_t key = 0;
	uint8_t op = MRC_SQE_WRITE;

	cfg_two(&cc, 8, 2);
	CHECK_EQ(etest_init(&t, &cc, dlen, dlen, 0), 0);
	switch (kind) {
	case AV_BAD_KEY:
		key = t.rkey + 1000003;
		break;
	case AV_OOB:
		key = t.rkey;
		roff = dlen - 100;
		len = 200;
		break;
	case AV_NO_WRITE_RIGHT:
		CHECK_EQ(mrce_mr_add(E(&t, 1), ETEST_PD, t.dst.p, dlen / 2,
				    MRCE_ACCESS_LOCAL_WRITE | MRCE_ACCESS_REMOTE_ATOMIC, &key), 0);
		break;
	case AV_OTHER_PD:
		CHECK_EQ(mrce_mr_add(E(&t, 1), ETEST_PD + 1, t.dst.p, dlen / 2,
				    MRCE_ACCESS_REMOTE_WRITE | MRCE_ACCESS_REMOTE_ATOMIC, &key), 0);
		break;
	case AV_ATOMIC_NO_RIGHT:
		CHECK_EQ(mrce_mr_add(E(&t, 1), ETEST_PD, t.dst.p, dlen / 2,
				    MRCE_ACCESS_REMOTE_WRITE, &key), 0);
		op = MRC_SQE_ATOMIC_ADD;
		roff = 128;
		len = 8;
		break;
	}
	CHECK_EQ(etest_post(t.ch, 0, t.qa, op, 100, t.lkey, 0, len, key, roff, 0, 5), 0);
	CHECK_EQ(etest_post(t.ch, 0, t.qa, MRC_SQE_WRITE, 101, t.lkey, 0, 4096, t.rkey, good_off,
			    0, 0), 0);
	CHECK_EQ(etest_post(t.ch, 0, t.qa, MRC_SQE_WRITE_IMM, 102, t.lkey, 0, 10, t.rkey,
			    good_off, 1, 0), 0);
	CHECK_EQ(etest_run2(t.ch, 3, 0, 1 * SEC), 0);
	CHECK_EQ(WC(&t, 0, 0)->wr_id, 100);
	CHECK_EQ(WC(&t, 0, 0)->status, -EACCES);
	CHECK_EQ(WC(&t, 0, 1)->wr_id, 101);
	CHECK_EQ(WC(&t, 0, 1)->status, -ECANCELED);
	CHECK_EQ(WC(&t, 0, 2)->wr_id, 102);
	CHECK_EQ(WC(&t, 0, 2)->status, -ECANCELED);
	CHECK_EQ(mrce_qp_info(E(&t, 0), t.qa, &qi), 0);
	CHECK_EQ(qi.state, MRCE_QPS_ERROR);
	CHECK_EQ(qi.error, -EACCES);
	int seen = 0;
	for (size_t i = 0; i < t.ch->node[0].nevt; i++) {
		const struct mrce_event *x = &t.ch->node[0].evt[i];
		if (x->type == MRCE_EVT_QP_ERROR && x->qpn == t.qa && x->err == -EACCES)
			seen++;
	}
	CHECK_EQ(seen, 1);
	/* An ERROR QP takes no new work. */
	CHECK(etest_post(t.ch, 0, t.qa, MRC_SQE_WRITE, 103, t.lkey, 0, 1, t.rkey, 0, 0, 0) < 0);
	struct mrce_stats st;
	mrce_stats(E(&t, 1), &st);
	CHECK(st.access_errors >= 1);
	CHECK(st.nack_tx[MRC_NACK_ACCESS] >= 1);
	/* The refused operation left its target untouched and nothing
	 * outside registered memory moved. */
	check_dst_untouched(&t, 0, good_off);
	check_guards(&t);
	etest_fini(&t);
}

static void test_access_bad_key(void **s) { access_case(AV_BAD_KEY); }
static void test_access_oob(void **s) { access_case(AV_OOB); }
static void test_access_no_write_right(void **s) { access_case(AV_NO_WRITE_RIGHT); }
static void test_access_other_pd(void **s) { access_case(AV_OTHER_PD); }
static void test_access_atomic_no_right(void **s) { access_case(AV_ATOMIC_NO_RIGHT); }

/* Holds the first NACK(ACCESS) from node 1 for 1 ms, so data sent after
 * the receiver failed reaches it, and its NACKs overtake the first one. */
static void on_tx_hold_access_nack(struct chan *ch, uint32_t src, uint32_t dst, uint16_t ev,
				   const uint8_t *pkt, size_t len, void *arg)
{
	int *held = arg;
	if (src == 1 && pkt[1] == MRC_OP_ACK && len >= MRC_ACK_HDR_LEN &&
	    pkt[14] == MRC_NACK_ACCESS && !*held) {
		*held = 1;
		ch->hold_ns = 1 * MS;
	}
}

/* The error must be charged to the WR that caused it, whatever order the
 * NACKs come back in: a receiver in ERROR answers later packets with
 * NACK(ACCESS) too, and those must not be taken for the original. */
static void test_access_nack_reordered(void **s)
{
	struct chan_cfg cc;
	struct etest t;
	int held = 0;
	const int n = 40;

	cfg_two(&cc, 8, 2);
	CHECK_EQ(etest_init(&t, &cc, 1 << 20, 1 << 20, 0), 0);
	t.ch->on_tx = on_tx_hold_access_nack;
	t.ch->hook_arg = &held;
	CHECK_EQ(etest_post(t.ch, 0, t.qa, MRC_SQE_WRITE, 100, t.lkey, 0, 100, t.rkey + 1000003,
			    0, 0, 0), 0);
	for (int i = 1; i < n; i++)
		CHECK_EQ(etest_post(t.ch, 0, t.qa, MRC_SQE_WRITE, 100 + i, t.lkey, 0, 64 << 10,
				    t.rkey, 0, 0, 0), 0);
	CHECK_EQ(etest_run2(t.ch, n, 0, 1 * SEC), 0);
	CHECK_EQ(held, 1);
	for (int i = 0; i < n; i++)
		if (WC(&t, 0, i)->status == -EACCES && i != 0)
			fprintf(stderr, "access error charged to wr %d instead of wr 100\n", 100 + i);
	for (int i = 0; i < n; i++) {
		CHECK_EQ(WC(&t, 0, i)->wr_id, 100 + i);
		if (WC(&t, 0, i)->status != (i == 0 ? -EACCES : -ECANCELED))
			fail_msg("wr %d completed with %d, expected %d (seed %" PRIu64 ")", 100 + i,
				 WC(&t, 0, i)->status, i == 0 ? -EACCES : -ECANCELED, g_seed);
	}
	etest_fini(&t);
}

/* ---- payload CRC ------------------------------------------------------- */

/* A 1 MiB WRITE over a path that flips a bit in 5% of packets.  The
 * default config (mrcd's engines start from it and never set
 * skip_payload_crc: daemon/core/node.c) must drop every corrupted payload
 * and still place the data intact; skip_payload_crc (the simulator's, whose
 * fabric cannot corrupt) must check headers only, so a flipped payload bit
 * gets through. */
static void payload_crc_case(int skip)
{
	struct chan_cfg cc;
	struct etest t;
	struct mrce_stats st;

	cfg_two(&cc, 8, 2);
	cc.path.corrupt = 0.05;
	cc.ecfg.skip_payload_crc = (uint8_t)skip;
	CHECK_EQ(etest_init(&t, &cc, 1 << 20, 1 << 20, 0), 0);
	CHECK_EQ(etest_post(t.ch, 0, t.qa, MRC_SQE_WRITE, 5, t.lkey, 0, 1 << 20, t.rkey, 0,
			    0, 0), 0);
	CHECK_EQ(etest_run2(t.ch, 1, 0, 60 * SEC), 0);
	CHECK_EQ(WC(&t, 0, 0)->status, 0);
	CHECK(t.ch->st.corrupted > 0);                /* the fault happened */
	mrce_stats(E(&t, 1), &st);
	if (!skip) {
		CHECK_EQ(t.ch->st.corrupt_accepted, 0);
		CHECK(st.rx_drop[MRC_DROP_PCRC] > 0);
		check_placed(&t, 0, 0, 1 << 20);
	} else {
		CHECK(t.ch->st.corrupt_accepted > 0);
		CHECK_EQ(st.rx_drop[MRC_DROP_PCRC], 0);
	}
	etest_fini(&t);
}

static void test_payload_crc_default(void **s)
{
	struct mrce_cfg c;
	mrce_cfg_default(&c);
	CHECK_EQ(c.skip_payload_crc, 0);
	payload_crc_case(0);
}

static void test_payload_crc_skip(void **s) { payload_crc_case(1); }

/* ---- ordering ---------------------------------------------------------- */

static void test_completion_order(void **s)
{
	struct chan_cfg cc;
	struct etest t;
	struct mrc_rng r;
	const int n = 24;

	cfg_two(&cc, 16, 4);
	cc.path.jitter_ns = 30 * US;        /* heavy reordering */
	CHECK_EQ(etest_init(&t, &cc, 2 << 20, 2 << 20, 0), 0);
	mrc_rng_seed(&r, g_seed);
	for (int i = 0; i < n; i++) {
		/* big ones first, so later small ones could finish first */
		uint64_t len = i % 3 == 0 ? mrc_rng_range(&r, 100000, 400000)
					  : mrc_rng_range(&r, 1, 5000);
		int imm = i % 2;
		CHECK_EQ(etest_post(t.ch, 0, t.qa, imm ? MRC_SQE_WRITE_IMM : MRC_SQE_WRITE, 1000 + i,
				    t.lkey, mrc_rng_below(&r, 1 << 20), len, t.rkey,
				    mrc_rng_below(&r, 1 << 20), (uint32_t)i, 0), 0);
	}
	CHECK_EQ(etest_run2(t.ch, n, n / 2, 10 * SEC), 0);
	for (int i = 0; i < n; i++) {
		CHECK_EQ(WC(&t, 0, i)->wr_id, 1000 + i);
		CHECK_EQ(WC(&t, 0, i)->status, 0);
	}
	for (int i = 0; i < n / 2; i++)
		CHECK_EQ(WC(&t, 1, i)->imm, 2 * i + 1);
	check_guards(&t);
	etest_fini(&t);
}

/* Keys are 32-bit generations: a slot reused many times never gives a
 * stale key back, the count wraps past 2^32 without a 0 key, and a key
 * still registered is skipped when the count comes round to it. */
static void test_mr_key_generations(void **state)
{
	struct mrce_cfg cfg;
	struct mrce *e;
	static uint8_t buf[4096];
	mrce_cfg_default(&cfg);
	cfg.max_mrs = 2;
	CHECK_EQ(mrce_create(&cfg, &e, NULL), 0);
	uint32_t live, k, prev = 0;
	CHECK_EQ(mrce_mr_add(e, 1, buf, 64, MRCE_ACCESS_LOCAL_READ, &live), 0);
	uint32_t live_gen = e->mr_gen;
	for (int i = 0; i < 70000; i++) {            /* > 2^16 reuses of one slot */
		CHECK_EQ(mrce_mr_add(e, 1, buf, 64, MRCE_ACCESS_LOCAL_READ, &k), 0);
		CHECK(k != 0 && k != live && k != prev);
		CHECK_EQ(mrce_mr_add(e, 1, buf, 64, MRCE_ACCESS_LOCAL_READ, &prev), -ENOSPC);
		CHECK_EQ(mrce_mr_remove(e, k), 0);
		CHECK_EQ(mrce_mr_remove(e, k), -ENOENT);   /* stale */
		prev = k;
	}
	/* the 32-bit count wraps: 0 is never a key */
	e->mr_gen = UINT32_MAX - 1;
	for (int i = 0; i < 4; i++) {
		CHECK_EQ(mrce_mr_add(e, 1, buf, 64, MRCE_ACCESS_LOCAL_READ, &k), 0);
		CHECK(k != 0 && k != live);
		CHECK_EQ(mrce_mr_remove(e, k), 0);
	}
	/* 2^32 registrations later the live key's turn comes again: skipped */
	e->mr_gen = live_gen - 1;
	CHECK_EQ(mrce_mr_add(e, 1, buf, 64, MRCE_ACCESS_LOCAL_READ, &k), 0);
	CHECK(k != live);
	CHECK_EQ(mrce_mr_remove(e, k), 0);
	CHECK_EQ(mrce_mr_remove(e, live), 0);
	mrce_destroy(e);
}

/* Control packets leave in the order they were queued and the queue holds
 * exactly ctrl_queue of them (later ones are counted as overflow), also
 * across a partial drain; once drained empty the ring starts again at
 * slot 0 (so a lightly used queue touches only its first slots), and so
 * does the event queue. */
static void probe_evs(struct mrce *e, uint32_t ev0, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		CHECK_EQ(mrce_ev_probe(e, 1000, 0, ev0 + i), 0);
}

static void expect_ctrl(struct mrce *e, uint32_t ev0, int n, int max)
{
	struct mrce_tx_pkt t[64];
	CHECK_EQ(mrce_tx(e, 2000, t, max), n);
	for (int i = 0; i < n; i++)
		if (t[i].ev != ev0 + (uint32_t)i || t[i].plen || t[i].hdr_len == 0)
			fail_msg("control packet %d: ev %u, want %u", i, t[i].ev, ev0 + i);
}

static void test_ctrl_queue_ring(void **state)
{
	(void)state;
	struct mrce_cfg c;
	mrce_cfg_default(&c);
	c.ctrl_queue = 16;
	c.event_queue = 16;
	struct mrce *e = NULL;
	const char *why = NULL;
	CHECK_EQ(mrce_create(&c, &e, &why), 0);
	uint8_t plane[64] = { 0 };
	uint32_t peer;
	CHECK_EQ(mrce_peer_add(e, 64, plane, &peer), 0);
	struct mrce_event ev;
	while (mrce_event_pop(e, &ev))
		;
	struct mrce_stats st;

	probe_evs(e, 0, 20);                 /* 16 fit, 4 overflow */
	mrce_stats(e, &st);
	CHECK_EQ(st.ctrl_overflow, 4);
	expect_ctrl(e, 0, 16, 64);
	CHECK_EQ(e->ctrl_head, 0);           /* empty: back to slot 0 */
	CHECK_EQ(e->ctrl_tail, 0);

	probe_evs(e, 20, 10);                /* partial drain: no restart */
	expect_ctrl(e, 20, 5, 5);
	CHECK_EQ(e->ctrl_head, 5);
	probe_evs(e, 30, 11);                /* 5 + 11 = 16 queued, wrapping */
	mrce_stats(e, &st);
	CHECK_EQ(st.ctrl_overflow, 4);
	probe_evs(e, 41, 1);                 /* the 17th overflows */
	mrce_stats(e, &st);
	CHECK_EQ(st.ctrl_overflow, 5);
	expect_ctrl(e, 25, 16, 64);          /* 25..40 in order */
	CHECK_EQ(e->ctrl_head, 0);
	CHECK_EQ(e->ctrl_tail, 0);

	/* Events: the probes above queued none; force some through a
	 * DENY (one event per EV), drain, and the ring restarts. */
	for (uint32_t i = 0; i < 3; i++)
		CHECK_EQ(mrce_ev_set_denied(e, 3000, peer, 60 + i, 1), 0);
	int n = 0;
	while (mrce_event_pop(e, &ev))
		n++;
	CHECK(n >= 3);
	CHECK_EQ(e->evq_head, 0);
	CHECK_EQ(e->evq_tail, 0);
	mrce_destroy(e);
}

int main(void)
{
	etest_seed("test_engine_basic", 20240601);
	const struct CMUnitTest tests[] = {
		T(test_cfg_validation),
		T(test_mr_reg_dereg),
		T(test_mr_key_generations),
		T(test_post_errors),
		T(test_write_0),
		T(test_write_1),
		T(test_write_mtu_minus_1),
		T(test_write_mtu),
		T(test_write_mtu_plus_1),
		T(test_write_multi_mib),
		T(test_write_1gib),
		T(test_write_imm),
		T(test_send_recv),
		T(test_send_imm),
		T(test_send_rnr),
		T(test_send_too_big),
		T(test_atomic_add),
		T(test_access_bad_key),
		T(test_access_oob),
		T(test_access_no_write_right),
		T(test_access_other_pd),
		T(test_access_atomic_no_right),
		T(test_access_nack_reordered),
		T(test_completion_order),
		T(test_payload_crc_default),
		T(test_payload_crc_skip),
		T(test_ctrl_queue_ring),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
