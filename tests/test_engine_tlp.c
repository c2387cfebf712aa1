/* Engine unit tests of the tail-loss probe (cfg.tlp_min_ns, loss.c): a
 * message's last packet lost is resent on another plane long before the
 * RTO, the probe is counted, and a peer silent on every path gets none;
 * a lone packet in flight is probed even so, once per silence, after the
 * round trip plus the peer's ACK hold or the floor, whichever is later.
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

#define NPKT 4

/* Drops (holds for a second: gone for the test's span) node 0's data
 * packet number `drop` (1-based, full-MTU payloads only, counted from
 * arming), and records the EVs that packet and the next one went on. */
struct tail {
	uint32_t mtu, seen, drop;
	uint16_t drop_ev, next_ev;
	uint64_t drop_ts, next_ts;   /* when they left */
	int armed;
};

static void on_tx_tail(struct chan *ch, uint32_t src, uint32_t dst, uint16_t ev,
		       const uint8_t *pkt, size_t len, void *arg)
{
	struct tail *tl = arg;
	(void)dst; (void)pkt;
	if (!tl->armed || src != 0 || len < tl->mtu)
		return;
	tl->seen++;
	if (tl->seen == tl->drop) {
		tl->drop_ev = ev;
		tl->drop_ts = ch->now;
		ch->hold_ns = SEC;
	} else if (tl->seen == tl->drop + 1) {
		tl->next_ev = ev;
		tl->next_ts = ch->now;
	}
}

/* 2 nodes, 8 EVs in 2 planes, every path `oneway` one way; the RTT
 * measured by a first write. */
static void tlp_setup_at(struct etest *t, struct chan_cfg *cc, uint64_t tlp_min,
			 uint64_t oneway)
{
	cfg_two(cc, 8, 2);
	cc->delay_min = cc->delay_max = oneway;
	cc->ecfg.tlp_min_ns = tlp_min;
	CHECK_EQ(etest_init(t, cc, 1 << 20, 1 << 20, 0), 0);
	write_and_wait_at(t, t->qa, 0, 64 << 10, 1);
	chan_clear_logs(t->ch);
}

static void tlp_setup(struct etest *t, struct chan_cfg *cc, uint64_t tlp_min)
{
	tlp_setup_at(t, cc, tlp_min, 10 * US);
}

static uint64_t tlp_probes(struct etest *t)
{
	struct mrce_stats st;
	mrce_stats(E(t, 0), &st);
	return st.tlp_probes;
}

/* The last packet of a NPKT-packet write is lost: the probe resends it on
 * the other plane within a few RTTs (well under the 1 ms RTO floor), the
 * write completes then with the counter moved and no RTO fired, and the
 * path that lost it is charged. */
static void run_tail_loss(uint64_t tlp_min)
{
	struct chan_cfg cc;
	struct etest t;
	struct mrce_qp_info qi;
	tlp_setup(&t, &cc, tlp_min);
	struct tail tl = { .mtu = cc.ecfg.mtu, .drop = NPKT, .armed = 1,
			   .drop_ev = UINT16_MAX, .next_ev = UINT16_MAX };
	t.ch->on_tx = on_tx_tail;
	t.ch->hook_arg = &tl;
	CHECK_EQ(mrce_qp_info(E(&t, 0), t.qa, &qi), 0);
	uint64_t rto0 = qi.rto_fires, probes0 = tlp_probes(&t), t0 = t.ch->now;
	write_and_wait_at(&t, t.qa, 0, (uint64_t)NPKT * cc.ecfg.mtu, 2);
	uint64_t took = t.ch->now - t0;
	printf("tail loss, tlp_min_ns %" PRIu64 ": completed in %" PRIu64 " us, %" PRIu64
	       " probes\n", tlp_min, (uint64_t)(took / US), tlp_probes(&t) - probes0);
	CHECK(tl.drop_ev != UINT16_MAX);               /* the loss happened */
	CHECK(tlp_probes(&t) > probes0);               /* a probe went */
	CHECK(took < 300 * US);                         /* not the 1 ms RTO */
	CHECK_EQ(mrce_qp_info(E(&t, 0), t.qa, &qi), 0);
	CHECK_EQ(qi.rto_fires, rto0);
	/* The probe went on the other plane than the lost packet. */
	CHECK(tl.next_ev != UINT16_MAX);
	CHECK(t.ch->plane_of[tl.next_ev] != t.ch->plane_of[tl.drop_ev]);
	/* The lost tail's path was charged as RACK would (an idle fabric: one
	 * loss makes it a suspect, probed; the path itself works, so the
	 * probe answers and it stays GOOD: evs.c mrce__ev_lost). */
	struct mrce_ev_info ei;
	CHECK_EQ(mrce_ev_info(E(&t, 0), t.ch->node[0].peer[1], tl.drop_ev, &ei), 0);
	CHECK(ei.probes_sent >= 1 && ei.probes_ok >= 1);
	CHECK_EQ(ei.state, MRCE_EV_GOOD);
	check_placed(&t, 0, 0, (uint64_t)NPKT * cc.ecfg.mtu);
	etest_fini(&t);
}

static void test_tail_loss_probed(void **s)
{
	(void)s;
	run_tail_loss(50 * US);
}

/* A write of npkt full packets to a peer silent on every path (blackholed from
 * the next instant, after the write is handed over, for 20 ms), run for
 * run_ns; returns the probes sent, *rtos the RTOs fired.  The write
 * completes once the silence ends. */
static uint64_t silent_write(uint64_t npkt, uint64_t run_ns, uint64_t *rtos)
{
	struct chan_cfg cc;
	struct etest t;
	struct mrce_qp_info qi;
	tlp_setup(&t, &cc, 50 * US);
	uint64_t len = npkt * cc.ecfg.mtu;
	uint64_t probes0 = tlp_probes(&t);
	CHECK_EQ(mrce_qp_info(E(&t, 0), t.qa, &qi), 0);
	uint64_t rto0 = qi.rto_fires;
	chan_blackhole_all(t.ch, t.ch->now + 1, t.ch->now + 20 * MS);
	CHECK_EQ(etest_post(t.ch, 0, t.qa, MRC_SQE_WRITE, 2, t.lkey, 0,
			    len, t.rkey, 0, 0, 0), 0);
	CHECK_EQ(chan_run(t.ch, NULL, NULL, run_ns, ETEST_MAX_STEPS), 0);
	CHECK_EQ(mrce_qp_info(E(&t, 0), t.qa, &qi), 0);
	CHECK(t.ch->st.blackholed > 0);
	*rtos = qi.rto_fires - rto0;
	uint64_t probes = tlp_probes(&t) - probes0;
	CHECK_EQ(etest_run2(t.ch, t.ch->node[0].wc_total + 1, 0, 10 * SEC), 0);
	check_placed(&t, 0, 0, len);
	etest_fini(&t);
	return probes;
}

/* The peer silent on every path (a stall, a dead host) with several
 * packets in flight: no probe at all, only the RTO and its backoff, so
 * probes cannot amplify a silence. */
static void test_silent_peer_no_probe(void **s)
{
	(void)s;
	uint64_t rtos;
	CHECK_EQ(silent_write(NPKT, 10 * MS, &rtos), 0);
	CHECK(rtos > 0);                                /* the silence was felt */
}

static uint64_t suspect_probes(struct etest *t)
{
	struct mrce_stats st;
	mrce_stats(E(t, 0), &st);
	return st.suspect_probes;
}

/* A one-packet message lost (a small all-to-all flow in a step): the peer
 * has acked nothing since it left, yet one packet alone in flight is no
 * evidence of a silent peer.  The probe resends it on the other plane well
 * before the RTO; its path is probed, not retired (the packet alone was
 * lost: the probe answers and the path stays GOOD). */
static void test_lone_tail_probed(void **s)
{
	(void)s;
	struct chan_cfg cc;
	struct etest t;
	struct mrce_qp_info qi;
	tlp_setup(&t, &cc, 50 * US);
	struct tail tl = { .mtu = cc.ecfg.mtu, .drop = 1, .armed = 1,
			   .drop_ev = UINT16_MAX, .next_ev = UINT16_MAX };
	t.ch->on_tx = on_tx_tail;
	t.ch->hook_arg = &tl;
	CHECK_EQ(mrce_qp_info(E(&t, 0), t.qa, &qi), 0);
	uint64_t rto0 = qi.rto_fires, probes0 = tlp_probes(&t), t0 = t.ch->now;
	uint64_t sp0 = suspect_probes(&t);
	write_and_wait_at(&t, t.qa, 0, cc.ecfg.mtu, 2);
	uint64_t took = t.ch->now - t0;
	printf("lone tail lost: completed in %" PRIu64 " us, %" PRIu64 " probes\n",
	       (uint64_t)(took / US), tlp_probes(&t) - probes0);
	CHECK(tl.drop_ev != UINT16_MAX);               /* the loss happened */
	CHECK_EQ(tlp_probes(&t), probes0 + 1);
	CHECK(took < 300 * US);                         /* not the 1 ms RTO */
	CHECK_EQ(mrce_qp_info(E(&t, 0), t.qa, &qi), 0);
	CHECK_EQ(qi.rto_fires, rto0);
	CHECK(tl.next_ev != UINT16_MAX);
	CHECK(t.ch->plane_of[tl.next_ev] != t.ch->plane_of[tl.drop_ev]);
	CHECK(suspect_probes(&t) > sp0);                /* its path was asked */
	CHECK_EQ(chan_run(t.ch, NULL, NULL, 2 * MS, ETEST_MAX_STEPS), 0);
	struct mrce_ev_info ei;
	CHECK_EQ(mrce_ev_info(E(&t, 0), t.ch->node[0].peer[1], tl.drop_ev, &ei), 0);
	CHECK_EQ(ei.state, MRCE_EV_GOOD);
	check_placed(&t, 0, 0, cc.ecfg.mtu);
	etest_fini(&t);
}

/* A lone packet to a peer silent on every path: one probe for the whole
 * silence, however many RTOs fire (no probe per RTO during backoff). */
static void test_lone_tail_silent_peer_once(void **s)
{
	(void)s;
	uint64_t rtos;
	CHECK_EQ(silent_write(1, 15 * MS, &rtos), 1);
	CHECK(rtos >= 2);                               /* a long silence */
}

/* A one-packet write lost on a path `oneway` one way; returns how long
 * after it left its probe's resend left. */
static uint64_t lone_probe_wait(uint64_t oneway)
{
	struct chan_cfg cc;
	struct etest t;
	tlp_setup_at(&t, &cc, 50 * US, oneway);
	struct tail tl = { .mtu = cc.ecfg.mtu, .drop = 1, .armed = 1,
			   .drop_ev = UINT16_MAX, .next_ev = UINT16_MAX };
	t.ch->on_tx = on_tx_tail;
	t.ch->hook_arg = &tl;
	uint64_t probes0 = tlp_probes(&t);
	write_and_wait_at(&t, t.qa, 0, cc.ecfg.mtu, 2);
	CHECK(tl.drop_ev != UINT16_MAX && tl.next_ev != UINT16_MAX);   /* lost, resent */
	CHECK_EQ(tlp_probes(&t), probes0 + 1);         /* by the probe */
	CHECK_EQ(cc.ecfg.ack_delay_ns, 32 * US);        /* the hold the wait allows */
	uint64_t wait = tl.next_ts - tl.drop_ts;
	printf("lone tail lost, %" PRIu64 " us one way: resent %" PRIu64 " ns after it left\n",
	       (uint64_t)(oneway / US), wait);
	check_placed(&t, 0, 0, cc.ecfg.mtu);
	etest_fini(&t);
	return wait;
}

/* The peer's ACK hold (ack_delay_ns) adds to the measured round trip, not
 * to the floor (tlp_min_ns): on a fast fabric (2 us one way) a lone loss
 * is probed at the floor, 50 us, not 82 (50 + the 32 us hold: the first
 * all-to-all phase after a fault waited that, docs/step.md); on a slower
 * one (10 us) the wait still outlasts a round trip plus the hold, so a
 * held ACK is never raced (test_ack_piggyback's ping-pong checks that no
 * reply is resent). */
static void test_lone_tail_hold_adds_to_rtt(void **s)
{
	(void)s;
	uint64_t fast = lone_probe_wait(2 * US);
	CHECK(fast >= 50 * US && fast <= 51 * US);
	uint64_t slow = lone_probe_wait(10 * US);
	CHECK(slow >= 20 * US + 32 * US);               /* RTT + the hold */
	CHECK(slow <= 2 * 20 * US + 32 * US + 20 * US); /* 2 srtt + hold + window */
}

int main(void)
{
	etest_seed("test_engine_tlp", 39);
	const struct CMUnitTest tests[] = {
		T(test_tail_loss_probed),
		T(test_silent_peer_no_probe),
		T(test_lone_tail_probed),
		T(test_lone_tail_silent_peer_once),
		T(test_lone_tail_hold_adds_to_rtt),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
