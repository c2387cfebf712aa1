/* Eager messages in libnccl-net-mrc.so (docs/nccl.md "Eager messages"),
 * against a real mrcd on loopback (fixture: tests/support/nccl_eager_fix.h):
 *  - eager then rendezvous on one comm and tag: a small send before its
 *    receive goes at once, a large one waits for its CTS, each lands in
 *    its own receive (posting order), sizes from test;
 *  - credit exhaustion: the ring's 16 slots filled by sends nobody
 *    received yet, the 17th falls back to the CTS path (counters);
 *  - a grouped receive mixing eager and rendezvous messages;
 *  - a 4 KiB ping-pong as NCCL's proxy drives it sends no CTS, and one
 *    data packet per message (compact eager messages);
 *  - more eager-sized receives than the ring has slots.
 * Per-tag order: tests/test_nccl_tags.c; a hostile peer:
 * tests/test_nccl_hostile.c. */
#include "tests/support/nccl_eager_fix.h"

/* A small send before its receive goes at once (eager); a larger one of
 * the same tag after it waits for its receive's CTS; a third, small, after
 * both.  Each lands in the receive of its position. */
static void test_eager_then_rendezvous(void **state)
{
	NEED(state);
	void *ctx;
	struct nccl_pair p;
	const ncclNet_v11_t *n = open_pair(1, &ctx, &p);
	static uint8_t s1[1000], s2[BIG], s3[500], r[3][BIG + 64];
	fill(s1, sizeof(s1), 1);
	fill(s2, sizeof(s2), 2);
	fill(s3, sizeof(s3), 3);
	memset(r, 0xee, sizeof(r));
	void *smh, *rmh;
	NC(n->regMr(p.sc, s2, sizeof(s2), NCCL_PTR_HOST, &smh));   /* mhandles are global */
	NC(n->regMr(p.rc, r, sizeof(r), NCCL_PTR_HOST, &rmh));
	void *q1 = NULL, *q2 = NULL;
	NC(n->isend(p.sc, s1, sizeof(s1), 7, smh, NULL, &q1));
	CHECK(q1, "a small isend before its receive did not go at once");
	NC(n->isend(p.sc, s2, sizeof(s2), 7, smh, NULL, &q2));
	assert_null(q2);                         /* large: no CTS yet */
	wait_unexpected(p.rc, 1);
	void *r1 = recv1(n, p.rc, r[0], BIG, 7, rmh);
	void *r2 = recv1(n, p.rc, r[1], BIG, 7, rmh);
	q2 = send_retry(n, p.sc, s2, sizeof(s2), 7, smh);
	int sz = -1;
	wait_req(n, q1, &sz);
	assert_int_equal(sz, sizeof(s1));
	wait_req(n, q2, &sz);
	assert_int_equal(sz, sizeof(s2));
	wait_req(n, r1, &sz);
	assert_int_equal(sz, sizeof(s1));
	assert_memory_equal(r[0], s1, sizeof(s1));
	assert_int_equal(r[0][sizeof(s1)], 0xee);
	wait_req(n, r2, &sz);
	assert_int_equal(sz, sizeof(s2));
	assert_memory_equal(r[1], s2, sizeof(s2));
	assert_int_equal(r[1][sizeof(s2)], 0xee);
	/* and eager again after the rendezvous */
	void *q3 = send_retry(n, p.sc, s3, sizeof(s3), 7, smh);
	void *r3 = recv1(n, p.rc, r[2], BIG, 7, rmh);
	wait_req(n, q3, &sz);
	wait_req(n, r3, &sz);
	assert_int_equal(sz, sizeof(s3));
	assert_memory_equal(r[2], s3, sizeof(s3));
	struct mrcn_stats ss = stats(p.sc), rs = stats(p.rc);
	print_message("send: eager %llu cts %llu paired %llu; recv: unexpected %llu cts %llu\n",
		      (unsigned long long)ss.eager_sends, (unsigned long long)ss.cts_sends,
		      (unsigned long long)ss.paired, (unsigned long long)rs.unexpected,
		      (unsigned long long)rs.cts_posted);
	CHECK(ss.eager_sends >= 1 && ss.cts_sends >= 1 && ss.eager_sends + ss.cts_sends == 3,
	      "both paths taken");
	CHECK(rs.unexpected >= 1, "the first message waited for its irecv");
	close_all(n, &p, ctx, smh, rmh);
}

/* A receive waits without a CTS; 16 small sends nobody receives yet then
 * fill the receiver's ring, and its message finds no credit: the
 * receiver, polled, sends that receive's CTS late (counted) and the
 * message goes by it; a receive posted while the ring is held gets its
 * CTS at once; then everything arrives in place and credits come back. */
static void test_credit_exhaustion(void **state)
{
	NEED(state);
	void *ctx;
	struct nccl_pair p;
	const ncclNet_v11_t *n = open_pair(2, &ctx, &p);
	enum { N = MRCN_EG_SLOTS + 1, L = 64 };
	static uint8_t sb[N][L], rb[N][L + 8];
	for (int i = 0; i < N; i++)
		fill(sb[i], L, (uint8_t)i);
	memset(rb, 0xee, sizeof(rb));
	void *smh, *rmh, *sq[N] = { 0 }, *rq[N] = { 0 };
	NC(n->regMr(p.sc, sb, sizeof(sb), NCCL_PTR_HOST, &smh));
	NC(n->regMr(p.rc, rb, sizeof(rb), NCCL_PTR_HOST, &rmh));
	/* the 17th message's receive first: eager-sized, the ring empty, so
	 * it waits without a CTS, counting on a credit */
	rq[N - 1] = recv1(n, p.rc, rb[N - 1], L + 8, N - 1, rmh);
	struct mrcn_stats r0 = stats(p.rc);
	assert_int_equal(r0.deferred, 1);
	assert_int_equal(r0.cts_posted, 0);
	/* 16 messages nobody asked for take every slot (and credit) */
	for (int i = 0; i < MRCN_EG_SLOTS; i++) {
		NC(n->isend(p.sc, sb[i], L, i, smh, NULL, &sq[i]));
		CHECK(sq[i], "eager send %d of %d did not go at once", i, MRCN_EG_SLOTS);
	}
	struct mrcn_stats before = stats(p.sc);
	assert_int_equal(before.eager_sends, MRCN_EG_SLOTS);
	NC(n->isend(p.sc, sb[N - 1], L, N - 1, smh, NULL, &sq[N - 1]));
	assert_null(sq[N - 1]);
	struct mrcn_stats mid = stats(p.sc);
	CHECK(mid.eager_no_credit > before.eager_no_credit, "no credit was never hit");
	/* the receiver, polled, sees every slot held and nothing to free:
	 * the deferred receive's CTS goes now (late) */
	wait_unexpected(p.rc, MRCN_EG_SLOTS);
	assert_int_equal(stats(p.rc).late_cts, 1);
	sq[N - 1] = send_retry(n, p.sc, sb[N - 1], L, N - 1, smh);
	struct mrcn_stats after = stats(p.sc);
	assert_int_equal(after.cts_sends, before.cts_sends + 1);
	assert_int_equal(after.eager_sends, MRCN_EG_SLOTS);
	/* a receive posted now, with the ring held and nothing freed, takes
	 * a CTS at once rather than wait for a credit */
	static uint8_t xb[L + 8];
	uint64_t cts0 = stats(p.rc).cts_posted;
	void *xr = recv1(n, p.rc, xb, L + 8, 50, rmh);
	assert_int_equal(stats(p.rc).cts_posted, cts0 + 1);
	void *xs = send_retry(n, p.sc, sb[0], L, 50, smh);
	int xsz;
	wait_req(n, xs, &xsz);
	wait_req(n, xr, &xsz);
	assert_int_equal(xsz, L);
	assert_memory_equal(xb, sb[0], L);
	assert_int_equal(stats(p.sc).cts_sends, before.cts_sends + 2);
	for (int i = 0; i < MRCN_EG_SLOTS; i++)
		rq[i] = recv1(n, p.rc, rb[i], L + 8, i, rmh);
	for (int i = 0; i < N; i++) {
		int sz = -1;
		wait_req(n, sq[i], &sz);
		assert_int_equal(sz, L);
		wait_req(n, rq[i], &sz);
		assert_int_equal(sz, L);
		assert_memory_equal(rb[i], sb[i], L);
		assert_int_equal(rb[i][L], 0xee);
	}
	/* the credits come back: eager again */
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	void *q = NULL;
	while (!q) {
		NC(n->isend(p.sc, sb[0], L, 100, smh, NULL, &q));
		CHECK(mrcd_spawn_now_ms() < end, "credits never came back");
	}
	assert_int_equal(stats(p.sc).eager_sends, MRCN_EG_SLOTS + 1);
	void *rr = recv1(n, p.rc, rb[0], L + 8, 100, rmh);
	int sz = -1;
	wait_req(n, rr, &sz);
	assert_int_equal(sz, L);
	close_all(n, &p, ctx, smh, rmh);
}

/* One grouped receive of 4: two messages came eagerly before it, two
 * large ones go by CTS after it, in another order. */
static void test_grouped_mixed(void **state)
{
	NEED(state);
	void *ctx;
	struct nccl_pair p;
	const ncclNet_v11_t *n = open_pair(3, &ctx, &p);
	static const size_t len[4] = { 3000, BIG, 0, BIG - 5 };  /* tags 1..4 */
	static uint8_t sb[4][BIG], rb[4][BIG + 64];
	for (int i = 0; i < 4; i++)
		fill(sb[i], BIG, (uint8_t)(i + 10));
	memset(rb, 0xee, sizeof(rb));
	void *smh, *rmh, *sq[4] = { 0 };
	NC(n->regMr(p.sc, sb, sizeof(sb), NCCL_PTR_HOST, &smh));
	NC(n->regMr(p.rc, rb, sizeof(rb), NCCL_PTR_HOST, &rmh));
	NC(n->isend(p.sc, sb[0], len[0], 1, smh, NULL, &sq[0]));
	NC(n->isend(p.sc, sb[2], len[2], 3, smh, NULL, &sq[2]));
	CHECK(sq[0] && sq[2], "small sends before the receive did not go at once");
	wait_unexpected(p.rc, 2);
	void *data[4] = { rb[0], rb[1], rb[2], rb[3] }, *mh[4] = { rmh, rmh, rmh, rmh };
	size_t sizes[4] = { BIG, BIG, BIG, BIG };
	int tags[4] = { 1, 2, 3, 4 };
	void *rq = NULL;
	NC(n->irecv(p.rc, 4, data, sizes, tags, mh, NULL, &rq));
	assert_non_null(rq);
	sq[3] = send_retry(n, p.sc, sb[3], len[3], 4, smh);
	sq[1] = send_retry(n, p.sc, sb[1], len[1], 2, smh);
	int got[4] = { -1, -1, -1, -1 }, sz;
	for (int i = 0; i < 4; i++)
		wait_req(n, sq[i], &sz);
	wait_req(n, rq, got);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(got[i], (int)len[i]);
		assert_memory_equal(rb[i], sb[i], len[i]);
		assert_int_equal(rb[i][len[i]], 0xee);
	}
	struct mrcn_stats ss = stats(p.sc);
	assert_int_equal(ss.eager_sends, 2);
	assert_int_equal(ss.cts_sends, 2);
	/* the two that came eagerly needed no CTS */
	assert_int_equal(stats(p.rc).cts_posted, 2);
	/* an eager message larger than its receive fails that receive */
	void *q = send_retry(n, p.sc, sb[0], 2000, 9, smh);
	wait_req(n, q, &sz);
	wait_unexpected(p.rc, 3);
	void *rr = recv1(n, p.rc, rb[0], 100, 9, rmh);
	int done = 0;
	assert_int_equal(n->test(rr, &done, &sz), ncclInvalidUsage);
	close_all(n, &p, ctx, smh, rmh);
}

/* A 4 KiB ping-pong as NCCL's proxy drives it (two comm pairs, receives
 * posted ahead or after the message came): every message goes eagerly,
 * no receive sends a CTS (before, each sent a CTS or a void CTS: one
 * datagram more per message than libmrc), and credits come back in
 * batches: at most one credit message per half ring of messages, besides
 * the advertisement; and each message is one data packet (compact eager
 * messages: no header to push 4 KiB over mrcd's mtu), counted in the
 * daemon's engine. */
static void test_small_roundtrip(void **state)
{
	NEED(state);
	const ncclNet_v11_t *n = drv.net;
	void *ctx;
	NC(n->init(&ctx, 5, NULL, NULL, NULL));
	struct nccl_pair p[2];
	nccl_connect_pairs(n, ctx, p, 2);
	wait_ring(p[0].sc);
	wait_ring(p[1].sc);
	enum { R = 64, L = 4096 };
	static uint8_t sb[2][L], rb[2][L + 8];
	void *smh[2], *rmh[2];
	for (int k = 0; k < 2; k++) {
		NC(n->regMr(p[k].sc, sb[k], sizeof(sb[k]), NCCL_PTR_HOST, &smh[k]));
		NC(n->regMr(p[k].rc, rb[k], sizeof(rb[k]), NCCL_PTR_HOST, &rmh[k]));
	}
	int sz;
	uint64_t tx0 = nccl_pairs_engine_stat(&mrcd_d, "tx_data");
	for (int i = 0; i < R; i++) {
		for (int k = 0; k < 2; k++) {     /* ping on pair 0, pong on pair 1 */
			fill(sb[k], L, (uint8_t)(i * 2 + k));
			memset(rb[k], 0xee, sizeof(rb[k]));
			void *rq = NULL, *sq;
			uint64_t unexp = stats(p[k].rc).unexpected;
			if (i % 2)              /* receive first: it waits without a CTS */
				rq = recv1(n, p[k].rc, rb[k], L, 3, rmh[k]);
			sq = send_retry(n, p[k].sc, sb[k], L, 3, smh[k]);
			if (!rq) {              /* message first: kept, then matched */
				wait_unexpected(p[k].rc, unexp + 1);
				rq = recv1(n, p[k].rc, rb[k], L, 3, rmh[k]);
			}
			wait_req(n, sq, &sz);
			wait_req(n, rq, &sz);
			assert_int_equal(sz, L);
			assert_memory_equal(rb[k], sb[k], L);
			assert_int_equal(rb[k][L], 0xee);
		}
	}
	/* Data packets the daemon sent meanwhile (one mrcd: both ends'):
	 * one per message at the default mtu (4096 payload bytes), the
	 * first of each comm two (its header) unless local_mtu's larger
	 * packets hold it, one per credit message; a retransmission or two
	 * at most.  With a header in every 4 KiB message it was two per
	 * message.  The last credit messages may still be on their way to
	 * the daemon when it is read: at least one packet per message. */
	uint64_t pkts = nccl_pairs_engine_stat(&mrcd_d, "tx_data") - tx0, credits = 0;
	for (int k = 0; k < 2; k++)
		credits += stats(p[k].rc).credit_msgs;
	print_message("%llu data packets for %d messages of %d bytes and %llu credit messages\n",
		      (unsigned long long)pkts, 2 * R, L, (unsigned long long)credits);
	CHECK(pkts >= 2 * R && pkts <= 2 * R + 2 + credits + 4,
	      "%llu data packets for %d messages", (unsigned long long)pkts, 2 * R);
	for (int k = 0; k < 2; k++) {
		struct mrcn_stats ss = stats(p[k].sc), rs = stats(p[k].rc);
		print_message("pair %d: send eager %llu (compact %llu) cts %llu; recv cts %llu "
			      "deferred %llu credit msgs %llu\n", k, (unsigned long long)ss.eager_sends,
			      (unsigned long long)ss.eager_compact, (unsigned long long)ss.cts_sends,
			      (unsigned long long)rs.cts_posted, (unsigned long long)rs.deferred,
			      (unsigned long long)rs.credit_msgs);
		assert_int_equal(ss.eager_compact, R - 1);      /* all but the first */
		assert_int_equal(ss.eager_sends, R);
		assert_int_equal(ss.cts_sends, 0);
		CHECK(rs.cts_posted == 0, "pair %d: %llu CTSs for %d eager-sized receives", k,
		      (unsigned long long)rs.cts_posted, R);
		assert_int_equal(rs.deferred, R / 2);
		assert_int_equal(rs.late_cts, 0);
		CHECK(rs.credit_msgs <= 1 + R / (MRCN_EG_SLOTS / 2),
		      "pair %d: %llu credit messages for %d messages", k,
		      (unsigned long long)rs.credit_msgs, R);
		CHECK(rs.credit_msgs >= 2, "pair %d: credits never came back", k);
		NC(n->deregMr(p[k].sc, smh[k]));
		NC(n->deregMr(p[k].rc, rmh[k]));
		close_pair(n, &p[k]);
	}
	NC(n->finalize(ctx));
}

/* More eager-sized receives posted than the ring has slots, then the
 * receiver calls nothing more until every send has gone (the harness's
 * close-in-flight check does this): each posted receive's message must
 * find a credit or a CTS without the receiver's progress, as with a CTS
 * per receive.  The first 16 (one credit each) wait without a CTS, the
 * rest get one. */
static void test_receives_beyond_ring(void **state)
{
	NEED(state);
	void *ctx;
	struct nccl_pair p;
	const ncclNet_v11_t *n = open_pair(8, &ctx, &p);
	enum { N = MRCN_EG_SLOTS + 8, L = 64 };
	static uint8_t sb[N][L], rb[N][L + 8];
	for (int i = 0; i < N; i++)
		fill(sb[i], L, (uint8_t)(i + 40));
	memset(rb, 0xee, sizeof(rb));
	void *smh, *rmh, *sq[N], *rq[N];
	NC(n->regMr(p.sc, sb, sizeof(sb), NCCL_PTR_HOST, &smh));
	NC(n->regMr(p.rc, rb, sizeof(rb), NCCL_PTR_HOST, &rmh));
	for (int i = 0; i < N; i++)
		rq[i] = recv1(n, p.rc, rb[i], L, 300 + i % 3, rmh);
	/* only the sender is called from here on (stats() would poll the
	 * receiver: read after) */
	for (int i = 0; i < N; i++)
		sq[i] = send_retry(n, p.sc, sb[i], L, 300 + i % 3, smh);
	struct mrcn_stats rs = stats(p.rc);
	print_message("recv: deferred %llu cts %llu credit msgs %llu\n",
		      (unsigned long long)rs.deferred, (unsigned long long)rs.cts_posted,
		      (unsigned long long)rs.credit_msgs);
	assert_int_equal(rs.deferred, MRCN_EG_SLOTS);
	assert_int_equal(rs.cts_posted, N - MRCN_EG_SLOTS);
	int sz;
	for (int i = 0; i < N; i++) {
		wait_req(n, sq[i], &sz);
		wait_req(n, rq[i], &sz);
		assert_int_equal(sz, L);
		assert_memory_equal(rb[i], sb[i], L);
		assert_int_equal(rb[i][L], 0xee);
	}
	close_all(n, &p, ctx, smh, rmh);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_eager_then_rendezvous),
		cmocka_unit_test(test_credit_exhaustion),
		cmocka_unit_test(test_grouped_mixed),
		cmocka_unit_test(test_small_roundtrip),
		cmocka_unit_test(test_receives_beyond_ring),
	};
	return nccl_eager_main("test_nccl_eager", t, sizeof(t) / sizeof(t[0]));
}
