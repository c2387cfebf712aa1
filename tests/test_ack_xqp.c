/* Cross-QP ACKs (issue 30; docs/wire.md "Cross-QP ACK"): with two one-way
 * QPs between two engines, as an NCCL comm pair has them (requests on one,
 * replies on the other), each reply carries the ACK of its request and
 * each request that of the previous reply, so the ping-pong sends no ACK
 * packets; with cfg.xack 0 (the default) every message gets an ACK packet
 * as before.  The extension carries the acknowledged QP's own token: a
 * forged, misdirected, malformed or corrupted one drops the packet whole;
 * a trimmed packet loses it harmlessly.
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

/* Node 0's QP qa sends requests to node 1's qb; node 1's qc sends replies
 * to node 0's qd (ack_fx with two pairs). */
static struct ack_fx *g_f;

static int fx_init(struct ack_fx *f, int xack)
{
	struct chan_cfg cfg;
	chan_cfg_default(&cfg, g_seed);
	if (xack)
		cfg.ecfg.xack = 1;   /* else the default, which must be off */
	return ack_fx_init(f, &cfg, 2);
}

static int setup_xack(void **state)
{
	reseed(state);
	g_f = calloc(1, sizeof *g_f);
	return g_f ? fx_init(g_f, 1) : -1;
}

static int setup_plain(void **state)
{
	reseed(state);
	g_f = calloc(1, sizeof *g_f);
	return g_f ? fx_init(g_f, 0) : -1;
}

static int teardown(void **state)
{
	(void)state;
	etest_cleanup_all();
	free(g_f);
	return 0;
}

/* Two one-way QPs: each data packet carries the other QP's ACK. */
static void two_qps_no_ack_packets(void **state)
{
	(void)state;
	struct ack_fx *f = g_f;
	ack_fx_pingpong(f, 200, MRC_F_XACK);
	struct mrce_stats s0 = stats(f, 0), s1 = stats(f, 1);
	ack_fx_check_pingpong(f, &s0, &s1, s0.tx_xacks + s1.tx_xacks, s0.rx_xacks + s1.rx_xacks);
	struct mrce_qp_info qi;
	CHECK(mrce_qp_info(E(f, 0), f->t.qa, &qi) == 0 && qi.inflight == 0 &&
	      qi.bytes_acked == 64 * f->pp.want_rounds, "every request acknowledged");
	CHECK(mrce_qp_info(E(f, 1), f->qc, &qi) == 0 && qi.inflight == 0 &&
	      qi.bytes_acked == 64 * f->pp.want_rounds, "every reply acknowledged: %llu",
	      (unsigned long long)qi.bytes_acked);
}

/* cfg.xack 0: nothing rides on the other QP, every message is ACKed by a
 * packet of its own (what an engine of an earlier release does). */
static void off_by_default(void **state)
{
	(void)state;
	struct ack_fx *f = g_f;
	ack_fx_pingpong(f, 50, MRC_F_XACK);
	struct mrce_stats s0 = stats(f, 0), s1 = stats(f, 1);
	CHECK(f->pp.flagged[0] + f->pp.flagged[1] == 0 && s0.tx_xacks + s1.tx_xacks == 0,
	      "no XACK sent");
	CHECK(f->pp.acks[0] + f->pp.acks[1] >= 2 * f->pp.want_rounds - 1, "an ACK packet each: %llu",
	      (unsigned long long)(f->pp.acks[0] + f->pp.acks[1]));
}

/* ---- hand-driven steps ------------------------------------------------ */

/* Node 1 replies once (so it has sent data to node 0), node 0 requests,
 * node 1 holds that request's ACK and its next reply y carries it. */
static void exchange(struct ack_fx *f, struct pkt *y)
{
	struct pkt a[8];
	uint64_t t0 = f->t.ch->now;
	post_msg(f, 1, 100);
	CHECK(take(f, 1, a, 8) == 1, "x1");
	f->t.ch->now = t0 + 10 * US;
	CHECK(rx(f, 0, &a[0]) == 0, "x1 in");
	CHECK(take(f, 0, a, 8) == 1 && a[0].b[1] == MRC_OP_ACK, "node 0 never sent: ACK at once");
	CHECK(rx(f, 1, &a[0]) == 0, "its ACK in");
	post_msg(f, 0, 200);
	CHECK(take(f, 0, a, 8) == 1 && !(view(&a[0]).u.data.flags & MRC_F_XACK), "d1, nothing to carry");
	f->t.ch->now = t0 + 20 * US;
	CHECK(rx(f, 1, &a[0]) == 0, "d1 in");
	CHECK(take(f, 1, a, 8) == 0, "node 1 holds d1's ACK: it sent to node 0 lately");
	f->t.ch->now = t0 + 30 * US;
	post_msg(f, 1, 101);
	CHECK(take(f, 1, y, 1) == 1, "y");
	struct mrc_pkt_view v = view(y);
	CHECK((v.u.data.flags & MRC_F_XACK) && v.u.data.dqpn == f->qd &&
	      v.xack.dqpn == f->t.qa && v.xack.hold == 10 * US / MRC_PB_HOLD_NS &&
	      y->len == MRC_DATA_XHDR_LEN + 64 + 4,
	      "y carries qb's ACK for qa: flags %#x x_dqpn %u hold %u len %zu", v.u.data.flags,
	      v.xack.dqpn, v.xack.hold, y->len);
	CHECK(stats(f, 1).tx_xacks == 1 && stats(f, 1).tx_acks == 0, "one XACK, no ACK packet");
	f->t.ch->now = t0 + 40 * US;
}

static void reencode(struct pkt *p, const struct mrc_pkt_view *v)
{
	CHECK(mrce_wire_put_data_x(p->b, &v->u.data, &v->xack) == MRC_DATA_XHDR_LEN,
	      "re-encoded with XACK");
}

/* A forged token, another QP's number, the carrier's own, a PSN never
 * sent: each drops the packet whole (counted), nothing acknowledged or
 * placed; a corrupted extension fails its CRC; then the genuine packet
 * acknowledges qa and lands. */
static void forged_and_malformed(void **state)
{
	(void)state;
	struct ack_fx *f = g_f;
	struct pkt y, bad;
	exchange(f, &y);
	struct mrc_pkt_view h = view(&y), b;
	struct mrce_qp_info qa0 = qinfo(f, 0, f->t.qa), qd0 = qinfo(f, 0, f->qd);
	struct mrce_stats s = stats(f, 0);
	CHECK(qa0.inflight == 1, "d1 in flight");

	bad = y;
	b = h;
	b.xack.token ^= 1;
	reencode(&bad, &b);
	CHECK(rx(f, 0, &bad) == 0 &&
	      stats(f, 0).rx_bad_token[MRCE_TOK_ACK] == s.rx_bad_token[MRCE_TOK_ACK] + 1,
	      "forged token counted");

	b = h;
	b.xack.dqpn = f->qd;                 /* the carrier itself */
	reencode(&bad, &b);
	CHECK(rx(f, 0, &bad) == 0 &&
	      stats(f, 0).rx_drop[MRC_DROP_FIELD] == s.rx_drop[MRC_DROP_FIELD] + 1,
	      "self-naming counted");

	b = h;
	b.xack.cum_psn = h.xack.cum_psn + 5;      /* beyond anything qa sent */
	reencode(&bad, &b);
	CHECK(rx(f, 0, &bad) == 0 &&
	      stats(f, 0).rx_drop[MRC_DROP_FIELD] == s.rx_drop[MRC_DROP_FIELD] + 2,
	      "never-sent PSN counted");

	bad = y;
	bad.b[MRC_DATA_HDR_LEN + 4] ^= 0x01; /* x_cum_psn, CRC not fixed */
	CHECK(rx(f, 0, &bad) == -EBADMSG &&
	      stats(f, 0).rx_drop[MRC_DROP_HCRC] == s.rx_drop[MRC_DROP_HCRC] + 1,
	      "corrupted extension counted: %llu", (unsigned long long)stats(f, 0).rx_drop[MRC_DROP_HCRC]);

	bad = y;
	bad.len = MRC_DATA_HDR_LEN + 10;    /* extension cut short */
	CHECK(rx(f, 0, &bad) == -EBADMSG &&
	      stats(f, 0).rx_drop[MRC_DROP_LENGTH] == s.rx_drop[MRC_DROP_LENGTH] + 1,
	      "short extension counted");

	struct mrce_qp_info mid = qinfo(f, 0, f->t.qa), midd = qinfo(f, 0, f->qd);
	CHECK(mid.inflight == 1 && mid.bytes_acked == qa0.bytes_acked &&
	      midd.rx_pkts == qd0.rx_pkts && midd.bytes_placed == qd0.bytes_placed,
	      "nothing acknowledged or placed by them");
	CHECK(stats(f, 0).rx_xacks == 0, "none taken");

	CHECK(rx(f, 0, &y) == 0, "genuine");
	struct mrce_qp_info after = qinfo(f, 0, f->t.qa);
	CHECK(after.inflight == 0 && after.bytes_acked == qa0.bytes_acked + 64 &&
	      qinfo(f, 0, f->qd).bytes_placed == qd0.bytes_placed + 64 &&
	      stats(f, 0).rx_xacks == 1 && after.srtt_ns > 0,
	      "the genuine one acknowledges qa (srtt %llu) and lands",
	      (unsigned long long)after.srtt_ns);
}

/* A switch trims y to its 68-byte header: the extension is gone, the
 * packet is taken as trimmed (NACKed for a resend), qa is not yet
 * acknowledged; the resend of y's data and qa's later ACK complete both. */
static void trimmed_loses_extension(void **state)
{
	(void)state;
	struct ack_fx *f = g_f;
	struct pkt y;
	exchange(f, &y);
	struct mrce_stats s = stats(f, 0);
	y.len = mrce_wire_trim(y.b, y.len);
	CHECK(y.len == MRC_DATA_HDR_LEN, "trimmed to the fixed header");
	CHECK(rx(f, 0, &y) == 0 && stats(f, 0).rx_trimmed == s.rx_trimmed + 1,
	      "taken as trimmed");
	CHECK(stats(f, 0).rx_xacks == 0 && qinfo(f, 0, f->t.qa).inflight == 1,
	      "its XACK is not taken");
	/* qa's request is acknowledged in the end anyway (a resend's ACK) */
	f->t.ch->on_wc = NULL;
	uint64_t want[2] = { 3, 3 };
	CHECK(etest_run_wcs(f->t.ch, want, 1000000000ull) == 0, "both complete");
	CHECK(qinfo(f, 0, f->t.qa).inflight == 0 && qinfo(f, 1, f->qc).inflight == 0,
	      "all acknowledged");
}

int main(void)
{
	seed_init("test_ack_xqp");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(two_qps_no_ack_packets, setup_xack, teardown),
		cmocka_unit_test_setup_teardown(off_by_default, setup_plain, teardown),
		cmocka_unit_test_setup_teardown(forged_and_malformed, setup_xack, teardown),
		cmocka_unit_test_setup_teardown(trimmed_loses_extension, setup_xack, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
