/* Eager messages in libnccl-net-mrc.so (docs/nccl.md "Eager messages"),
 * against a real mrcd on loopback, through the test build of the plugin
 * (build/tests/libnccl-net-mrcfake.so: the same plugin, which also
 * exports mrcn_comm_stats, its per-comm counters):
 *  - eager then rendezvous on one comm and tag: a small send before its
 *    receive goes at once, a large one waits for its CTS, each lands in
 *    its own receive (posting order), sizes from test;
 *  - credit exhaustion: the ring's 16 slots filled by sends nobody
 *    received yet, the 17th falls back to the CTS path (counters);
 *  - a grouped receive mixing eager and rendezvous messages;
 *  - an eager message larger than its receive fails that receive;
 *  - a hostile peer (a raw libmrc QP connected to the plugin's listener)
 *    writing malformed eager messages: unknown slot, a header size beyond
 *    the slot, a write longer than a slot: each refused with an error on
 *    that comm, the receive buffer (and its guard) untouched.
 * MRC_NCCL_TEST_PLUGIN names another plugin to run these against (e.g.
 * an older build, to see them fail). */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <mrc/mrc.h>

#include "tests/support/mrcd_spawn.h"
#include "tests/support/nccl_pairs.h"
#include "tests/support/seeded.h"
#include "tests/support/skip.h"

#include "tools/nccl-harness/drive.h"
#include "nccl/proto.h"

#define NC(call) assert_int_equal((call), ncclSuccess)

typedef int mrcn_comm_stats_fn(void *comm, struct mrcn_stats *out);
static char plugin_path[PATH_MAX];
static struct ndrv drv;
static mrcn_comm_stats_fn *stats_fn;
static struct mrcd_proc mrcd_d;

static int setup_daemon(void **state)
{
	unsetenv("MRC_NCCL_EAGER_BYTES");       /* the default: 64 KiB */
	return nccl_pairs_group_setup(state, &mrcd_d);
}

static int teardown_daemon(void **state)
{
	return nccl_pairs_group_teardown(state);
}

#define NEED(state) NCCL_PAIRS_NEED(state, drv.net, plugin_path)

static struct mrcn_stats stats(void *comm)
{
	struct mrcn_stats s;
	memset(&s, 0, sizeof(s));
	CHECK(stats_fn, "%s exports no mrcn_comm_stats", plugin_path);
	assert_int_equal(stats_fn(comm, &s), 0);
	return s;
}

/* The sender has the receiver's eager ring (advertised at accept). */
static void wait_ring(void *sc)
{
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	while (stats(sc).ring_slots != MRCN_EG_SLOTS)
		CHECK(mrcd_spawn_now_ms() < end, "the receiver's eager ring was never advertised");
}

/* The receiver holds want eager messages no irecv asked for yet. */
static void wait_unexpected(void *rc, uint64_t want)
{
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	while (stats(rc).unexpected < want)
		CHECK(mrcd_spawn_now_ms() < end, "%llu eager messages never arrived",
		      (unsigned long long)want);
}

static void wait_req(const ncclNet_v11_t *n, void *req, int *sizes)
{
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	for (int done = 0; !done;) {
		NC(n->test(req, &done, sizes));
		CHECK(done || mrcd_spawn_now_ms() < end, "request not done");
	}
}

/* isend retried while it returns NULL (NCCL's proxy does the same). */
static void *send_retry(const ncclNet_v11_t *n, void *sc, void *buf, size_t len, int tag, void *mh)
{
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	void *req = NULL;
	for (;;) {
		NC(n->isend(sc, buf, len, tag, mh, NULL, &req));
		if (req)
			return req;
		CHECK(mrcd_spawn_now_ms() < end, "isend of tag %d stays NULL", tag);
	}
}

static void *recv1(const ncclNet_v11_t *n, void *rc, void *buf, size_t cap, int tag, void *mh)
{
	void *data[1] = { buf }, *req = NULL;
	size_t sizes[1] = { cap };
	int tags[1] = { tag };
	NC(n->irecv(rc, 1, data, sizes, tags, &mh, NULL, &req));
	CHECK(req, "irecv of tag %d returned NULL", tag);
	return req;
}

static void fill(uint8_t *b, size_t n, uint8_t salt)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(rnd() ^ salt);
}

static void close_pair(const ncclNet_v11_t *n, struct nccl_pair *p)
{
	NC(n->closeSend(p->sc));
	NC(n->closeRecv(p->rc));
	NC(n->closeListen(p->lc));
}

#define BIG (256u << 10)     /* above the eager limit: the CTS path */

/* A small send before its receive goes at once (eager); a larger one of
 * the same tag after it waits for its receive's CTS; a third, small, after
 * both.  Each lands in the receive of its position. */
static void test_eager_then_rendezvous(void **state)
{
	NEED(state);
	const ncclNet_v11_t *n = drv.net;
	void *ctx;
	NC(n->init(&ctx, 1, NULL, NULL, NULL));
	struct nccl_pair p;
	nccl_connect_pairs(n, ctx, &p, 1);
	wait_ring(p.sc);
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
	NC(n->deregMr(p.sc, smh));
	NC(n->deregMr(p.rc, rmh));
	close_pair(n, &p);
	NC(n->finalize(ctx));
}

/* A receive waits without a CTS; 16 small sends nobody receives yet then
 * fill the receiver's ring, and its message finds no credit: the
 * receiver, polled, sends that receive's CTS late (counted) and the
 * message goes by it; a receive posted while the ring is held gets its
 * CTS at once; then everything arrives in place and credits come back. */
static void test_credit_exhaustion(void **state)
{
	NEED(state);
	const ncclNet_v11_t *n = drv.net;
	void *ctx;
	NC(n->init(&ctx, 2, NULL, NULL, NULL));
	struct nccl_pair p;
	nccl_connect_pairs(n, ctx, &p, 1);
	wait_ring(p.sc);
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
	NC(n->deregMr(p.sc, smh));
	NC(n->deregMr(p.rc, rmh));
	close_pair(n, &p);
	NC(n->finalize(ctx));
}

/* One grouped receive of 4: two messages came eagerly before it, two
 * large ones go by CTS after it, in another order. */
static void test_grouped_mixed(void **state)
{
	NEED(state);
	const ncclNet_v11_t *n = drv.net;
	void *ctx;
	NC(n->init(&ctx, 3, NULL, NULL, NULL));
	struct nccl_pair p;
	nccl_connect_pairs(n, ctx, &p, 1);
	wait_ring(p.sc);
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
	NC(n->deregMr(p.sc, smh));
	NC(n->deregMr(p.rc, rmh));
	close_pair(n, &p);
	NC(n->finalize(ctx));
}

/* A 4 KiB ping-pong as NCCL's proxy drives it (two comm pairs, receives
 * posted ahead or after the message came): every message goes eagerly,
 * no receive sends a CTS (before, each sent a CTS or a void CTS: one
 * datagram more per message than libmrc), and credits come back in
 * batches: at most one credit message per half ring of messages, besides
 * the advertisement. */
static void test_small_roundtrip_no_cts(void **state)
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
	for (int k = 0; k < 2; k++) {
		struct mrcn_stats ss = stats(p[k].sc), rs = stats(p[k].rc);
		print_message("pair %d: send eager %llu cts %llu; recv cts %llu deferred %llu "
			      "credit msgs %llu\n", k, (unsigned long long)ss.eager_sends,
			      (unsigned long long)ss.cts_sends, (unsigned long long)rs.cts_posted,
			      (unsigned long long)rs.deferred, (unsigned long long)rs.credit_msgs);
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
	const ncclNet_v11_t *n = drv.net;
	void *ctx;
	NC(n->init(&ctx, 8, NULL, NULL, NULL));
	struct nccl_pair p;
	nccl_connect_pairs(n, ctx, &p, 1);
	wait_ring(p.sc);
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
	NC(n->deregMr(p.sc, smh));
	NC(n->deregMr(p.rc, rmh));
	close_pair(n, &p);
	NC(n->finalize(ctx));
}

/* Hundreds of distinct tags on one comm (the harness's rounds use a
 * tag per message): the per-tag numbering's table grows (it was a fixed
 * 256 at first, and irecv failed with ncclInternalError at the 257th),
 * every message still lands in its receive; a second pass over the same
 * tags takes each one's number 1. */
static void test_many_tags(void **state)
{
	NEED(state);
	const ncclNet_v11_t *n = drv.net;
	void *ctx;
	NC(n->init(&ctx, 9, NULL, NULL, NULL));
	struct nccl_pair p;
	nccl_connect_pairs(n, ctx, &p, 1);
	wait_ring(p.sc);
	enum { NT = 600, L = 32 };
	static uint8_t sb[L], rb[L + 8];
	void *smh, *rmh;
	NC(n->regMr(p.sc, sb, sizeof(sb), NCCL_PTR_HOST, &smh));
	NC(n->regMr(p.rc, rb, sizeof(rb), NCCL_PTR_HOST, &rmh));
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < NT; i++) {
			int tag = 5000 + i * 7919;      /* spread over the hash */
			fill(sb, L, (uint8_t)i);
			memset(rb, 0xee, sizeof(rb));
			void *rq = recv1(n, p.rc, rb, L, tag, rmh);
			void *sq = send_retry(n, p.sc, sb, L, tag, smh);
			int sz;
			wait_req(n, sq, &sz);
			wait_req(n, rq, &sz);
			CHECK(sz == L && memcmp(rb, sb, L) == 0 && rb[L] == 0xee,
			      "pass %d tag %d: wrong message", pass, tag);
		}
	struct mrcn_stats ss = stats(p.sc);
	assert_int_equal(ss.eager_sends, 2 * NT);
	NC(n->deregMr(p.sc, smh));
	NC(n->deregMr(p.rc, rmh));
	close_pair(n, &p);
	NC(n->finalize(ctx));
}

/* NCCL's order per tag: three tags, each with a run of messages of
 * mixed sizes (eager and CTS path), sent round-robin across tags while
 * the receiver posts them tag by tag, some receives eager-sized (no
 * CTS), some large (CTS), one grouped receive of a message of each tag:
 * each receive gets the message of its number in its tag. */
static void test_tag_order(void **state)
{
	NEED(state);
	const ncclNet_v11_t *n = drv.net;
	void *ctx;
	NC(n->init(&ctx, 6, NULL, NULL, NULL));
	struct nccl_pair p;
	nccl_connect_pairs(n, ctx, &p, 1);
	wait_ring(p.sc);
	enum { T = 3, M = 6 };
	static uint8_t sb[T][M][BIG], rb[T][M][BIG + 8];
	size_t len[T][M], cap[T][M];
	for (int t = 0; t < T; t++)
		for (int m = 0; m < M; m++) {
			/* even numbers small, odd large, some receives exact */
			len[t][m] = m % 2 ? BIG - (size_t)(rnd() % 1000) : 1 + (size_t)(rnd() % 4000);
			cap[t][m] = m % 2 ? BIG : (m % 4 ? 4096 : BIG);
			fill(sb[t][m], len[t][m], (uint8_t)(t * 16 + m));
		}
	memset(rb, 0xee, sizeof(rb));
	void *smh, *rmh, *sq[T][M] = { { 0 } }, *rq[T][M] = { { 0 } };
	NC(n->regMr(p.sc, sb, sizeof(sb), NCCL_PTR_HOST, &smh));
	NC(n->regMr(p.rc, rb, sizeof(rb), NCCL_PTR_HOST, &rmh));
	/* message 0 of each tag in one grouped receive, eager-sized */
	void *gdata[T], *gmh[T], *gq = NULL;
	size_t gsz[T];
	int gtag[T];
	for (int t = 0; t < T; t++) {
		gdata[t] = rb[t][0];
		gmh[t] = rmh;
		gsz[t] = 4096;
		gtag[t] = 10 + t;
		cap[t][0] = 4096;
	}
	NC(n->irecv(p.rc, T, gdata, gsz, gtag, gmh, NULL, &gq));
	assert_non_null(gq);
	int next_s[T] = { 0 }, next_r[T] = { 1, 1, 1 }, rt = T - 1;
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	for (int busy = 1; busy;) {
		CHECK(mrcd_spawn_now_ms() < end, "tag order: not done");
		busy = 0;
		/* sender: the next message of every tag, in turn */
		for (int t = 0; t < T; t++) {
			int m = next_s[t];
			if (m == M)
				continue;
			busy = 1;
			NC(n->isend(p.sc, sb[t][m], len[t][m], 10 + t, smh, NULL, &sq[t][m]));
			if (sq[t][m])
				next_s[t]++;
		}
		/* receiver: tag by tag, from the last */
		if (rt >= 0) {
			busy = 1;
			int m = next_r[rt];
			NC(n->irecv(p.rc, 1, (void *[]){ rb[rt][m] }, (size_t[]){ cap[rt][m] },
				    (int[]){ 10 + rt }, &rmh, NULL, &rq[rt][m]));
			if (rq[rt][m] && ++next_r[rt] == M)
				rt--;
		}
		int d, sz[T];
		if (gq) {
			busy = 1;
			NC(n->test(gq, &d, sz));
			if (d) {
				gq = NULL;
				for (int t = 0; t < T; t++)
					assert_int_equal(sz[t], (int)len[t][0]);
			}
		}
		for (int t = 0; t < T; t++)
			for (int m = 0; m < M; m++) {
				if (sq[t][m] && sq[t][m] != (void *)1) {
					busy = 1;
					NC(n->test(sq[t][m], &d, sz));
					if (d)
						sq[t][m] = (void *)1;
				}
				if (rq[t][m] && rq[t][m] != (void *)1) {
					busy = 1;
					NC(n->test(rq[t][m], &d, sz));
					if (d) {
						CHECK(sz[0] == (int)len[t][m],
						      "tag %d message %d: %d bytes, sent %zu", 10 + t, m,
						      sz[0], len[t][m]);
						rq[t][m] = (void *)1;
					}
				}
			}
	}
	for (int t = 0; t < T; t++)
		for (int m = 0; m < M; m++) {
			CHECK(memcmp(rb[t][m], sb[t][m], len[t][m]) == 0,
			      "tag %d message %d: not its bytes", 10 + t, m);
			assert_int_equal(rb[t][m][len[t][m]], 0xee);
		}
	struct mrcn_stats ss = stats(p.sc), rs = stats(p.rc);
	print_message("send eager %llu cts %llu dropped %llu; recv cts %llu deferred %llu\n",
		      (unsigned long long)ss.eager_sends, (unsigned long long)ss.cts_sends,
		      (unsigned long long)ss.paired, (unsigned long long)rs.cts_posted,
		      (unsigned long long)rs.deferred);
	CHECK(ss.cts_sends >= T * M / 2 && ss.eager_sends + ss.cts_sends == T * M, "both paths");
	CHECK(rs.deferred >= T, "eager-sized receives waited without a CTS");
	NC(n->deregMr(p.sc, smh));
	NC(n->deregMr(p.rc, rmh));
	close_pair(n, &p);
	NC(n->finalize(ctx));
}

/* ---- a hostile peer ------------------------------------------------------ */
struct raw {
	struct mrc_ctx *ctx;
	struct mrc_qp *qp;
	struct mrc_mr *mr;
	uint8_t *base;
	uint32_t rkey;
	struct mrcn_cts adv;             /* the plugin's eager advertisement */
};

static struct mrc_completion raw_get1(struct raw *w)
{
	struct mrc_completion c;
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	int k;
	while ((k = mrc_poll_cq(w->qp, &c, 1)) == 0)
		CHECK(mrcd_spawn_now_ms() < end, "raw peer: no completion");
	assert_int_equal(k, 1);
	return c;
}

/* A raw libmrc QP connects to the plugin's listener as a send comm
 * would, and reads the eager advertisement. */
static void raw_connect(const ncclNet_v11_t *n, void *ctx, struct raw *w, void **lc, void **rc)
{
	uint8_t h[NCCL_NET_HANDLE_MAXSIZE];
	NC(n->listen(ctx, 0, h, lc));
	struct mrcn_handle hd;
	assert_int_equal(mrcn_handle_parse(h, &hd), 0);
	assert_int_equal(mrc_open(NULL, &w->ctx), 0);
	assert_int_equal(mrc_alloc_mr(w->ctx, 1 << 20, MRC_MR_ALL, &w->mr), 0);
	w->base = mrc_mr_addr(w->mr);
	assert_int_equal(mrc_create_qp(w->ctx, NULL, &w->qp), 0);
	struct mrc_qp_addr peer;
	assert_int_equal(mrc_connect(w->qp, hd.host, hd.sid, hd.listen_id, &peer), 0);
	w->rkey = peer.priv;
	assert_int_equal(mrc_post_recv(w->qp, 1, mrc_mr_key(w->mr), 0, 64), 0);
	*rc = NULL;
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	ncclNetDeviceHandle_t *dev = NULL;
	while (!*rc) {
		NC(n->accept(*lc, rc, &dev));
		CHECK(mrcd_spawn_now_ms() < end, "accept");
	}
	struct mrc_completion c = raw_get1(w);
	assert_int_equal(c.status, 0);
	assert_int_equal(c.op, MRC_CQE_RECV);
	CHECK(mrcn_cts_parse(w->base, c.byte_len, &w->adv) == 0 && w->adv.magic == MRCN_EGR_MAGIC,
	      "no eager advertisement from the plugin");
	assert_int_equal(w->adv.id, MRCN_EG_SLOTS);
}

static void raw_close(struct raw *w)
{
	mrc_destroy_qp(w->qp);
	mrc_dereg_mr(w->mr);
	mrc_close(w->ctx);
}

/* One malformed eager WRITE_IMM (len bytes, header first, written to the
 * ring's slot 0 with imm; len 0: a slot's stride and 64 more, the header
 * saying so); the plugin's posted receive must fail, its buffer and guard
 * untouched. */
static void hostile_case(const ncclNet_v11_t *n, void *ctx, const char *what, uint32_t hdr_size,
			 uint64_t len, uint32_t imm)
{
	struct raw w = { 0 };
	void *lc, *rc;
	raw_connect(n, ctx, &w, &lc, &rc);
	static uint8_t rb[8192];
	memset(rb, 0xee, sizeof(rb));
	void *rmh, *rq;
	NC(n->regMr(rc, rb, sizeof(rb), NCCL_PTR_HOST, &rmh));
	rq = recv1(n, rc, rb, 4096, 1, rmh);
	if (!len) {
		len = w.adv.size + 64;
		hdr_size = (uint32_t)(len - sizeof(struct mrcn_eg_hdr));
	}
	struct mrcn_eg_hdr h = { .magic = MRCN_EG_HDR_MAGIC, .tag = 1, .size = hdr_size, .seq = 0 };
	memcpy(w.base + 4096, &h, sizeof(h));
	memset(w.base + 4096 + sizeof(h), 0x5a, len - sizeof(h));
	assert_int_equal(mrc_post_write_imm(w.qp, 2, mrc_mr_key(w.mr), 4096, len, w.rkey,
					    w.adv.off, imm), 0);
	/* the plugin's CTS for the receive and the WRITE's own completion,
	 * in any order: the WRITE must have succeeded (the fault happened) */
	int wrote = 0;
	for (int i = 0; i < 2 && !wrote; i++) {
		struct mrc_completion c = raw_get1(&w);
		assert_int_equal(c.status, 0);
		wrote = c.op == MRC_CQE_WRITE_IMM;
	}
	CHECK(wrote, "%s: the hostile WRITE_IMM did not complete", what);
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	ncclResult_t r;
	int done = 0, sz = -1;
	while ((r = n->test(rq, &done, &sz)) == ncclSuccess && !done)
		CHECK(mrcd_spawn_now_ms() < end, "%s: the receive never failed", what);
	CHECK(r != ncclSuccess, "%s: accepted (size %d)", what, sz);
	for (size_t i = 0; i < sizeof(rb); i++)
		CHECK(rb[i] == 0xee, "%s: receive buffer byte %zu written", what, i);
	assert_int_equal(stats(rc).refused, 1);
	void *q = NULL;
	void *data[1] = { rb };
	size_t sizes[1] = { 64 };
	int tags[1] = { 2 };
	CHECK(n->irecv(rc, 1, data, sizes, tags, &rmh, NULL, &q) != ncclSuccess,
	      "%s: the comm still takes receives", what);
	NC(n->deregMr(rc, rmh));
	NC(n->closeRecv(rc));
	NC(n->closeListen(lc));
	raw_close(&w);
}

/* The raw peer writes one eager message (header and size payload bytes
 * of salt) into the slot of its seq, and waits for the WRITE's
 * completion; RECVs that come meanwhile (CTSs, credits) are counted. */
static int raw_cts_seen;
static void raw_eager(struct raw *w, uint32_t seq, int32_t tag, uint32_t tseq, uint32_t size,
		      uint8_t salt)
{
	struct mrcn_eg_hdr h = { .magic = MRCN_EG_HDR_MAGIC, .tag = tag, .size = size, .seq = seq,
				 .tseq = tseq };
	memcpy(w->base + 4096, &h, sizeof(h));
	memset(w->base + 4096 + sizeof(h), salt, size);
	uint32_t k = seq % w->adv.id;
	assert_int_equal(mrc_post_write_imm(w->qp, 2, mrc_mr_key(w->mr), 4096, sizeof(h) + size,
					    w->rkey, w->adv.off + k * w->adv.size,
					    MRCN_IMM_EAGER | k), 0);
	for (;;) {
		struct mrc_completion c = raw_get1(w);
		assert_int_equal(c.status, 0);
		if (c.op == MRC_CQE_WRITE_IMM)
			return;
		struct mrcn_cts m;
		if (c.op == MRC_CQE_RECV && mrcn_cts_parse(w->base, c.byte_len, &m) == 0 &&
		    m.magic == MRCN_CTS_MAGIC)
			raw_cts_seen++;
	}
}

/* The per-tag number from a hostile peer: a message for a receive its
 * tag's count says was served already, and a second message of a number
 * still held, each refused with the comm's error, nothing copied; and
 * before that, a well-formed eager message for a posted eager-sized
 * receive is taken with no CTS sent for it. */
static void test_hostile_seq(void **state)
{
	NEED(state);
	const ncclNet_v11_t *n = drv.net;
	void *ctx;
	NC(n->init(&ctx, 7, NULL, NULL, NULL));
	static uint8_t rb[4][256];
	memset(rb, 0xee, sizeof(rb));
	for (int round = 0; round < 2; round++) {
		struct raw w = { 0 };
		void *lc, *rc, *rmh;
		raw_connect(n, ctx, &w, &lc, &rc);
		for (int i = 0; i < 4; i++)     /* room for CTSs, were any sent */
			assert_int_equal(mrc_post_recv(w.qp, 10 + (uint64_t)i, mrc_mr_key(w.mr),
						       64 * (1 + (uint64_t)i), 64), 0);
		raw_cts_seen = 0;
		NC(n->regMr(rc, rb, sizeof(rb), NCCL_PTR_HOST, &rmh));
		void *bad = NULL;
		int sz = -1;
		if (round == 0) {
			/* tag 1 number 0, then the same number again */
			void *ok = recv1(n, rc, rb[0], 128, 1, rmh);
			assert_int_equal(stats(rc).cts_posted, 0);
			raw_eager(&w, 0, 1, 0, 100, 0x11);
			wait_req(n, ok, &sz);
			assert_int_equal(sz, 100);
			assert_int_equal(rb[0][0], 0x11);
			assert_int_equal(rb[0][100], 0xee);
			bad = recv1(n, rc, rb[1], 128, 2, rmh);
			raw_eager(&w, 1, 1, 0, 100, 0x22);
		} else {
			/* tag 5 number 3 twice, nobody asked for either yet */
			bad = recv1(n, rc, rb[1], 128, 9, rmh);
			raw_eager(&w, 0, 5, 3, 50, 0x33);
			raw_eager(&w, 1, 5, 3, 50, 0x44);
		}
		int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
		ncclResult_t r;
		int done = 0;
		while ((r = n->test(bad, &done, &sz)) == ncclSuccess && !done)
			CHECK(mrcd_spawn_now_ms() < end, "round %d: never refused", round);
		CHECK(r == ncclRemoteError, "round %d: accepted (%d)", round, r);
		assert_int_equal(stats(rc).refused, 1);
		for (size_t i = 0; i < sizeof(rb[1]); i++)
			CHECK(rb[1][i] == 0xee, "round %d: byte %zu of a receive written", round, i);
		assert_int_equal(stats(rc).cts_posted, 0);
		assert_int_equal(raw_cts_seen, 0);
		NC(n->deregMr(rc, rmh));
		NC(n->closeRecv(rc));
		NC(n->closeListen(lc));
		raw_close(&w);
	}
	NC(n->finalize(ctx));
}

static void test_hostile_eager(void **state)
{
	NEED(state);
	const ncclNet_v11_t *n = drv.net;
	void *ctx;
	NC(n->init(&ctx, 4, NULL, NULL, NULL));
	const uint32_t hdr = sizeof(struct mrcn_eg_hdr);
	hostile_case(n, ctx, "unknown slot", 100, hdr + 100, MRCN_IMM_EAGER | 999);
	hostile_case(n, ctx, "slot out of turn", 100, hdr + 100, MRCN_IMM_EAGER | 3);
	/* the header claims more than the slot holds (and than was written) */
	hostile_case(n, ctx, "header size beyond the slot", (uint32_t)(8u << 20), hdr + 100,
		     MRCN_IMM_EAGER | 0);
	/* a write running past its slot, its header consistent with it */
	hostile_case(n, ctx, "write longer than a slot", 0, 0, MRCN_IMM_EAGER | 0);
	NC(n->finalize(ctx));
}

int main(void)
{
	const char *alt = getenv("MRC_NCCL_TEST_PLUGIN");
	if (alt)
		snprintf(plugin_path, sizeof(plugin_path), "%s", alt);
	else if (mrcd_spawn_build_path(plugin_path, sizeof(plugin_path),
				       "tests/libnccl-net-mrcfake.so"))
		return 1;
	seed_init("test_nccl_eager");
	char err[256];
	if (ndrv_load(&drv, plugin_path, err, sizeof(err)) == 0)
		stats_fn = (mrcn_comm_stats_fn *)dlsym(drv.dl, "mrcn_comm_stats");
	else
		memset(&drv, 0, sizeof(drv));
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_eager_then_rendezvous),
		cmocka_unit_test(test_credit_exhaustion),
		cmocka_unit_test(test_grouped_mixed),
		cmocka_unit_test(test_small_roundtrip_no_cts),
		cmocka_unit_test(test_tag_order),
		cmocka_unit_test(test_receives_beyond_ring),
		cmocka_unit_test(test_many_tags),
		cmocka_unit_test(test_hostile_eager),
		cmocka_unit_test(test_hostile_seq),
	};
	int r = cmocka_run_group_tests_name("nccl plugin, eager messages", t, setup_daemon,
					    teardown_daemon);
	if (drv.net)
		ndrv_unload(&drv);
	return r;
}
