/* NCCL's per-tag order in libnccl-net-mrc.so's eager messages (docs/nccl.md
 * "Eager messages"), against a real mrcd on loopback (fixture:
 * tests/support/nccl_eager_fix.h): runs of messages of three tags, eager
 * and rendezvous mixed, each landing in its tag's receives in order; and
 * hundreds of distinct tags on one comm (the per-tag table grows). */
#include "tests/support/nccl_eager_fix.h"

/* Hundreds of distinct tags on one comm (the harness's rounds use a
 * tag per message): the per-tag numbering's table grows (it was a fixed
 * 256 at first, and irecv failed with ncclInternalError at the 257th),
 * every message still lands in its receive; a second pass over the same
 * tags takes each one's number 1. */
static void test_many_tags(void **state)
{
	NEED(state);
	void *ctx;
	struct nccl_pair p;
	const ncclNet_v11_t *n = open_pair(9, &ctx, &p);
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
	close_all(n, &p, ctx, smh, rmh);
}

/* NCCL's order per tag: three tags, each with a run of messages of
 * mixed sizes (eager and CTS path), sent round-robin across tags while
 * the receiver posts them tag by tag, some receives eager-sized (no
 * CTS), some large (CTS), one grouped receive of a message of each tag:
 * each receive gets the message of its number in its tag. */
static void test_tag_order(void **state)
{
	NEED(state);
	void *ctx;
	struct nccl_pair p;
	const ncclNet_v11_t *n = open_pair(6, &ctx, &p);
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
	close_all(n, &p, ctx, smh, rmh);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_tag_order),
		cmocka_unit_test(test_many_tags),
	};
	return nccl_eager_main("test_nccl_tags", t, sizeof(t) / sizeof(t[0]));
}
