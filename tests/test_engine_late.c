/* Engine unit tests of a late packet taken for a loss (evs.c
 * mrce__ev_lost, ack_rx.c give_back_path): one loss alone, with no sign
 * of congestion, makes its path a suspect that is probed, not a retired
 * one; the late ACK gives back the path of the try it echoes, not the
 * newest try's; a blackholed path is still retired within about two round
 * trips of its first loss.  Virtual time only (tests/support/chan.c).
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

#include "common/prng.h"
#include "tests/support/etest_case.h"

#define DELAY (10 * US)   /* every path, one way */
#define FLAG_RETX 0x04    /* byte 3 of a data header: MRC_F_RETX (docs/wire.md) */

/* Node 0's packets as the hook sees them: data (full MTU) or not, and
 * whether a data packet is a retransmission. */
static int is_data(const struct chan *ch, size_t len) { return len >= ch->cfg.ecfg.mtu; }
static int is_retx(const uint8_t *pkt) { return pkt[3] & FLAG_RETX; }

/* What a run's hook holds back, and what it saw. */
struct late {
	int armed;
	uint64_t t0;              /* when the first data packet left */
	uint64_t hold0;           /* that packet until t0 + hold0 */
	int hold_ev;              /* and all else on its EV (probes too) */
	uint64_t hold_retx;       /* resends: until t0 + hold_retx (0: not held) */
	uint16_t ev0;             /* the EV the first data packet went on */
	uint32_t held, retx_held;
};

static void on_tx_late(struct chan *ch, uint32_t src, uint32_t dst, uint16_t ev,
		       const uint8_t *pkt, size_t len, void *arg)
{
	struct late *l = arg;
	(void)dst;
	if (!l->armed || src != 0)
		return;
	uint64_t until = 0;
	if (l->ev0 == UINT16_MAX) {
		if (!is_data(ch, len))
			return;
		l->ev0 = ev;
		l->t0 = ch->now;
		until = l->t0 + l->hold0;
	} else if (l->hold_ev && ev == l->ev0 && ch->now < l->t0 + l->hold0) {
		until = l->t0 + l->hold0;
	}
	if (l->hold_retx && is_data(ch, len) && is_retx(pkt) && ch->now < l->t0 + l->hold_retx)
		until = l->t0 + l->hold_retx, l->retx_held++;
	if (until) {
		ch->hold_ns = until - ch->now;
		l->held++;
	}
}

/* 2 nodes, 8 EVs in 2 planes, every path DELAY one way; the RTT measured
 * by a first write, the logs cleared. */
static void late_setup(struct etest *t, struct chan_cfg *cc)
{
	cfg_two(cc, 8, 2);
	cc->delay_min = cc->delay_max = DELAY;
	CHECK_EQ(etest_init(t, cc, 1 << 20, 1 << 20, 0), 0);
	write_and_wait_at(t, t->qa, 0, 64 << 10, 1);
	chan_clear_logs(t->ch);
}

/* Node 0's events: EV ev of its peer went to state st (with reason rsn
 * unless rsn < 0); the time of the first such change, 0 if none. */
static uint64_t ev_went(struct etest *t, uint16_t ev, int st, int rsn)
{
	const struct chan_node *n = &t->ch->node[0];
	for (size_t i = 0; i < n->nevt; i++) {
		const struct mrce_event *x = &n->evt[i];
		if (x->type == MRCE_EVT_EV_STATE && x->peer == n->peer[1] && x->ev == ev &&
		    x->new_state == st && (rsn < 0 || x->reason == rsn))
			return x->time_ns;
	}
	return 0;
}

static struct mrce_ev_info ev_info(struct etest *t, uint16_t ev)
{
	struct mrce_ev_info ei;
	CHECK_EQ(mrce_ev_info(E(t, 0), t->ch->node[0].peer[1], ev, &ei), 0);
	return ei;
}

/* The first packet of a write of 2-8 packets is held 3-10 round trips
 * (seeded), long past its reorder window: the sender declares it lost
 * and resends it, but with no congestion seen its path is only probed;
 * the probe answers (probes are not held) and the path never leaves
 * GOOD.  Before: retired at once, given back only when the late ACK came. */
static void test_late_first_packet_keeps_path(void **s)
{
	(void)s;
	struct chan_cfg cc;
	struct etest t;
	struct mrce_stats a, b;
	struct mrc_rng r;
	mrc_rng_seed(&r, g_seed);
	uint32_t npkt = 2 + (uint32_t)mrc_rng_below(&r, 7);
	uint64_t hold = (3 + mrc_rng_below(&r, 8)) * 2 * DELAY;
	late_setup(&t, &cc);
	struct late l = { .armed = 1, .ev0 = UINT16_MAX, .hold0 = hold };
	t.ch->on_tx = on_tx_late;
	t.ch->hook_arg = &l;
	mrce_stats(E(&t, 0), &a);
	write_and_wait_at(&t, t.qa, 0, (uint64_t)npkt * cc.ecfg.mtu, 2);
	/* Past the late packet's arrival and its ACK's return. */
	CHECK_EQ(chan_run(t.ch, NULL, NULL, l.t0 + hold + 4 * DELAY - t.ch->now, ETEST_MAX_STEPS), 0);
	mrce_stats(E(&t, 0), &b);
	printf("%u packets, first on EV %u held %" PRIu64 " us: %" PRIu64 " losses, %" PRIu64
	       " suspect probes, %" PRIu64 " cleared, %" PRIu64 " retired\n", npkt, l.ev0,
	       (uint64_t)(hold / US), b.loss_detected - a.loss_detected, b.suspect_probes - a.suspect_probes,
	       b.suspect_cleared - a.suspect_cleared, b.suspect_retired - a.suspect_retired);
	CHECK(l.ev0 != UINT16_MAX && l.held >= 1);          /* the packet was held */
	CHECK(b.loss_detected > a.loss_detected);            /* and taken for a loss */
	CHECK(b.suspect_probes > a.suspect_probes);          /* its path was probed */
	CHECK(b.suspect_cleared > a.suspect_cleared);        /* and answered */
	CHECK_EQ(b.suspect_retired, a.suspect_retired);
	CHECK_EQ(ev_went(&t, l.ev0, MRCE_EV_ASSUMED_BAD, -1), 0);   /* never retired */
	CHECK_EQ(ev_info(&t, l.ev0).state, MRCE_EV_GOOD);
	check_placed(&t, 0, 0, (uint64_t)npkt * cc.ecfg.mtu);
	etest_fini(&t);
}

/* A path that really went silent for a while (the first packet and the
 * probe after it both held) is retired; the packet's resends are held
 * longer still, so that the newest try is declared lost on another path
 * before the first try arrives.  The first try's ACK echoes its EV: that
 * path, and not the newest try's, is given back (SPURIOUS), long before
 * its own probes (from 0.5 ms after retirement) could bring it back.
 * Before: the newest try's path was given back, the echoed one stayed
 * retired. */
static void test_echoed_try_given_back(void **s)
{
	(void)s;
	struct chan_cfg cc;
	struct etest t;
	struct mrc_rng r;
	mrc_rng_seed(&r, g_seed ^ 0x5eed);
	uint32_t npkt = 2 + (uint32_t)mrc_rng_below(&r, 7);
	uint64_t hold = (10 + mrc_rng_below(&r, 6)) * 2 * DELAY;   /* 200-300 us */
	late_setup(&t, &cc);
	struct late l = { .armed = 1, .ev0 = UINT16_MAX, .hold0 = hold, .hold_ev = 1,
			  .hold_retx = hold + 10 * DELAY };
	struct mrce_stats a, b;
	t.ch->on_tx = on_tx_late;
	t.ch->hook_arg = &l;
	mrce_stats(E(&t, 0), &a);
	write_and_wait_at(&t, t.qa, 0, (uint64_t)npkt * cc.ecfg.mtu, 2);
	uint64_t bad = ev_went(&t, l.ev0, MRCE_EV_ASSUMED_BAD, MRCE_RSN_LOSS);
	uint64_t back = ev_went(&t, l.ev0, MRCE_EV_GOOD, MRCE_RSN_SPURIOUS);
	mrce_stats(E(&t, 0), &b);
	printf("%u packets, first on EV %u held %" PRIu64 " us, %u resends held: retired at +%"
	       PRIu64 " us, given back at +%" PRIu64 " us\n", npkt, l.ev0, (uint64_t)(hold / US), l.retx_held,
	       (uint64_t)(bad ? (bad - l.t0) / US : 0), (uint64_t)(back ? (back - l.t0) / US : 0));
	CHECK(l.ev0 != UINT16_MAX && l.retx_held >= 1);   /* the first try and a resend held */
	CHECK(bad && bad < l.t0 + hold);                   /* the silent path was retired */
	CHECK(b.loss_detected - a.loss_detected >= 2);   /* a resend declared lost too */
	/* No other path came back by this ACK. */
	const struct chan_node *n = &t.ch->node[0];
	for (size_t i = 0; i < n->nevt; i++)
		if (n->evt[i].type == MRCE_EVT_EV_STATE && n->evt[i].ev != l.ev0)
			CHECK(n->evt[i].reason != MRCE_RSN_SPURIOUS);
	/* The late ACK came at t0 + hold + 2 DELAY: given back then. */
	CHECK(back >= l.t0 + hold && back <= l.t0 + hold + 4 * DELAY);
	CHECK_EQ(ev_info(&t, l.ev0).state, MRCE_EV_GOOD);
	check_placed(&t, 0, 0, (uint64_t)npkt * cc.ecfg.mtu);
	etest_fini(&t);
}

/* A path blackholed (both ways) under a stream of writes is retired
 * within 3 round trips of the first packet it swallowed, as before, or
 * one suspect wait (1.25 base RTTs) later where no second loss on it came
 * first (the probe's timeout retires it then: 2 of seeds 1-50, +25 us);
 * no other path is. */
static void test_blackhole_still_retired(void **s)
{
	(void)s;
	struct chan_cfg cc;
	struct etest t;
	struct mrc_rng r;
	mrc_rng_seed(&r, g_seed ^ 0xdead);
	uint16_t dead = (uint16_t)mrc_rng_below(&r, 8);
	late_setup(&t, &cc);
	uint64_t from = t.ch->now + mrc_rng_below(&r, 20 * US);
	chan_blackhole_ev(t.ch, 0, 1, dead, from, UINT64_MAX);
	for (uint32_t k = 0; k < 8; k++)
		write_and_wait_at(&t, t.qa, 0, 256 << 10, 10 + k);
	const struct chan_path *pa = chan_path(t.ch, 0, 1, dead);
	uint64_t bad = ev_went(&t, dead, MRCE_EV_ASSUMED_BAD, -1);
	printf("EV %u blackholed at +0: retired at +%.1f us, %" PRIu64 " packets sent on it\n",
	       dead, bad ? (double)(bad - from) / US : -1.0, pa->tx_pkts);
	CHECK(bad);
	/* Its first swallowed packet left at `from` at the latest (the
	 * stream sprays over every EV), and is declared lost an RTT and a
	 * reorder window later (before: retired then, within 50 us over
	 * seeds 1-50); its probe then times out in 1.25 RTTs. */
	CHECK(bad <= from + 6 * DELAY + cc.ecfg.reorder_slack_ns + 5 * DELAY / 2);
	for (uint16_t ev = 0; ev < cc.nev; ev++)
		if (ev != dead)
			CHECK_EQ(ev_went(&t, ev, MRCE_EV_ASSUMED_BAD, -1), 0);
	etest_fini(&t);
}

int main(void)
{
	etest_seed("test_engine_late", 42);
	const struct CMUnitTest tests[] = {
		T(test_late_first_packet_keeps_path),
		T(test_echoed_try_given_back),
		T(test_blackhole_still_retired),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
