/* A hostile peer of libnccl-net-mrc.so (docs/nccl.md "Eager messages"):
 * a raw libmrc QP connected to the plugin's listener writes malformed
 * eager messages (unknown slot, out of turn, a header size beyond the
 * slot, a write longer than a slot) and messages with bad per-tag numbers;
 * each is refused with an error on that comm, the receive buffer (and its
 * guard) untouched.  Against a real mrcd on loopback (fixture:
 * tests/support/nccl_eager_fix.h). */
#include "tests/support/nccl_eager_fix.h"

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
	assert_int_equal(mrc_alloc_mr(w->ctx, 4 << 20, MRC_MR_ALL, &w->mr), 0);
	w->base = mrc_mr_addr(w->mr);
	assert_int_equal(mrc_create_qp(w->ctx, NULL, &w->qp), 0);
	struct mrc_qp_addr peer;
	/* -ECONNREFUSED while the accept thread is still busy with the
	 * previous case's comms (its backlog full): retried, as the plugin's
	 * own connect does (seeds 45 and 47 of 50 met it at load 30) */
	int r;
	int64_t cend = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	while ((r = mrc_connect(w->qp, hd.host, hd.sid, hd.listen_id, &peer)) == -ECONNREFUSED &&
	       mrcd_spawn_now_ms() < cend)
		usleep(10000);  /* backoff, not a sync */
	assert_int_equal(r, 0);
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
static int raw_compact;         /* raw_eager sends compact messages (no header; tag unsaid) */
static void raw_eager(struct raw *w, uint32_t seq, int32_t tag, uint32_t tseq, uint32_t size,
		      uint8_t salt)
{
	struct mrcn_eg_hdr h = { .magic = MRCN_EG_HDR_MAGIC, .tag = tag, .size = size, .seq = seq,
				 .tseq = tseq };
	uint32_t hl = raw_compact ? 0 : sizeof(h);
	memcpy(w->base + 4096, &h, sizeof(h));
	memset(w->base + 4096 + hl, salt, size);
	uint32_t k = seq % w->adv.id;
	uint32_t imm = MRCN_IMM_EAGER | k;
	if (raw_compact)
		imm |= MRCN_IMM_COMPACT | (tseq & MRCN_IMM_TSEQ_MASK) << MRCN_IMM_TSEQ_SHIFT;
	assert_int_equal(mrc_post_write_imm(w->qp, 2, mrc_mr_key(w->mr), 4096, hl + size, w->rkey,
					    w->adv.off + k * w->adv.size + sizeof(h) - hl, imm), 0);
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
 * receive is taken with no CTS sent for it.  A third round repeats the
 * first with the repeated number in a compact message. */
static void test_hostile_seq(void **state)
{
	NEED(state);
	const ncclNet_v11_t *n = drv.net;
	void *ctx;
	NC(n->init(&ctx, 7, NULL, NULL, NULL));
	static uint8_t rb[4][256];
	memset(rb, 0xee, sizeof(rb));
	for (int round = 0; round < 3; round++) {
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
		if (round == 0 || round == 2) {
			/* tag 1 number 0, then the same number again (round 2:
			 * compact, its tag the comm's first message's) */
			void *ok = recv1(n, rc, rb[0], 128, 1, rmh);
			assert_int_equal(stats(rc).cts_posted, 0);
			raw_eager(&w, 0, 1, 0, 100, 0x11);
			wait_req(n, ok, &sz);
			assert_int_equal(sz, 100);
			assert_int_equal(rb[0][0], 0x11);
			assert_int_equal(rb[0][100], 0xee);
			bad = recv1(n, rc, rb[1], 128, 2, rmh);
			raw_compact = round == 2;       /* the same, compact */
			raw_eager(&w, 1, 1, 0, 100, 0x22);
			raw_compact = 0;
		} else if (round == 1) {
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
	/* compact messages (no header): before the comm's first message
	 * gave its tag; longer than a slot */
	hostile_case(n, ctx, "compact before the comm's tag", 100, hdr + 100,
		     MRCN_IMM_EAGER | MRCN_IMM_COMPACT | 0);
	hostile_case(n, ctx, "compact write longer than a slot", 0, 0,
		     MRCN_IMM_EAGER | MRCN_IMM_COMPACT | 0);
	NC(n->finalize(ctx));
}

/* Pieces (docs/nccl.md "Pieces") from a raw peer into a receive of cap
 * bytes, after its CTS: n WRITE_IMMs of len[i] bytes, each at the end of
 * the ones before it, with imm[i] | the CTS's id.  ok: the receive gets
 * them all, every byte; else the comm fails and the buffer is untouched
 * (every case's first write is the bad one). */
static void hostile_piece(const ncclNet_v11_t *n, void *ctx, const char *what, size_t cap,
			  int nw, const uint32_t *len, const uint32_t *imm, int ok)
{
	struct raw w = { 0 };
	void *lc, *rc, *rmh;
	raw_connect(n, ctx, &w, &lc, &rc);
	static uint8_t rb[3u << 20];
	memset(rb, 0xee, sizeof(rb));
	NC(n->regMr(rc, rb, sizeof(rb), NCCL_PTR_HOST, &rmh));
	assert_int_equal(mrc_post_recv(w.qp, 1, mrc_mr_key(w.mr), 0, 64), 0);
	void *rq = recv1(n, rc, rb, cap, 1, rmh);
	struct mrc_completion c = raw_get1(&w);
	struct mrcn_cts cts;
	CHECK(c.status == 0 && c.op == MRC_CQE_RECV &&
	      mrcn_cts_parse(w.base, c.byte_len, &cts) == 0 && cts.magic == MRCN_CTS_MAGIC,
	      "%s: no clear-to-send", what);
	uint64_t at = 0;
	for (int i = 0; i < nw; at += len[i], i++) {
		memset(w.base + 4096 + at, 0x30 + i, len[i]);
		assert_int_equal(mrc_post_write_imm(w.qp, 2, mrc_mr_key(w.mr), 4096 + at, len[i],
						    w.rkey, cts.off + at, imm[i] | cts.id), 0);
		c = raw_get1(&w);
		CHECK(c.status == 0 && c.op == MRC_CQE_WRITE_IMM, "%s: write %d failed", what, i);
	}
	int64_t end = mrcd_spawn_now_ms() + MRCD_SPAWN_WAIT_MS;
	ncclResult_t r;
	int done = 0, sz = -1;
	while ((r = n->test(rq, &done, &sz)) == ncclSuccess && !done)
		CHECK(mrcd_spawn_now_ms() < end, "%s: the receive never ended", what);
	if (ok) {
		CHECK(r == ncclSuccess && sz == (int)at && memcmp(rb, w.base + 4096, at) == 0 &&
		      rb[at] == 0xee, "%s: not delivered whole (size %d)", what, sz);
	} else {
		CHECK(r != ncclSuccess, "%s: accepted (size %d)", what, sz);
		for (size_t i = 0; i < sizeof(rb); i++)
			CHECK(rb[i] == 0xee, "%s: receive buffer byte %zu written", what, i);
	}
	NC(n->deregMr(rc, rmh));
	NC(n->closeRecv(rc));
	NC(n->closeListen(lc));
	raw_close(&w);
}

static void test_hostile_pieces(void **state)
{
	NEED(state);
	const ncclNet_v11_t *n = drv.net;
	void *ctx;
	setenv("MRC_NCCL_BOUNCE_MB", "32", 1);     /* receives of 3 MiB */
	NC(n->init(&ctx, 5, NULL, NULL, NULL));
	setenv("MRC_NCCL_BOUNCE_MB", "8", 1);
	const uint32_t P = MRCN_PIECE, I = MRCN_IMM_PIECE;
	hostile_piece(n, ctx, "two pieces and the last", 3u << 20, 3,
		      (uint32_t[]){ P, P, 1000 }, (uint32_t[]){ I, I, 0 }, 1);
	hostile_piece(n, ctx, "a piece shorter than a piece", 3u << 20, 2,
		      (uint32_t[]){ P - 4096, 1000 }, (uint32_t[]){ I, 0 }, 0);
	hostile_piece(n, ctx, "a piece that leaves no room", P, 2,
		      (uint32_t[]){ P, 1 }, (uint32_t[]){ I, 0 }, 0);
	hostile_piece(n, ctx, "a piece with a stray bit", 3u << 20, 2,
		      (uint32_t[]){ P, 1000 }, (uint32_t[]){ I | MRCN_IMM_COMPACT, 0 }, 0);
	NC(n->finalize(ctx));
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_hostile_eager),
		cmocka_unit_test(test_hostile_seq),
		cmocka_unit_test(test_hostile_pieces),
	};
	return nccl_eager_main("test_nccl_hostile", t, sizeof(t) / sizeof(t[0]));
}
