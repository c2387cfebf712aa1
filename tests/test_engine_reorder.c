/* Engine unit tests of loss detection under queueing that differs by
 * plane (loss.c mrce__detect_losses): an incast's queue builds on one
 * plane's downlink while the other stays short, so the spray's packets
 * arrive far out of order across planes but in order on each path.  That
 * reordering declares nothing lost (no resend, no duplicate at the
 * receiver); a packet really dropped in the long queue is still declared
 * lost, by a later packet on its own path, as fast as before; and a
 * declaration the peer proves wrong is counted (loss_spurious).  Virtual
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
#include <cmocka.h>

#include "common/prng.h"
#include "tests/support/etest_case.h"

#define NEV    8
#define DELAY  (5 * US)      /* one way, every path: a 10 us base RTT */
#define LEN    (1u << 20)

/* Node 0's packets on plane 1 queue behind one serializer (a downlink
 * shared with other senders: serv per packet), those on plane 0 pass.
 * Per path the order is kept, as in a switch's FIFO.  drop: node 0's
 * data packet number drop on plane 1 (1-based, counted from arming) is
 * lost in that queue; its PSN and when it left are recorded, and when
 * its resend left. */
struct plane_q {
	uint64_t serv, busy_until;
	uint32_t mtu, seen, drop;
	uint32_t drop_psn;
	uint64_t drop_ts, resend_ts, held;
	uint64_t drop_hold;        /* its wait in the queue, had it not dropped */
	uint16_t drop_ev;
	uint64_t next_at;          /* when the next packet on its EV arrives */
	int armed, dropped;
};

static int data_psn(const uint8_t *pkt, size_t len, uint32_t *psn)
{
	struct mrc_pkt_view v;
	enum mrce_wire_drop why;
	if (mrce_wire_decode(pkt, len, &v, &why) || !mrc_op_is_data(v.op))
		return 0;
	*psn = v.u.data.psn;
	return 1;
}

static void on_tx_plane(struct chan *ch, uint32_t src, uint32_t dst, uint16_t ev,
			const uint8_t *pkt, size_t len, void *arg)
{
	struct plane_q *q = arg;
	(void)dst;
	uint32_t psn;
	if (!q->armed || src != 0)
		return;
	if (q->dropped && !q->resend_ts && len >= q->mtu && data_psn(pkt, len, &psn) &&
	    psn == q->drop_psn) {
		q->resend_ts = ch->now;
		return;   /* the resend: not counted, not dropped */
	}
	if (ch->plane_of[ev] != 1)
		return;
	uint64_t start = q->busy_until > ch->now ? q->busy_until : ch->now;
	q->busy_until = start + q->serv;
	ch->hold_ns = q->busy_until - ch->now;
	q->held++;
	if (len < q->mtu || !data_psn(pkt, len, &psn))
		return;
	if (q->dropped && !q->next_at && ev == q->drop_ev)
		q->next_at = ch->now + ch->hold_ns + DELAY;
	if (q->drop && !q->dropped && ++q->seen == q->drop) {
		q->dropped = 1;
		q->drop_psn = psn;
		q->drop_ts = ch->now;
		q->drop_hold = ch->hold_ns;
		q->drop_ev = ev;
		ch->hold_ns = SEC;   /* gone for the test's span */
	}
}

static void setup(struct etest *t, struct chan_cfg *cc, struct plane_q *q)
{
	cfg_two(cc, NEV, 2);
	cc->delay_min = cc->delay_max = DELAY;
	CHECK_EQ(etest_init(t, cc, LEN, LEN, 0), 0);
	write_and_wait_at(t, t->qa, 0, 64 << 10, 1);   /* the base RTT */
	*q = (struct plane_q){ .mtu = cc->ecfg.mtu, .armed = 1 };
	t->ch->on_tx = on_tx_plane;
	t->ch->hook_arg = q;
}

struct counts {
	uint64_t retx, losses, own, cross, spurious, dups, rtos;
};

static void counts(struct etest *t, struct counts *c)
{
	struct mrce_stats s, r;
	mrce_stats(E(t, 0), &s);
	mrce_stats(E(t, 1), &r);
	*c = (struct counts){ .retx = s.tx_retx, .losses = s.loss_detected,
		.own = s.loss_own_path, .cross = s.loss_cross_path,
		.spurious = s.loss_spurious, .dups = r.rx_dup, .rtos = s.rto_fires };
}

/* One write of LEN bytes with plane 1's queue growing by serv per packet,
 * then time for that queue to drain (the late originals arrive); *d: what
 * it cost. */
static void queued_write(struct etest *t, struct plane_q *q, uint64_t serv, uint32_t drop,
			 struct counts *d, const char *what)
{
	struct counts a, b;
	q->serv = serv;
	q->drop = drop;
	q->seen = 0;
	q->held = 0;
	counts(t, &a);
	write_and_wait_at(t, t->qa, 0, LEN, 2);
	CHECK(q->held >= 8);                          /* plane 1 queued */
	uint64_t end = q->busy_until + 100 * US;
	if (end > t->ch->now)
		CHECK_EQ(chan_run(t->ch, NULL, NULL, end - t->ch->now, 100000000), 0);
	counts(t, &b);
	check_placed(t, 0, 0, LEN);
	*d = (struct counts){ .retx = b.retx - a.retx, .losses = b.losses - a.losses,
		.own = b.own - a.own, .cross = b.cross - a.cross,
		.spurious = b.spurious - a.spurious, .dups = b.dups - a.dups,
		.rtos = b.rtos - a.rtos };
	printf("%s: serv %" PRIu64 " us, drop %u: retx %" PRIu64 ", losses %" PRIu64
	       " (own path %" PRIu64 ", cross path %" PRIu64 "), spurious %" PRIu64
	       ", receiver dups %" PRIu64 ", rtos %" PRIu64 ", plane 1 packets %" PRIu64 "\n",
	       what, (uint64_t)(serv / US), drop, d->retx, d->losses, d->own, d->cross,
	       d->spurious, d->dups, d->rtos, q->held);
}

/* Plane 1's queue makes its packets ever later than plane 0's: the acks
 * of later packets on plane 0 come first.  A queue appearing with no sign
 * of it yet cannot be told from a dead plane at first: the first write
 * may declare losses across paths; the peer proves each spurious (the
 * counter equals the duplicates it received), and from then on the same
 * reordering declares nothing lost, resends nothing. */
static void test_cross_plane_queue_not_lost(void **s)
{
	(void)s;
	struct mrc_rng rng;
	mrc_rng_seed(&rng, g_seed);
	/* Per packet on plane 1: 15-20 us (base RTT 10 us), by the seed. */
	uint64_t servs[] = { 15 * US + mrc_rng_below(&rng, 5 * US), 20 * US };
	for (size_t k = 0; k < sizeof(servs) / sizeof(servs[0]); k++) {
		struct etest t;
		struct chan_cfg cc;
		static struct plane_q q;   /* the hook's, past a failed CHECK */
		struct counts d;
		setup(&t, &cc, &q);
		queued_write(&t, &q, servs[k], 0, &d, "first");
		CHECK_EQ(d.own, 0);                      /* FIFO paths: never */
		CHECK_EQ(d.spurious, d.losses);          /* every one proven */
		CHECK_EQ(d.dups, d.retx);
		for (int r = 0; r < 3; r++) {
			queued_write(&t, &q, servs[k], 0, &d, "again");
			CHECK_EQ(d.losses, 0);
			CHECK_EQ(d.retx, 0);
			CHECK_EQ(d.dups, 0);
			CHECK_EQ(d.rtos, 0);
		}
		etest_fini(&t);
	}
}

static int own_declared(struct chan *ch, void *arg)
{
	struct mrce_stats st;
	mrce_stats(ch->node[0].e, &st);
	return st.loss_own_path > *(uint64_t *)arg;
}

/* A packet dropped in the long queue once the window has widened (a
 * first write taught it): it is declared lost on its own path's evidence
 * as soon as the next packet on its EV is acked, not after the widened
 * window; resent once (when the congestion window lets it), and no RTO
 * fires. */
static void test_queue_drop_declared(void **s)
{
	(void)s;
	struct etest t;
	struct chan_cfg cc;
	static struct plane_q q;
	struct counts d, a, b;
	setup(&t, &cc, &q);
	struct mrc_rng rng;
	mrc_rng_seed(&rng, g_seed);
	queued_write(&t, &q, 15 * US + mrc_rng_below(&rng, 5 * US), 0, &d, "learn");
	q.seen = q.held = 0;
	/* Of plane 1's ~130: early enough in the queue that the next packet
	 * on its EV comes back before the 1 ms RTO floor. */
	q.drop = 8 + (uint32_t)mrc_rng_below(&rng, 16);
	counts(&t, &a);
	uint64_t own0 = a.own, done = t.ch->node[0].wc_total;
	CHECK_EQ(etest_post(t.ch, 0, t.qa, MRC_SQE_WRITE, 3, t.lkey, 0, LEN, t.rkey, 0, 0, 0), 0);
	int rc = chan_run(t.ch, own_declared, &own0, 10 * MS, 100000000);
	printf("drop ev %u at %" PRIu64 ", next on it at %" PRIu64 ", seen %u held %" PRIu64 "\n", q.drop_ev, q.drop_ts, q.next_at, q.seen, q.held);
	CHECK_EQ(rc, 0);
	CHECK(q.dropped);                               /* the loss happened */
	uint64_t took = t.ch->now - q.drop_ts;
	/* That packet's arrival, its ACK's way back, the slack. */
	CHECK(q.next_at > q.drop_ts);
	uint64_t bound = q.next_at + DELAY - q.drop_ts + cc.ecfg.reorder_slack_ns;
	CHECK_EQ(etest_run2(t.ch, done + 1, 0, 10 * SEC), 0);
	CHECK_EQ(t.ch->node[0].wc[t.ch->node[0].nwc - 1].status, 0);
	check_placed(&t, 0, 0, LEN);
	counts(&t, &b);
	printf("drop: its queue %" PRIu64 " us, declared at +%" PRIu64 " us (bound +%" PRIu64
	       " us), resent at +%" PRIu64 " us; retx %" PRIu64 ", own %" PRIu64 ", cross %"
	       PRIu64 ", dups %" PRIu64 ", rtos %" PRIu64 "\n", (uint64_t)(q.drop_hold / US),
	       (uint64_t)(took / US), (uint64_t)(bound / US),
	       (uint64_t)((q.resend_ts - q.drop_ts) / US), b.retx - a.retx, b.own - a.own,
	       b.cross - a.cross, b.dups - a.dups, b.rtos - a.rtos);
	CHECK(took <= bound);
	CHECK(q.resend_ts > q.drop_ts);                 /* and was repaired */
	CHECK_EQ(b.own - a.own, 1);                     /* by its own path */
	CHECK_EQ(b.cross - a.cross, 0);
	CHECK_EQ(b.retx - a.retx, 1);                   /* only the lost one */
	CHECK_EQ(b.dups - a.dups, 0);
	CHECK_EQ(b.rtos - a.rtos, 0);
	etest_fini(&t);
}

int main(void)
{
	etest_seed("test_engine_reorder", 42);
	const struct CMUnitTest tests[] = {
		T(test_cross_plane_queue_not_lost),
		T(test_queue_drop_declared),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
