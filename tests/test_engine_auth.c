/* Engine token checks (wire v2, issue 12): a packet whose token is not the
 * one its receiver expects is dropped before any effect and counted, for
 * data, ACK, NOQP and probes; the genuine packet, replayed right after,
 * still works (so the drop is the token's doing, not the setup's).
 * The engines are driven by hand on the test channel's fixtures: packets
 * are taken from mrce_tx and handed to mrce_rx directly.
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

#define PKT_MAX (MRC_HDR_MAX + MRC_MAX_PAYLOAD + MRC_TRAILER_LEN)

struct pkt {
	size_t len;
	uint16_t ev;
	uint8_t b[PKT_MAX];
};

static struct etest g_t;

static int setup(void **state)
{
	(void)state;
	reseed(state);
	struct chan_cfg cfg;
	chan_cfg_default(&cfg, g_seed);
	cfg.ecfg.ack_every = 1;
	int rc = etest_init(&g_t, &cfg, 1 << 16, 1 << 16, 0);
	return rc;
}

static int teardown(void **state)
{
	(void)state;
	etest_cleanup_all();
	return 0;
}

static struct mrce *E(int n) { return g_t.ch->node[n].e; }
static uint32_t P(int n) { return g_t.ch->node[n].peer[!n]; }

/* Takes exactly one packet from node n's engine. */
static void take_one(int n, struct pkt *p)
{
	struct mrce_tx_pkt t[4];
	int k = mrce_tx(E(n), g_t.ch->now, t, 4);
	CHECK(k == 1, "node %d sent %d packets, want 1", n, k);
	p->len = mrce_tx_pkt_copy(&t[0], p->b);
	p->ev = t[0].ev;
}

static int rx(int n, const struct pkt *p)
{
	return mrce_rx(E(n), g_t.ch->now, P(n), p->b, p->len, 0);
}

static struct mrc_pkt_view view(const struct pkt *p)
{
	struct mrc_pkt_view v;
	enum mrce_wire_drop why;
	CHECK(mrce_wire_decode(p->b, p->len, &v, &why) == 0, "own packet: %s",
	      mrce_wire_drop_name(why));
	return v;
}

/* The same packet with another token, re-encoded (valid CRCs), as an
 * off-path forger who knows everything but the token would send it. */
static void with_token(const struct pkt *in, struct pkt *out, uint64_t token)
{
	struct mrc_pkt_view v = view(in);
	*out = *in;
	if (mrc_op_is_data(v.op)) {
		v.u.data.token = token;
		mrce_wire_put_data(out->b, &v.u.data);
	} else if (v.op == MRC_OP_ACK) {
		v.u.ack.token = token;
		mrce_wire_put_ack(out->b, &v.u.ack);
	} else {
		v.u.probe.token = token;
		mrce_wire_put_probe(out->b, &v.u.probe);
	}
}

static struct mrce_stats stats(int n)
{
	struct mrce_stats st;
	mrce_stats(E(n), &st);
	return st;
}

static struct mrce_qp_info qinfo(int n, uint32_t qpn)
{
	struct mrce_qp_info qi;
	CHECK(mrce_qp_info(E(n), qpn, &qi) == 0, "qp_info");
	return qi;
}

/* Tokens that are wrong in every way a forger might try. */
static uint64_t wrong_token(int k, uint64_t right)
{
	switch (k) {
	case 0: return 0;
	case 1: return right ^ 1;
	case 2: return right ^ (1ull << 63);
	default: return rnd() | 1;
	}
}

static void post_write(uint64_t wr_id, uint64_t len)
{
	CHECK(etest_post(g_t.ch, 0, g_t.qa, MRC_SQE_WRITE, wr_id, g_t.lkey, 0, len,
			 g_t.rkey, 0, 0, 0) == 0, "post");
}

/* A data packet with a wrong token places nothing, is not answered, is
 * counted; the genuine one then lands and is ACKed. */
static void data_wrong_token(void **state)
{
	(void)state;
	struct pkt d, f;
	uint64_t right = chan_qp_token(g_t.ch, 0, g_t.qa, 1, g_t.qb);
	post_write(1, 512);
	take_one(0, &d);
	CHECK(view(&d).u.data.token == right, "sender uses its tx token");
	for (int k = 0; k < 4; k++) {
		with_token(&d, &f, wrong_token(k, right));
		CHECK(rx(1, &f) == 0, "rx");
		CHECK(stats(1).rx_bad_token[MRCE_TOK_DATA] == (uint64_t)k + 1, "counted");
		CHECK(!mrce_tx_pending(E(1)), "forged data answered");
		struct mrce_qp_info qi = qinfo(1, g_t.qb);
		CHECK(qi.rx_pkts == 0 && qi.bytes_placed == 0 && qi.state == MRCE_QPS_RTS,
		      "forged data had an effect");
		for (size_t i = 0; i < 512; i++)
			CHECK(g_t.dst.p[i] == chan_gbuf_byte(g_t.dst.seed, i),
			      "dst byte %zu changed", i);
	}
	CHECK(rx(1, &d) == 0, "rx genuine");
	CHECK(memcmp(g_t.dst.p, g_t.src.p, 512) == 0, "genuine data placed");
	CHECK(qinfo(1, g_t.qb).bytes_placed == 512, "bytes_placed");
	struct pkt a;
	take_one(1, &a);
	struct mrc_pkt_view v = view(&a);
	CHECK(v.op == MRC_OP_ACK && v.u.ack.nack == 0 &&
	      v.u.ack.token == chan_qp_token(g_t.ch, 1, g_t.qb, 0, g_t.qa),
	      "ACK carries the receiver's tx token");
	CHECK(stats(1).rx_bad_token[MRCE_TOK_DATA] == 4, "count");
}

/* A forged ACK (every field right but the token) acknowledges nothing and
 * completes nothing; the genuine ACK does. */
static void ack_wrong_token(void **state)
{
	(void)state;
	struct pkt d, a, f;
	post_write(7, 256);
	take_one(0, &d);
	rx(1, &d);
	take_one(1, &a);
	uint64_t right = view(&a).u.ack.token;
	struct mrce_qp_info before = qinfo(0, g_t.qa);
	CHECK(before.inflight == 1, "one in flight");
	for (int k = 0; k < 4; k++) {
		with_token(&a, &f, wrong_token(k, right));
		rx(0, &f);
		struct mrce_qp_info qi = qinfo(0, g_t.qa);
		CHECK(qi.bytes_acked == 0 && qi.inflight == 1 && qi.state == MRCE_QPS_RTS &&
		      qi.srtt_ns == before.srtt_ns && qi.nacks_rx == 0,
		      "forged ACK had an effect");
		struct mrce_wc wc;
		CHECK(mrce_wc_drain(E(0), &wc, 1) == 0, "forged ACK completed work");
	}
	CHECK(stats(0).rx_bad_token[MRCE_TOK_ACK] == 4, "counted");
	/* A forged NACK ACCESS would fail the QP: dropped the same way. */
	struct mrc_pkt_view v = view(&a);
	v.u.ack.nack = MRC_NACK_ACCESS;
	v.u.ack.token = right ^ 0x100;
	mrce_wire_put_ack(f.b, &v.u.ack);
	f.len = MRC_ACK_HDR_LEN;
	rx(0, &f);
	CHECK(qinfo(0, g_t.qa).state == MRCE_QPS_RTS, "forged NACK failed the QP");
	CHECK(stats(0).rx_bad_token[MRCE_TOK_ACK] == 5, "counted");

	rx(0, &a);
	CHECK(qinfo(0, g_t.qa).bytes_acked == 256, "genuine ACK acknowledges");
	struct mrce_wc wc;
	CHECK(mrce_wc_drain(E(0), &wc, 1) == 1 && wc.wr_id == 7 && wc.status == 0,
	      "genuine ACK completes");
}

/* NOQP: a forged one naming our peer's QP (its number is no secret) does
 * not kill the connection; the one the peer really sends, echoing the
 * data packet's token, does. */
static void noqp_forged_and_real(void **state)
{
	(void)state;
	uint64_t tx = chan_qp_token(g_t.ch, 0, g_t.qa, 1, g_t.qb);
	uint64_t rxt = chan_qp_token(g_t.ch, 1, g_t.qb, 0, g_t.qa);
	/* Every token but our own tx: the ACK-direction one too (an observer
	 * of ACKs must not be able to turn it into a NOQP). */
	const uint64_t forged[] = { 0, rxt, tx ^ 1, rnd() | 1 };
	struct pkt f;
	for (size_t k = 0; k < sizeof forged / sizeof forged[0]; k++) {
		struct mrc_ack_hdr h = { .nack = MRC_NACK_NOQP, .dqpn = g_t.qb,
			.token = forged[k] };
		f.len = mrce_wire_put_ack(f.b, &h);
		rx(0, &f);
		CHECK(qinfo(0, g_t.qa).state == MRCE_QPS_RTS, "forged NOQP %zu killed the QP", k);
	}
	CHECK(stats(0).rx_bad_token[MRCE_TOK_NOQP] == 4, "counted");
	/* Still works after the forgeries. */
	post_write(1, 128);
	struct pkt d, a;
	take_one(0, &d);
	rx(1, &d);
	take_one(1, &a);
	rx(0, &a);
	CHECK(qinfo(0, g_t.qa).bytes_acked == 128, "transfer after forged NOQPs");

	/* The real thing: the peer's QP is gone. */
	CHECK(mrce_qp_close(E(1), g_t.qb) == 0, "destroy");
	post_write(2, 128);
	take_one(0, &d);
	rx(1, &d);
	take_one(1, &a);
	struct mrc_pkt_view v = view(&a);
	CHECK(v.u.ack.nack == MRC_NACK_NOQP && v.u.ack.token == tx,
	      "NOQP echoes the data packet's token");
	rx(0, &a);
	struct mrce_qp_info qi = qinfo(0, g_t.qa);
	CHECK(qi.state == MRCE_QPS_ERROR && qi.error == -ECONNRESET, "real NOQP resets");
	CHECK(stats(0).rx_bad_token[MRCE_TOK_NOQP] == 4, "not counted as forged");
}

/* Probes: a forged PROBE gets no reply, a forged PROBE_REPLY (right seq,
 * EV and timestamp) does not bring a path back; the genuine ones do. */
static void probe_wrong_token(void **state)
{
	(void)state;
	const uint32_t ev = 3;
	uint64_t now = g_t.ch->now;
	/* Deny then allow: the EV is ASSUMED_BAD and gets probed. */
	CHECK(mrce_ev_set_denied(E(0), now, P(0), ev, 1) == 0 &&
	      mrce_ev_set_denied(E(0), now, P(0), ev, 0) == 0, "deny/allow");
	struct mrce_ev_info in;
	mrce_ev_info(E(0), P(0), ev, &in);
	CHECK(in.state == MRCE_EV_ASSUMED_BAD, "assumed bad");
	CHECK(mrce_ev_probe(E(0), now, P(0), ev) == 0, "probe");
	struct pkt pr, rep, f;
	take_one(0, &pr);
	CHECK(view(&pr).u.probe.token == chan_probe_token(g_t.ch, 0, 1), "probe token");

	/* Forged PROBE to node 1: no reply. */
	for (int k = 0; k < 4; k++) {
		with_token(&pr, &f, wrong_token(k, view(&pr).u.probe.token));
		rx(1, &f);
		CHECK(!mrce_tx_pending(E(1)), "forged probe answered");
	}
	CHECK(stats(1).rx_bad_token[MRCE_TOK_PROBE] == 4, "counted");

	/* The genuine probe is answered; forge its reply's token. */
	g_t.ch->now += 10000;
	rx(1, &pr);
	take_one(1, &rep);
	struct mrc_pkt_view rv = view(&rep);
	CHECK(rv.op == MRC_OP_PROBE_REPLY && rv.u.probe.token == chan_probe_token(g_t.ch, 1, 0),
	      "reply token");
	for (int round = 0; round < 5; round++) {
		for (int k = 0; k < 4; k++) {
			with_token(&rep, &f, wrong_token(k, rv.u.probe.token));
			rx(0, &f);
		}
		mrce_ev_info(E(0), P(0), ev, &in);
		CHECK(in.state == MRCE_EV_ASSUMED_BAD && in.probes_ok == 0,
		      "forged replies brought the path back");
	}
	CHECK(stats(0).rx_bad_token[MRCE_TOK_PROBE] == 20, "counted");
	struct mrce_event e;
	while (mrce_event_pop(E(0), &e))
		CHECK(e.type != MRCE_EVT_PROBE_RESULT, "forged reply reported as a result");

	/* Genuine replies: the first counts, then the channel finishes. */
	rx(0, &rep);
	mrce_ev_info(E(0), P(0), ev, &in);
	CHECK(in.probes_ok == 1, "genuine reply counted");
	for (int i = 0; i < 100 && in.state != MRCE_EV_GOOD; i++) {
		chan_run(g_t.ch, NULL, NULL, 1000000, ETEST_MAX_STEPS);
		mrce_ev_info(E(0), P(0), ev, &in);
	}
	CHECK(in.state == MRCE_EV_GOOD, "genuine probes bring the path back");
}

/* Audit finding B: a PROBE_REPLY with the right token and seq that does
 * not echo the outstanding probe's send time exactly changes nothing and
 * is counted (rx_probe_stale): one recorded before a restart (seq
 * restarts at 1, so its seq matches; its ts_echo is the old probe's), one
 * with ts_echo 0 (which would make the RTT `now` and stretch
 * probe_rtt_hi), one from the future.  The genuine reply still works. */
static void probe_reply_must_echo_probe(void **state)
{
	(void)state;
	const uint32_t ev = 2;
	uint64_t now = g_t.ch->now + 5000000;
	g_t.ch->now = now;
	CHECK(mrce_ev_set_denied(E(0), now, P(0), ev, 1) == 0 &&
	      mrce_ev_set_denied(E(0), now, P(0), ev, 0) == 0, "deny/allow");
	CHECK(mrce_ev_probe(E(0), now, P(0), ev) == 0, "probe");
	struct pkt pr, rep, f;
	take_one(0, &pr);
	struct mrc_probe_hdr ph = view(&pr).u.probe;
	g_t.ch->now += 10000;
	rx(1, &pr);
	take_one(1, &rep);
	struct mrc_probe_hdr rh = view(&rep).u.probe;
	CHECK(rh.ts_echo == ph.ts && rh.seq == ph.seq, "reply echoes the probe");
	const uint64_t bad_echo[] = { ph.ts - 1000 /* an older probe's */, 0,
		g_t.ch->now + 1000000000ull /* the future */, ph.ts + 1 };
	struct mrce_ev_info in;
	for (size_t k = 0; k < sizeof bad_echo / sizeof bad_echo[0]; k++) {
		struct mrc_probe_hdr h = rh;
		h.ts_echo = bad_echo[k];
		f = rep;
		f.len = mrce_wire_put_probe(f.b, &h);
		rx(0, &f);
		mrce_ev_info(E(0), P(0), ev, &in);
		CHECK(in.state == MRCE_EV_ASSUMED_BAD && in.probes_ok == 0,
		      "reply %zu with ts_echo %llu taken", k, (unsigned long long)bad_echo[k]);
	}
	CHECK(stats(0).rx_probe_stale == 4, "counted: %llu",
	      (unsigned long long)stats(0).rx_probe_stale);
	CHECK(stats(0).rx_bad_token[MRCE_TOK_PROBE] == 0, "not as a bad token");
	struct mrce_event e;
	while (mrce_event_pop(E(0), &e))
		CHECK(e.type != MRCE_EVT_PROBE_RESULT, "stale reply reported as a result");
	rx(0, &rep);
	mrce_ev_info(E(0), P(0), ev, &in);
	CHECK(in.probes_ok == 1, "genuine reply counted");
	/* Answered: the same reply again is stale too. */
	rx(0, &rep);
	CHECK(stats(0).rx_probe_stale == 5 && in.probes_ok == 1, "answered probe taken twice");
}

/* Audit finding C: NOQP NACKs leave through a token bucket (noqp_burst,
 * then noqp_per_s): a flood of data for a gone QP, from an address that
 * names a peer, gets a bounded number of answers; the rest are counted. */
static void noqp_rate_limited(void **state)
{
	(void)state;
	post_write(1, 128);
	struct pkt d, a;
	take_one(0, &d);
	CHECK(mrce_qp_close(E(1), g_t.qb) == 0, "destroy");
	struct mrce_cfg c;
	mrce_cfg_default(&c);
	const int flood = 200;
	for (int i = 0; i < flood; i++)
		rx(1, &d);
	int sent = 0;
	struct mrce_tx_pkt t[64];
	for (int k; (k = mrce_tx(E(1), g_t.ch->now, t, 64)) > 0;)
		sent += k;
	CHECK(sent == (int)c.noqp_burst, "%d NOQPs for %d packets (burst %u)", sent, flood,
	      c.noqp_burst);
	CHECK(stats(1).noqp_limited == (uint64_t)(flood - sent), "limited counted: %llu",
	      (unsigned long long)stats(1).noqp_limited);
	/* The bucket refills: a second later the next one is answered. */
	g_t.ch->now += 1000000000ull;
	rx(1, &d);
	take_one(1, &a);
	CHECK(view(&a).u.ack.nack == MRC_NACK_NOQP, "NOQP after the refill");
}

/* Tokens are set before connect; require_tokens refuses a QP without. */
static void token_setup_rules(void **state)
{
	(void)state;
	uint32_t q;
	struct mrce_qp_attr attr = { .pd = ETEST_PD };
	CHECK(mrce_qp_set_tokens(E(0), g_t.qa, 1, 2) == -EISCONN, "set after connect");
	CHECK(mrce_qp_set_tokens(E(0), 0xdead, 1, 2) == -ENOENT, "no such QP");
	CHECK(mrce_peer_set_probe_tokens(E(0), 999, 1, 2) == -ENOENT, "no such peer");
	CHECK(mrce_qp_open(E(0), &attr, &q) == 0, "create");
	CHECK(mrce_qp_connect(E(0), q, P(0), 5, 0, 0) == -EPERM, "connect without tokens");
	CHECK(mrce_qp_set_tokens(E(0), q, 1, 0) == 0, "set");
	CHECK(mrce_qp_connect(E(0), q, P(0), 5, 0, 0) == -EPERM, "connect with one token");
	CHECK(mrce_qp_set_tokens(E(0), q, 1, 2) == 0, "set");
	CHECK(mrce_qp_connect(E(0), q, P(0), 5, 0, 0) == 0, "connect with tokens");
	CHECK(mrce_qp_close(E(0), q) == 0, "destroy");
	CHECK(strcmp(mrce_tok_kind_name(MRCE_TOK_NOQP), "noqp") == 0 &&
	      strcmp(mrce_tok_kind_name(MRCE_TOK__COUNT), "?") == 0, "names");
}

/* Window and MTU negotiated at connect (mrce_qp_set_limits): a QP limited
 * to 4 packets of 512 bytes has at most 4 in flight, none longer than 512,
 * and its transfer still completes and lands intact. */
static void negotiated_limits(void **state)
{
	(void)state;
	/* No congestion control: the window alone bounds what is in flight. */
	etest_fini(&g_t);
	struct chan_cfg cfg;
	chan_cfg_default(&cfg, g_seed);
	cfg.ecfg.cc = MRCE_CC_FIXED;
	CHECK(etest_init(&g_t, &cfg, 1 << 16, 1 << 16, 0) == 0, "init");
	struct mrce_qp_attr attr = { .pd = ETEST_PD };
	uint32_t qa, qb;
	CHECK(mrce_qp_set_limits(E(0), g_t.qa, 4, 512) == -EISCONN, "set after connect");
	CHECK(mrce_qp_set_limits(E(0), 0xdead, 4, 512) == -ENOENT, "no such QP");
	CHECK(mrce_qp_open(E(0), &attr, &qa) == 0 && mrce_qp_open(E(1), &attr, &qb) == 0,
	      "create");
	CHECK(mrce_qp_set_limits(E(0), qa, 6, 512) == -EINVAL, "window not a power of two");
	CHECK(mrce_qp_set_limits(E(0), qa, 512, 512) == -EINVAL, "window above the cfg's");
	CHECK(mrce_qp_set_limits(E(0), qa, 4, 1u << 20) == -EINVAL, "mtu above the cfg's");
	CHECK(mrce_qp_set_limits(E(0), qa, 4, 512) == 0, "set");
	uint64_t ab = chan_qp_token(g_t.ch, 0, qa, 1, qb), ba = chan_qp_token(g_t.ch, 1, qb, 0, qa);
	CHECK(mrce_qp_set_tokens(E(0), qa, ab, ba) == 0 && mrce_qp_set_tokens(E(1), qb, ba, ab) == 0 &&
	      mrce_qp_connect(E(0), qa, P(0), qb, 100, 200) == 0 &&
	      mrce_qp_connect(E(1), qb, P(1), qa, 200, 100) == 0, "connect");
	uint64_t len = 16384;
	CHECK(etest_post(g_t.ch, 0, qa, MRC_SQE_WRITE, 7, g_t.lkey, 0, len, g_t.rkey, 0, 0, 0) == 0,
	      "post");
	struct mrce_tx_pkt t[64];
	int k = mrce_tx(E(0), g_t.ch->now, t, 64);
	CHECK(k == 4, "%d packets in flight, window 4", k);
	for (int i = 0; i < k; i++)
		CHECK(t[i].plen == 512, "packet %d carries %u bytes, mtu 512", i, t[i].plen);
	/* Those four never arrive: retransmission recovers them. */
	CHECK(etest_run2(g_t.ch, 1, 0, 10000000000ull) == 0, "completes");
	CHECK(memcmp(g_t.src.p, g_t.dst.p, len) == 0, "placed");
}

/* Without require_tokens, engines that set no tokens (the daemon until it
 * derives them) still talk to each other: 0 is compared like any token. */
static void zero_tokens_interoperate(void **state)
{
	(void)state;
	etest_fini(&g_t);
	struct chan_cfg cfg;
	chan_cfg_default(&cfg, g_seed);
	cfg.ecfg.require_tokens = 0;
	CHECK(chan_create(&cfg, &g_t.ch, NULL) == 0, "chan");
	struct mrce_qp_attr attr = { .pd = ETEST_PD };
	uint32_t qa, qb, ka, kb;
	static uint8_t src[4096], dst[4096];
	memset(src, 0x5a, sizeof src);
	CHECK(mrce_qp_open(E(0), &attr, &qa) == 0 && mrce_qp_open(E(1), &attr, &qb) == 0 &&
	      mrce_mr_add(E(0), ETEST_PD, src, sizeof src, MRCE_ACCESS_LOCAL_READ, &ka) == 0 &&
	      mrce_mr_add(E(1), ETEST_PD, dst, sizeof dst, MRCE_ACCESS_REMOTE_WRITE, &kb) == 0 &&
	      mrce_qp_connect(E(0), qa, P(0), qb, 10, 20) == 0 &&
	      mrce_qp_connect(E(1), qb, P(1), qa, 20, 10) == 0, "setup without tokens");
	CHECK(etest_post(g_t.ch, 0, qa, MRC_SQE_WRITE, 1, ka, 0, sizeof src, kb, 0, 0, 0) == 0,
	      "post");
	CHECK(etest_run2(g_t.ch, 1, 0, 1000000000ull) == 0, "completes");
	CHECK(memcmp(src, dst, sizeof src) == 0, "placed");
	chan_destroy(g_t.ch);
	g_t.ch = NULL;
}

int main(void)
{
	seed_init("test_engine_auth");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(data_wrong_token, setup, teardown),
		cmocka_unit_test_setup_teardown(ack_wrong_token, setup, teardown),
		cmocka_unit_test_setup_teardown(noqp_forged_and_real, setup, teardown),
		cmocka_unit_test_setup_teardown(probe_wrong_token, setup, teardown),
		cmocka_unit_test_setup_teardown(probe_reply_must_echo_probe, setup, teardown),
		cmocka_unit_test_setup_teardown(noqp_rate_limited, setup, teardown),
		cmocka_unit_test_setup_teardown(token_setup_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(negotiated_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(zero_tokens_interoperate, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
