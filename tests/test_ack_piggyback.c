/* Piggybacked ACKs (issue 16, item 3; docs/wire.md "Piggybacked ACK"): a
 * ping-pong sends no ACK packets while replies come promptly, a one-way
 * stream still gets ACK packets and never holds them, a held ACK with no
 * data to ride on leaves as a packet at its deadline, a piggybacked ACK
 * drives RTT and congestion control exactly as the equivalent ACK packet,
 * and a forged or malformed one has no effect.
 * Seed: MRC_TEST_SEED=<n> replays a run; it is printed with every failure. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/support/seeded.h"
#include "tests/support/etest.h"
#include "tests/support/ack_fx.h"

#define US 1000ull
#define HOLD (312 * MRC_PB_HOLD_NS)   /* 19968 ns, a whole number of units */

/* One fixture per engine pair (ack_fx, one pair: node 1 sends on qb);
 * the RTT test runs two identical ones. */
static struct ack_fx *g_f, *g_g;

static void fx_init(struct ack_fx *f)
{
	struct chan_cfg cfg;
	chan_cfg_default(&cfg, g_seed);
	int rc = ack_fx_init(f, &cfg, 1);
	CHECK(rc == 0, "ack_fx_init: %d", rc);
}

static int setup(void **state)
{
	reseed(state);
	g_f = calloc(1, sizeof *g_f);
	g_g = calloc(1, sizeof *g_g);
	if (!g_f || !g_g)
		return -1;
	fx_init(g_f);
	fx_init(g_g);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	etest_cleanup_all();
	free(g_f);
	free(g_g);
	return 0;
}

/* Counts packets by kind (and answers messages with answer). */
static struct ack_fx *watch(int answer)
{
	struct ack_fx *f = g_f;
	f->pp.post = post_msg;
	f->pp.arg = f;
	f->pp.flag = MRC_F_PB_ACK;
	pp_watch(f->t.ch, &f->pp, answer);
	return f;
}

static void pingpong_no_ack_packets(void **state)
{
	(void)state;
	struct ack_fx *f = g_f;
	ack_fx_pingpong(f, 200, MRC_F_PB_ACK);
	struct mrce_stats s0 = stats(f, 0), s1 = stats(f, 1);
	ack_fx_check_pingpong(f, &s0, &s1, s0.tx_pb_acks + s1.tx_pb_acks,
			      s0.rx_pb_acks + s1.rx_pb_acks);
}

static int stream_done(struct chan *ch, void *arg)
{
	(void)arg;
	return chan_count_wc(ch, 0, UINT32_MAX, MRCE_WC_WRITE) >= 8;
}

/* Data one way only: the receiver never sent, so it never holds an ACK. */
static void one_way_stream_acks(void **state)
{
	(void)state;
	struct ack_fx *f = watch(0);
	for (uint64_t i = 0; i < 8; i++)
		CHECK(etest_post(f->t.ch, 0, f->t.qa, MRC_SQE_WRITE, i, f->t.lkey, 0, 1 << 16,
				 f->t.rkey, 0, 0, 0) == 0, "post");
	CHECK(chan_run(f->t.ch, stream_done, f, 10000000000ull, ETEST_MAX_STEPS) == 0,
	      "stream finishes");
	struct mrce_stats s1;
	mrce_stats(E(f, 1), &s1);
	CHECK(f->pp.acks[1] > 0 && f->pp.acks[1] == s1.tx_acks, "ACK packets: %llu",
	      (unsigned long long)f->pp.acks[1]);
	CHECK(f->pp.flagged[0] == 0 && s1.tx_pb_acks == 0 && s1.ack_delay_expired == 0,
	      "nothing rides, nothing held");
	/* 8 x 16 packets of 4 KiB, ACKed at least every ack_every */
	CHECK(f->pp.acks[1] >= 8 * 16 / f->t.ch->cfg.ecfg.ack_every, "coalescing as before");
}

/* ---- hand-driven steps ------------------------------------------------ */

static void take_one(struct ack_fx *f, int n, struct pkt *p)
{
	struct pkt more[8];
	int k = take(f, n, more, 8);
	CHECK(k == 1, "node %d sent %d packets, want 1", n, k);
	*p = more[0];
}

static void reencode(struct pkt *p, const struct mrc_data_hdr *h)
{
	mrce_wire_put_data(p->b, h);
}

/* Node n's end of the pair. */
static struct mrce_qp_info qinfo_n(struct ack_fx *f, int n)
{
	return qinfo(f, n, n ? f->t.qb : f->t.qa);
}

/* The exchange both RTT fixtures share, up to node 1's reply y (which
 * carries the ACK of node 0's request d1, held 20 us) and d1 itself.
 *   T0      node 1 sends x1 (so node 1 has sent data lately)
 *   T0+10   node 0 takes x1, sends d1: d1 carries the ACK of x1 at once
 *   T0+20   node 1 takes d1 and holds its ACK (nothing leaves)
 *   T0+20+HOLD  node 1 replies y: y carries the ACK of d1, pb_hold = HOLD
 * and y arrives 10 us later. */
static void exchange(struct ack_fx *f, struct pkt *d1, struct pkt *y)
{
	struct pkt x1, none[8];
	uint64_t t0 = f->t.ch->now;
	post_msg(f, 1, 100);
	take_one(f, 1, &x1);
	f->t.ch->now = t0 + 10 * US;
	CHECK(rx(f, 0, &x1) == 0, "x1");
	post_msg(f, 0, 200);
	take_one(f, 0, d1);
	struct mrc_pkt_view v = view(d1);
	CHECK(v.u.data.flags & MRC_F_PB_ACK, "a request sent right after data carries its ACK");
	CHECK(stats(f, 0).tx_acks == 0, "and no ACK packet went");
	f->t.ch->now = t0 + 20 * US;
	CHECK(rx(f, 1, d1) == 0, "d1");
	CHECK(take(f, 1, none, 8) == 0, "node 1 holds its ACK for its own data");
	CHECK(mrce_next_deadline(E(f, 1)) <= t0 + 20 * US + f->t.ch->cfg.ecfg.ack_delay_ns,
	      "the held ACK has a deadline");
	f->t.ch->now = t0 + 20 * US + HOLD;
	post_msg(f, 1, 101);
	take_one(f, 1, y);
	v = view(y);
	CHECK((v.u.data.flags & MRC_F_PB_ACK) && v.u.data.pb_hold == HOLD / MRC_PB_HOLD_NS,
	      "the reply carries the ACK, held %llu ns (pb_hold %u)",
	      (unsigned long long)HOLD, v.u.data.pb_hold);
	CHECK(stats(f, 1).ack_delay_expired == 0 && stats(f, 1).tx_acks == 0, "no ACK packet");
	f->t.ch->now = t0 + 30 * US + HOLD;
}

/* The ACK packet node 1 would have sent at once instead of holding it:
 * it says what y's piggybacked ACK says, and arrives HOLD before y. */
static void equivalent_ack(struct ack_fx *f, const struct pkt *d1, const struct pkt *y,
			   struct pkt *a)
{
	struct mrc_data_hdr dh = view(d1).u.data, yh = view(y).u.data;
	struct mrc_ack_hdr h = { .dqpn = f->t.qa, .cum_psn = yh.pb_cum_psn,
		.sack_base = yh.pb_cum_psn, .trig_psn = dh.psn, .ev = dh.ev,
		.ts_echo = dh.ts,
		.token = yh.token };
	CHECK(yh.pb_sack == 0 && yh.pb_cum_psn == dh.psn + 1, "in order");
	a->len = mrce_wire_put_ack(a->b, &h);
}

static void rtt_cc_identical(void **state)
{
	(void)state;
	struct pkt fd1, fy, gd1, gy, ack, plain;
	exchange(g_f, &fd1, &fy);
	exchange(g_g, &gd1, &gy);
	CHECK(fd1.len == gd1.len && !memcmp(fd1.b, gd1.b, fd1.len) &&
	      fy.len == gy.len && !memcmp(fy.b, gy.b, fy.len), "fixtures identical");
	struct mrce_qp_info f0 = qinfo_n(g_f, 0), g0 = qinfo_n(g_g, 0);
	CHECK(f0.inflight == 1 && f0.srtt_ns == 0, "d1 in flight, no RTT yet");
	/* F: the reply with its ACK.  G: the equivalent ACK packet, then the
	 * reply without it. */
	CHECK(rx(g_f, 0, &fy) == 0, "fy");
	equivalent_ack(g_g, &gd1, &gy, &ack);
	plain = gy;
	struct mrc_data_hdr h = view(&gy).u.data;
	h.flags &= (uint16_t)~MRC_F_PB_ACK;
	h.pb_cum_psn = 0;
	h.pb_hold = 0;
	reencode(&plain, &h);
	uint64_t t_y = g_g->t.ch->now;
	g_g->t.ch->now = t_y - HOLD;
	CHECK(rx(g_g, 0, &ack) == 0, "G: ACK");
	g_g->t.ch->now = t_y;
	CHECK(rx(g_g, 0, &plain) == 0, "G: data");
	f0 = qinfo_n(g_f, 0);
	g0 = qinfo_n(g_g, 0);
	/* RTT: d1 left at T0+10 and its ACK would have been back at T0+30 */
	uint64_t want = 20 * US;
	CHECK(f0.srtt_ns == want, "piggybacked RTT sample %llu, want %llu",
	      (unsigned long long)f0.srtt_ns, (unsigned long long)want);
	CHECK(f0.srtt_ns == g0.srtt_ns && f0.rto_ns == g0.rto_ns &&
	      f0.cwnd_bytes == g0.cwnd_bytes && f0.inflight == 0 && g0.inflight == 0 &&
	      f0.bytes_acked == g0.bytes_acked && f0.bytes_acked == 64,
	      "QP state: srtt %llu/%llu rto %llu/%llu cwnd %u/%u acked %llu/%llu",
	      (unsigned long long)f0.srtt_ns, (unsigned long long)g0.srtt_ns,
	      (unsigned long long)f0.rto_ns, (unsigned long long)g0.rto_ns,
	      f0.cwnd_bytes, g0.cwnd_bytes, (unsigned long long)f0.bytes_acked,
	      (unsigned long long)g0.bytes_acked);
	/* The path d1 went on: measured alike, without the hold. */
	struct mrce_ev_info fe, ge;
	uint16_t ev = view(&fd1).u.data.ev;
	CHECK(mrce_ev_info(E(g_f, 0), P(g_f, 0), ev, &fe) == 0 &&
	      mrce_ev_info(E(g_g, 0), P(g_g, 0), ev, &ge) == 0, "ev_info");
	CHECK(fe.srtt_ns == want && ge.srtt_ns == want, "path RTT without the hold: %llu / %llu",
	      (unsigned long long)fe.srtt_ns, (unsigned long long)ge.srtt_ns);
	CHECK(fe.state == ge.state && fe.state == MRCE_EV_GOOD, "path GOOD in both");
	/* Both took x1, completed d1 and delivered y. */
	struct mrce_wc wf[4], wg[4];
	int nf = mrce_wc_drain(E(g_f, 0), wf, 4), ng = mrce_wc_drain(E(g_g, 0), wg, 4);
	CHECK(nf == ng && nf == 3, "completions (x1, d1, y) %d / %d", nf, ng);
	CHECK(stats(g_f, 0).rx_pb_acks == 1 && stats(g_g, 0).rx_pb_acks == 0 &&
	      stats(g_f, 1).rx_pb_acks == 1, "rx_pb_acks");
}

/* Node 1 sends x1, node 0 answers d1, node 1 takes d1 at t0 + 20 us and
 * holds its ACK (it sent data lately); returns t0. */
static uint64_t hold_ack_of_d1(struct ack_fx *f)
{
	struct pkt x1, d1, a[8];
	uint64_t t0 = f->t.ch->now;
	post_msg(f, 1, 100);
	take_one(f, 1, &x1);
	f->t.ch->now = t0 + 10 * US;
	rx(f, 0, &x1);
	post_msg(f, 0, 200);
	take_one(f, 0, &d1);
	f->t.ch->now = t0 + 20 * US;
	rx(f, 1, &d1);
	CHECK(take(f, 1, a, 8) == 0 && !mrce_tx_pending(E(f, 1)), "held");
	return t0;
}

/* No data within ack_delay_ns: the held ACK leaves as a packet at its
 * deadline, and it is counted. */
static void held_ack_expires(void **state)
{
	(void)state;
	struct ack_fx *f = g_f;
	struct pkt a[8];
	uint64_t t0 = hold_ack_of_d1(f);
	uint64_t due = mrce_next_deadline(E(f, 1));
	CHECK(due == t0 + 20 * US + f->t.ch->cfg.ecfg.ack_delay_ns, "deadline %llu",
	      (unsigned long long)(due - t0));
	f->t.ch->now = due - 1;
	mrce_tick(E(f, 1), f->t.ch->now);
	CHECK(take(f, 1, a, 8) == 0, "not before its deadline");
	f->t.ch->now = due;
	mrce_tick(E(f, 1), f->t.ch->now);
	CHECK(mrce_tx_pending(E(f, 1)), "due");
	CHECK(take(f, 1, a, 8) == 1 && view(&a[0]).op == MRC_OP_ACK, "an ACK packet");
	CHECK(stats(f, 1).ack_delay_expired == 1, "counted");
	CHECK(mrce_next_deadline(E(f, 1)) != due, "deadline gone");
	CHECK(rx(f, 0, &a[0]) == 0 && qinfo_n(f, 0).inflight == 0, "it acknowledges d1");
}

/* A QP destroyed while it holds an ACK (its owner got the last message and
 * is done) sends that ACK first: the peer's last packet is acknowledged,
 * not retransmitted into a QP that is gone (NOQP, ECONNRESET). */
static void held_ack_leaves_on_destroy(void **state)
{
	(void)state;
	struct ack_fx *f = g_f;
	struct pkt a[8];
	hold_ack_of_d1(f);
	CHECK(mrce_qp_close(E(f, 1), f->t.qb) == 0, "destroy");
	CHECK(take(f, 1, a, 8) == 1 && view(&a[0]).op == MRC_OP_ACK, "the held ACK left");
	CHECK(rx(f, 0, &a[0]) == 0 && qinfo_n(f, 0).inflight == 0, "it acknowledges d1");
	CHECK(mrce_next_deadline(E(f, 1)) == UINT64_MAX, "nothing left to wait for");
}

/* A forged piggyback (wrong token) and one acknowledging what was never
 * sent: the packet is dropped whole (counted), nothing acknowledged and
 * nothing placed; the genuine packet then works. */
static void forged_and_malformed(void **state)
{
	(void)state;
	struct ack_fx *f = g_f;
	struct pkt d1, y, bad;
	exchange(f, &d1, &y);
	struct mrc_data_hdr h = view(&y).u.data;
	struct mrce_qp_info before = qinfo_n(f, 0);
	struct mrce_stats s = stats(f, 0);

	bad = y;
	struct mrc_data_hdr b = h;
	b.token ^= 1;
	reencode(&bad, &b);
	CHECK(rx(f, 0, &bad) == 0, "forged");
	CHECK(stats(f, 0).rx_bad_token[MRCE_TOK_DATA] == s.rx_bad_token[MRCE_TOK_DATA] + 1,
	      "forged counted");

	b = h;
	b.pb_cum_psn = h.pb_cum_psn + 5;   /* beyond anything node 0 sent */
	reencode(&bad, &b);
	CHECK(rx(f, 0, &bad) == 0, "malformed");
	CHECK(stats(f, 0).rx_drop[MRC_DROP_FIELD] == s.rx_drop[MRC_DROP_FIELD] + 1,
	      "malformed counted");

	b = h;
	b.pb_sack = 0x8000;                /* a PSN 16 past the cumulative one */
	reencode(&bad, &b);
	CHECK(rx(f, 0, &bad) == 0, "sack beyond");
	struct mrce_qp_info mid = qinfo_n(f, 0);
	CHECK(mid.inflight == before.inflight && mid.bytes_acked == before.bytes_acked &&
	      mid.rx_pkts == before.rx_pkts && mid.bytes_placed == before.bytes_placed,
	      "nothing acknowledged or placed by them");

	CHECK(rx(f, 0, &y) == 0, "genuine");
	struct mrce_qp_info after = qinfo_n(f, 0);
	CHECK(after.inflight == 0 && after.bytes_acked == 64 &&
	      after.bytes_placed == before.bytes_placed + 64,
	      "the genuine one acknowledges and lands");
}

int main(void)
{
	seed_init("test_ack_piggyback");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(pingpong_no_ack_packets, setup, teardown),
		cmocka_unit_test_setup_teardown(one_way_stream_acks, setup, teardown),
		cmocka_unit_test_setup_teardown(rtt_cc_identical, setup, teardown),
		cmocka_unit_test_setup_teardown(held_ack_expires, setup, teardown),
		cmocka_unit_test_setup_teardown(held_ack_leaves_on_destroy, setup, teardown),
		cmocka_unit_test_setup_teardown(forged_and_malformed, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
