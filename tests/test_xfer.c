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

static void pump(struct mrce **e, uint64_t now, int loss_pct, int dead_plane)
{
	struct mrce_tx_pkt pk[32];
	for (int s = 0; s < 2; s++) {
		int n;
		while ((n = mrce_tx(e[s], now, pk, 32)) > 0) {
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
	struct mrce *e[2];
	struct mrce_cfg cfg;
	mrce_cfg_default(&cfg);
	uint8_t planes[64];
	for (int i = 0; i < 64; i++)
		planes[i] = i % 8;
	uint32_t peer[2], qpn[2], key[2];
	size_t len = 8 << 20;
	uint8_t *src = malloc(len), *dst = calloc(1, len);
	for (size_t i = 0; i < len; i++)
		src[i] = (uint8_t)(i * 7 + 3);
	for (int s = 0; s < 2; s++) {
		assert_int_equal(mrce_create(&cfg, &e[s], NULL), 0);
		assert_int_equal(mrce_peer_add(e[s], 64, planes, &peer[s]), 0);
		assert_int_equal(mrce_qp_open(e[s], &(struct mrce_qp_attr){ .pd = 1 }, &qpn[s]), 0);
	}
	assert_int_equal(mrce_mr_add(e[0], 1, src, len, MRCE_ACCESS_LOCAL_READ, &key[0]), 0);
	assert_int_equal(mrce_mr_add(e[1], 1, dst, len, MRCE_ACCESS_REMOTE_WRITE, &key[1]), 0);
	/* Tokens as auth/ would derive them: one per direction. */
	assert_int_equal(mrce_qp_set_tokens(e[0], qpn[0], 0x0a0b, 0x0b0a), 0);
	assert_int_equal(mrce_qp_set_tokens(e[1], qpn[1], 0x0b0a, 0x0a0b), 0);
	assert_int_equal(mrce_qp_connect(e[0], qpn[0], peer[0], qpn[1], 100, 900), 0);
	assert_int_equal(mrce_qp_connect(e[1], qpn[1], peer[1], qpn[0], 900, 100), 0);
	uint64_t now = 1000;
	for (int i = 0; i < 8; i++)
		assert_int_equal(mrce_qp_post(e[0], now, qpn[0], &(struct mrc_sqe){ .wr_id = i,
			.op = i == 7 ? MRC_SQE_WRITE_IMM : MRC_SQE_WRITE, .lkey = key[0],
			.loff = (uint64_t)i * (len / 8), .len = len / 8, .rkey = key[1],
			.roff = (uint64_t)i * (len / 8), .imm = 77 }), 0);
	int done = 0, got_imm = 0;
	struct mrce_wc wc[16];
	for (int step = 0; step < 2000000 && !(done == 8 && got_imm); step++) {
		int dead = blackhole && now > 100000 ? 3 : -1;
		pump(e, now, loss_pct, dead);
		/* Next event: earliest packet or timer. */
		uint64_t next = UINT64_MAX;
		for (int i = 0; i < nnet; i++)
			if (net[i].at < next)
				next = net[i].at;
		for (int s = 0; s < 2; s++) {
			uint64_t d = mrce_next_deadline(e[s]);
			if (d < next)
				next = d;
		}
		assert_true(next != UINT64_MAX);
		if (next > now)
			now = next;
		for (int i = 0; i < nnet;) {
			if (net[i].at <= now) {
				mrce_rx(e[net[i].to], now, peer[net[i].to], net[i].buf, net[i].len, 0);
				net[i] = net[--nnet];
			} else {
				i++;
			}
		}
		for (int s = 0; s < 2; s++)
			if (mrce_next_deadline(e[s]) <= now)
				mrce_tick(e[s], now);
		for (int s = 0; s < 2; s++) {
			int n = mrce_wc_drain(e[s], wc, 16);
			for (int i = 0; i < n; i++) {
				assert_int_equal(wc[i].status, 0);
				if (s == 0) {
					assert_int_equal(wc[i].wr_id, (uint64_t)done);
					done++;
				} else {
					assert_int_equal(wc[i].op, MRCE_WC_RECV_WRITE_IMM);
					assert_int_equal(wc[i].imm, 77);
					got_imm++;
				}
			}
		}
	}
	assert_int_equal(done, 8);
	assert_int_equal(got_imm, 1);
	assert_memory_equal(src, dst, len);
	struct mrce_stats st;
	mrce_stats(e[1], &st);
	assert_int_equal(st.bytes_placed, len);
	if (blackhole) {
		for (int ev = 3; ev < 64; ev += 8) {
			struct mrce_ev_info in;
			assert_int_equal(mrce_ev_info(e[0], peer[0], ev, &in), 0);
			assert_int_equal(in.state, MRCE_EV_ASSUMED_BAD);
		}
	}
	print_message("xfer loss=%d%% blackhole=%d: virtual time %.3f ms\n", loss_pct,
		      blackhole, (now - 1000) / 1e6);
	for (int s = 0; s < 2; s++)
		mrce_destroy(e[s]);
	free(src);
	free(dst);
	nnet = 0;
}

/* Shutdown path: unfinished work completes with the caller's error, in
 * posting order, and the QP no longer counts as busy. */
static void abort_unfinished(void **st)
{
	(void)st;
	struct mrce *e;
	assert_int_equal(mrce_create(NULL, &e, NULL), 0);
	uint8_t plane0 = 0;
	uint32_t peer, qpn, key;
	static uint8_t buf[3 * 4096];
	assert_int_equal(mrce_peer_add(e, 1, &plane0, &peer), 0);
	assert_int_equal(mrce_qp_open(e, &(struct mrce_qp_attr){ .pd = 1 }, &qpn), 0);
	assert_int_equal(mrce_mr_add(e, 1, buf, sizeof(buf), MRCE_ACCESS_LOCAL_READ, &key), 0);
	assert_int_equal(mrce_qp_connect(e, qpn, peer, 5, 0, 0), 0);
	assert_int_equal(mrce_busy_qps(e), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(mrce_qp_post(e, 1, qpn, &(struct mrc_sqe){ .wr_id = 10 + i,
			.op = MRC_SQE_WRITE, .lkey = key, .loff = 4096u * i, .len = 4096,
			.rkey = 1 }), 0);
	struct mrce_tx_pkt pk[4];
	assert_int_equal(mrce_tx(e, 2, pk, 4), 3);   /* sent, never acked */
	assert_int_equal(mrce_busy_qps(e), 1);
	assert_int_equal(mrce_abort_all(e, 3, -ESHUTDOWN), 1);
	assert_int_equal(mrce_busy_qps(e), 0);
	struct mrce_wc wc[8];
	assert_int_equal(mrce_wc_drain(e, wc, 8), 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(wc[i].wr_id, 10 + i);
		assert_int_equal(wc[i].status, -ESHUTDOWN);
	}
	/* The memory is free again once the completions are reaped. */
	assert_int_equal(mrce_mr_remove(e, key), 0);
	assert_int_equal(mrce_qp_abort(e, 4, qpn, 0), -EINVAL);
	mrce_destroy(e);
}

/* Two engines, one connected QP pair a -> b, a source region on a and a
 * destination region on b (dst may be NULL), nev EVs on planes[]. */
struct pair {
	struct mrce *a, *b;
	uint32_t pa, pb, qa, qb, ka, kb;
};

static void pair_up(struct pair *x, uint32_t nev, const uint8_t *planes, void *src,
		    size_t slen, void *dst, size_t dlen)
{
	assert_int_equal(mrce_create(NULL, &x->a, NULL), 0);
	assert_int_equal(mrce_create(NULL, &x->b, NULL), 0);
	assert_int_equal(mrce_peer_add(x->a, nev, planes, &x->pa), 0);
	assert_int_equal(mrce_peer_add(x->b, nev, planes, &x->pb), 0);
	assert_int_equal(mrce_qp_open(x->a, &(struct mrce_qp_attr){ .pd = 1 }, &x->qa), 0);
	assert_int_equal(mrce_qp_open(x->b, &(struct mrce_qp_attr){ .pd = 1 }, &x->qb), 0);
	assert_int_equal(mrce_mr_add(x->a, 1, src, slen, MRCE_ACCESS_LOCAL_READ, &x->ka), 0);
	if (dst)
		assert_int_equal(mrce_mr_add(x->b, 1, dst, dlen, MRCE_ACCESS_REMOTE_WRITE, &x->kb), 0);
	assert_int_equal(mrce_qp_set_tokens(x->a, x->qa, 0x1111, 0x2222), 0);
	assert_int_equal(mrce_qp_set_tokens(x->b, x->qb, 0x2222, 0x1111), 0);
	assert_int_equal(mrce_peer_set_probe_tokens(x->a, x->pa, 0x3333, 0x4444), 0);
	assert_int_equal(mrce_peer_set_probe_tokens(x->b, x->pb, 0x4444, 0x3333), 0);
	assert_int_equal(mrce_qp_connect(x->a, x->qa, x->pa, x->qb, 0, 0), 0);
	assert_int_equal(mrce_qp_connect(x->b, x->qb, x->pb, x->qa, 0, 0), 0);
}

static void pair_down(struct pair *x)
{
	mrce_destroy(x->a);
	mrce_destroy(x->b);
}

/* A packet merely overtaken (not lost) is declared lost and resent, its
 * path probed; the probe lost too, the path is retired.  When the ACK of
 * the original copy arrives, the engine must see the loss was spurious:
 * give the path back, and widen its reorder tolerance so it does not
 * happen again. */
static void spurious_loss_undone(void **st)
{
	(void)st;
	uint8_t planes[2] = { 0, 1 };
	static uint8_t src[8192], dst[8192];
	memset(src, 0x5a, sizeof(src));
	struct pair x;
	pair_up(&x, 2, planes, src, sizeof(src), dst, sizeof(dst));
	struct mrce *a = x.a, *b = x.b;
	uint32_t pa = x.pa, pb = x.pb, qa = x.qa, ka = x.ka, kb = x.kb;
	assert_int_equal(mrce_qp_post(a, 1000, qa, &(struct mrc_sqe){ .wr_id = 1,
		.op = MRC_SQE_WRITE, .lkey = ka, .len = 8192, .rkey = kb }), 0);
	struct mrce_tx_pkt p[4], ack[4];
	static uint8_t p0[9000], p1[9000];
	assert_int_equal(mrce_tx(a, 1000, p, 4), 2);
	assert_int_not_equal(p[0].ev, p[1].ev);        /* sprayed */
	uint16_t late_ev = p[0].ev;
	size_t n0 = mrce_tx_pkt_copy(&p[0], p0), n1 = mrce_tx_pkt_copy(&p[1], p1);
	/* The second packet overtakes the first. */
	assert_int_equal(mrce_rx(b, 11000, pb, p1, n1, 0), 0);
	assert_int_equal(mrce_tx(b, 11000, ack, 4), 1);
	mrce_rx(a, 21000, pa, ack[0].hdr, ack[0].hdr_len, 0);
	uint64_t dl = mrce_next_deadline(a);
	assert_true(dl < 1000000);                     /* the loss check, not an RTO */
	mrce_tick(a, dl);
	struct mrce_ev_info in;
	assert_int_equal(mrce_ev_info(a, pa, late_ev, &in), 0);
	assert_int_equal(in.state, MRCE_EV_GOOD);      /* one loss: suspect, probed */
	int n = mrce_tx(a, dl, p, 4), probes = 0, resends = 0;
	for (int i = 0; i < n; i++) {
		probes += p[i].hdr[1] == MRC_OP_PROBE && p[i].ev == late_ev;
		resends += mrc_op_is_data(p[i].hdr[1]) && (p[i].hdr[3] & MRC_F_RETX);
	}
	assert_int_equal(n, 2);                        /* both dropped here */
	assert_int_equal(probes, 1);
	assert_int_equal(resends, 1);
	/* The probe unanswered within 1.25 RTTs (20 us): retired. */
	uint64_t d2 = mrce_next_deadline(a);
	assert_true(d2 > dl && d2 <= dl + 25000);
	mrce_tick(a, d2);
	assert_int_equal(mrce_ev_info(a, pa, late_ev, &in), 0);
	assert_int_equal(in.state, MRCE_EV_ASSUMED_BAD);
	dl = d2;
	/* The original copy arrives after all. */
	assert_int_equal(mrce_rx(b, dl + 5000, pb, p0, n0, 0), 0);
	assert_int_equal(mrce_tx(b, dl + 5000, ack, 4), 1);
	mrce_rx(a, dl + 10000, pa, ack[0].hdr, ack[0].hdr_len, 0);
	struct mrce_qp_info qi;
	assert_int_equal(mrce_qp_info(a, qa, &qi), 0);
	assert_int_equal(qi.spurious, 1);
	assert_true(qi.reorder_extra_ns > 0);
	assert_int_equal(mrce_ev_info(a, pa, late_ev, &in), 0);
	assert_int_equal(in.state, MRCE_EV_GOOD);
	assert_int_equal(in.last_reason, MRCE_RSN_SPURIOUS);
	struct mrce_wc wc;
	assert_int_equal(mrce_wc_drain(a, &wc, 1), 1);
	assert_int_equal(wc.status, 0);
	assert_memory_equal(src, dst, sizeof(src));
	pair_down(&x);
}

/* Two engines, 2 EVs on 2 planes; a writes 2 packets (src to dst), the
 * second overtakes the first and arrives ECN-marked, so the sender sees
 * congestion towards b.  At the loss check (dl) the first packet is resent
 * and its path (late_ev) only suspect: a probe goes out on it (probe). */
struct late {
	struct pair x;
	uint8_t src[8192], dst[8192], p0[9000];   /* p0: the late original */
	size_t n0;
	uint16_t late_ev;
	uint64_t dl;
	struct mrce_tx_pkt probe;
};

static void late_setup(struct late *l)
{
	static uint8_t p1[9000];
	struct pair *x = &l->x;
	struct mrce_tx_pkt p[4], ack[4];
	uint8_t planes[2] = { 0, 1 };
	memset(l->src, 0x5a, sizeof(l->src));
	pair_up(x, 2, planes, l->src, sizeof(l->src), l->dst, sizeof(l->dst));
	assert_int_equal(mrce_qp_post(x->a, 1000, x->qa, &(struct mrc_sqe){ .wr_id = 1,
		.op = MRC_SQE_WRITE, .lkey = x->ka, .len = 8192, .rkey = x->kb }), 0);
	assert_int_equal(mrce_tx(x->a, 1000, p, 4), 2);
	assert_int_not_equal(p[0].ev, p[1].ev);
	l->late_ev = p[0].ev;
	l->n0 = mrce_tx_pkt_copy(&p[0], l->p0);
	size_t n1 = mrce_tx_pkt_copy(&p[1], p1);
	assert_int_equal(mrce_rx(x->b, 11000, x->pb, p1, n1, MRCE_RX_ECN), 0);
	assert_int_equal(mrce_tx(x->b, 11000, ack, 4), 1);
	mrce_rx(x->a, 21000, x->pa, ack[0].hdr, ack[0].hdr_len, 0);
	l->dl = mrce_next_deadline(x->a);
	assert_true(l->dl < 1000000);                /* the loss check, not an RTO */
	mrce_tick(x->a, l->dl);
	int n = mrce_tx(x->a, l->dl, p, 4), probe = -1, resend = -1;
	for (int i = 0; i < n; i++) {
		if (p[i].hdr[1] == MRC_OP_PROBE && p[i].ev == l->late_ev)
			probe = i;
		else if (mrc_op_is_data(p[i].hdr[1]) && (p[i].hdr[3] & MRC_F_RETX))
			resend = i;
	}
	assert_int_equal(n, 2);
	assert_true(probe >= 0 && resend >= 0);
	struct mrce_ev_info in;
	assert_int_equal(mrce_ev_info(x->a, x->pa, l->late_ev, &in), 0);
	assert_int_equal(in.state, MRCE_EV_GOOD);
	struct mrce_stats st;
	mrce_stats(x->a, &st);
	assert_int_equal(st.suspect_probes, 1);
	l->probe = p[probe];   /* for the caller; the resend is dropped */
}

/* Counts EV_STATE events on a that took ev to ASSUMED_BAD. */
static int went_bad(struct mrce *a, uint16_t ev)
{
	struct mrce_event e;
	int n = 0;
	while (mrce_event_pop(a, &e) > 0)
		if (e.type == MRCE_EVT_EV_STATE && e.ev == ev &&
		    e.new_state == MRCE_EV_ASSUMED_BAD)
			n++;
	return n;
}

/* Under congestion (ECN echoed), a packet overtaken by one on another path
 * is resent, but its path is not retired: the probe sent on it is answered
 * (a live path), and the late original arrives after all.  No
 * ASSUMED_BAD at any time. */
static void reordered_path_kept(void **st)
{
	(void)st;
	static struct late l;
	late_setup(&l);
	struct pair *x = &l.x;
	uint64_t dl = l.dl;
	struct mrce_tx_pkt q[4];
	/* The path answers its probe. */
	assert_int_equal(mrce_rx(x->b, dl + 2000, x->pb, l.probe.hdr, l.probe.hdr_len, 0), 0);
	assert_int_equal(mrce_tx(x->b, dl + 2000, q, 4), 1);   /* the reply */
	mrce_rx(x->a, dl + 4000, x->pa, q[0].hdr, q[0].hdr_len, 0);
	struct mrce_stats sa;
	mrce_stats(x->a, &sa);
	assert_int_equal(sa.suspect_cleared, 1);
	/* Past any probe deadline: still GOOD. */
	mrce_tick(x->a, dl + 1000000);
	struct mrce_ev_info in;
	assert_int_equal(mrce_ev_info(x->a, x->pa, l.late_ev, &in), 0);
	assert_int_equal(in.state, MRCE_EV_GOOD);
	/* The original copy arrives; its ACK completes the write. */
	assert_int_equal(mrce_rx(x->b, dl + 5000, x->pb, l.p0, l.n0, 0), 0);
	assert_int_equal(mrce_tx(x->b, dl + 5000, q, 4), 1);
	mrce_rx(x->a, dl + 10000, x->pa, q[0].hdr, q[0].hdr_len, 0);
	struct mrce_wc wc;
	assert_int_equal(mrce_wc_drain(x->a, &wc, 1), 1);
	assert_int_equal(wc.status, 0);
	assert_memory_equal(l.src, l.dst, sizeof(l.src));
	assert_int_equal(went_bad(x->a, l.late_ev), 0);
	pair_down(x);
}

/* The same, but the path is dead: the probe gets no answer, and the path
 * is retired within 1.25 x the base RTT of the loss check (the RTT here is
 * 20 us), not at the RTO. */
static void dead_path_retired(void **st)
{
	(void)st;
	static struct late l;
	late_setup(&l);   /* the probe is dropped */
	struct pair x = l.x;
	uint64_t dl = l.dl;
	uint16_t late_ev = l.late_ev;
	uint64_t dl2 = mrce_next_deadline(x.a);
	assert_true(dl2 > dl && dl2 <= dl + 25000);
	mrce_tick(x.a, dl2);
	struct mrce_ev_info in;
	assert_int_equal(mrce_ev_info(x.a, x.pa, late_ev, &in), 0);
	assert_int_equal(in.state, MRCE_EV_ASSUMED_BAD);
	assert_int_equal(in.last_reason, MRCE_RSN_LOSS);
	assert_int_equal(went_bad(x.a, late_ev), 1);
	struct mrce_stats sa;
	mrce_stats(x.a, &sa);
	assert_int_equal(sa.suspect_retired, 1);
	assert_int_equal(sa.suspect_cleared, 0);
	pair_down(&x);
}

/* The remote QP is destroyed (its client died): the sender's QP fails at
 * once with -ECONNRESET instead of retrying to exhaustion. */
static void remote_qp_gone(void **st)
{
	(void)st;
	uint8_t plane0 = 0;
	static uint8_t src[4096];
	struct pair x;
	pair_up(&x, 1, &plane0, src, sizeof(src), NULL, 0);
	struct mrce *a = x.a, *b = x.b;
	uint32_t pa = x.pa, pb = x.pb, qa = x.qa, qb = x.qb, qb2, ka = x.ka;
	assert_int_equal(mrce_qp_close(b, qb), 0);
	/* A new QP in the freed slot must not receive the old one's data. */
	assert_int_equal(mrce_qp_open(b, &(struct mrce_qp_attr){ .pd = 1 }, &qb2), 0);
	assert_int_not_equal(qb2, qb);
	assert_int_equal(mrce_qp_post(a, 10, qa, &(struct mrc_sqe){ .wr_id = 3,
		.op = MRC_SQE_WRITE, .lkey = ka, .len = 4096, .rkey = 1 }), 0);
	struct mrce_tx_pkt p[2], n[2];
	static uint8_t buf[9000];
	assert_int_equal(mrce_tx(a, 10, p, 2), 1);
	size_t len = mrce_tx_pkt_copy(&p[0], buf);
	mrce_rx(b, 20, pb, buf, len, 0);
	assert_int_equal(mrce_tx(b, 20, n, 2), 1);
	mrce_rx(a, 30, pa, n[0].hdr, n[0].hdr_len, 0);
	struct mrce_wc wc;
	assert_int_equal(mrce_wc_drain(a, &wc, 1), 1);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.status, -ECONNRESET);
	struct mrce_stats sb;
	mrce_stats(b, &sb);
	assert_int_equal(sb.bytes_placed, 0);
	pair_down(&x);
}

/* ACK coalescing: a burst of data packets is acknowledged by one ACK per
 * ack_every packets, plus one for the rest when the caller next sends;
 * the last ACK covers everything (cumulative). */
static void acks_coalesced(void **st)
{
	(void)st;
	uint8_t plane0 = 0;
	static uint8_t src[10 * 4096], dst[10 * 4096];
	memset(src, 7, sizeof(src));
	struct pair x;
	pair_up(&x, 1, &plane0, src, sizeof(src), dst, sizeof(dst));
	struct mrce *a = x.a, *b = x.b;
	uint32_t pa = x.pa, pb = x.pb, qa = x.qa, ka = x.ka, kb = x.kb;
	assert_int_equal(mrce_qp_post(a, 10, qa, &(struct mrc_sqe){ .wr_id = 1,
		.op = MRC_SQE_WRITE, .lkey = ka, .len = sizeof(src), .rkey = kb }), 0);
	struct mrce_tx_pkt p[16], acks[16];
	static uint8_t buf[9000];
	assert_int_equal(mrce_tx(a, 10, p, 16), 10);
	for (int i = 0; i < 10; i++)
		mrce_rx(b, 20, pb, buf, mrce_tx_pkt_copy(&p[i], buf), 0);
	/* 10 packets: ACKs after the 4th and 8th, one more for the last 2. */
	int n = mrce_tx(b, 20, acks, 16);
	assert_int_equal(n, 3);
	assert_false(mrce_tx_pending(b));
	mrce_rx(a, 30, pa, acks[n - 1].hdr, acks[n - 1].hdr_len, 0);
	struct mrce_wc wc;
	assert_int_equal(mrce_wc_drain(a, &wc, 1), 1);   /* the last ACK covers all */
	assert_int_equal(wc.status, 0);
	assert_memory_equal(src, dst, sizeof(src));
	pair_down(&x);
}

static void clean(void **st) { (void)st; run_xfer(0, 0); }
static void lossy(void **st) { (void)st; run_xfer(5, 0); }
static void plane_dead(void **st) { (void)st; run_xfer(0, 1); }

int main(void)
{
	net = calloc(NPKT, sizeof(*net));
	const struct CMUnitTest t[] = {
		cmocka_unit_test(clean), cmocka_unit_test(lossy), cmocka_unit_test(plane_dead),
		cmocka_unit_test(abort_unfinished), cmocka_unit_test(spurious_loss_undone),
		cmocka_unit_test(remote_qp_gone), cmocka_unit_test(acks_coalesced),
		cmocka_unit_test(reordered_path_kept), cmocka_unit_test(dead_path_retired),
	};
	int rc = cmocka_run_group_tests(t, NULL, NULL);
	free(net);
	return rc;
}
