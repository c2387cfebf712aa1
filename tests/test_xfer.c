/* End-to-end smoke of the engine: two engines joined by a minimal lossy,
 * reordering in-memory link with per-EV delays.  (The full seeded channel
 * and property checks live in tests/support/chan.c, test_engine_*.c.) */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "transport/engine.h"

#define NPKT 4096
struct fly { uint64_t at; int to; size_t len; uint8_t buf[MRC_HDR_MAX + 9000 + 4]; };
static struct fly *net;
static int nnet;
static uint64_t rng = 1;
static uint64_t rnd(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }

static void pump(struct mrc_engine **e, uint64_t now, int loss_pct, int dead_plane)
{
	struct mrc_tx_pkt pk[32];
	for (int s = 0; s < 2; s++) {
		int n;
		while ((n = mrc_engine_tx(e[s], now, pk, 32)) > 0) {
			for (int i = 0; i < n; i++) {
				if ((int)(rnd() % 100) < loss_pct)
					continue;
				if (dead_plane >= 0 && pk[i].ev % 8 == (unsigned)dead_plane)
					continue;
				assert_true(nnet < NPKT);
				struct fly *f = &net[nnet++];
				f->to = !s;
				f->at = now + 10000 + (pk[i].ev % 8) * 1000 + rnd() % 3000;
				memcpy(f->buf, pk[i].hdr, pk[i].hdr_len);
				f->len = pk[i].hdr_len;
				if (pk[i].plen) {
					memcpy(f->buf + f->len, pk[i].payload, pk[i].plen);
					f->len += pk[i].plen;
					memcpy(f->buf + f->len, pk[i].trailer, 4);
					f->len += 4;
				}
			}
		}
	}
}

static void run_xfer(int loss_pct, int blackhole)
{
	struct mrc_engine *e[2];
	struct mrc_engine_cfg cfg;
	mrc_engine_cfg_default(&cfg);
	uint8_t planes[64];
	for (int i = 0; i < 64; i++)
		planes[i] = i % 8;
	uint32_t peer[2], qpn[2], key[2];
	size_t len = 8 << 20;
	uint8_t *src = malloc(len), *dst = calloc(1, len);
	for (size_t i = 0; i < len; i++)
		src[i] = (uint8_t)(i * 7 + 3);
	for (int s = 0; s < 2; s++) {
		assert_int_equal(mrc_engine_create(&cfg, &e[s], NULL), 0);
		assert_int_equal(mrc_peer_add(e[s], 64, planes, &peer[s]), 0);
		assert_int_equal(mrc_qp_create(e[s], &(struct mrc_qp_attr){ .pd = 1 }, &qpn[s]), 0);
	}
	assert_int_equal(mrc_mr_reg(e[0], 1, src, len, MRC_ACCESS_LOCAL_READ, &key[0]), 0);
	assert_int_equal(mrc_mr_reg(e[1], 1, dst, len, MRC_ACCESS_REMOTE_WRITE, &key[1]), 0);
	assert_int_equal(mrc_qp_connect(e[0], qpn[0], peer[0], qpn[1], 100, 900), 0);
	assert_int_equal(mrc_qp_connect(e[1], qpn[1], peer[1], qpn[0], 900, 100), 0);
	uint64_t now = 1000;
	for (int i = 0; i < 8; i++)
		assert_int_equal(mrc_qp_post(e[0], now, qpn[0], &(struct mrc_wr){ .wr_id = i,
			.op = i == 7 ? MRC_WR_WRITE_IMM : MRC_WR_WRITE, .lkey = key[0],
			.loff = (uint64_t)i * (len / 8), .len = len / 8, .rkey = key[1],
			.roff = (uint64_t)i * (len / 8), .imm = 77 }), 0);
	int done = 0, got_imm = 0;
	struct mrc_wc wc[16];
	for (int step = 0; step < 2000000 && !(done == 8 && got_imm); step++) {
		int dead = blackhole && now > 100000 ? 3 : -1;
		pump(e, now, loss_pct, dead);
		/* Next event: earliest packet or timer. */
		uint64_t next = UINT64_MAX;
		for (int i = 0; i < nnet; i++)
			if (net[i].at < next)
				next = net[i].at;
		for (int s = 0; s < 2; s++) {
			uint64_t d = mrc_engine_next_deadline(e[s]);
			if (d < next)
				next = d;
		}
		assert_true(next != UINT64_MAX);
		if (next > now)
			now = next;
		for (int i = 0; i < nnet;) {
			if (net[i].at <= now) {
				mrc_engine_rx(e[net[i].to], now, peer[net[i].to], net[i].buf, net[i].len, 0);
				net[i] = net[--nnet];
			} else {
				i++;
			}
		}
		for (int s = 0; s < 2; s++)
			if (mrc_engine_next_deadline(e[s]) <= now)
				mrc_engine_tick(e[s], now);
		for (int s = 0; s < 2; s++) {
			int n = mrc_engine_poll_cq(e[s], wc, 16);
			for (int i = 0; i < n; i++) {
				assert_int_equal(wc[i].status, 0);
				if (s == 0) {
					assert_int_equal(wc[i].wr_id, (uint64_t)done);
					done++;
				} else {
					assert_int_equal(wc[i].op, MRC_WC_RECV_WRITE_IMM);
					assert_int_equal(wc[i].imm, 77);
					got_imm++;
				}
			}
		}
	}
	assert_int_equal(done, 8);
	assert_int_equal(got_imm, 1);
	assert_memory_equal(src, dst, len);
	struct mrc_engine_stats st;
	mrc_engine_stats(e[1], &st);
	assert_int_equal(st.bytes_placed, len);
	if (blackhole) {
		for (int ev = 3; ev < 64; ev += 8) {
			struct mrc_ev_info in;
			assert_int_equal(mrc_ev_info(e[0], peer[0], ev, &in), 0);
			assert_int_equal(in.state, MRC_EV_ASSUMED_BAD);
		}
	}
	print_message("xfer loss=%d%% blackhole=%d: virtual time %.3f ms\n", loss_pct,
		      blackhole, (now - 1000) / 1e6);
	for (int s = 0; s < 2; s++)
		mrc_engine_destroy(e[s]);
	free(src);
	free(dst);
	nnet = 0;
}

/* Shutdown path: unfinished work completes with the caller's error, in
 * posting order, and the QP no longer counts as busy. */
static void abort_unfinished(void **st)
{
	(void)st;
	struct mrc_engine *e;
	assert_int_equal(mrc_engine_create(NULL, &e, NULL), 0);
	uint8_t plane0 = 0;
	uint32_t peer, qpn, key;
	static uint8_t buf[3 * 4096];
	assert_int_equal(mrc_peer_add(e, 1, &plane0, &peer), 0);
	assert_int_equal(mrc_qp_create(e, &(struct mrc_qp_attr){ .pd = 1 }, &qpn), 0);
	assert_int_equal(mrc_mr_reg(e, 1, buf, sizeof(buf), MRC_ACCESS_LOCAL_READ, &key), 0);
	assert_int_equal(mrc_qp_connect(e, qpn, peer, 5, 0, 0), 0);
	assert_int_equal(mrc_engine_busy_qps(e), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(mrc_qp_post(e, 1, qpn, &(struct mrc_wr){ .wr_id = 10 + i,
			.op = MRC_WR_WRITE, .lkey = key, .loff = 4096u * i, .len = 4096,
			.rkey = 1 }), 0);
	struct mrc_tx_pkt pk[4];
	assert_int_equal(mrc_engine_tx(e, 2, pk, 4), 3);   /* sent, never acked */
	assert_int_equal(mrc_engine_busy_qps(e), 1);
	assert_int_equal(mrc_engine_abort_all(e, 3, -ESHUTDOWN), 1);
	assert_int_equal(mrc_engine_busy_qps(e), 0);
	struct mrc_wc wc[8];
	assert_int_equal(mrc_engine_poll_cq(e, wc, 8), 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(wc[i].wr_id, 10 + i);
		assert_int_equal(wc[i].status, -ESHUTDOWN);
	}
	/* The memory is free again once the completions are reaped. */
	assert_int_equal(mrc_mr_dereg(e, key), 0);
	assert_int_equal(mrc_qp_abort(e, 4, qpn, 0), -EINVAL);
	mrc_engine_destroy(e);
}

static void clean(void **st) { (void)st; run_xfer(0, 0); }
static void lossy(void **st) { (void)st; run_xfer(5, 0); }
static void plane_dead(void **st) { (void)st; run_xfer(0, 1); }

int main(void)
{
	net = calloc(NPKT, sizeof(*net));
	const struct CMUnitTest t[] = {
		cmocka_unit_test(clean), cmocka_unit_test(lossy), cmocka_unit_test(plane_dead),
		cmocka_unit_test(abort_unfinished),
	};
	int rc = cmocka_run_group_tests(t, NULL, NULL);
	free(net);
	return rc;
}
