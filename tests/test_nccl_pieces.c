/* Pieces in libnccl-net-mrc.so (docs/nccl.md "Pieces"): a CTS-path
 * message above MRCN_PIECE goes as pieces of MRCN_PIECE bytes and a last
 * WRITE_IMM, each piece copied out by the receiver as it lands.  Against a
 * real mrcd on loopback (fixture: tests/support/nccl_eager_fix.h); the
 * hostile peer's pieces are in tests/test_nccl_hostile.c. */
#include "tests/support/nccl_eager_fix.h"

#define MSG (4u << 20)

/* A comm pair with the send buffer sb and the receive buffer rb
 * registered (*mh: theirs).  NCCL's 4 MiB steps need the default bounce
 * region (the fixture's daemon setup sets a smaller one; read at init). */
static const ncclNet_v11_t *open_big(uint64_t id, void **ctx, struct nccl_pair *p, void *sb,
				     size_t sl, void *rb, size_t rl, void **mh)
{
	setenv("MRC_NCCL_BOUNCE_MB", "32", 1);
	const ncclNet_v11_t *n = open_pair(id, ctx, p);
	setenv("MRC_NCCL_BOUNCE_MB", "8", 1);
	NC(n->regMr(p->sc, sb, sl, NCCL_PTR_HOST, &mh[0]));
	NC(n->regMr(p->rc, rb, rl, NCCL_PTR_HOST, &mh[1]));
	return n;
}

static uint64_t want_pieces(size_t len)
{
	return len > MRCN_PIECE ? (len - 1) / MRCN_PIECE : 0;
}

/* One message of len bytes into a receive of cap: every byte, the size
 * reported, the guard past the message untouched. */
static void one(const ncclNet_v11_t *n, struct nccl_pair *p, uint8_t *sb, uint8_t *rb,
		void *smh, void *rmh, size_t len, size_t cap, int tag)
{
	fill(sb, len, (uint8_t)tag);
	memset(rb, 0xee, MSG + 64);
	void *rq = recv1(n, p->rc, rb, cap, tag, rmh);
	void *sq = send_retry(n, p->sc, sb, len, tag, smh);
	int sz = -1;
	wait_req(n, sq, &sz);
	assert_int_equal(sz, (int)len);
	wait_req(n, rq, &sz);
	CHECK(sz == (int)len, "%zu bytes into %zu: size %d", len, cap, sz);
	CHECK(memcmp(rb, sb, len) == 0, "%zu bytes into %zu: data differs", len, cap);
	for (size_t i = len; i < MSG + 64; i++)
		CHECK(rb[i] == 0xee, "%zu bytes into %zu: byte %zu past the message written", len,
		      cap, i);
}

/* Sizes around the piece boundaries, into exact and larger receives:
 * each message whole, and the pieces each side counted are those the
 * sizes make (a message of at most one piece goes as one WRITE_IMM). */
static void test_pieces(void **state)
{
	NEED(state);
	void *ctx, *mh[2];
	struct nccl_pair p;
	static uint8_t sb[MSG], rb[MSG + 64];
	const ncclNet_v11_t *n = open_big(21, &ctx, &p, sb, sizeof(sb), rb, sizeof(rb), mh);
	const size_t sizes[] = { MRCN_PIECE, MRCN_PIECE + 1, 2 * MRCN_PIECE, MSG - 1, MSG,
				 3 * MRCN_PIECE + 12345, BIG };
	uint64_t want = 0;
	for (int i = 0; i < (int)(sizeof(sizes) / sizeof(sizes[0])); i++)
		for (int larger = 0; larger < 2; larger++) {
			size_t len = sizes[i], cap = larger ? MSG : len;
			one(n, &p, sb, rb, mh[0], mh[1], len, cap, 1);
			want += want_pieces(len);
		}
	struct mrcn_stats ss = stats(p.sc), rs = stats(p.rc);
	CHECK(ss.pieces == want, "sender posted %llu pieces, %llu expected",
	      (unsigned long long)ss.pieces, (unsigned long long)want);
	CHECK(rs.pieces == want, "receiver copied out %llu pieces, %llu expected",
	      (unsigned long long)rs.pieces, (unsigned long long)want);
	close_all(n, &p, ctx, mh[0], mh[1]);
}

/* NCCL's 4 MiB steps, 8 in flight: receives posted first, then the sends
 * (retried while the CTS is missing), all tested oldest first; every
 * message whole and in its receive, in pieces. */
static void test_pieces_stream(void **state)
{
	NEED(state);
	enum { W = 8, ROUNDS = 3 };
	void *ctx, *mh[2], *rq[W], *sq[W];
	struct nccl_pair p;
	static uint8_t sb[W][MSG], rb[W][MSG];
	const ncclNet_v11_t *n = open_big(22, &ctx, &p, sb, sizeof(sb), rb, sizeof(rb), mh);
	for (int round = 0; round < ROUNDS; round++) {
		for (int i = 0; i < W; i++) {
			fill(sb[i], MSG, (uint8_t)(round * W + i));
			memset(rb[i], 0, MSG);
			rq[i] = recv1(n, p.rc, rb[i], MSG, 7, mh[1]);
		}
		for (int i = 0; i < W; i++)
			sq[i] = send_retry(n, p.sc, sb[i], MSG, 7, mh[0]);
		int sz;
		for (int i = 0; i < W; i++) {
			wait_req(n, sq[i], &sz);
			wait_req(n, rq[i], &sz);
			CHECK(sz == (int)MSG && memcmp(rb[i], sb[i], MSG) == 0,
			      "round %d message %d: wrong (size %d)", round, i, sz);
		}
	}
	uint64_t want = (uint64_t)ROUNDS * W * want_pieces(MSG);
	assert_int_equal(stats(p.sc).pieces, want);
	assert_int_equal(stats(p.rc).pieces, want);
	close_all(n, &p, ctx, mh[0], mh[1]);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_pieces),
		cmocka_unit_test(test_pieces_stream),
	};
	return nccl_eager_main("test_nccl_pieces", t, sizeof(t) / sizeof(t[0]));
}
