/* First contact and registration on the verbs datapath, against the fake
 * libibverbs in wire mode (tests/support/fake_verbs.h: a send reaches the
 * fake QP it names): two providers that know nothing of each other swap
 * their QP numbers in sealed CTRL messages and the daemon's endpoint glue
 * (daemon/core/dpep.h) sets them for every path address of the peer; a
 * wrong or stale QP number loses datagrams until the next message fixes
 * it, and the side channel is chosen while none is known and on every
 * second try; the peer table keeps every number set however many paths;
 * client regions register with every plane, unregister after the sends
 * reading them, and every ibv failure on these paths returns a negative
 * errno and leaves nothing behind.  The datapath ops are reached through
 * datapath.h only, as mrcd reaches them. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/support/skip.h"

#ifdef MRC_HAVE_VERBS
#include "daemon/core/dpep.h"
#include "tests/support/fake_verbs.h"

/* ---- two hosts ------------------------------------------------------ */

#define NEV 4
/* What mrcd keeps for a peer (core.h): four paths, two per plane, the
 * last one missing from the topology (::). */
struct host {
	struct mrc_dp *dp;
	struct mrcd_peer peer;     /* the other host */
	struct in6_addr dst[NEV];
	uint8_t plane[NEV];
};
static struct mrc_dp_plane planes_b[2];
static struct mrc_auth *key_;
static struct mrc_auth_ctrl_tx tx_[2];
static struct mrc_auth_replay *rp_[2];

static void host_init(struct host *h, int self, struct mrc_dp *dp)
{
	memset(h, 0, sizeof(*h));
	h->dp = dp;
	for (int ev = 0; ev < NEV; ev++) {
		char s[64];
		/* uSID-like path addresses toward the other host */
		snprintf(s, sizeof(s), "fc00:0:%x:%x:%x::", 0x10 + ev, self, 1 - self);
		h->dst[ev] = ev == NEV - 1 ? (struct in6_addr){ 0 } : A(s);
		h->plane[ev] = (uint8_t)(ev / 2);
	}
	h->peer = (struct mrcd_peer){ .used = 1, .host = (uint32_t)(1 - self), .nev = NEV,
		.dst = h->dst, .plane = h->plane };
}

/* Opens host a on fake device 0 and host b on device 1, two planes each. */
static void two_hosts(struct host *a, struct host *b)
{
	struct mrc_dp_cfg c = cfg2("rx_depth=128,tx_depth=64");
	F.wire = 1;
	struct mrc_dp *da = open_fake(&c);
	for (int i = 0; i < 2; i++)
		planes_b[i] = (struct mrc_dp_plane){ .ifname = "lo", .local = fake_gid(1) };
	c.planes = planes_b;
	struct mrc_dp *db = open_fake(&c);
	host_init(a, 0, da);
	host_init(b, 1, db);
	uint8_t k[MRC_AUTH_KEY_BYTES];
	for (int i = 0; i < MRC_AUTH_KEY_BYTES; i++)
		k[i] = (uint8_t)(i * 3 + 1);
	assert_int_equal(mrc_auth_key_parse(k, sizeof(k), &key_, NULL), 0);
	for (uint32_t h = 0; h < 2; h++) {
		assert_int_equal(mrc_auth_ctrl_tx_init(&tx_[h]), 0);
		struct mrc_auth_replay_cfg rc = { .self_host = h, .max_hosts = 2,
			.window_ns = 5000000000ull, .max_skew_ns = MRC_AUTH_CTRL_SKEW_NS,
			.epoch = tx_[h].epoch };
		assert_int_equal(mrc_auth_replay_create(&rc, &rp_[h]), 0);
	}
	/* Each host gets the other's cookie, as cm.c's first exchange does
	 * (a challenge each way). */
	for (uint32_t h = 0; h < 2; h++) {
		uint8_t pkt[MRCD_CTRL_LEN_MAX];
		size_t len;
		struct mrce_ctrl m = { .type = MRCE_CTRL_PLANES };
		struct mrc_auth_ctrl_msg env;
		assert_int_equal(mrcd_ctrl_seal_len(key_, &tx_[h], rp_[h], 1, h, 1 - h, &m, pkt,
						    &len), 0);
		assert_int_equal(mrcd_ctrl_open(key_, rp_[1 - h], 1, h, pkt, len, &env, &m),
				 -ENOTCONN);
		assert_int_equal(mrc_auth_ctrl_challenge(key_, &tx_[1 - h], rp_[1 - h], 1, 1 - h, h,
							 env.src_epoch, pkt, sizeof pkt, &len), 0);
		assert_int_equal(mrcd_ctrl_open(key_, rp_[h], 1, 1 - h, pkt, len, &env, &m), 0);
		assert_true(env.challenge);
	}
}

static void two_hosts_close(struct host *a, struct host *b)
{
	mrc_dp_close(a->dp);
	mrc_dp_close(b->dp);
	for (int h = 0; h < 2; h++)
		mrc_auth_replay_free(rp_[h]);
	mrc_auth_free(key_);
	assert_nothing_live();
}

static uint32_t qpn_of(struct mrc_dp *dp, uint32_t plane)
{
	return ((struct mrc__dp_verbs_dp *)dp)->pl[plane].qp->qp_num;
}

/* A CTRL message of type t from host `from` with its endpoints, sealed
 * as cm.c's send_msg does; returns its length. */
static size_t ctrl_from(struct host *h, uint32_t from, uint8_t t, uint8_t *pkt)
{
	struct mrce_ctrl m = { .type = t, .id = 42, .sid = 7, .qpn = 0x10001, .psn = 5,
		.window = 64, .mtu = 1024 };
	if (t == MRCE_CTRL_PLANES)
		m = (struct mrce_ctrl){ .type = t };
	else
		memset(m.nonce, 0x5a, sizeof(m.nonce));
	assert_int_equal(mrcd_ep_fill(h->dp, 2, &m), 0);
	assert_int_equal(m.neps, 2);
	size_t len = 0;
	assert_int_equal(mrcd_ctrl_seal_len(key_, &tx_[from], rp_[from], 1, from, 1 - from, &m, pkt,
					    &len), 0);
	return len;
}

/* Host `to` opens a CTRL datagram and learns the sender's endpoints, as
 * cm.c's mrcd_cm_rx does; returns mrcd_ep_learn's count. */
static int ctrl_to(struct host *h, uint32_t to, const uint8_t *pkt, size_t len)
{
	struct mrce_ctrl m;
	struct mrc_auth_ctrl_msg env;
	assert_int_equal(mrcd_ctrl_open(key_, rp_[to], 1, 1 - to, pkt, len, &env, &m), 0);
	assert_int_equal(env.src_host, 1 - to);
	return mrcd_ep_learn(h->dp, 2, &h->peer, &m);
}

static int send_to(struct host *h, uint32_t ev, const void *buf, size_t len)
{
	struct mrc_dp_out o = { .plane = h->plane[ev], .dst = h->dst[ev], .iovcnt = 1,
		.iov = { { (void *)buf, len } } };
	return mrc_dp_send(h->dp, &o, 1);
}

static int recv_on(struct host *h, uint32_t plane, struct mrc_dp_in *in)
{
	return mrc_dp_recv(h->dp, plane, in, MRC_DP_BATCH);
}

/* ---- first contact ---------------------------------------------------- */

static void first_contact_between_two_providers(void **state)
{
	(void)state;
	struct host a, b;
	two_hosts(&a, &b);
	struct mrc__dp_verbs_xstats x;
	uint8_t pkt[MRCD_CTRL_LEN_MAX];
	struct mrc_dp_in in[MRC_DP_BATCH];
	/* Nothing known: a datagram to b is dropped (no QP number), and a
	 * control message would take the side channel. */
	assert_int_equal(send_to(&a, 0, "x", 1), 0);
	mrc__dp_verbs_xstats(a.dp, &x);
	assert_int_equal(x.no_qpn, 1);
	assert_int_equal(F.wire_delivered, 0);
	assert_true(mrcd_ep_side(NULL, 0, 0));
	assert_true(mrcd_ep_side(&a.peer, 0, 0));
	/* a's REQ (over the side channel: handed over here) names a's QPs. */
	size_t len = ctrl_from(&a, 0, MRCE_CTRL_REQ, pkt);
	assert_int_equal(ctrl_to(&b, 1, pkt, len), 3);   /* the three paths that exist */
	assert_int_equal(b.peer.ep[0], qpn_of(a.dp, 0));
	assert_int_equal(b.peer.ep[1], qpn_of(a.dp, 1));
	assert_false(mrcd_ep_side(&b.peer, 0, 0));        /* b answers over the datapath */
	assert_true(mrcd_ep_side(&b.peer, 1, 1));         /* a second try goes aside */
	/* b's REP goes over UD on plane 0 and reaches a's plane-0 QP. */
	len = ctrl_from(&b, 1, MRCE_CTRL_REP, pkt);
	assert_int_equal(send_to(&b, 0, pkt, len), 1);
	assert_int_equal(F.wire_delivered, 1);
	assert_int_equal(recv_on(&a, 0, in), 1);
	struct in6_addr gb = fake_gid(1);
	assert_memory_equal(&in[0].src, &gb, 16);
	assert_int_equal(ctrl_to(&a, 0, in[0].buf, in[0].len), 3);
	assert_int_equal(a.peer.ep[1], qpn_of(b.dp, 1));
	/* Now every existing path of each plane carries data both ways. */
	for (uint32_t ev = 0; ev < NEV - 1; ev++) {
		char d[16];
		snprintf(d, sizeof(d), "data%u", ev);
		assert_int_equal(send_to(&a, ev, d, strlen(d)), 1);
		assert_int_equal(recv_on(&b, a.plane[ev], in), 1);
		assert_int_equal(in[0].len, strlen(d));
		assert_memory_equal(in[0].buf, d, strlen(d));
		assert_int_equal(send_to(&b, ev, d, strlen(d)), 1);
		assert_int_equal(recv_on(&a, b.plane[ev], in), 1);
	}
	/* The missing path got no entry: still dropped. */
	assert_int_equal(send_to(&a, NEV - 1, "x", 1), 0);
	mrc__dp_verbs_xstats(a.dp, &x);
	assert_int_equal(x.no_qpn, 2);
	assert_int_equal(F.wire_no_qp, 0);
	/* A PLANES beacon repeats the same numbers: nothing to redo. */
	len = ctrl_from(&b, 1, MRCE_CTRL_PLANES, pkt);
	assert_int_equal(ctrl_to(&a, 0, pkt, len), 0);
	two_hosts_close(&a, &b);
}

/* A peer's message without endpoints (a udp mrcd, or an older one)
 * changes nothing; a wrong number loses datagrams at the far NIC, and a
 * restart (new QP numbers) is repaired by the restarted side's next
 * message, which the every-second-try side channel gets through. */
static void wrong_missing_and_stale_qpn(void **state)
{
	(void)state;
	struct host a, b;
	two_hosts(&a, &b);
	struct mrc_dp_in in[MRC_DP_BATCH];
	uint8_t pkt[MRCD_CTRL_LEN_MAX];
	struct mrce_ctrl none = { .type = MRCE_CTRL_PLANES };
	assert_int_equal(mrcd_ep_learn(a.dp, 2, &a.peer, &none), 0);
	assert_int_equal(a.peer.ep[0], 0);
	/* udp has no endpoints: mrcd sends the 56-byte messages it always did. */
	const struct mrc_dp_ops *udp = mrc_dp_find("udp");
	assert_null(udp->ep_local);
	assert_null(udp->ep_set);
	assert_null(udp->mem_reg);
	/* A wrong number (b's plane-0 QP number plus 100): sent, never
	 * received. */
	struct mrce_ctrl wrong = { .type = MRCE_CTRL_PLANES, .neps = 2,
		.ep = { qpn_of(b.dp, 0) + 100, qpn_of(b.dp, 1) } };
	assert_int_equal(mrcd_ep_learn(a.dp, 2, &a.peer, &wrong), 3);
	assert_int_equal(send_to(&a, 0, "lost", 4), 1);
	assert_int_equal(F.wire_no_qp, 1);
	assert_int_equal(recv_on(&b, 0, in), 0);
	/* b's real numbers arrive: the same path now delivers. */
	size_t len = ctrl_from(&b, 1, MRCE_CTRL_PLANES, pkt);
	assert_int_equal(ctrl_to(&a, 0, pkt, len), 3);
	assert_int_equal(send_to(&a, 0, "found", 5), 1);
	assert_int_equal(recv_on(&b, 0, in), 1);
	/* b restarts: new QPs, new numbers; a's are stale. */
	uint32_t old = qpn_of(b.dp, 0);
	mrc_dp_close(b.dp);
	struct mrc_dp_cfg c = { .planes = planes_b, .nplanes = 2, .port = 4791,
		.args = "rx_depth=128,tx_depth=64" };
	b.dp = open_fake(&c);
	assert_int_not_equal(qpn_of(b.dp, 0), old);
	uint32_t lost = F.wire_no_qp;
	assert_int_equal(send_to(&a, 0, "stale", 5), 1);
	assert_int_equal(F.wire_no_qp, lost + 1);
	/* a's retry 1 takes the side channel although it knows a number,
	 * and b's REQ carries the new ones. */
	assert_true(mrcd_ep_side(&a.peer, 0, 1));
	len = ctrl_from(&b, 1, MRCE_CTRL_REQ, pkt);
	assert_int_equal(ctrl_to(&a, 0, pkt, len), 3);
	assert_int_equal(send_to(&a, 0, "fresh", 5), 1);
	assert_int_equal(recv_on(&b, 0, in), 1);
	assert_memory_equal(in[0].buf, "fresh", 5);
	/* ep_set refuses a number a UD QP cannot have. */
	assert_int_equal(mrc_dp_ep_set(a.dp, 0, &a.dst[0], 1u << 24), -EINVAL);
	assert_int_equal(mrc_dp_ep_set(a.dp, 2, &a.dst[0], 5), -EINVAL);
	two_hosts_close(&a, &b);
}

/* mrcd sets a number for every path of every peer: unlike the address
 * handle cache, the peer table keeps them all (ah_max=4 here). */
static void peer_table_keeps_every_path(void **state)
{
	(void)state;
	struct mrc_dp_cfg c = cfg2("ah_max=4");
	struct mrc_dp *dp = open_fake(&c);
	enum { N = 3000 };
	for (uint32_t i = 0; i < N; i++) {
		struct in6_addr d = A("fc00::");
		d.s6_addr[4] = (uint8_t)(i >> 8);
		d.s6_addr[5] = (uint8_t)i;
		assert_int_equal(mrc_dp_ep_set(dp, 1, &d, 1000 + i), 0);
	}
	uint8_t h[8] = { 0 };
	for (uint32_t i = 0; i < N; i += 7) {
		struct mrc_dp_out o = { .plane = 1, .dst = A("fc00::"), .iovcnt = 1,
			.iov = { { h, 8 } } };
		o.dst.s6_addr[4] = (uint8_t)(i >> 8);
		o.dst.s6_addr[5] = (uint8_t)i;
		assert_int_equal(mrc_dp_send(dp, &o, 1), 1);
		assert_int_equal(F.log[(F.nlog - 1) % 256].qpn, 1000 + i);
	}
	/* 0 forgets one */
	struct in6_addr d0 = A("fc00::");
	assert_int_equal(mrc_dp_ep_set(dp, 1, &d0, 0), 0);
	struct mrc_dp_out o = { .plane = 1, .dst = d0, .iovcnt = 1, .iov = { { h, 8 } } };
	assert_int_equal(mrc_dp_send(dp, &o, 1), 0);
	assert_true(F.live[K_AH] <= 4);
	uint32_t ep;
	assert_int_equal(mrc_dp_ep_local(dp, 1, &ep), 0);
	assert_int_equal(ep, qpn_of(dp, 1));
	assert_int_equal(mrc_dp_ep_local(dp, 2, &ep), -EINVAL);
	mrc_dp_close(dp);
	assert_nothing_live();
}

/* A packet's source QP is learnt for its source address, but never over
 * a number mrcd set (that came sealed); and the side channel is chosen on
 * about every second try with every plane seeing both channels, not one
 * plane always aside as parity with two planes would do. */
static void learning_yields_to_mrcd_and_side_mixes(void **state)
{
	(void)state;
	struct mrc_dp_cfg c = cfg2(NULL);
	struct mrc_dp *dp = open_fake(&c);
	struct mrc_dp_in in[MRC_DP_BATCH];
	struct in6_addr s7 = A("fd00::7"), s8 = A("fd00::8");
	assert_int_equal(mrc_dp_ep_set(dp, 0, &s7, 0x700), 0);
	deliver(dp, 0, "fd00::7", 0, "a", 1, 0x999, IBV_WC_SUCCESS);   /* forged source QP */
	deliver(dp, 0, "fd00::8", 0, "b", 1, 0x888, IBV_WC_SUCCESS);   /* unknown: learnt */
	assert_int_equal(mrc_dp_recv(dp, 0, in, MRC_DP_BATCH), 2);
	struct mrc_dp_out o = { .plane = 0, .dst = s7, .iovcnt = 1, .iov = { { "r", 1 } } };
	assert_int_equal(mrc_dp_send(dp, &o, 1), 1);
	assert_int_equal(F.log[0].qpn, 0x700);
	o.dst = s8;
	assert_int_equal(mrc_dp_send(dp, &o, 1), 1);
	assert_int_equal(F.log[1].qpn, 0x888);
	/* mrcd's own number for a learnt address replaces it. */
	assert_int_equal(mrc_dp_ep_set(dp, 0, &s8, 0x801), 0);
	assert_int_equal(mrc_dp_send(dp, &o, 1), 1);
	assert_int_equal(F.log[2].qpn, 0x801);
	mrc_dp_close(dp);
	assert_nothing_live();
	struct mrcd_peer p = { .used = 1, .ep = { 5, 6 } };
	int seen[2][2] = { { 0 } }, aside = 0;
	assert_false(mrcd_ep_side(&p, 0, 0));              /* the first try: UD */
	assert_true(mrcd_ep_side(&p, 1, 1));               /* the first retry: aside */
	for (uint32_t t = 0; t < 64; t++) {
		int side = mrcd_ep_side(&p, t % 2, t);
		seen[t % 2][side] = 1;
		aside += side;
	}
	assert_true(seen[0][0] && seen[0][1] && seen[1][0] && seen[1][1]);
	assert_in_range(aside, 24, 40);
	p.ep[1] = 0;                                       /* unknown: always aside */
	for (uint32_t t = 0; t < 8; t++)
		assert_true(mrcd_ep_side(&p, 1, t));
}

/* ---- registration ----------------------------------------------------- */

/* What mrcd does with a client's regions (daemon/clients/client_mr.c
 * do_reg_mr and mr_drop, the latter for each region when the client
 * dies): register with every plane, send from them in place, unregister
 * only after the sends reading them are done. */
static void regions_follow_the_client(void **state)
{
	(void)state;
	struct mrc_dp_cfg c = cfg2(NULL);
	struct mrc_dp *dp = open_fake(&c);
	struct mrc__dp_verbs_xstats x;
	int pools = F.live[K_MR];
	static uint8_t mem[3][4096];
	int id[3];
	for (int i = 0; i < 3; i++) {
		id[i] = mrc_dp_mem_reg(dp, mem[i], sizeof(mem[i]), -1, 0);
		assert_true(id[i] >= 0);
	}
	assert_int_equal(F.live[K_MR], pools + 3 * 2);   /* each on both planes */
	struct in6_addr a = A("fc00::9");
	assert_int_equal(mrc_dp_ep_set(dp, 0, &a, 9), 0);
	uint8_t hdr[8] = "hdr", tr[4] = "crc";
	struct mrc_dp_out o = { .plane = 0, .dst = a, .iovcnt = 3,
		.iov = { { hdr, 8 }, { mem[1] + 100, 200 }, { tr, 4 } } };
	/* A send still on the NIC when the client deregisters: the region
	 * goes only once it completed (here: never, so counted). */
	F.complete_sends = 0;
	assert_int_equal(mrc_dp_send(dp, &o, 1), 1);
	assert_int_equal(F.log[0].num_sge, 3);
	mrc_dp_mem_unreg(dp, id[1]);
	mrc__dp_verbs_xstats(dp, &x);
	assert_int_equal(x.unreg_busy, 1);
	assert_int_equal(F.live[K_MR], pools + 2 * 2);
	/* The NIC completes it after all. */
	struct ibv_wc wc = { .wr_id = 0, .status = IBV_WC_SUCCESS, .opcode = IBV_WC_SEND };
	cq_push(((struct fqp *)((struct mrc__dp_verbs_dp *)dp)->pl[0].qp)->scq, &wc);
	/* Completed first: no wait counted. */
	F.complete_sends = 1;
	o.iov[1] = (struct iovec){ mem[2], 64 };
	assert_int_equal(mrc_dp_send(dp, &o, 1), 1);
	mrc_dp_mem_unreg(dp, id[2]);
	mrc__dp_verbs_xstats(dp, &x);
	assert_int_equal(x.unreg_busy, 1);
	assert_int_equal(x.zero_copy, 2);
	/* After unregistering, the same memory is copied. */
	assert_int_equal(mrc_dp_send(dp, &o, 1), 1);
	assert_int_equal(F.log[F.nlog - 1].num_sge, 1);
	/* The client dies holding id[0]: mrcd unregisters it; then the
	 * datapath closes with nothing left. */
	mrc_dp_mem_unreg(dp, id[0]);
	mrc_dp_mem_unreg(dp, id[0]);                      /* twice: a no-op */
	mrc_dp_mem_unreg(dp, -1);                         /* none: a no-op */
	assert_int_equal(F.live[K_MR], pools);
	/* GPU memory: a dmabuf, addressed by its device address. */
	int g = mrc_dp_mem_reg(dp, (void *)(uintptr_t)0x7f0000000000ull, 1 << 20, 5, 4096);
	assert_true(g >= 0);
	assert_int_equal(F.live[K_MR], pools + 2);
	assert_int_equal(mrc_dp_mem_reg(dp, mem[0], 0, -1, 0), -EINVAL);
	mrc_dp_close(dp);                                 /* releases g too */
	assert_nothing_live();
}

/* Every ibv call on the registration and first-contact paths fails in
 * turn: each returns a negative errno (or drops and counts, for a send)
 * and leaves nothing made. */
static void each_failure_returns_errno_and_leaks_nothing(void **state)
{
	(void)state;
	static uint8_t mem[4096];
	/* reg_mr (and reg_dmabuf_mr, which the fake routes through it) on
	 * plane 0, then on plane 1 after plane 0's succeeded. */
	for (int dmabuf = 0; dmabuf < 2; dmabuf++)
		for (int after = 0; after < 2; after++) {
			struct mrc_dp_cfg c = cfg2(NULL);
			struct mrc_dp *dp = open_fake(&c);
			int pools = F.live[K_MR];
			F.fail = "reg_mr";
			F.fail_after = after;
			F.calls = 0;
			int r = mrc_dp_mem_reg(dp, mem, sizeof(mem), dmabuf ? 7 : -1, 0);
			assert_int_equal(r, -ENOMEM);
			assert_int_equal(F.live[K_MR], pools);
			F.fail = NULL;
			assert_true(mrc_dp_mem_reg(dp, mem, sizeof(mem), -1, 0) >= 0);
			mrc_dp_close(dp);
			assert_nothing_live();
		}
	/* Out of region slots: -ENOSPC, nothing made. */
	struct mrc_dp_cfg c = cfg2(NULL);
	struct mrc_dp *dp = open_fake(&c);
	for (int i = 0; i < MRC__VERBS_MAX_REGIONS; i++)
		assert_true(mrc_dp_mem_reg(dp, mem, sizeof(mem), -1, 0) >= 0);
	int live = F.live[K_MR];
	assert_int_equal(mrc_dp_mem_reg(dp, mem, sizeof(mem), -1, 0), -ENOSPC);
	assert_int_equal(F.live[K_MR], live);
	/* create_ah and post_send on the first datagram to a peer just
	 * learned: dropped and counted, nothing held. */
	struct in6_addr a = A("fc00::5");
	assert_int_equal(mrc_dp_ep_set(dp, 0, &a, 77), 0);
	uint8_t h[8] = { 0 };
	struct mrc_dp_out o = { .plane = 0, .dst = a, .iovcnt = 1, .iov = { { h, 8 } } };
	struct mrc_dp_stats st;
	F.fail = "create_ah";
	F.fail_after = 0;
	F.calls = 0;
	assert_int_equal(mrc_dp_send(dp, &o, 1), 0);
	assert_int_equal(F.live[K_AH], 0);
	F.fail = "post_send";
	F.calls = 0;
	assert_int_equal(mrc_dp_send(dp, &o, 1), 0);
	mrc_dp_get_stats(dp, &st);
	assert_int_equal(st.tx_errs, 2);
	assert_int_equal(st.tx_pkts, 0);
	F.fail = NULL;
	assert_int_equal(mrc_dp_send(dp, &o, 1), 1);
	/* A payload from a region whose send was not posted: unregistering
	 * it waits for nothing. */
	mrc_dp_mem_unreg(dp, 0);
	static uint8_t r2[4096];
	int id = mrc_dp_mem_reg(dp, r2, sizeof(r2), -1, 0);
	assert_true(id >= 0);
	struct mrc_dp_out p = { .plane = 0, .dst = a, .iovcnt = 3,
		.iov = { { h, 8 }, { r2, 64 }, { h, 4 } } };
	F.fail = "post_send";
	F.calls = 0;
	assert_int_equal(mrc_dp_send(dp, &p, 1), 0);
	F.fail = NULL;
	mrc_dp_mem_unreg(dp, id);
	struct mrc__dp_verbs_xstats x;
	mrc__dp_verbs_xstats(dp, &x);
	assert_int_equal(x.unreg_busy, 0);
	mrc_dp_close(dp);
	assert_nothing_live();
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(first_contact_between_two_providers),
		cmocka_unit_test(wrong_missing_and_stale_qpn),
		cmocka_unit_test(peer_table_keeps_every_path),
		cmocka_unit_test(learning_yields_to_mrcd_and_side_mixes),
		cmocka_unit_test(regions_follow_the_client),
		cmocka_unit_test(each_failure_returns_errno_and_leaks_nothing),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
#else
#include "datapath/datapath.h"

static void not_built(void **state)
{
	(void)state;
	MRC_SKIP("verbs datapath not built (no libibverbs-dev)");
}

int main(void)
{
	const struct CMUnitTest t[] = { cmocka_unit_test(not_built) };
	return cmocka_run_group_tests(t, NULL, NULL);
}
#endif
