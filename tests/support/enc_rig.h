/* The rig tests/test_enc*.c share: two real engines whose packets are
 * sealed and opened as mrcd does (daemon/core/enc.h) and cross a
 * hand-driven wire a test may forge, corrupt or trim.  Header-only, as
 * the other tests/support fixtures. */
#ifndef MRC_TESTS_SUPPORT_ENC_RIG_H
#define MRC_TESTS_SUPPORT_ENC_RIG_H

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

static inline struct mrc_auth *test_key(void)
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
static inline void key_node(struct rig *r, struct mrc_auth *a, int n)
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
static inline void pair_keys(struct rig *r, struct mrc_auth *a)
{
	for (int n = 0; n < 2; n++) {
		uint8_t tx[MRC_AUTH_PAIR_KEY_BYTES], rx[MRC_AUTH_PAIR_KEY_BYTES];
		assert_int_equal(mrc_auth_pair_keys(a, (uint32_t)n, (uint32_t)(1 - n), tx, rx), 0);
		assert_int_equal(mrcd_enc_set_peer(r->x[n], r->t.ch->node[n].peer[1 - n], tx, rx), 0);
	}
}

/* key: bit n set = node n's QP has AEAD keys. */
static inline void rig_init(struct rig *r, unsigned key)
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
static inline int is_sealed(const uint8_t *dg, size_t len)
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
static inline int inject(struct rig *r, uint32_t from, uint8_t *dg, size_t len)
{
	uint32_t to = 1 - from;
	int rc = mrcd_enc_open(r->x[to], r->t.ch->node[to].peer[from], dg, &len);
	if (rc == 0)
		mrce_rx(r->t.ch->node[to].e, r->now, r->t.ch->node[to].peer[from], dg, len, 0);
	return rc;
}

static inline void rig_fini(struct rig *r)
{
	mrcd_enc_free(r->x[0]);
	mrcd_enc_free(r->x[1]);
	etest_fini(&r->t);
}

/* One datagram as mrcd's flush builds it (sealed, or not sent at all),
 * through the wire hook, opened as mrcd's receive path does, into the
 * other engine. */
static inline void carry(struct rig *r, uint32_t n, struct mrce_tx_pkt *pk, unsigned slot)
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
static inline int run(struct rig *r, uint64_t steps, struct mrce_wc *wc)
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

static inline void post_write(struct rig *r)
{
	struct mrc_sqe wr = { .wr_id = 7, .op = MRC_SQE_WRITE, .lkey = r->t.lkey, .len = LEN,
			      .rkey = r->t.rkey };
	assert_int_equal(mrce_qp_post(r->t.ch->node[0].e, r->now, r->t.qa, &wr), 0);
}

static inline void dump(const struct rig *r)
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

static inline void expect_done(struct rig *r)
{
	struct mrce_wc wc;
	int got = run(r, 2000000, &wc);
	if (got != 1 || wc.status)
		dump(r);
	CHECK(got == 1, "no completion");
	CHECK(wc.status == 0, "completion status %d", wc.status);
	CHECK(!memcmp(r->t.src.p, r->t.dst.p, LEN), "target differs from source");
}

static inline struct mrce_seal_stats stats(const struct rig *r, int n)
{
	struct mrce_seal_stats s;
	mrcd_enc_get_stats(r->x[n], &s);
	return s;
}

static inline int need_aead(void)
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
static inline void sealed_write(struct rig *r, wire_fn w, uint32_t n)
{
	rig_init(r, 3);
	r->wire = w;
	r->n_tamper = n;
	post_write(r);
	expect_done(r);
}

#endif
