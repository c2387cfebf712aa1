/* Traffic classes in the engine (issue 33 item 3): an URGENT QP's data
 * leaves before the other classes', the others keep their minimum share
 * (cfg.bulk_min_pct), every packet of a QP carries its class out of
 * mrce_tx, and the class changes nothing on the MRC wire (an old peer, or
 * a QP of the default class, sees the same bytes). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "transport/engine.h"

#define NPK 100                 /* packets queued per QP, < the window */
#define MTU 1024

struct pair {
	struct mrce *a, *b;          /* a sends, b receives */
	uint32_t apeer, bpeer;
	uint32_t aqp[2], bqp[2];
	uint32_t akey, bkey;
	uint8_t *src, *dst;
};

/* Engine a with two QPs of classes tc0 and tc1 (created in that order)
 * to engine b, whose QPs have classes rtc0 and rtc1. */
static void pair_init(struct pair *p, uint32_t pct, unsigned tc0, unsigned tc1,
		      unsigned rtc0, unsigned rtc1)
{
	struct mrce_cfg cfg;
	mrce_cfg_default(&cfg);
	cfg.mtu = MTU;
	cfg.cc = MRCE_CC_FIXED;       /* only the window bounds a QP */
	cfg.bulk_min_pct = pct;
	uint8_t planes[4] = { 0, 1, 2, 3 };
	size_t len = 2 * NPK * MTU;
	p->src = malloc(len);
	p->dst = calloc(1, len);
	assert_non_null(p->src);
	assert_non_null(p->dst);
	for (size_t i = 0; i < len; i++)
		p->src[i] = (uint8_t)(i * 13 + 5);
	assert_int_equal(mrce_create(&cfg, &p->a, NULL), 0);
	assert_int_equal(mrce_create(&cfg, &p->b, NULL), 0);
	assert_int_equal(mrce_peer_add(p->a, 4, planes, &p->apeer), 0);
	assert_int_equal(mrce_peer_add(p->b, 4, planes, &p->bpeer), 0);
	unsigned tc[2] = { tc0, tc1 }, rtc[2] = { rtc0, rtc1 };
	for (int q = 0; q < 2; q++) {
		assert_int_equal(mrce_qp_open(p->a, &(struct mrce_qp_attr){ .pd = 1,
			.tclass = tc[q] }, &p->aqp[q]), 0);
		assert_int_equal(mrce_qp_open(p->b, &(struct mrce_qp_attr){ .pd = 1,
			.tclass = rtc[q] }, &p->bqp[q]), 0);
	}
	assert_int_equal(mrce_mr_add(p->a, 1, p->src, len, MRCE_ACCESS_LOCAL_READ, &p->akey), 0);
	assert_int_equal(mrce_mr_add(p->b, 1, p->dst, len, MRCE_ACCESS_REMOTE_WRITE, &p->bkey), 0);
	for (int q = 0; q < 2; q++) {
		assert_int_equal(mrce_qp_connect(p->a, p->aqp[q], p->apeer, p->bqp[q], 10, 70), 0);
		assert_int_equal(mrce_qp_connect(p->b, p->bqp[q], p->bpeer, p->aqp[q], 70, 10), 0);
	}
}

static void pair_free(struct pair *p)
{
	mrce_destroy(p->a);
	mrce_destroy(p->b);
	free(p->src);
	free(p->dst);
}

/* One WRITE of NPK packets on a's QP q (q's half of the buffers). */
static void post(struct pair *p, int q, uint64_t now)
{
	assert_int_equal(mrce_qp_post(p->a, now, p->aqp[q], &(struct mrc_sqe){
		.wr_id = (uint64_t)q + 1, .op = MRC_SQE_WRITE_IMM, .lkey = p->akey,
		.loff = (uint64_t)q * NPK * MTU, .len = NPK * MTU, .rkey = p->bkey,
		.roff = (uint64_t)q * NPK * MTU, .imm = (uint32_t)q }), 0);
}

static struct mrc_pkt_view decode(const struct mrce_tx_pkt *t)
{
	static uint8_t b[MRCE_TX_PKT_MAX];
	struct mrc_pkt_view v;
	enum mrce_wire_drop why;
	size_t l = mrce_tx_pkt_copy(t, b);
	assert_int_equal(mrce_wire_decode(b, l, &v, &why), 0);
	return v;
}

/* The order a's data leaves in: out[i] is the QP index (0/1) of the i-th
 * data packet, as told by its tclass and the QP it names. */
static int drain(struct pair *p, uint64_t now, struct mrce_tx_pkt *keep, int *out, int max)
{
	struct mrce_tx_pkt pk[16];
	int n = 0, k;
	while (n < max && (k = mrce_tx(p->a, now, pk, 16)) > 0)
		for (int i = 0; i < k && n < max; i++) {
			if (!pk[i].plen)
				continue;
			struct mrc_data_hdr h = decode(&pk[i]).u.data;
			int q = h.dqpn == p->bqp[0] ? 0 : 1;
			assert_int_equal(h.dqpn, p->bqp[q]);
			if (keep)
				keep[n] = pk[i];
			out[n++] = q;
		}
	return n;
}

/* Bulk posted first, urgent second: with strict priority (0 %) all the
 * urgent data leaves first, then the bulk. */
static void urgent_first_strict(void **st)
{
	(void)st;
	struct pair p;
	pair_init(&p, 0, MRCE_TC_BULK, MRCE_TC_URGENT, 0, 0);
	post(&p, 0, 1000);
	post(&p, 1, 1000);
	int out[2 * NPK];
	struct mrce_tx_pkt keep[2 * NPK];
	assert_int_equal(drain(&p, 1000, keep, out, 2 * NPK), 2 * NPK);
	for (int i = 0; i < 2 * NPK; i++) {
		int want = i < NPK ? 1 : 0;
		if (out[i] != want)
			fail_msg("packet %d from QP %d, want %d (urgent first)", i, out[i], want);
		assert_int_equal(keep[i].tclass, want ? MRCE_TC_URGENT : MRCE_TC_BULK);
	}
	struct mrce_stats s;
	mrce_stats(p.a, &s);
	assert_int_equal(s.tx_class[MRCE_TC_URGENT], NPK);
	assert_int_equal(s.tx_class[MRCE_TC_BULK], NPK);
	assert_int_equal(s.tx_share_turns, 0);
	pair_free(&p);
}

/* With the default share (10 %) and both bands busy, urgent goes first
 * and bulk still gets exactly one packet in ten: never starved. */
static void bulk_min_share(void **st)
{
	(void)st;
	static const uint32_t pcts[] = { 10, 25, 50 };
	for (unsigned c = 0; c < 3; c++) {
		struct pair p;
		pair_init(&p, pcts[c], MRCE_TC_BULK, MRCE_TC_URGENT, 0, 0);
		post(&p, 0, 1000);
		post(&p, 1, 1000);
		int out[2 * NPK], nbulk = 0;
		/* Only while both still have data: the first 80 packets (five
		 * whole calls of drain's 16, so the counter sees them alone). */
		int n = drain(&p, 1000, NULL, out, 80), want = (int)pcts[c] * 80 / 100;
		assert_int_equal(n, 80);
		assert_int_equal(out[0], 1);           /* urgent leaves first */
		for (int i = 0; i < n; i++)
			nbulk += out[i] == 0;
		if (nbulk != want)
			fail_msg("bulk_min_pct %u: bulk sent %d of %d", pcts[c], nbulk, n);
		struct mrce_stats s;
		mrce_stats(p.a, &s);
		assert_int_equal(s.tx_share_turns, want);
		pair_free(&p);
	}
}

/* DEFAULT and BULK share the lower band round robin, as every QP did
 * before classes: neither is put before the other. */
static void default_and_bulk_round_robin(void **st)
{
	(void)st;
	struct pair p;
	pair_init(&p, 10, MRCE_TC_DEFAULT, MRCE_TC_BULK, 0, 0);
	post(&p, 0, 1000);
	post(&p, 1, 1000);
	int out[2 * NPK];
	assert_int_equal(drain(&p, 1000, NULL, out, 2 * NPK), 2 * NPK);
	for (int i = 0; i < 2 * NPK; i++)
		assert_int_equal(out[i], i & 1);
	pair_free(&p);
}

/* The receiver's ACKs carry its QP's class; the bytes on the MRC wire are
 * the same whatever the classes (none of it is in the header), so an
 * urgent QP talks to an old peer's QP (default class) unchanged, and the
 * transfer completes. */
static void acks_carry_class_wire_unchanged(void **st)
{
	(void)st;
	struct pair p, q;
	pair_init(&p, 10, MRCE_TC_URGENT, MRCE_TC_BULK, MRCE_TC_DEFAULT, MRCE_TC_URGENT);
	pair_init(&q, 10, MRCE_TC_DEFAULT, MRCE_TC_DEFAULT, MRCE_TC_DEFAULT, MRCE_TC_DEFAULT);
	uint64_t now = 1000;
	post(&p, 0, now);
	post(&q, 0, now);
	struct mrce_tx_pkt pp[16], qp[16];
	int acks[MRCE_TC__COUNT] = { 0 }, wcs = 0;
	for (int round = 0; round < 1000 && wcs < 1; round++, now += 1000) {
		int kp = mrce_tx(p.a, now, pp, 16), kq = mrce_tx(q.a, now, qp, 16);
		assert_int_equal(kp, kq);
		for (int i = 0; i < kp; i++) {
			uint8_t bp[MRCE_TX_PKT_MAX], bq[MRCE_TX_PKT_MAX];
			size_t lp = mrce_tx_pkt_copy(&pp[i], bp), lq = mrce_tx_pkt_copy(&qp[i], bq);
			assert_int_equal(lp, lq);
			assert_memory_equal(bp, bq, lp);
			assert_int_equal(pp[i].tclass, pp[i].plen ? MRCE_TC_URGENT : MRCE_TC_DEFAULT);
			assert_int_equal(qp[i].tclass, MRCE_TC_DEFAULT);
			assert_int_equal(mrce_rx(p.b, now, p.bpeer, bp, lp, 0), 0);
			assert_int_equal(mrce_rx(q.b, now, q.bpeer, bq, lq, 0), 0);
		}
		/* p.b's QP 0 is DEFAULT (an old peer): its ACKs are too. */
		int k = mrce_tx(p.b, now, pp, 16);
		for (int i = 0; i < k; i++) {
			acks[pp[i].tclass]++;
			uint8_t b[MRCE_TX_PKT_MAX];
			size_t l = mrce_tx_pkt_copy(&pp[i], b);
			mrce_rx(p.a, now, p.apeer, b, l, 0);
		}
		k = mrce_tx(q.b, now, qp, 16);
		for (int i = 0; i < k; i++) {
			uint8_t b[MRCE_TX_PKT_MAX];
			size_t l = mrce_tx_pkt_copy(&qp[i], b);
			mrce_rx(q.a, now, q.apeer, b, l, 0);
		}
		struct mrce_wc wc[4];
		int c = mrce_wc_drain(p.a, wc, 4);
		for (int i = 0; i < c; i++) {
			assert_int_equal(wc[i].status, 0);
			wcs++;
		}
	}
	assert_int_equal(wcs, 1);
	assert_true(acks[MRCE_TC_DEFAULT] > 0);
	assert_int_equal(acks[MRCE_TC_URGENT] + acks[MRCE_TC_BULK], 0);
	assert_memory_equal(p.dst, p.src, NPK * MTU);
	pair_free(&p);
	pair_free(&q);

	/* An urgent receiver QP's ACKs are urgent. */
	pair_init(&p, 10, MRCE_TC_DEFAULT, MRCE_TC_DEFAULT, MRCE_TC_URGENT, MRCE_TC_BULK);
	post(&p, 0, 1000);
	post(&p, 1, 1000);
	int n = mrce_tx(p.a, 1000, pp, 16);
	for (int i = 0; i < n; i++) {
		uint8_t b[MRCE_TX_PKT_MAX];
		size_t l = mrce_tx_pkt_copy(&pp[i], b);
		assert_int_equal(mrce_rx(p.b, 1000, p.bpeer, b, l, 0), 0);
	}
	memset(acks, 0, sizeof(acks));
	int k = mrce_tx(p.b, 1000, pp, 16);
	assert_true(k > 0);
	for (int i = 0; i < k; i++) {
		struct mrc_ack_hdr h = decode(&pp[i]).u.ack;
		assert_int_equal(pp[i].tclass, h.dqpn == p.aqp[0] ? MRCE_TC_URGENT : MRCE_TC_BULK);
		acks[pp[i].tclass]++;
	}
	assert_true(acks[MRCE_TC_URGENT] > 0 && acks[MRCE_TC_BULK] > 0);
	pair_free(&p);
}

static void bad_values(void **st)
{
	(void)st;
	struct mrce_cfg cfg;
	mrce_cfg_default(&cfg);
	assert_int_equal(cfg.bulk_min_pct, 10);
	struct mrce *e;
	const char *why = NULL;
	cfg.bulk_min_pct = 51;
	assert_int_equal(mrce_create(&cfg, &e, &why), -EINVAL);
	assert_non_null(why);
	cfg.bulk_min_pct = 10;
	assert_int_equal(mrce_create(&cfg, &e, NULL), 0);
	uint32_t qpn;
	assert_int_equal(mrce_qp_open(e, &(struct mrce_qp_attr){ .tclass = MRCE_TC__COUNT },
					&qpn), -EINVAL);
	assert_int_equal(mrce_qp_open(e, &(struct mrce_qp_attr){ .tclass = MRCE_TC_BULK },
					&qpn), 0);
	struct mrce_qp_info info;
	assert_int_equal(mrce_qp_info(e, qpn, &info), 0);
	assert_int_equal(info.tclass, MRCE_TC_BULK);
	assert_string_equal(mrce_tclass_name(MRCE_TC_URGENT), "urgent");
	mrce_destroy(e);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(urgent_first_strict),
		cmocka_unit_test(bulk_min_share),
		cmocka_unit_test(default_and_bulk_round_robin),
		cmocka_unit_test(acks_carry_class_wire_unchanged),
		cmocka_unit_test(bad_values),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
