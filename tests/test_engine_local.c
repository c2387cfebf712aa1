/* A peer that is this very host (mrce_peer_set_local; mrcd's in-process
 * delivery, daemon/core/local.c): its payloads carry no CRC, and only
 * datagrams the caller flags MRCE_RX_LOCAL skip the check.  On the
 * in-memory channel, a 1 MiB WRITE:
 *   local_pair: both ends local, every delivery flagged: placed intact,
 *     and a flipped payload bit (5 % of packets) gets through unchecked,
 *     which shows the check is skipped (the channel is the only thing that
 *     corrupts; in mrcd nothing does);
 *   sender_skips_crc: the sender's peer local, the receiver's not: every
 *     data packet fails the receiver's check (a zero trailer), none placed;
 *   wire_dgram_checked: the receiver's peer local but the datagrams not
 *     flagged (as from a socket): corrupted payloads are dropped and the
 *     data placed intact from retransmissions;
 *   flag_alone_checked: flagged datagrams from a peer not marked local are
 *     checked the same (the flag is honoured only with the caller's word
 *     that the peer is local). */
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

/* local[n]: node n marks the other node local. */
static void run_case(const int local[2], uint32_t rx_flags, double corrupt, struct etest *t,
		     int *done)
{
	struct chan_cfg cc;
	cfg_two(&cc, 8, 2);
	cc.path.corrupt = corrupt;
	cc.rx_flags = rx_flags;
	CHECK_EQ(etest_init(t, &cc, 1 << 20, 1 << 20, 0), 0);
	for (int n = 0; n < 2; n++)
		CHECK_EQ(mrce_peer_set_local(E(t, n), t->ch->node[n].peer[1 - n], local[n]), 0);
	CHECK_EQ(etest_post(t->ch, 0, t->qa, MRC_SQE_WRITE, 5, t->lkey, 0, 1 << 20, t->rkey, 0,
			    0, 0), 0);
	*done = etest_run2(t->ch, 1, 0, 2 * SEC) == 0;
}

static uint64_t pcrc_drops(struct etest *t, int n)
{
	struct mrce_stats st;
	mrce_stats(E(t, n), &st);
	return st.rx_drop[MRC_DROP_PCRC];
}

static void test_local_pair(void **s)
{
	static struct etest t;   /* the teardown may finish it */
	int done;
	run_case((const int[]){ 1, 1 }, MRCE_RX_LOCAL, 0.05, &t, &done);
	CHECK(done);
	CHECK_EQ(WC(&t, 0, 0)->status, 0);
	CHECK(t.ch->st.corrupted > 0);              /* the fault happened */
	CHECK(t.ch->st.corrupt_accepted > 0);       /* and was not checked */
	CHECK_EQ(pcrc_drops(&t, 1), 0);
	CHECK_EQ(mrce_peer_set_local(E(&t, 0), 60000, 1), -ENOENT);
	etest_fini(&t);
}

static void test_sender_skips_crc(void **s)
{
	static struct etest t;   /* the teardown may finish it */
	int done;
	run_case((const int[]){ 1, 0 }, 0, 0, &t, &done);
	CHECK(!done);
	CHECK(pcrc_drops(&t, 1) > 0);
	etest_fini(&t);
}

static void checked_case(const int local[2], uint32_t rx_flags)
{
	static struct etest t;   /* the teardown may finish it */
	int done;
	run_case(local, rx_flags, 0.05, &t, &done);
	CHECK(done);
	CHECK_EQ(WC(&t, 0, 0)->status, 0);
	CHECK(t.ch->st.corrupted > 0);
	CHECK_EQ(t.ch->st.corrupt_accepted, 0);
	CHECK(pcrc_drops(&t, 1) > 0);
	check_placed(&t, 0, 0, 1 << 20);
	etest_fini(&t);
}

static void test_wire_dgram_checked(void **s) { checked_case((const int[]){ 0, 1 }, 0); }

static void test_flag_alone_checked(void **s)
{
	checked_case((const int[]){ 0, 0 }, MRCE_RX_LOCAL);
}

int main(void)
{
	etest_seed("test_engine_local", 0x10ca1);
	const struct CMUnitTest tests[] = {
		T(test_local_pair),
		T(test_sender_skips_crc),
		T(test_wire_dgram_checked),
		T(test_flag_alone_checked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
