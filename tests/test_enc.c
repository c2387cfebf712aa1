/* The daemon's AEAD payload mode (daemon/core/enc.h) between two real
 * engines: packets leave one engine, are sealed as mrcd's flush does,
 * cross a hand-driven "wire" (where a test may forge, corrupt or trim
 * them), are opened as mrcd's receive path does and enter the other
 * engine.  Virtual time; every run is bounded. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "auth/auth.h"
#include "auth/seal_ops.h"
#include "daemon/core/config.h"
#include "daemon/core/enc.h"
#include "tests/support/etest.h"
#include "tests/support/seeded.h"
#include "tests/support/skip.h"
#include "transport/crc32c.h"
#include "transport/wire.h"

#define LEN (64u * 1024)

struct rig;
typedef void (*wire_fn)(struct rig *r, uint32_t from, uint8_t *dg, size_t *len);

struct rig {
	struct etest t;
	struct mrcd_enc *x[2];
	uint64_t now;
	wire_fn wire;
	uint64_t data_pkts, enc_pkts, plain_leaks, hits;
	uint64_t pkts, untagged;   /* every datagram on the wire; without a seal */
	uint64_t tx_dropped;       /* packets the sender's enc refused to send */
	uint32_t n_tamper;         /* packets the wire hook still alters */
	/* The last sealed data packet of node 0 and ACK of node 1 seen. */
	uint8_t rec_data[MRC_DATA_HDR_LEN + MRC_MAX_PAYLOAD + MRCD_ENC_TRAILER];
	size_t rec_data_len;
	uint8_t rec_ack[MRC_ACK_HDR_LEN + MRCD_ENC_TRAILER];
	size_t rec_ack_len;
};

static struct mrc_auth *test_key(void)
{
	uint8_t k[MRC_AUTH_KEY_BYTES];
	for (size_t i = 0; i < sizeof(k); i++)
		k[i] = (uint8_t)rnd();
	k[0] |= 1;
	struct mrc_auth *a = NULL;
	const char *why = NULL;
	assert_int_equal(mrc_auth_key_parse(k, sizeof(k), &a, &why), 0);
	return a;
}

/* Keys node n's QP as the connection manager does: derive by role, set. */
static void key_node(struct rig *r, struct mrc_auth *a, int n)
{
	struct mrc_auth_conn_id id = { .req_host = 0, .req_qpn = r->t.qa,
				       .rep_host = 1, .rep_qpn = r->t.qb };
	memset(id.req_nonce, 0x21, sizeof(id.req_nonce));
	memset(id.rep_nonce, 0x42, sizeof(id.rep_nonce));
	struct mrc_auth_conn c;
	const char *why = NULL;
	assert_int_equal(mrc_auth_conn_derive(a, &id, n ? MRC_AUTH_ACCEPTOR : MRC_AUTH_REQUESTER,
					      &c), 0);
	uint32_t qpn = n ? r->t.qb : r->t.qa, rqpn = n ? r->t.qa : r->t.qb;
	/* The engines were connected by the test channel with its tokens;
	 * the mode restores the connection's tokens, so they must be those
	 * (mrcd sets both from the one derivation). */
	c.tx_token = chan_qp_token(r->t.ch, (uint32_t)n, qpn, (uint32_t)(1 - n), rqpn);
	c.rx_token = chan_qp_token(r->t.ch, (uint32_t)(1 - n), rqpn, (uint32_t)n, qpn);
	assert_int_equal(mrcd_enc_set(r->x[n], qpn, r->t.ch->node[n].peer[1 - n], rqpn, &c,
				      &why), 0);
	mrc_auth_conn_wipe(&c);
}

/* Host-pair MAC keys of both nodes (hosts 0 and 1), as mrcd sets them
 * for every peer. */
static void pair_keys(struct rig *r, struct mrc_auth *a)
{
	for (int n = 0; n < 2; n++) {
		uint8_t tx[MRC_AUTH_PAIR_KEY_BYTES], rx[MRC_AUTH_PAIR_KEY_BYTES];
		assert_int_equal(mrc_auth_pair_keys(a, (uint32_t)n, (uint32_t)(1 - n), tx, rx), 0);
		assert_int_equal(mrcd_enc_set_peer(r->x[n], r->t.ch->node[n].peer[1 - n], tx, rx), 0);
	}
}

/* key: bit n set = node n's QP has AEAD keys. */
static void rig_init(struct rig *r, unsigned key)
{
	struct chan_cfg cc;
	const char *why = NULL;
	memset(r, 0, sizeof(*r));
	chan_cfg_default(&cc, g_seed);
	assert_int_equal(etest_init(&r->t, &cc, LEN, LEN, 0), 0);
	r->now = r->t.ch->now;
	for (int n = 0; n < 2; n++)
		assert_int_equal(mrcd_enc_create(&r->x[n], &why), 0);
	struct mrc_auth *a = test_key();
	pair_keys(r, a);
	for (int n = 0; n < 2; n++)
		if (key & (1u << n))
			key_node(r, a, n);
	mrc_auth_free(a);
}

/* Whether a datagram as sent carries the mode's seal for its kind. */
static int is_sealed(const uint8_t *dg, size_t len)
{
	if (mrc_op_is_data(dg[1])) {
		uint16_t plen = (uint16_t)(dg[14] << 8 | dg[15]);
		return (dg[3] & MRC_F_ENC) &&
		       len == MRC_DATA_HDR_LEN + (size_t)plen + MRCD_ENC_TRAILER;
	}
	if (dg[1] == MRC_OP_ACK)
		return len == MRC_ACK_HDR_LEN + (dg[14] == MRC_NACK_NOQP ?
						 MRC_AUTH_PAIR_TAG_BYTES : MRCD_ENC_TRAILER);
	if (dg[1] == MRC_OP_PROBE || dg[1] == MRC_OP_PROBE_REPLY)
		return len == MRC_PROBE_HDR_LEN + MRC_AUTH_PAIR_TAG_BYTES;
	return 0;
}

/* A datagram from node `from` into the other node as mrcd's receive path
 * takes it; 0 when it reached the engine. */
static int inject(struct rig *r, uint32_t from, uint8_t *dg, size_t len)
{
	uint32_t to = 1 - from;
	int rc = mrcd_enc_open(r->x[to], r->t.ch->node[to].peer[from], dg, &len);
	if (rc == 0)
		mrce_rx(r->t.ch->node[to].e, r->now, r->t.ch->node[to].peer[from], dg, len, 0);
	return rc;
}

static void rig_fini(struct rig *r)
{
	mrcd_enc_free(r->x[0]);
	mrcd_enc_free(r->x[1]);
	etest_fini(&r->t);
}

/* One datagram as mrcd's flush builds it (sealed, or not sent at all),
 * through the wire hook, opened as mrcd's receive path does, into the
 * other engine. */
static void carry(struct rig *r, uint32_t n, struct mrce_tx_pkt *pk, unsigned slot)
{
	static uint8_t dg[MRC_DATA_HDR_LEN + MRC_MAX_PAYLOAD + MRCD_ENC_TRAILER];
	struct iovec body;
	size_t len = pk->hdr_len;
	int rc = mrcd_enc_seal(r->x[n], pk, slot, &body);
	assert_true(rc == 1 || rc < 0);    /* never "send it as it is" */
	if (rc < 0) {
		r->tx_dropped++;
		return;
	}
	memcpy(dg, pk->hdr, pk->hdr_len);
	memcpy(dg + len, body.iov_base, body.iov_len);
	len += body.iov_len;
	r->pkts++;
	r->untagged += !is_sealed(dg, len);
	if (mrc_op_is_data(dg[1]) && pk->plen) {
		r->data_pkts++;
		r->enc_pkts += !!(dg[3] & MRC_F_ENC);
		/* The payload as sent never shows the plaintext. */
		r->plain_leaks += !memcmp(dg + MRC_DATA_HDR_LEN, pk->payload, pk->plen);
	}
	if (n == 0 && mrc_op_is_data(dg[1])) {
		memcpy(r->rec_data, dg, len);
		r->rec_data_len = len;
	}
	if (n == 1 && dg[1] == MRC_OP_ACK && len <= sizeof(r->rec_ack)) {
		memcpy(r->rec_ack, dg, len);
		r->rec_ack_len = len;
	}
	if (r->wire)
		r->wire(r, n, dg, &len);
	inject(r, n, dg, len);
}

/* Runs until node 0 has a completion (1) or `steps` steps of 2 us passed (0). */
static int run(struct rig *r, uint64_t steps, struct mrce_wc *wc)
{
	struct mrce_tx_pkt pk[MRCD_ENC_SLOTS];
	for (uint64_t s = 0; s < steps; s++) {
		r->now += 2000;
		for (uint32_t n = 0; n < 2; n++) {
			struct mrce *e = r->t.ch->node[n].e;
			if (mrce_next_deadline(e) <= r->now)
				mrce_tick(e, r->now);
			int k = mrce_tx(e, r->now, pk, MRCD_ENC_SLOTS);
			for (int i = 0; i < k; i++)
				carry(r, n, &pk[i], (unsigned)i);
		}
		if (mrce_wc_drain(r->t.ch->node[0].e, wc, 1) == 1)
			return 1;
	}
	return 0;
}

static void post_write(struct rig *r)
{
	struct mrc_sqe wr = { .wr_id = 7, .op = MRC_SQE_WRITE, .lkey = r->t.lkey, .len = LEN,
			      .rkey = r->t.rkey };
	assert_int_equal(mrce_qp_post(r->t.ch->node[0].e, r->now, r->t.qa, &wr), 0);
}

static void dump(const struct rig *r)
{
	for (int n = 0; n < 2; n++) {
		struct mrce_seal_stats s;
		mrcd_enc_get_stats(r->x[n], &s);
		fprintf(stderr, "node %d: sealed %llu fail %llu nokey %llu | opened %llu trimmed %llu "
			"bad_auth %llu bad_pcrc %llu bad_len %llu missing %llu nokey %llu replay %llu "
			"stale %llu\n", n, (unsigned long long)s.tx_sealed,
			(unsigned long long)s.tx_fail, (unsigned long long)s.tx_nokey,
			(unsigned long long)s.rx_opened, (unsigned long long)s.rx_trimmed,
			(unsigned long long)s.rx_bad_auth, (unsigned long long)s.rx_bad_pcrc,
			(unsigned long long)s.rx_bad_len, (unsigned long long)s.rx_missing,
			(unsigned long long)s.rx_nokey, (unsigned long long)s.rx_replay,
			(unsigned long long)s.rx_stale);
	}
}

static void expect_done(struct rig *r)
{
	struct mrce_wc wc;
	int got = run(r, 2000000, &wc);
	if (got != 1 || wc.status)
		dump(r);
	CHECK(got == 1, "no completion");
	CHECK(wc.status == 0, "completion status %d", wc.status);
	CHECK(!memcmp(r->t.src.p, r->t.dst.p, LEN), "target differs from source");
}

static struct mrce_seal_stats stats(const struct rig *r, int n)
{
	struct mrce_seal_stats s;
	mrcd_enc_get_stats(r->x[n], &s);
	return s;
}

static int need_aead(void)
{
	if (mrc_auth_aead_available())
		return 1;
	struct mrcd_enc *x = NULL;
	const char *why = NULL;
	assert_int_equal(mrcd_enc_create(&x, &why), -ENOTSUP);
	assert_non_null(strstr(why, "AES-NI"));
	return 0;
}

#define NEED_AEAD() do { \
	if (!need_aead()) { \
		MRC_SKIP("no AES-NI/PCLMUL on this CPU"); \
		return; \
	} } while (0)

/* Both sides keyed; a WRITE through wire hook w (altering n packets) has
 * landed intact. */
static void sealed_write(struct rig *r, wire_fn w, uint32_t n)
{
	rig_init(r, 3);
	r->wire = w;
	r->n_tamper = n;
	post_write(r);
	expect_done(r);
}

/* Keyed both ways: a multi-packet WRITE lands intact, every data packet
 * on the wire is ENC and ciphertext, and every one opens. */
static void write_sealed(void **st)
{
	(void)st;
	NEED_AEAD();
	struct rig r;
	sealed_write(&r, NULL, 0);
	struct mrce_seal_stats s0 = stats(&r, 0), s1 = stats(&r, 1);
	CHECK(r.data_pkts >= LEN / 4096, "%llu data packets", (unsigned long long)r.data_pkts);
	CHECK(r.enc_pkts == r.data_pkts, "%llu of %llu data packets ENC",
	      (unsigned long long)r.enc_pkts, (unsigned long long)r.data_pkts);
	CHECK(r.plain_leaks == 0, "plaintext on the wire");
	/* Not only data: ACKs (and any probe) carry their tags too. */
	CHECK(r.untagged == 0 && r.pkts > r.data_pkts, "%llu of %llu packets unsealed",
	      (unsigned long long)r.untagged, (unsigned long long)r.pkts);
	CHECK(s0.tx_sealed >= r.data_pkts && s1.rx_opened >= r.data_pkts,
	      "sealed %llu opened %llu", (unsigned long long)s0.tx_sealed,
	      (unsigned long long)s1.rx_opened);
	CHECK(s1.rx_bad_auth + s1.rx_bad_pcrc + s1.rx_missing + s1.rx_nokey + s1.rx_bad_len +
	      s1.rx_replay + s0.rx_bad_auth + s0.rx_missing + s0.rx_replay + s0.tx_nokey == 0,
	      "drops without cause");
	rig_fini(&r);
}

/* An altered ciphertext with a matching outer CRC (a forger's work, not
 * noise) fails the tag; one without (noise) fails the CRC.  Both are
 * dropped before the engine, which then resends: the WRITE still lands. */
static void forge_ciphertext(struct rig *r, uint32_t from, uint8_t *dg, size_t *len)
{
	if (from != 0 || !r->n_tamper || !(dg[3] & MRC_F_ENC) || *len <= MRC_DATA_HDR_LEN + 28)
		return;
	r->n_tamper--;
	size_t plen = *len - MRC_DATA_HDR_LEN - MRCD_ENC_TRAILER;
	dg[MRC_DATA_HDR_LEN + rnd() % plen] ^= (uint8_t)(1u << (rnd() % 8));
	if (r->hits++ % 2 == 0) {
		uint32_t c = htobe32(mrce_crc32c(0, dg + MRC_DATA_HDR_LEN, plen + 24));
		memcpy(dg + *len - 4, &c, 4);
	}
}

static void forged_dropped(void **st)
{
	(void)st;
	NEED_AEAD();
	struct rig r;
	sealed_write(&r, forge_ciphertext, 6);
	struct mrce_seal_stats s1 = stats(&r, 1);
	CHECK(s1.rx_bad_auth == 3 && s1.rx_bad_pcrc == 3, "bad_auth %llu bad_pcrc %llu",
	      (unsigned long long)s1.rx_bad_auth, (unsigned long long)s1.rx_bad_pcrc);
	rig_fini(&r);
}

/* A switch trims an ENC packet: the receiver still sees a trimmed packet
 * (header CRC path), NACKs it, and the sender resends at once. */
static void trim_first(struct rig *r, uint32_t from, uint8_t *dg, size_t *len)
{
	if (from == 0 && r->n_tamper && (dg[3] & MRC_F_ENC)) {
		r->n_tamper--;
		*len = mrce_wire_trim(dg, *len);
	}
}

static void trimmed_recognised(void **st)
{
	(void)st;
	NEED_AEAD();
	struct rig r;
	sealed_write(&r, trim_first, 2);
	struct mrce_qp_info qi;
	assert_int_equal(mrce_qp_info(r.t.ch->node[0].e, r.t.qa, &qi), 0);
	struct mrce_seal_stats s1 = stats(&r, 1);
	CHECK(s1.rx_trimmed == 2, "rx_trimmed %llu", (unsigned long long)s1.rx_trimmed);
	CHECK(qi.trims_rx == 2, "sender saw %llu trim NACKs", (unsigned long long)qi.trims_rx);
	rig_fini(&r);
}

/* Only one side keyed: the unkeyed side sends nothing (fail closed,
 * tx_nokey), and sealed data into a QP without keys is not opened
 * (rx_nokey: its header alone goes on, whose tag is no token); nothing is
 * placed. */
static void one_side_keyed(void **st)
{
	(void)st;
	NEED_AEAD();
	for (unsigned key = 1; key <= 2; key++) {
		struct rig r;
		struct mrce_wc wc;
		rig_init(&r, key);
		memset(r.t.dst.p, 0, LEN);
		post_write(&r);
		CHECK(run(&r, 20000, &wc) == 0, "a WRITE completed with keys on one side only");
		struct mrce_seal_stats s1 = stats(&r, 1);
		struct mrce_stats es;
		mrce_stats(r.t.ch->node[1].e, &es);
		struct mrce_seal_stats s0 = stats(&r, 0);
		if (key == 1)
			CHECK(s1.rx_nokey > 0 && s1.rx_missing == 0, "nokey %llu",
			      (unsigned long long)s1.rx_nokey);
		else
			CHECK(s0.tx_nokey > 0 && r.data_pkts == 0 && s1.rx_missing == 0,
			      "tx_nokey %llu, %llu data packets sent",
			      (unsigned long long)s0.tx_nokey, (unsigned long long)r.data_pkts);
		CHECK(es.bytes_placed == 0, "%llu bytes placed", (unsigned long long)es.bytes_placed);
		rig_fini(&r);
	}
}

/* Fail closed: keys cleared at the sender while its QP lives (a key lost
 * to a bug, say): nothing of it goes out, in clear or otherwise, and the
 * drops are counted; keys set again (twice: replaces, no duplicate), the
 * resent WRITE lands, sealed. */
static void fail_closed(void **st)
{
	(void)st;
	NEED_AEAD();
	struct rig r;
	struct mrce_wc wc;
	rig_init(&r, 3);
	mrcd_enc_clear(r.x[0], r.t.qa);
	post_write(&r);
	CHECK(run(&r, 5000, &wc) == 0, "a WRITE completed without keys");
	struct mrce_seal_stats s0 = stats(&r, 0);
	CHECK(r.data_pkts == 0 && r.plain_leaks == 0, "%llu data packets sent without keys",
	      (unsigned long long)r.data_pkts);
	CHECK(s0.tx_nokey > 0 && s0.tx_nokey == r.tx_dropped, "tx_nokey %llu, dropped %llu",
	      (unsigned long long)s0.tx_nokey, (unsigned long long)r.tx_dropped);
	struct mrc_auth *a = test_key();
	key_node(&r, a, 0);
	key_node(&r, a, 0);   /* again: replaces, no duplicate */
	key_node(&r, a, 1);
	mrc_auth_free(a);
	expect_done(&r);
	CHECK(r.enc_pkts == r.data_pkts && r.data_pkts > 0 && r.untagged == 0,
	      "not sealed after set");
	rig_fini(&r);
}

/* Forgeries an on-path observer can build from what it saw (the audit's):
 * a zero-length WRITE_IMM with the observed token field, an ACK for
 * everything, a NOQP echoing the observed token field, a probe, and a
 * trimmed header with another PSN.  Each is dropped before the engine,
 * counted, and has no effect. */
static void forged_unsealed_dropped(void **st)
{
	(void)st;
	NEED_AEAD();
	struct rig r;
	sealed_write(&r, NULL, 0);
	assert_true(r.rec_data_len > MRC_DATA_HDR_LEN && r.rec_ack_len >= MRC_ACK_HDR_LEN);
	uint8_t h[MRC_DATA_HDR_LEN], a[MRC_ACK_HDR_LEN + MRCD_ENC_TRAILER];
	uint64_t tok;
	memcpy(&tok, r.rec_data + 48, 8);   /* the token field as seen on the wire */
	tok = be64toh(tok);
	struct mrce_wc wc;
	struct mrce_seal_stats b0 = stats(&r, 0), b1 = stats(&r, 1);

	/* (a) zero-length WRITE_IMM, imm 0xdeadbeef, next PSN. */
	uint32_t psn = (uint32_t)r.rec_data[8] << 24 | (uint32_t)r.rec_data[9] << 16 |
		       (uint32_t)r.rec_data[10] << 8 | r.rec_data[11];
	struct mrc_data_hdr d = { .op = MRC_OP_WRITE_IMM, .flags = MRC_F_FIRST | MRC_F_LAST,
		.dqpn = r.t.qb, .psn = psn + 1, .imm = 0xdeadbeef, .token = tok };
	mrce_wire_put_data(h, &d);
	CHECK(inject(&r, 0, h, sizeof(h)) < 0, "unsealed WRITE_IMM taken");
	/* The same with ENC and a made-up trailer. */
	uint8_t he[MRC_DATA_HDR_LEN + MRCD_ENC_TRAILER] = { 0 };
	d.flags |= MRC_F_ENC;
	mrce_wire_put_data(he, &d);
	uint64_t fresh = htobe64(1ull << 40);   /* a seq never used: the tag decides */
	memcpy(he + MRC_DATA_HDR_LEN, &fresh, 8);
	uint32_t c = htobe32(mrce_crc32c(0, he + MRC_DATA_HDR_LEN, 24));
	memcpy(he + MRC_DATA_HDR_LEN + 24, &c, 4);
	CHECK(inject(&r, 0, he, sizeof(he)) < 0, "WRITE_IMM with a made-up tag taken");
	CHECK(mrce_wc_drain(r.t.ch->node[1].e, &wc, 1) == 0, "forged imm %#x delivered", wc.imm);

	/* (b) an ACK of everything, observed token field, with and without
	 * the recorded trailer. */
	struct mrc_ack_hdr ak = { .dqpn = r.t.qa, .cum_psn = psn + 1000, .sack_base = psn + 1000 };
	memcpy(&ak.token, r.rec_ack + 32, 8);
	ak.token = be64toh(ak.token);
	mrce_wire_put_ack(a, &ak);
	CHECK(inject(&r, 1, a, MRC_ACK_HDR_LEN) < 0, "unsealed ACK taken");
	memcpy(a + MRC_ACK_HDR_LEN, r.rec_ack + MRC_ACK_HDR_LEN, MRCD_ENC_TRAILER);
	CHECK(inject(&r, 1, a, sizeof(a)) < 0, "ACK with a borrowed trailer taken");

	/* (c) NOQP echoing the observed token field, with no MAC and with a
	 * made-up one. */
	struct mrc_ack_hdr nq = { .dqpn = r.t.qb, .nack = MRC_NACK_NOQP, .token = tok };
	uint8_t n[MRC_ACK_HDR_LEN + MRC_AUTH_PAIR_TAG_BYTES] = { 0 };
	mrce_wire_put_ack(n, &nq);
	CHECK(inject(&r, 1, n, MRC_ACK_HDR_LEN) < 0, "unsealed NOQP taken");
	CHECK(inject(&r, 1, n, sizeof(n)) < 0, "NOQP with a made-up MAC taken");

	/* (d) a probe without its MAC. */
	struct mrc_probe_hdr pr = { .op = MRC_OP_PROBE, .seq = 1, .ts = 1 };
	uint8_t pb[MRC_PROBE_HDR_LEN];
	mrce_wire_put_probe(pb, &pr);
	CHECK(inject(&r, 1, pb, sizeof(pb)) < 0, "unsealed probe taken");

	/* (e) the recorded sealed header, trimmed, with another PSN. */
	memcpy(h, r.rec_data, MRC_DATA_HDR_LEN);
	h[11] ^= 1;
	h[3] |= MRC_F_TRIMMED;
	c = htobe32(mrce_crc32c(mrce_crc32c(0, (uint8_t[4]){ h[0], h[1], h[2],
		(uint8_t)(h[3] & ~MRC_F_TRIMMED) }, 4), h + 4, 60));
	memcpy(h + 64, &c, 4);
	CHECK(inject(&r, 0, h, sizeof(h)) < 0, "trimmed header with another PSN taken");

	struct mrce_seal_stats s0 = stats(&r, 0), s1 = stats(&r, 1);
	CHECK(s1.rx_missing - b1.rx_missing == 1 && s0.rx_missing - b0.rx_missing == 2,
	      "rx_missing moved %llu / %llu", (unsigned long long)(s0.rx_missing - b0.rx_missing),
	      (unsigned long long)(s1.rx_missing - b1.rx_missing));
	CHECK(s1.rx_bad_auth + s1.rx_bad_pcrc - b1.rx_bad_auth - b1.rx_bad_pcrc == 2 &&
	      s0.rx_bad_auth + s0.rx_replay - b0.rx_bad_auth - b0.rx_replay == 3,
	      "tag drops node0 %llu node1 %llu",
	      (unsigned long long)(s0.rx_bad_auth + s0.rx_replay - b0.rx_bad_auth - b0.rx_replay),
	      (unsigned long long)(s1.rx_bad_auth + s1.rx_bad_pcrc - b1.rx_bad_auth -
				   b1.rx_bad_pcrc));
	/* Nothing reached the engines: no drop there, the QP still works. */
	struct mrce_qp_info qi;
	assert_int_equal(mrce_qp_info(r.t.ch->node[0].e, r.t.qa, &qi), 0);
	CHECK(qi.state == MRCE_QPS_RTS, "QP state %d after forged packets", qi.state);
	memset(r.t.dst.p, 0, LEN);
	post_write(&r);
	expect_done(&r);
	rig_fini(&r);
}


/* ---- enc alone, packets built by hand -------------------------------- */

/* A connection between enc instances x0 (local qpn) and x1 (remote rqpn),
 * keyed with fresh nonces as the connection manager does. */
static void key_pair(struct mrc_auth *a, struct mrcd_enc *x0, struct mrcd_enc *x1,
		     uint32_t qpn, uint32_t rqpn, uint64_t *tok)
{
	struct mrc_auth_conn_id id = { .req_host = 0, .req_qpn = qpn, .rep_host = 1,
				       .rep_qpn = rqpn };
	for (size_t i = 0; i < sizeof(id.req_nonce); i++) {
		id.req_nonce[i] = (uint8_t)(rnd() | 1);
		id.rep_nonce[i] = (uint8_t)(rnd() | 1);
	}
	struct mrc_auth_conn c0, c1;
	const char *why = NULL;
	assert_int_equal(mrc_auth_conn_derive(a, &id, MRC_AUTH_REQUESTER, &c0), 0);
	assert_int_equal(mrc_auth_conn_derive(a, &id, MRC_AUTH_ACCEPTOR, &c1), 0);
	assert_int_equal(mrcd_enc_set(x0, qpn, 1, rqpn, &c0, &why), 0);
	assert_int_equal(mrcd_enc_set(x1, rqpn, 0, qpn, &c1, &why), 0);
	*tok = c0.tx_token;
	mrc_auth_conn_wipe(&c0);
	mrc_auth_conn_wipe(&c1);
}

/* Seals a WRITE of plen bytes (psn, from QP qpn to rqpn) on x0 into dg;
 * returns mrcd_enc_seal's result and the datagram's length in *len. */
static int seal_write(struct mrcd_enc *x0, uint32_t rqpn, uint32_t psn, uint64_t tok,
		      uint64_t ts, const uint8_t *pl, uint16_t plen, uint8_t *dg, size_t *len)
{
	struct mrce_tx_pkt pk = { .peer = 1, .hdr_len = MRC_DATA_HDR_LEN, .plen = plen,
				  .payload = pl };
	struct mrc_data_hdr d = { .op = MRC_OP_WRITE, .flags = MRC_F_FIRST | MRC_F_LAST,
		.dqpn = rqpn, .psn = psn, .plen = plen, .mlen = plen, .ts = ts, .token = tok };
	mrce_wire_put_data(pk.hdr, &d);
	mrce_wire_put_trailer(pk.trailer, pl, plen);
	struct iovec body;
	int rc = mrcd_enc_seal(x0, &pk, 0, &body);
	if (rc == 1) {
		memcpy(dg, pk.hdr, MRC_DATA_HDR_LEN);
		memcpy(dg + MRC_DATA_HDR_LEN, body.iov_base, body.iov_len);
		*len = MRC_DATA_HDR_LEN + body.iov_len;
	}
	return rc;
}

#define CHURN_SLOTS 24
#define CHURN_OPS   3000

/* Many QPs set up and torn down in random order (slot 0 and QP number 0
 * among them, slots reused by later QPs): after every step each live QP
 * seals with its own keys and the other side opens it with the token it
 * expects; each destroyed one seals nothing (fail closed). */
static void keys_survive_churn(void **st)
{
	(void)st;
	NEED_AEAD();
	struct mrcd_enc *x0, *x1;
	const char *why = NULL;
	assert_int_equal(mrcd_enc_create(&x0, &why), 0);
	assert_int_equal(mrcd_enc_create(&x1, &why), 0);
	struct mrc_auth *a = test_key();
	struct { uint32_t qpn, rqpn, gen; uint64_t tok; int live; } q[CHURN_SLOTS] = { { 0 } };
	struct { uint32_t rqpn, qpn; } dead[CHURN_SLOTS];
	uint32_t ndead = 0;
	static uint8_t dg[MRC_DATA_HDR_LEN + 64 + MRCD_ENC_TRAILER];
	uint8_t pl[64];
	uint64_t ts = 1;
	for (int op = 0; op < CHURN_OPS; op++) {
		uint32_t s = (uint32_t)(rnd() % CHURN_SLOTS);
		if (q[s].live) {
			/* Destroyed: either side first, as the daemons do. */
			if (rnd() & 1) {
				mrcd_enc_clear(x0, q[s].qpn);
				mrcd_enc_clear(x1, q[s].rqpn);
			} else {
				mrcd_enc_clear(x1, q[s].rqpn);
				mrcd_enc_clear(x0, q[s].qpn);
			}
			q[s].live = 0;
			dead[ndead % CHURN_SLOTS].rqpn = q[s].rqpn;
			dead[ndead % CHURN_SLOTS].qpn = q[s].qpn;
			ndead++;
		} else {
			/* QP number: generation << 16 | slot, as the engine
			 * numbers them; generation 0 of slot 0 is QP 0. */
			q[s].qpn = q[s].gen << 16 | s;
			q[s].rqpn = (q[s].gen << 16 | (s + 100)) ^ 0x40000000u;
			q[s].gen++;
			key_pair(a, x0, x1, q[s].qpn, q[s].rqpn, &q[s].tok);
			q[s].live = 1;
		}
		for (uint32_t i = 0; i < CHURN_SLOTS; i++) {
			if (!q[i].live)
				continue;
			size_t len = 0;
			for (size_t k = 0; k < sizeof(pl); k++)
				pl[k] = (uint8_t)rnd();
			int rc = seal_write(x0, q[i].rqpn, (uint32_t)op, q[i].tok, ts++, pl,
					    sizeof(pl), dg, &len);
			CHECK(rc == 1, "op %d: live QP %#x (slot %u) sealed nothing: %d", op,
			      q[i].qpn, i, rc);
			CHECK(mrcd_enc_open(x1, 0, dg, &len) == 0, "op %d: QP %#x's packet failed to open",
			      op, q[i].qpn);
			CHECK(len == MRC_DATA_HDR_LEN + sizeof(pl) + MRC_TRAILER_LEN &&
			      !memcmp(dg + MRC_DATA_HDR_LEN, pl, sizeof(pl)), "op %d: plaintext", op);
			uint64_t t;
			memcpy(&t, dg + 48, 8);
			CHECK(be64toh(t) == q[i].tok, "op %d: token not restored", op);
		}
		for (uint32_t i = 0; i < ndead && i < CHURN_SLOTS; i++) {
			int live = 0;
			for (uint32_t j = 0; j < CHURN_SLOTS; j++)
				live |= q[j].live && q[j].rqpn == dead[i].rqpn;
			if (live)
				continue;
			size_t len = 0;
			int rc = seal_write(x0, dead[i].rqpn, 1, 1, ts++, pl, sizeof(pl), dg, &len);
			CHECK(rc < 0, "op %d: destroyed QP %#x still seals (%d)", op, dead[i].qpn, rc);
		}
	}
	struct mrce_seal_stats s0, s1;
	mrcd_enc_get_stats(x0, &s0);
	mrcd_enc_get_stats(x1, &s1);
	CHECK(s0.tx_nokey > 0 && s1.rx_bad_auth == 0 && s1.rx_replay == 0,
	      "tx_nokey %llu bad_auth %llu", (unsigned long long)s0.tx_nokey,
	      (unsigned long long)s1.rx_bad_auth);
	mrc_auth_free(a);
	mrcd_enc_free(x0);
	mrcd_enc_free(x1);
}

/* A recorded sealed packet never opens twice: replayed at once, or after
 * the sender's PSN wrapped around to the same PSN (when the engine's PSN
 * window would take it again), it fails the seq window (rx_replay) while
 * the fresh packet with that PSN opens.  So does a recorded ACK. */
static void replay_after_wrap(void **st)
{
	(void)st;
	NEED_AEAD();
	struct mrcd_enc *x0, *x1;
	const char *why = NULL;
	assert_int_equal(mrcd_enc_create(&x0, &why), 0);
	assert_int_equal(mrcd_enc_create(&x1, &why), 0);
	struct mrc_auth *a = test_key();
	uint64_t tok;
	uint32_t qpn = 0x10003, rqpn = 0x20007;
	key_pair(a, x0, x1, qpn, rqpn, &tok);
	static uint8_t rec[MRC_DATA_HDR_LEN + 256 + MRCD_ENC_TRAILER], dg[sizeof(rec)], cp[sizeof(rec)];
	uint8_t pl[256];
	size_t rlen = 0, len = 0;
	memset(pl, 0x5a, sizeof(pl));
	uint32_t psn0 = 0xfffffff0u;
	assert_int_equal(seal_write(x0, rqpn, psn0, tok, 1, pl, sizeof(pl), rec, &rlen), 1);
	memcpy(cp, rec, rlen);
	len = rlen;
	assert_int_equal(mrcd_enc_open(x1, 0, cp, &len), 0);
	memcpy(cp, rec, rlen);
	len = rlen;
	CHECK(mrcd_enc_open(x1, 0, cp, &len) == -EALREADY, "immediate replay opened");
	/* The PSN space goes round (2^32 PSNs, fewer seals here: the seq
	 * counts seals, not PSNs, which is the point) back to psn0. */
	uint64_t seals = 0;
	for (uint32_t psn = psn0 + 0x01000000u; psn != psn0; psn += 0x01000000u, seals++) {
		assert_int_equal(seal_write(x0, rqpn, psn, tok, 2 + seals, pl, sizeof(pl), dg, &len), 1);
		assert_int_equal(mrcd_enc_open(x1, 0, dg, &len), 0);
	}
	assert_int_equal(seal_write(x0, rqpn, psn0, tok, 1000, pl, sizeof(pl), dg, &len), 1);
	memcpy(cp, rec, rlen);
	size_t l2 = rlen;
	CHECK(mrcd_enc_open(x1, 0, cp, &l2) == -EALREADY, "replay after the wrap opened");
	CHECK(mrcd_enc_open(x1, 0, dg, &len) == 0, "the fresh packet of the same PSN refused");
	/* Far behind the window: still refused. */
	for (int k = 0; k < MRC_AUTH_REPLAY_WINDOW + 10; k++) {
		assert_int_equal(seal_write(x0, rqpn, (uint32_t)k, tok, 2000 + (uint64_t)k, pl, 8,
					    dg, &len), 1);
		assert_int_equal(mrcd_enc_open(x1, 0, dg, &len), 0);
	}
	memcpy(cp, rec, rlen);
	l2 = rlen;
	CHECK(mrcd_enc_open(x1, 0, cp, &l2) == -EALREADY, "replay behind the window opened");
	/* An ACK, recorded and replayed. */
	struct mrce_tx_pkt pk = { .peer = 0, .hdr_len = MRC_ACK_HDR_LEN };
	struct mrc_ack_hdr ak = { .dqpn = qpn, .cum_psn = psn0, .sack_base = psn0, .token = 9 };
	mrce_wire_put_ack(pk.hdr, &ak);
	struct iovec body;
	assert_int_equal(mrcd_enc_seal(x1, &pk, 0, &body), 1);
	uint8_t ack[MRC_ACK_HDR_LEN + MRCD_ENC_TRAILER], ac[sizeof(ack)];
	memcpy(ack, pk.hdr, MRC_ACK_HDR_LEN);
	memcpy(ack + MRC_ACK_HDR_LEN, body.iov_base, body.iov_len);
	memcpy(ac, ack, sizeof(ack));
	len = sizeof(ac);
	CHECK(mrcd_enc_open(x0, 1, ac, &len) == 0 && len == MRC_ACK_HDR_LEN, "sealed ACK refused");
	memcpy(ac, ack, sizeof(ack));
	len = sizeof(ac);
	CHECK(mrcd_enc_open(x0, 1, ac, &len) == -EALREADY, "replayed ACK opened");
	struct mrce_seal_stats s0, s1;
	mrcd_enc_get_stats(x0, &s0);
	mrcd_enc_get_stats(x1, &s1);
	CHECK(s1.rx_replay == 3 && s0.rx_replay == 1, "rx_replay %llu / %llu",
	      (unsigned long long)s1.rx_replay, (unsigned long long)s0.rx_replay);
	mrc_auth_free(a);
	mrcd_enc_free(x0);
	mrcd_enc_free(x1);
}

/* NOQP works in the mode and only from the host, about packets the QP
 * sent: node 1's QP is destroyed (keys cleared as the daemon does); its
 * header reaches node 1's engine, which answers NOQP under the host-pair
 * MAC; node 0 fails the QP with -ECONNRESET.  A NOQP with the right MAC
 * but answering no packet the QP sent (a ts outside their range) is
 * refused (rx_stale). */
static void noqp_authenticated(void **st)
{
	(void)st;
	NEED_AEAD();
	struct rig r;
	sealed_write(&r, NULL, 0);
	/* A NOQP MACed by node 1's pair key, answering a ts never sent. */
	struct mrc_ack_hdr nq = { .dqpn = r.t.qb, .nack = MRC_NACK_NOQP, .ts_echo = r.now * 4 };
	uint8_t n[MRC_ACK_HDR_LEN + MRC_AUTH_PAIR_TAG_BYTES];
	mrce_wire_put_ack(n, &nq);
	struct mrce_tx_pkt pk = { .peer = r.t.ch->node[1].peer[0], .hdr_len = MRC_ACK_HDR_LEN };
	memcpy(pk.hdr, n, MRC_ACK_HDR_LEN);
	struct iovec body;
	assert_int_equal(mrcd_enc_seal(r.x[1], &pk, 0, &body), 1);
	memcpy(n + MRC_ACK_HDR_LEN, body.iov_base, MRC_AUTH_PAIR_TAG_BYTES);
	CHECK(inject(&r, 1, n, sizeof(n)) == -ESTALE, "NOQP for a ts never sent taken");
	CHECK(stats(&r, 0).rx_stale == 1, "rx_stale %llu", (unsigned long long)stats(&r, 0).rx_stale);
	/* Now node 1's QP really goes. */
	assert_int_equal(mrce_qp_close(r.t.ch->node[1].e, r.t.qb), 0);
	mrcd_enc_clear(r.x[1], r.t.qb);
	post_write(&r);
	struct mrce_wc wc;
	CHECK(run(&r, 200000, &wc) == 1, "no completion after the peer QP went");
	CHECK(wc.status == -ECONNRESET, "status %d, not -ECONNRESET", wc.status);
	CHECK(stats(&r, 1).rx_nokey > 0 && r.untagged == 0, "nokey %llu untagged %llu",
	      (unsigned long long)stats(&r, 1).rx_nokey, (unsigned long long)r.untagged);
	rig_fini(&r);
}

/* Probes carry the host pair's MAC over the whole packet (opaque bytes):
 * one opens at its receiver and comes out as the engine sent it; altered,
 * reflected back to its sender, or sent to a host whose pair key differs,
 * it fails (rx_bad_auth); a sender without the pair's key sends nothing. */
static void probe_mac(void **st)
{
	(void)st;
	NEED_AEAD();
	struct rig r;
	rig_init(&r, 3);
	struct mrce_tx_pkt pk = { .peer = r.t.ch->node[0].peer[1], .hdr_len = MRC_PROBE_HDR_LEN };
	struct mrc_probe_hdr pr = { .op = MRC_OP_PROBE, .seq = 7, .ev = 1, .ts = 12345,
				    .token = 0x1122334455667788ull };
	mrce_wire_put_probe(pk.hdr, &pr);
	uint8_t orig[MRC_PROBE_HDR_LEN], dg[MRC_PROBE_HDR_LEN + MRC_AUTH_PAIR_TAG_BYTES];
	uint8_t cp[sizeof(dg)];
	memcpy(orig, pk.hdr, sizeof(orig));
	struct iovec body;
	assert_int_equal(mrcd_enc_seal(r.x[0], &pk, 3, &body), 1);
	assert_int_equal(body.iov_len, MRC_AUTH_PAIR_TAG_BYTES);
	memcpy(dg, pk.hdr, MRC_PROBE_HDR_LEN);
	memcpy(dg + MRC_PROBE_HDR_LEN, body.iov_base, body.iov_len);
	size_t len = sizeof(dg);
	uint64_t bad = 0;
	memcpy(cp, dg, sizeof(dg));
	CHECK(mrcd_enc_open(r.x[1], r.t.ch->node[1].peer[0], cp, &len) == 0 &&
	      len == MRC_PROBE_HDR_LEN && !memcmp(cp, orig, len), "probe did not open intact");
	for (size_t i = 0; i < sizeof(dg); i++) {
		memcpy(cp, dg, sizeof(dg));
		cp[i] ^= (uint8_t)(1u << (rnd() % 8));
		len = sizeof(dg);
		int rc = mrcd_enc_open(r.x[1], r.t.ch->node[1].peer[0], cp, &len);
		/* Another version or an unknown opcode is no probe: it goes
		 * on to the engine, which drops it (bad_version, bad_opcode). */
		if (i < 2 && rc == 0) {
			CHECK(cp[1] != MRC_OP_ACK && !mrc_op_is_data(cp[1]) &&
			      mrce_rx(r.t.ch->node[1].e, r.now, r.t.ch->node[1].peer[0], cp, len,
				      0) < 0, "probe altered at byte %zu taken by the engine", i);
			continue;
		}
		CHECK(rc == -EACCES, "probe altered at byte %zu opened (%d)", i, rc);
		bad++;
	}
	/* Reflected: node 0 receives its own probe as if from node 1. */
	memcpy(cp, dg, sizeof(dg));
	len = sizeof(dg);
	CHECK(mrcd_enc_open(r.x[0], r.t.ch->node[0].peer[1], cp, &len) == -EACCES,
	      "reflected probe opened");
	CHECK(bad >= sizeof(dg) - 2 && stats(&r, 1).rx_bad_auth == bad &&
	      stats(&r, 0).rx_bad_auth == 1,
	      "bad_auth %llu / %llu", (unsigned long long)stats(&r, 1).rx_bad_auth,
	      (unsigned long long)stats(&r, 0).rx_bad_auth);
	/* No pair key for the peer: nothing sent. */
	mrcd_enc_clear_peer(r.x[0], r.t.ch->node[0].peer[1]);
	mrce_wire_put_probe(pk.hdr, &pr);
	CHECK(mrcd_enc_seal(r.x[0], &pk, 3, &body) == -ENOKEY && stats(&r, 0).tx_nokey == 1,
	      "probe sent without a pair key");
	rig_fini(&r);
}

/* A zero-length data packet is sealed too (so it is longer than its
 * header, and a switch may trim it): trimmed, it has lost nothing but its
 * GCM trailer, yet its header tag alone carries no seq, and taking it
 * would let a recorded one deliver its imm again after a PSN wrap.  It is
 * dropped and counted (rx_bad_len), never handed on; the sender's timer
 * resends it. */
static void trimmed_zero_length(void **st)
{
	(void)st;
	NEED_AEAD();
	struct mrcd_enc *x0, *x1;
	const char *why = NULL;
	assert_int_equal(mrcd_enc_create(&x0, &why), 0);
	assert_int_equal(mrcd_enc_create(&x1, &why), 0);
	struct mrc_auth *a = test_key();
	uint64_t tok;
	key_pair(a, x0, x1, 0x10005, 0x20009, &tok);
	uint8_t dg[MRC_DATA_HDR_LEN + MRCD_ENC_TRAILER];
	size_t len = 0;
	assert_int_equal(seal_write(x0, 0x20009, 77, tok, 5, NULL, 0, dg, &len), 1);
	CHECK(len == MRC_DATA_HDR_LEN + MRCD_ENC_TRAILER, "zero-length data unsealed (%zu)", len);
	len = mrce_wire_trim(dg, len);
	CHECK(len == MRC_DATA_HDR_LEN, "the trimmer left %zu bytes", len);
	CHECK(mrcd_enc_open(x1, 0, dg, &len) == -EBADMSG, "trimmed zero-length packet taken");
	struct mrce_seal_stats s1;
	mrcd_enc_get_stats(x1, &s1);
	CHECK(s1.rx_bad_len == 1 && s1.rx_trimmed == 0, "bad_len %llu trimmed %llu",
	      (unsigned long long)s1.rx_bad_len, (unsigned long long)s1.rx_trimmed);
	mrc_auth_free(a);
	mrcd_enc_free(x0);
	mrcd_enc_free(x1);
}

/* ---- the engine's framing calls the registered crypto ------------------ */

/* auth/'s callbacks, counted, with an injectable failure of open: the
 * engine's framing (transport/seal.c) must do every seal, tag, open and
 * MAC through the ops it was given, and act on what they return. */
static struct { int seal, open, htag, pair_mac, pair_verify, frees, fail_open; } g_ops;
static int c_seal(void *k, const uint8_t *ad, size_t adlen, uint8_t *b, size_t n, uint64_t *seq,
		  uint8_t tag[MRCE_SEAL_TAG])
{
	g_ops.seal++;
	return mrc_auth_seal_ops.seal(k, ad, adlen, b, n, seq, tag);
}
static int c_open(void *k, const uint8_t *ad, size_t adlen, uint8_t *b, size_t n, uint64_t seq,
		  const uint8_t tag[MRCE_SEAL_TAG])
{
	g_ops.open++;
	return g_ops.fail_open ? -EBADMSG : mrc_auth_seal_ops.open(k, ad, adlen, b, n, seq, tag);
}
static int c_htag(void *k, int verify, const uint8_t *m, size_t n, uint8_t tag[MRCE_SEAL_HTAG])
{
	g_ops.htag++;
	return mrc_auth_seal_ops.htag(k, verify, m, n, tag);
}
static int c_pair_mac(void *k, const uint8_t *m, size_t n, uint8_t tag[MRCE_SEAL_PTAG])
{
	g_ops.pair_mac++;
	return mrc_auth_seal_ops.pair_mac(k, m, n, tag);
}
static int c_pair_verify(void *k, const uint8_t *m, size_t n, const uint8_t tag[MRCE_SEAL_PTAG])
{
	g_ops.pair_verify++;
	return mrc_auth_seal_ops.pair_verify(k, m, n, tag);
}
static void c_free(void *k)
{
	g_ops.frees++;
	mrc_auth_seal_ops.keys_free(k);
}
static const struct mrce_crypto_ops counting_ops = { c_seal, c_open, c_htag, c_pair_mac,
						     c_pair_verify, c_free };

static void engine_calls_ops(void **st)
{
	(void)st;
	NEED_AEAD();
	memset(&g_ops, 0, sizeof(g_ops));
	struct mrce_seal *s0, *s1;
	assert_int_equal(mrce_seal_create(&counting_ops, &s0), 0);
	assert_int_equal(mrce_seal_create(&counting_ops, &s1), 0);
	struct mrc_auth *a = test_key();
	struct mrc_auth_conn_id id = { .req_host = 0, .req_qpn = 0x10001, .rep_host = 1,
				       .rep_qpn = 0x20002 };
	memset(id.req_nonce, 1, sizeof(id.req_nonce));
	memset(id.rep_nonce, 2, sizeof(id.rep_nonce));
	struct mrc_auth_conn c0, c1;
	const char *why = NULL;
	void *k0, *k1;
	assert_int_equal(mrc_auth_conn_derive(a, &id, MRC_AUTH_REQUESTER, &c0), 0);
	assert_int_equal(mrc_auth_conn_derive(a, &id, MRC_AUTH_ACCEPTOR, &c1), 0);
	assert_int_equal(mrc_auth_seal_conn(&c0, &k0, &why), 0);
	assert_int_equal(mrc_auth_seal_conn(&c1, &k1, &why), 0);
	assert_int_equal(mrce_seal_qp_set(s0, 0x10001, 1, 0x20002, c0.tx_token, c0.rx_token, k0), 0);
	assert_int_equal(mrce_seal_qp_set(s1, 0x20002, 0, 0x10001, c1.tx_token, c1.rx_token, k1), 0);

	/* A WRITE: sealed (one AEAD seal, one header tag), then opened. */
	uint8_t pl[100], dg[MRC_DATA_HDR_LEN + sizeof(pl) + MRCE_SEAL_TRAILER];
	memset(pl, 0x5a, sizeof(pl));
	struct mrce_tx_pkt pk = { .peer = 1, .hdr_len = MRC_DATA_HDR_LEN, .plen = sizeof(pl),
				  .payload = pl };
	struct mrc_data_hdr d = { .op = MRC_OP_WRITE, .flags = MRC_F_FIRST | MRC_F_LAST,
		.dqpn = 0x20002, .psn = 7, .plen = sizeof(pl), .mlen = sizeof(pl),
		.token = c0.tx_token };
	mrce_wire_put_data(pk.hdr, &d);
	struct iovec body;
	assert_int_equal(mrce_seal_tx(s0, &pk, 0, &body), 1);
	CHECK(g_ops.seal == 1 && g_ops.htag == 1, "seal: %d AEAD seals, %d header tags (want 1, 1)",
	      g_ops.seal, g_ops.htag);
	memcpy(dg, pk.hdr, MRC_DATA_HDR_LEN);
	memcpy(dg + MRC_DATA_HDR_LEN, body.iov_base, body.iov_len);
	uint8_t cp[sizeof(dg)];
	memcpy(cp, dg, sizeof(dg));
	size_t len = MRC_DATA_HDR_LEN + body.iov_len;
	assert_int_equal(mrce_seal_rx(s1, 0, dg, &len), 0);
	CHECK(g_ops.open == 1, "open called %d times (want 1)", g_ops.open);
	struct mrc_pkt_view v;
	enum mrce_wire_drop why2;
	CHECK(mrce_wire_decode(dg, len, &v, &why2) == 0 && v.u.data.token == c1.rx_token &&
	      !memcmp(v.payload, pl, sizeof(pl)), "opened packet is not the engine's WRITE");

	/* What open answers is what the framing does: a failure drops it. */
	struct mrce_seal_stats before, after;
	mrce_seal_get_stats(s1, &before);
	g_ops.fail_open = 1;
	len = MRC_DATA_HDR_LEN + body.iov_len;
	CHECK(mrce_seal_rx(s1, 0, cp, &len) == -EACCES, "a failing open let the packet through");
	mrce_seal_get_stats(s1, &after);
	CHECK(g_ops.open == 2 && after.rx_bad_auth == before.rx_bad_auth + 1,
	      "injected open failure: open %d calls, rx_bad_auth %llu -> %llu", g_ops.open,
	      (unsigned long long)before.rx_bad_auth, (unsigned long long)after.rx_bad_auth);

	/* Host-pair MAC of a probe goes through pair_mac / pair_verify. */
	uint8_t tx[MRC_AUTH_PAIR_KEY_BYTES], rx[MRC_AUTH_PAIR_KEY_BYTES];
	assert_int_equal(mrc_auth_pair_keys(a, 0, 1, tx, rx), 0);
	assert_int_equal(mrc_auth_seal_pair(tx, rx, &k0), 0);
	assert_int_equal(mrce_seal_peer_set(s0, 1, k0), 0);
	assert_int_equal(mrc_auth_pair_keys(a, 1, 0, tx, rx), 0);
	assert_int_equal(mrc_auth_seal_pair(tx, rx, &k1), 0);
	assert_int_equal(mrce_seal_peer_set(s1, 0, k1), 0);
	struct mrce_tx_pkt pp = { .peer = 1, .hdr_len = MRC_PROBE_HDR_LEN };
	struct mrc_probe_hdr ph = { .op = MRC_OP_PROBE, .seq = 3 };
	mrce_wire_put_probe(pp.hdr, &ph);
	assert_int_equal(mrce_seal_tx(s0, &pp, 1, &body), 1);
	uint8_t pdg[MRC_PROBE_HDR_LEN + MRCE_SEAL_PTAG];
	memcpy(pdg, pp.hdr, MRC_PROBE_HDR_LEN);
	memcpy(pdg + MRC_PROBE_HDR_LEN, body.iov_base, body.iov_len);
	len = sizeof(pdg);
	assert_int_equal(mrce_seal_rx(s1, 0, pdg, &len), 0);
	CHECK(g_ops.pair_mac == 1 && g_ops.pair_verify == 1 && len == MRC_PROBE_HDR_LEN,
	      "probe: pair_mac %d, pair_verify %d (want 1, 1)", g_ops.pair_mac, g_ops.pair_verify);

	/* Every context installed is handed back to keys_free. */
	mrce_seal_free(s0);
	mrce_seal_free(s1);
	CHECK(g_ops.frees == 4, "keys_free called %d times for 4 contexts", g_ops.frees);
	mrc_auth_conn_wipe(&c0);
	mrc_auth_conn_wipe(&c1);
	mrc_auth_free(a);
}

static void config_key(void **st)
{
	(void)st;
	struct mrcd_cfg c;
	char err[256];
	mrcd_cfg_default(&c);
	assert_string_equal(c.payload_encryption, "off");
	assert_int_equal(mrcd_cfg_set(&c, "payload_encryption", "aes-gcm", err, sizeof(err)), 0);
	assert_int_equal(mrcd_cfg_check(&c, err, sizeof(err)), 0);
	assert_int_equal(mrcd_cfg_set(&c, "payload_encryption", "chacha", err, sizeof(err)), 0);
	assert_int_equal(mrcd_cfg_check(&c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "payload_encryption"));
}

int main(void)
{
	seed_init("test_enc");
	const struct CMUnitTest t[] = {
		cmocka_unit_test_setup(write_sealed, reseed),
		cmocka_unit_test_setup(forged_dropped, reseed),
		cmocka_unit_test_setup(trimmed_recognised, reseed),
		cmocka_unit_test_setup(one_side_keyed, reseed),
		cmocka_unit_test_setup(fail_closed, reseed),
		cmocka_unit_test_setup(forged_unsealed_dropped, reseed),
		cmocka_unit_test_setup(keys_survive_churn, reseed),
		cmocka_unit_test_setup(replay_after_wrap, reseed),
		cmocka_unit_test_setup(noqp_authenticated, reseed),
		cmocka_unit_test_setup(probe_mac, reseed),
		cmocka_unit_test_setup(trimmed_zero_length, reseed),
		cmocka_unit_test_setup(engine_calls_ops, reseed),
		cmocka_unit_test(config_key),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
