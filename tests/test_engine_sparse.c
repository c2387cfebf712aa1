/* A dead path under sparse traffic: one small WRITE at a time (a
 * ping-pong, a control message), so a packet on the dead path is the only
 * one in flight and nothing else comes back from the peer meanwhile.  The
 * path must still be retired after a bounded number of timeouts, not cost
 * an RTO every time the spray comes round to it: a silent peer excuses a
 * stall once, not a path that never delivers.
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

static void test_sparse_dead_path(void **s)
{
	(void)s;
	struct chan_cfg cc;
	struct etest t;
	struct mrce_ev_info ei;
	struct mrce_qp_info qi;

	cfg_two(&cc, 8, 2);
	CHECK_EQ(etest_init(&t, &cc, 1 << 20, 1 << 20, 0), 0);
	uint32_t peer = t.ch->node[0].peer[1];
	chan_blackhole_ev(t.ch, 0, 1, 3, t.ch->now, UINT64_MAX);
	/* 160 WRITEs of 64 bytes, each waited for: the spray passes EV 3
	 * about 20 times. */
	for (uint64_t i = 0; i < 160; i++)
		write_and_wait_at(&t, t.qa, i * 64, 64, i);
	check_placed(&t, 0, 0, 160 * 64);
	const struct chan_path *dead = chan_path(t.ch, 0, 1, 3);
	CHECK(dead->tx_pkts > dead->rx_pkts);   /* the fault took effect */
	CHECK_EQ(dead->rx_pkts, 0);
	CHECK_EQ(mrce_ev_info(E(&t, 0), peer, 3, &ei), 0);
	CHECK_EQ(ei.state, MRCE_EV_ASSUMED_BAD);
	CHECK_EQ(mrce_qp_info(E(&t, 0), t.qa, &qi), 0);
	/* At most two timeouts on the dead path (a stall may be excused once),
	 * not one per pass of the spray. */
	if (qi.rto_fires > 2)
		fail_msg("%" PRIu64 " RTOs for %" PRIu64 " data packets lost on EV 3 (seed %" PRIu64 ")",
			 qi.rto_fires, dead->tx_pkts, g_seed);
	etest_fini(&t);
}

int main(void)
{
	etest_seed("test_engine_sparse", 11);
	const struct CMUnitTest tests[] = {
		T(test_sparse_dead_path),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
