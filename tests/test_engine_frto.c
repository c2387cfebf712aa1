/* Engine unit tests of the RTO undo (Eifel / F-RTO, ack_rx.c rto_check):
 * a receiver that stalls longer than the RTO (a loaded host) makes the RTO
 * fire though nothing was lost; the ACK of the original proves it, the RTO
 * is counted spurious and adapts, so later stalls of the same length cause
 * no RTO and no retransmission.  Virtual time only (tests/support/chan.c).
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

#define ROUNDS 4
#define GAP    (20 * US)     /* >= DMAX - DMIN */
#define DMIN   (5 * US)
#define DMAX   (20 * US)
#define STALL  (2500 * US)   /* past the 1 ms RTO floor, short of its
                                 backed-off second firing (3 ms) */

/* Node 1 sends nothing between from and until: its ACKs leave from until
 * on, in the order they were made, as a stalled host's backlog would (each
 * GAP after the one before, more than paths' delays differ, so that they
 * also arrive in that order). */
struct stall {
	uint64_t from, until;
	uint32_t held;
	uint32_t mtu, sent;   /* full-size packets node 0 sent during it */
};

static void on_tx_stall(struct chan *ch, uint32_t src, uint32_t dst, uint16_t ev,
			const uint8_t *pkt, size_t len, void *arg)
{
	struct stall *st = arg;
	(void)dst; (void)ev; (void)pkt;
	if (src == 0 && st->mtu && len >= st->mtu && ch->now >= st->from && ch->now < st->until)
		st->sent++;
	if (src != 1 || ch->now < st->from || ch->now >= st->until)
		return;
	ch->hold_ns = st->until - ch->now + GAP * st->held++;
}

static void qp_info(struct etest *t, struct mrce_qp_info *qi)
{
	CHECK_EQ(mrce_qp_info(E(t, 0), t->qa, qi), 0);
}

/* A WRITE of len bytes with node 1 stalled for STALL from the moment it
 * is posted; returns the RTOs it cost, *retx the retransmissions. */
static uint64_t stalled_write(struct etest *t, struct stall *st, uint32_t len,
			      uint64_t *retx)
{
	struct mrce_qp_info a, b;
	qp_info(t, &a);
	st->from = t->ch->now;
	st->until = t->ch->now + STALL;
	st->held = st->sent = 0;
	write_and_wait_at(t, t->qa, 0, len, 2);
	qp_info(t, &b);
	CHECK(st->held > 0);                     /* the stall happened */
	CHECK(t->ch->now >= st->until);          /* and held the completion */
	*retx = b.retx - a.retx;
	return b.rto_fires - a.rto_fires;
}

/* The first stall fires the RTO once, needlessly: counted as spurious,
 * the RTO rises past the stall's round trip and stays there through
 * quick round trips in between (which would decay srtt/rttvar alone),
 * so the next stalls of the same length fire no RTO and resend nothing.
 * Without the undo every stall fires the RTO and resends. */
static void test_spurious_rto_adapts(void **s)
{
	(void)s;
	struct chan_cfg cc;
	struct etest t;
	struct mrce_qp_info qi;
	struct mrce_stats es;
	cfg_two(&cc, 8, 2);
	cc.delay_min = DMIN;
	cc.delay_max = DMAX;
	cc.ecfg.tlp_min_ns = 0;   /* the RTO alone, not the tail probe */
	CHECK_EQ(etest_init(&t, &cc, 1 << 20, 1 << 20, 0), 0);
	struct stall st = { 0 };
	t.ch->on_tx = on_tx_stall;
	t.ch->hook_arg = &st;
	write_and_wait_at(&t, t.qa, 0, 64 << 10, 1);   /* measure the RTT */
	qp_info(&t, &qi);
	CHECK(qi.rto_ns < STALL);
	uint64_t sp0 = qi.rto_spurious, rtos[ROUNDS], retx[ROUNDS];
	for (int r = 0; r < ROUNDS; r++) {
		rtos[r] = stalled_write(&t, &st, cc.ecfg.mtu, &retx[r]);
		for (int k = 0; k < 32; k++)   /* quick round trips between */
			write_and_wait_at(&t, t.qa, 0, cc.ecfg.mtu, 3);
		qp_info(&t, &qi);
		printf("stall %d: %" PRIu64 " RTOs, %" PRIu64 " resends, rto %" PRIu64
		       " us, %" PRIu64 " spurious\n", r, rtos[r], retx[r], (uint64_t)(qi.rto_ns / US),
		       qi.rto_spurious - sp0);
	}
	qp_info(&t, &qi);
	CHECK_EQ(rtos[0], 1);                    /* the first one fired */
	CHECK(retx[0] >= 1);
	CHECK_EQ(qi.rto_spurious - sp0, 1);      /* and was proven spurious */
	mrce_stats(E(&t, 0), &es);
	CHECK_EQ(es.rto_spurious, qi.rto_spurious);
	CHECK(qi.rto_ns > STALL);                /* adapted, and kept */
	for (int r = 1; r < ROUNDS; r++) {
		CHECK_EQ(rtos[r], 0);
		CHECK_EQ(retx[r], 0);
	}
	/* No path was retired for it. */
	for (uint32_t ev = 0; ev < cc.nev; ev++) {
		struct mrce_ev_info ei;
		CHECK_EQ(mrce_ev_info(E(&t, 0), t.ch->node[0].peer[1], ev, &ei), 0);
		CHECK_EQ(ei.state, MRCE_EV_GOOD);
	}
	check_placed(&t, 0, 0, 64 << 10);
	etest_fini(&t);
}

/* A stall with a window of packets in flight: each RTO declares the
 * oldest packet lost and resends it only (the peer is silent on every
 * path: F-RTO's first step), not every packet outstanding past the RTO
 * (which marking the oldest used to turn, one by one, into the list's
 * head: all 16 resent at the first RTO, every one a duplicate). */
static void test_stall_resends_oldest_only(void **s)
{
	(void)s;
	struct chan_cfg cc;
	struct etest t;
	struct mrce_stats a, b;
	cfg_two(&cc, 8, 2);
	cc.delay_min = DMIN;
	cc.delay_max = DMAX;
	cc.ecfg.tlp_min_ns = 0;
	CHECK_EQ(etest_init(&t, &cc, 1 << 20, 1 << 20, 0), 0);
	struct stall st = { .mtu = cc.ecfg.mtu };
	t.ch->on_tx = on_tx_stall;
	t.ch->hook_arg = &st;
	write_and_wait_at(&t, t.qa, 0, 64 << 10, 1);   /* measure the RTT */
	mrce_stats(E(&t, 0), &a);
	uint64_t retx, rtos = stalled_write(&t, &st, 16 * cc.ecfg.mtu, &retx);
	mrce_stats(E(&t, 0), &b);
	uint32_t resent = st.sent - 16;   /* during the stall */
	printf("stall, 16 packets: %" PRIu64 " RTOs, %u resends during it, %" PRIu64
	       " in all\n", rtos, resent, retx);
	CHECK_EQ(st.sent >= 16, 1);
	CHECK(rtos >= 1);
	CHECK(b.rto_fires - a.rto_fires == rtos);
	CHECK_EQ(resent, rtos);   /* one packet per RTO */
	check_placed(&t, 0, 0, 16 * cc.ecfg.mtu);
	etest_fini(&t);
}

/* A queue ahead that drains slowly, on one path with a fixed delay (no
 * reordering for the reorder window to act on): node 1's ACKs leave from
 * 700 us after the WRITE is posted, one every 900 us, each within the
 * RTO (1 ms or more) of the one before, the later ones past it after the
 * send.  The RTO runs from the last ACK of new data, so it never fires;
 * run from the oldest packet's send (main) it fired twice and resent what
 * was only queued. */
struct drain {
	uint64_t from;
	uint32_t held;
};

static void on_tx_drain(struct chan *ch, uint32_t src, uint32_t dst, uint16_t ev,
			const uint8_t *pkt, size_t len, void *arg)
{
	struct drain *d = arg;
	(void)dst; (void)ev; (void)pkt; (void)len;
	if (src != 1 || !d->from)
		return;
	uint64_t at = d->from + 700 * US + 900 * US * d->held++;
	ch->hold_ns = at > ch->now ? at - ch->now : 0;
}

static void test_draining_queue_no_rto(void **s)
{
	(void)s;
	struct chan_cfg cc;
	struct etest t;
	struct mrce_qp_info a, b;
	cfg_two(&cc, 1, 1);
	cc.delay_min = cc.delay_max = DMIN;
	cc.ecfg.tlp_min_ns = 0;
	CHECK_EQ(etest_init(&t, &cc, 1 << 20, 1 << 20, 0), 0);
	write_and_wait_at(&t, t.qa, 0, 64 << 10, 1);   /* measure the RTT */
	struct drain d = { 0 };
	t.ch->on_tx = on_tx_drain;
	t.ch->hook_arg = &d;
	qp_info(&t, &a);
	CHECK(a.rto_ns <= 1000 * US);
	d.from = t.ch->now;
	write_and_wait_at(&t, t.qa, 0, 16 * cc.ecfg.mtu, 2);
	uint64_t took = t.ch->now - d.from;
	d.from = 0;
	qp_info(&t, &b);
	printf("draining queue: %u ACKs, done after %" PRIu64 " us, %" PRIu64 " RTOs, %" PRIu64
	       " resends\n", d.held, (uint64_t)(took / US), b.rto_fires - a.rto_fires, b.retx - a.retx);
	CHECK(d.held >= 4);                      /* the ACKs were spread */
	CHECK(took > 1100 * US);                 /* past the RTO from the send */
	CHECK_EQ(b.rto_fires - a.rto_fires, 0);
	CHECK_EQ(b.retx - a.retx, 0);
	check_placed(&t, 0, 0, 16 * cc.ecfg.mtu);
	etest_fini(&t);
}

/* A real loss (the data packet dropped, the resend's ACK echoing the
 * resend) is not taken for a spurious RTO: nothing counted, no floor. */
struct drop1 {
	uint32_t mtu;
	int armed, dropped;
};

static void on_tx_drop(struct chan *ch, uint32_t src, uint32_t dst, uint16_t ev,
		       const uint8_t *pkt, size_t len, void *arg)
{
	struct drop1 *d = arg;
	(void)dst; (void)ev; (void)pkt;
	if (d->armed && src == 0 && len >= d->mtu) {
		d->armed = 0;
		d->dropped = 1;
		ch->hold_ns = SEC;   /* gone for the test's span */
	}
}

static void test_real_loss_not_undone(void **s)
{
	(void)s;
	struct chan_cfg cc;
	struct etest t;
	struct mrce_qp_info a, b;
	cfg_two(&cc, 8, 2);
	cc.delay_min = DMIN;
	cc.delay_max = DMAX;
	cc.ecfg.tlp_min_ns = 0;
	CHECK_EQ(etest_init(&t, &cc, 1 << 20, 1 << 20, 0), 0);
	write_and_wait_at(&t, t.qa, 0, 64 << 10, 1);
	struct drop1 d = { .mtu = cc.ecfg.mtu, .armed = 1 };
	t.ch->on_tx = on_tx_drop;
	t.ch->hook_arg = &d;
	qp_info(&t, &a);
	write_and_wait_at(&t, t.qa, 0, cc.ecfg.mtu, 2);
	qp_info(&t, &b);
	CHECK(d.dropped);
	CHECK(b.rto_fires > a.rto_fires);
	CHECK_EQ(b.rto_spurious, a.rto_spurious);
	CHECK(b.rto_ns < STALL);
	etest_fini(&t);
}

int main(void)
{
	etest_seed("test_engine_frto", 41);
	const struct CMUnitTest tests[] = {
		T(test_spurious_rto_adapts),
		T(test_real_loss_not_undone),
		T(test_stall_resends_oldest_only),
		T(test_draining_queue_no_rto),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
