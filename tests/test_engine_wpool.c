/* The window pool (transport/wpool.c): a QP holds its window state (sender
 * slots; effect records and receive completions) only while it has work.
 * A QP gives its blocks back once quiescent and takes one again on new
 * work, the data right across it; an empty pool makes a post wait and a
 * data packet be refused (RNR) until a block comes back, and everything
 * still completes; a receiver with a hole keeps its block; 1,000 QPs that
 * each worked once leave the pool's pages of one QP resident; a failed
 * QP's RECVs are all flushed though it holds no block.  Virtual
 * time only (tests/support/chan.c).
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
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/support/etest_case.h"
#include "tests/support/resident.h"
#include "transport/store.h"   /* the QPs' block pointers, the pool */

static const struct mrce__qp *QP(struct etest *t, int n, uint32_t qpn)
{
	const struct mrce__qp *qp = mrce__qp_get(E(t, n), qpn);
	CHECK(qp != NULL);
	return qp;
}

static struct mrce_stats stats(struct etest *t, int n)
{
	struct mrce_stats st;
	mrce_stats(E(t, n), &st);
	return st;
}

/* Neither side holds a block, and none is busy on either node. */
static void check_idle(struct etest *t, uint32_t qa, uint32_t qb)
{
	CHECK(QP(t, 0, qa)->slots == NULL);
	CHECK(QP(t, 0, qa)->rslots == NULL);
	CHECK(QP(t, 1, qb)->slots == NULL);
	CHECK(QP(t, 1, qb)->rslots == NULL);
	CHECK(QP(t, 1, qb)->rcq == NULL);
	for (int n = 0; n < 2; n++) {
		struct mrce_stats st = stats(t, n);
		CHECK_EQ(st.wpool_send_busy, 0);
		CHECK_EQ(st.wpool_recv_busy, 0);
	}
}

/* Rounds of WRITE, WRITE_IMM and SEND of seeded sizes: each takes a block
 * when posted (the receiver when its first packet arrives), gives both
 * back once acked and polled, and the next takes the same block again
 * (one ever handed out per kind and node); every byte lands. */
static void test_block_returned_when_idle(void **s)
{
	(void)s;
	struct chan_cfg cc;
	static struct etest t;
	struct mrc_rng r;
	const uint64_t len = 1 << 20;

	cfg_two(&cc, 8, 2);
	CHECK_EQ(etest_init(&t, &cc, len, len, 0), 0);
	mrc_rng_seed(&r, g_seed);
	check_idle(&t, t.qa, t.qb);
	for (int i = 0; i < 24; i++) {
		uint64_t n = 1 + mrc_rng_below(&r, 64 << 10), off = mrc_rng_below(&r, len - n);
		uint8_t op = i % 3 == 0 ? MRC_SQE_WRITE : i % 3 == 1 ? MRC_SQE_WRITE_IMM : MRC_SQE_SEND;
		uint64_t w0 = t.ch->node[0].wc_total, w1 = t.ch->node[1].wc_total;
		if (op == MRC_SQE_SEND)
			CHECK_EQ(mrce_qp_post_recv(E(&t, 1), t.qb, 100 + i, t.dst_lkey, off, n), 0);
		CHECK_EQ(etest_post(t.ch, 0, t.qa, op, i, t.lkey, off, n, t.rkey, off, i, 0), 0);
		CHECK(QP(&t, 0, t.qa)->slots != NULL);   /* taken at the post */
		CHECK_EQ(etest_run2(t.ch, w0 + 1, w1 + (op != MRC_SQE_WRITE), 10 * SEC), 0);
		CHECK_EQ(WC(&t, 0, t.ch->node[0].nwc - 1)->status, 0);
		if (op != MRC_SQE_WRITE) {
			const struct mrce_wc *c = WC(&t, 1, t.ch->node[1].nwc - 1);
			CHECK_EQ(c->status, 0);
			CHECK_EQ(c->byte_len, n);
		}
		check_placed(&t, off, off, n);
		/* Its last ACK may still be on the way back to the sender. */
		CHECK_EQ(chan_run(t.ch, NULL, NULL, 1 * MS, ETEST_MAX_STEPS), 0);
		check_idle(&t, t.qa, t.qb);
	}
	struct mrce_stats a = stats(&t, 0), b = stats(&t, 1);
	CHECK_EQ(a.wpool_send_hwm, 1);
	CHECK_EQ(b.wpool_recv_hwm, 1);
	CHECK_EQ(a.wpool_recv_hwm, 0);   /* the sender never took a receive block */
	CHECK_EQ(b.wpool_send_hwm, 0);
	CHECK_EQ(a.wpool_waits + b.wpool_rnr, 0);
	check_guards(&t);
	etest_fini(&t);
}

/* Holds back the first data packet node 0 sends, once. */
struct hold1 {
	int armed, held;
	uint64_t ns;
};

static void on_tx_hold(struct chan *ch, uint32_t src, uint32_t dst, uint16_t ev,
		       const uint8_t *pkt, size_t len, void *arg)
{
	struct hold1 *h = arg;
	(void)dst; (void)ev; (void)pkt;
	if (!h->armed || src != 0 || len < 1024)
		return;
	h->armed = 0;
	h->held = 1;
	ch->hold_ns = h->ns;
}

static int rx_some(struct chan *ch, void *arg)
{
	struct mrce_qp_info qi;
	CHECK_EQ(mrce_qp_info(ch->node[1].e, *(uint32_t *)arg, &qi), 0);
	return qi.rx_pkts > 0;
}

/* A WRITE_IMM of two packets whose first is held back: the second arrives
 * alone, beyond rcv_nxt, and the receiver keeps its block (its effect
 * record is there) until the hole is filled; then it gives it back, the
 * data and the completion right. */
static void test_half_received_keeps_block(void **s)
{
	(void)s;
	struct chan_cfg cc;
	static struct etest t;
	struct hold1 h = { .armed = 1, .ns = 200 * US };
	const uint64_t n = 8192;

	cfg_two(&cc, 8, 2);
	cc.delay_min = cc.delay_max = 0;
	cc.path.delay_ns = 5 * US;
	CHECK_EQ(etest_init(&t, &cc, 1 << 16, 1 << 16, 0), 0);
	t.ch->on_tx = on_tx_hold;
	t.ch->hook_arg = &h;
	uint32_t qpn = t.qb;
	CHECK_EQ(etest_post(t.ch, 0, t.qa, MRC_SQE_WRITE_IMM, 7, t.lkey, 0, n, t.rkey, 0, 77, 0), 0);
	CHECK_EQ(chan_run(t.ch, rx_some, &qpn, 1 * SEC, ETEST_MAX_STEPS), 0);
	CHECK(h.held);
	const struct mrce__qp *qb = QP(&t, 1, t.qb);
	uint64_t bits = qb->rbits[0] | qb->rbits[1] | qb->rbits[2] | qb->rbits[3];
	CHECK(bits != 0);             /* the second packet, alone */
	CHECK(qb->rslots != NULL);    /* ... keeps the block */
	CHECK_EQ(stats(&t, 1).wpool_recv_busy, 1);
	CHECK_EQ(t.ch->node[1].wc_total, 0);

	CHECK_EQ(etest_run2(t.ch, 1, 1, 10 * SEC), 0);
	CHECK_EQ(WC(&t, 0, 0)->status, 0);
	CHECK_EQ(WC(&t, 1, 0)->status, 0);
	CHECK_EQ(WC(&t, 1, 0)->imm, 77);
	CHECK_EQ(WC(&t, 1, 0)->byte_len, n);
	check_placed(&t, 0, 0, n);
	CHECK_EQ(chan_run(t.ch, NULL, NULL, 1 * MS, ETEST_MAX_STEPS), 0);
	check_idle(&t, t.qa, t.qb);
	check_guards(&t);
	etest_fini(&t);
}

#define NQ 3   /* QPs from node 0 to node 1 */

/* A pool of one block per kind on every node.  Node 0 posts a WRITE on
 * each of NQ QPs at once: one sends, the others wait (wpool_waits) and
 * send in turn.  Node 2 writes to node 1 meanwhile, and node 0's first
 * packet is held back 3 us: node 1's one receive block stays with the QP
 * that has the hole, so node 2's packets are refused with RNR (wpool_rnr)
 * until that QP is idle (a receiver whose packets come in order gives its
 * block back after each).  Every WRITE
 * completes without error and every byte lands; no loss is detected and
 * no path retired for it (RNRs are no losses). */
static void test_pool_exhausted_backpressure(void **s)
{
	(void)s;
	struct chan_cfg cc;
	static struct etest t;
	static struct chan_gbuf src2;
	struct mrce_qp_attr attr = { .pd = ETEST_PD };
	struct hold1 h = { .armed = 1, .ns = 3 * US };   /* < RACK's 10 us */
	struct mrc_rng r;
	uint32_t qa[NQ], qb[NQ], q2, q21, key2;
	const uint64_t part = 256 << 10;

	cfg_two(&cc, 8, 2);
	cc.nodes = 3;
	cc.ecfg.window_pool = 1;
	/* Equal delays: no reordering, so that a path retired could only be
	 * an RNR taken for a loss. */
	cc.delay_min = cc.delay_max = 0;
	cc.path.delay_ns = 5 * US;
	CHECK_EQ(etest_init(&t, &cc, (NQ + 1) * part, (NQ + 1) * part, 0), 0);
	CHECK_EQ(chan_gbuf_alloc(&src2, part, ETEST_GUARD, g_seed * 2 + 7, 1, 0), 0);
	CHECK_EQ(mrce_mr_add(E(&t, 2), ETEST_PD, src2.p, part, MRCE_ACCESS_LOCAL_READ, &key2), 0);
	qa[0] = t.qa;
	qb[0] = t.qb;
	for (int i = 1; i < NQ; i++)
		CHECK_EQ(chan_qp_pair(t.ch, 0, 1, &attr, &attr, &qa[i], &qb[i]), 0);
	CHECK_EQ(chan_qp_pair(t.ch, 2, 1, &attr, &attr, &q2, &q21), 0);
	t.ch->on_tx = on_tx_hold;
	t.ch->hook_arg = &h;
	mrc_rng_seed(&r, g_seed);
	uint64_t n[NQ + 1];
	for (int i = 0; i <= NQ; i++)
		n[i] = part / 2 + mrc_rng_below(&r, part / 2);
	for (int i = 0; i < NQ; i++)
		CHECK_EQ(etest_post(t.ch, 0, qa[i], MRC_SQE_WRITE, i, t.lkey, i * part, n[i],
				    t.rkey, i * part, 0, 0), 0);
	CHECK_EQ(etest_post(t.ch, 2, q2, MRC_SQE_WRITE, 9, key2, 0, n[NQ], t.rkey, NQ * part,
			    0, 0), 0);
	CHECK(QP(&t, 0, qa[0])->slots != NULL);
	for (int i = 1; i < NQ; i++)
		CHECK(QP(&t, 0, qa[i])->slots == NULL);   /* waiting */
	CHECK_EQ(stats(&t, 0).wpool_waits, NQ - 1);

	uint64_t want[CHAN_MAX_NODES] = { NQ, 0, 1 };
	CHECK_EQ(etest_run_wcs(t.ch, want, 60 * SEC), 0);
	for (size_t i = 0; i < t.ch->node[0].nwc; i++)
		CHECK_EQ(WC(&t, 0, i)->status, 0);
	CHECK_EQ(WC(&t, 2, 0)->status, 0);
	for (int i = 0; i < NQ; i++)
		check_placed(&t, i * part, i * part, n[i]);
	if (memcmp(src2.p, t.dst.p + NQ * part, n[NQ]))
		fail_msg("node 2's WRITE misplaced (seed %" PRIu64 ")", g_seed);
	CHECK_EQ(chan_run(t.ch, NULL, NULL, 1 * MS, ETEST_MAX_STEPS), 0);

	struct mrce_stats a = stats(&t, 0), b = stats(&t, 1);
	CHECK(h.held);
	CHECK(b.wpool_rnr > 0);                         /* the receive pool ran out */
	CHECK(a.nack_rx[MRC_NACK_RNR] + stats(&t, 2).nack_rx[MRC_NACK_RNR] > 0);
	CHECK_EQ(a.wpool_send_hwm, 1);
	CHECK_EQ(b.wpool_recv_hwm, 1);
	for (int k = 0; k < 3; k++) {
		struct mrce_stats x = stats(&t, k);
		CHECK_EQ(x.wpool_send_busy + x.wpool_recv_busy, 0);
		CHECK_EQ(x.ev_changes, 0);                  /* no path retired */
		CHECK_EQ(x.loss_detected + x.rto_fires, 0);
	}
	for (int i = 0; i < NQ; i++) {
		CHECK(QP(&t, 0, qa[i])->slots == NULL);
		CHECK(!QP(&t, 0, qa[i])->in_wwait);
	}
	CHECK_EQ(chan_gbuf_guard_bad(&src2), -1);
	check_guards(&t);
	chan_gbuf_free(&src2);
	etest_fini(&t);
}

/* A SEND larger than the RECV it lands in fails the receiver's QP with
 * -EMSGSIZE.  Its posted RECVs are flushed as they are polled (a failed
 * QP may hold no receive block to queue completions in): every one of
 * them, in order, the first with -EMSGSIZE and the rest -ECANCELED, and
 * both QPs end up holding no block. */
static void test_failed_qp_flushes_recvs(void **s)
{
	(void)s;
	struct chan_cfg cc;
	static struct etest t;
	const int nrecv = 5;

	cfg_two(&cc, 8, 2);
	CHECK_EQ(etest_init(&t, &cc, 1 << 16, 1 << 16, 0), 0);
	for (int i = 0; i < nrecv; i++)
		CHECK_EQ(mrce_qp_post_recv(E(&t, 1), t.qb, 10 + i, t.dst_lkey, i * 1000, 1000), 0);
	CHECK_EQ(etest_post(t.ch, 0, t.qa, MRC_SQE_SEND, 4, t.lkey, 0, 3000, 0, 0, 0, 0), 0);
	CHECK_EQ(etest_run2(t.ch, 1, nrecv, 1 * SEC), 0);
	CHECK_EQ(chan_run(t.ch, NULL, NULL, 10 * MS, ETEST_MAX_STEPS), 0);
	struct mrce_qp_info qi;
	CHECK_EQ(mrce_qp_info(E(&t, 1), t.qb, &qi), 0);
	CHECK_EQ(qi.state, MRCE_QPS_ERROR);
	CHECK_EQ(t.ch->node[1].nwc, nrecv);
	for (int i = 0; i < nrecv; i++) {
		CHECK_EQ(WC(&t, 1, i)->wr_id, 10 + i);
		CHECK_EQ(WC(&t, 1, i)->op, MRCE_WC_RECV);
		CHECK_EQ(WC(&t, 1, i)->status, i ? -ECANCELED : -EMSGSIZE);
	}
	check_dst_untouched(&t, 1000, 1 << 16);
	CHECK(QP(&t, 1, t.qb)->rslots == NULL);
	CHECK(QP(&t, 0, t.qa)->slots == NULL);
	CHECK_EQ(stats(&t, 1).wpool_recv_busy, 0);
	CHECK_EQ(stats(&t, 0).wpool_send_busy, 0);
	check_guards(&t);
	etest_fini(&t);
}

static size_t pool_pages(struct mrce *e)
{
	size_t w = e->cfg.window;
	return resident_pages(e->wp_send, e->wp_n * w * sizeof(struct mrce__slot)) +
	       resident_pages(e->wp_recv, e->wp_n * w * (sizeof(struct mrce__rslot) +
							    sizeof(struct mrce__rcqe)));
}

#define IDLE_QPS 1000

/* 1,000 QP pairs, each with one WRITE_IMM of two packets in turn, then
 * idle: one block of each kind was ever handed out, and the pool's
 * resident pages are one QP's (a window of slots, of effect records and
 * of completions at most: 6 pages), not 1,000 QPs'. */
static void test_idle_qps_resident_small(void **s)
{
	(void)s;
	struct chan_cfg cc;
	static struct etest t;
	struct mrce_qp_attr attr = { .pd = ETEST_PD };
	const uint64_t n = 8000;

	cfg_two(&cc, 8, 2);
	CHECK_EQ(etest_init(&t, &cc, IDLE_QPS * n, IDLE_QPS * n, 1), 0);
	for (uint64_t i = 0; i < IDLE_QPS; i++) {
		uint32_t qa = t.qa, qb = t.qb;
		if (i)
			CHECK_EQ(chan_qp_pair(t.ch, 0, 1, &attr, &attr, &qa, &qb), 0);
		uint64_t w0 = t.ch->node[0].wc_total, w1 = t.ch->node[1].wc_total;
		CHECK_EQ(etest_post(t.ch, 0, qa, MRC_SQE_WRITE_IMM, i, t.lkey, i * n, n, t.rkey,
				    i * n, (uint32_t)i, 0), 0);
		CHECK_EQ(etest_run2(t.ch, w0 + 1, w1 + 1, 10 * SEC), 0);
		CHECK_EQ(WC(&t, 1, t.ch->node[1].nwc - 1)->imm, i);
	}
	CHECK_EQ(chan_run(t.ch, NULL, NULL, 1 * MS, ETEST_MAX_STEPS), 0);
	for (int k = 0; k < 2; k++) {
		struct mrce_stats st = stats(&t, k);
		CHECK_EQ(st.wpool_send_busy + st.wpool_recv_busy, 0);
		CHECK(st.wpool_send_hwm + st.wpool_recv_hwm == 1);
	}
	size_t p0 = pool_pages(E(&t, 0)), p1 = pool_pages(E(&t, 1));
	CHECK(p0 >= 1 && p0 <= 2);    /* the sender's slots */
	CHECK(p1 >= 1 && p1 <= 4);    /* effect records and completions */
	etest_fini(&t);
}

int main(void)
{
	etest_seed("test_engine_wpool", 3);
	const struct CMUnitTest tests[] = {
		T(test_block_returned_when_idle),
		T(test_half_received_keeps_block),
		T(test_pool_exhausted_backpressure),
		T(test_idle_qps_resident_small),
		T(test_failed_qp_flushes_recvs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
