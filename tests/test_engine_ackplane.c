/* Engine unit tests of where ACKs go back: spread over the planes the
 * data came on, so that one plane dead both ways does not take every ACK
 * with it (transport/ack_tx.c ack_ev).
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

/* A plane dead both ways while the other delivers: the receiver's ACKs
 * must not all go back on the dead plane.  With two planes sprayed in
 * turn and an ACK every ack_every (4) packets, the newest packet an ACK
 * answers was always of one plane; ACKs sent on its EV alone all died
 * with that plane on some seeds (5 and 8 of test_dead_last_path_retired),
 * the sender heard nothing and retired the plane at its 1 ms RTO.  Every
 * path of plane 0 must be retired well within the RTO, with no RTO fired,
 * ACKs having come back on plane 1 after the fault, and the write must
 * complete over plane 1. */
static void dead_plane_case(uint32_t nev, uint32_t ack_every, uint64_t seed)
{
	struct chan_cfg cc;
	struct etest t;
	struct mrce_qp_info qi;
	struct mrce_cfg def;

	mrce_cfg_default(&def);
	cfg_two(&cc, nev, 2);   /* plane_of[ev] = ev % 2: even EVs in plane 0 */
	cc.delay_min = cc.delay_max = 10 * US;
	cc.ecfg.ack_every = ack_every;
	cc.seed = seed;
	CHECK_EQ(etest_init(&t, &cc, 4 << 20, 4 << 20, 0), 0);
	uint32_t peer = t.ch->node[0].peer[1];
	write_and_wait_at(&t, t.qa, 0, 1 << 20, 1);   /* RTTs measured */
	chan_clear_logs(t.ch);
	CHECK_EQ(mrce_qp_info(E(&t, 0), t.qa, &qi), 0);
	uint64_t rto0 = qi.rto_fires;
	CHECK_EQ(etest_post(t.ch, 0, t.qa, MRC_SQE_WRITE, 2, t.lkey, 0, 4 << 20, t.rkey, 0, 0, 0), 0);
	/* As the first ACKs of the write come back: then, in some of the 16
	 * channels of a seed, every ACK went back on plane 0 before the fix
	 * (it failed with the default seed and 46 of seeds 1-50). */
	CHECK_EQ(chan_run(t.ch, NULL, NULL, 20 * US, ETEST_MAX_STEPS), 0);
	uint64_t t0 = t.ch->now;
	chan_blackhole_plane(t.ch, 0, t0, UINT64_MAX);
	uint64_t back = 0;   /* node 1's packets on plane 1 (ACKs only) */
	for (uint32_t ev = 1; ev < nev; ev += 2)
		back += chan_path(t.ch, 1, 0, ev)->tx_pkts;
	for (uint32_t ev = 0; ev < nev; ev += 2) {
		struct ev_wait w = { E(&t, 0), peer, ev, MRCE_EV_ASSUMED_BAD };
		CHECK_EQ(chan_run(t.ch, pred_ev_state, &w, 1 * SEC, ETEST_MAX_STEPS), 0);
	}
	uint64_t took = t.ch->now - t0;
	CHECK(t.ch->st.blackholed > 0);   /* the plane did die */
	for (uint32_t ev = 1; ev < nev; ev += 2) {
		back -= chan_path(t.ch, 1, 0, ev)->tx_pkts;
		CHECK(!ev_retired(&t, ev));
	}
	CHECK((int64_t)back < 0);   /* ACKs did come back on plane 1 */
	CHECK_EQ(mrce_qp_info(E(&t, 0), t.qa, &qi), 0);
	if (took > def.rto_min_ns / 4 || qi.rto_fires != rto0)
		fail_msg("%u EVs, ack_every %u, channel seed %" PRIu64 ": plane 0 retired %" PRIu64
			 " ns after the fault, %" PRIu64 " RTOs (seed %" PRIu64 ")",
			 nev, ack_every, seed, took,
			 qi.rto_fires - rto0, g_seed);
	CHECK_EQ(etest_run2(t.ch, 2, 0, 10 * SEC), 0);
	CHECK_EQ(WC(&t, 0, 0)->status, 0);
	check_placed(&t, 0, 0, 4 << 20);
	etest_fini(&t);
}

static void test_dead_plane_acks(void **s)
{
	for (uint32_t nev = 2; nev <= 6; nev += 2)
		for (uint32_t every = 2; every <= 4; every += 2)
			for (uint64_t k = 0; k < 16; k++)
				dead_plane_case(nev, every, g_seed * 16 + k);
}

int main(void)
{
	etest_seed("test_engine_ackplane", 20240601);
	const struct CMUnitTest tests[] = {
		T(test_dead_plane_acks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
