/* The engine's framing calls the crypto ops it is given (auth/seal_ops.h)
 * and never its own, and mrcd's payload_encryption config key. */
#include "tests/support/enc_rig.h"

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
	seed_init("test_enc_ops");
	const struct CMUnitTest t[] = {
		cmocka_unit_test_setup(engine_calls_ops, reseed),
		cmocka_unit_test(config_key),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
