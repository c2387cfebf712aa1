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
 *     that the peer is local);
 *   split_pair: every data packet handed over as local.c hands it, header
 *     and payload apart (mrce_rx_split): placed intact;
 *   split_refused: the same from a peer not marked local, or without the
 *     flag: every one refused (-EPERM, rx_bad_peer), nothing placed; and
 *     a split header whose length field disagrees, or an ACK, refused. */
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

static void split_case(const int local[2], uint32_t rx_flags, struct etest *t, int *done)
{
	struct chan_cfg cc;
	cfg_two(&cc, 8, 2);
	cc.rx_flags = rx_flags;
	cc.split = 1;
	CHECK_EQ(etest_init(t, &cc, 1 << 20, 1 << 20, 0), 0);
	for (int n = 0; n < 2; n++)
		CHECK_EQ(mrce_peer_set_local(E(t, n), t->ch->node[n].peer[1 - n], local[n]), 0);
	CHECK_EQ(etest_post(t->ch, 0, t->qa, MRC_SQE_WRITE, 5, t->lkey, 0, 1 << 20, t->rkey, 0,
			    0, 0), 0);
	*done = etest_run2(t->ch, 1, 0, 2 * SEC) == 0;
}

static void test_split_pair(void **s)
{
	static struct etest t;   /* the teardown may finish it */
	int done;
	split_case((const int[]){ 1, 1 }, MRCE_RX_LOCAL, &t, &done);
	CHECK(done);
	CHECK_EQ(WC(&t, 0, 0)->status, 0);
	CHECK_EQ(t.ch->node[1].rx_err, 0);
	check_placed(&t, 0, 0, 1 << 20);
	etest_fini(&t);
}

static uint64_t bad_peer(struct etest *t, int n)
{
	struct mrce_stats st;
	mrce_stats(E(t, n), &st);
	return st.rx_bad_peer;
}

static void refused_case(const int local[2], uint32_t rx_flags)
{
	static struct etest t;   /* the teardown may finish it */
	int done;
	split_case(local, rx_flags, &t, &done);
	CHECK(!done);
	CHECK(bad_peer(&t, 1) > 0);
	CHECK(t.ch->node[1].rx_err > 0);
	check_dst_untouched(&t, 0, 1 << 20);   /* nothing placed */
	etest_fini(&t);
}

static void test_split_refused(void **s)
{
	refused_case((const int[]){ 1, 0 }, MRCE_RX_LOCAL);   /* peer not local */
	refused_case((const int[]){ 1, 1 }, 0);               /* not flagged */
	/* a header that disagrees with the payload given, and an ACK */
	static struct etest t;
	struct chan_cfg cc;
	cfg_two(&cc, 8, 2);
	CHECK_EQ(etest_init(&t, &cc, 1 << 16, 1 << 16, 0), 0);
	struct mrce *e = E(&t, 1);
	uint32_t peer = t.ch->node[1].peer[0];
	CHECK_EQ(mrce_peer_set_local(e, peer, 1), 0);
	struct mrc_data_hdr h = { .op = MRC_OP_WRITE, .flags = MRC_F_FIRST | MRC_F_LAST,
		.dqpn = 1, .psn = 0, .plen = 64, .mlen = 64 };
	struct mrc_xack x = { 0 };
	uint8_t hb[MRCE_TX_HDR_MAX], pl[128] = { 0 };
	size_t hl = mrce_wire_put_data_x(hb, &h, &x);
	struct mrce_stats a, b;
	mrce_stats(e, &a);
	CHECK_EQ(mrce_rx_split(e, 0, peer, hb, hl, pl, 63, MRCE_RX_LOCAL), -EBADMSG);
	CHECK_EQ(mrce_rx_split(e, 0, peer, hb, hl + 4, pl, 64, MRCE_RX_LOCAL), -EBADMSG);
	CHECK_EQ(mrce_rx_split(e, 0, peer, hb, hl, NULL, 64, MRCE_RX_LOCAL), -EBADMSG);
	uint8_t ack[MRC_ACK_HDR_LEN] = { MRC_WIRE_VERSION, MRC_OP_ACK };
	CHECK_EQ(mrce_rx_split(e, 0, peer, ack, sizeof ack, pl, 0, MRCE_RX_LOCAL), -EBADMSG);
	mrce_stats(e, &b);
	CHECK_EQ(b.rx_drop[MRC_DROP_LENGTH] - a.rx_drop[MRC_DROP_LENGTH], 3);
	CHECK_EQ(b.rx_drop[MRC_DROP_OPCODE] - a.rx_drop[MRC_DROP_OPCODE], 1);
	etest_fini(&t);
}

int main(void)
{
	etest_seed("test_engine_local", 0x10ca1);
	const struct CMUnitTest tests[] = {
		T(test_local_pair),
		T(test_sender_skips_crc),
		T(test_wire_dgram_checked),
		T(test_flag_alone_checked),
		T(test_split_pair),
		T(test_split_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
