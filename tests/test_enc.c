/* The daemon's AEAD payload mode (daemon/core/enc.h) between two real
 * engines: packets leave one engine, are sealed as mrcd's flush does,
 * cross a hand-driven "wire" (where a test may forge, corrupt or trim
 * them), are opened as mrcd's receive path does and enter the other
 * engine.  Virtual time; every run is bounded. */
#include "tests/support/enc_rig.h"


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
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
