/* The daemon's AEAD payload mode (daemon/core/enc.h) alone: packets built
 * by hand and sealed/opened by mrcd_enc directly (key churn, replay across
 * PSN wrap, NOQP and probe MACs, trimmed headers); one case uses the rig
 * of tests/support/enc_rig.h. */
#include "tests/support/enc_rig.h"

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

/* Two enc instances (x0 sends, x1 receives) and the cluster key their
 * connections are derived from; pair_open keys QP qpn of x0 to rqpn of
 * x1 (tok: x0's token), unless qpn is UINT32_MAX.  pair_close frees them. */
struct pair {
	struct mrc_auth *a;
	struct mrcd_enc *x0, *x1;
	uint64_t tok;
};

static struct pair pair_open(uint32_t qpn, uint32_t rqpn)
{
	struct pair p = { 0 };
	const char *why = NULL;
	assert_int_equal(mrcd_enc_create(&p.x0, &why), 0);
	assert_int_equal(mrcd_enc_create(&p.x1, &why), 0);
	p.a = test_key();
	if (qpn != UINT32_MAX)
		key_pair(p.a, p.x0, p.x1, qpn, rqpn, &p.tok);
	return p;
}

static void pair_close(struct pair *p)
{
	mrc_auth_free(p->a);
	mrcd_enc_free(p->x0);
	mrcd_enc_free(p->x1);
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
	struct pair p = pair_open(UINT32_MAX, 0);
	struct mrcd_enc *x0 = p.x0, *x1 = p.x1;
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
			key_pair(p.a, x0, x1, q[s].qpn, q[s].rqpn, &q[s].tok);
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
	pair_close(&p);
}

/* A recorded sealed packet never opens twice: replayed at once, or after
 * the sender's PSN wrapped around to the same PSN (when the engine's PSN
 * window would take it again), it fails the seq window (rx_replay) while
 * the fresh packet with that PSN opens.  So does a recorded ACK. */
static void replay_after_wrap(void **st)
{
	(void)st;
	NEED_AEAD();
	uint32_t qpn = 0x10003, rqpn = 0x20007;
	struct pair p = pair_open(qpn, rqpn);
	static uint8_t rec[MRC_DATA_HDR_LEN + 256 + MRCD_ENC_TRAILER], dg[sizeof(rec)], cp[sizeof(rec)];
	uint8_t pl[256];
	size_t rlen = 0, len = 0;
	memset(pl, 0x5a, sizeof(pl));
	uint32_t psn0 = 0xfffffff0u;
	assert_int_equal(seal_write(p.x0, rqpn, psn0, p.tok, 1, pl, sizeof(pl), rec, &rlen), 1);
	memcpy(cp, rec, rlen);
	len = rlen;
	assert_int_equal(mrcd_enc_open(p.x1, 0, cp, &len), 0);
	memcpy(cp, rec, rlen);
	len = rlen;
	CHECK(mrcd_enc_open(p.x1, 0, cp, &len) == -EALREADY, "immediate replay opened");
	/* The PSN space goes round (2^32 PSNs, fewer seals here: the seq
	 * counts seals, not PSNs, which is the point) back to psn0. */
	uint64_t seals = 0;
	for (uint32_t psn = psn0 + 0x01000000u; psn != psn0; psn += 0x01000000u, seals++) {
		assert_int_equal(seal_write(p.x0, rqpn, psn, p.tok, 2 + seals, pl, sizeof(pl), dg, &len), 1);
		assert_int_equal(mrcd_enc_open(p.x1, 0, dg, &len), 0);
	}
	assert_int_equal(seal_write(p.x0, rqpn, psn0, p.tok, 1000, pl, sizeof(pl), dg, &len), 1);
	memcpy(cp, rec, rlen);
	size_t l2 = rlen;
	CHECK(mrcd_enc_open(p.x1, 0, cp, &l2) == -EALREADY, "replay after the wrap opened");
	CHECK(mrcd_enc_open(p.x1, 0, dg, &len) == 0, "the fresh packet of the same PSN refused");
	/* Far behind the window: still refused. */
	for (int k = 0; k < MRC_AUTH_REPLAY_WINDOW + 10; k++) {
		assert_int_equal(seal_write(p.x0, rqpn, (uint32_t)k, p.tok, 2000 + (uint64_t)k, pl, 8,
					    dg, &len), 1);
		assert_int_equal(mrcd_enc_open(p.x1, 0, dg, &len), 0);
	}
	memcpy(cp, rec, rlen);
	l2 = rlen;
	CHECK(mrcd_enc_open(p.x1, 0, cp, &l2) == -EALREADY, "replay behind the window opened");
	/* An ACK, recorded and replayed. */
	struct mrce_tx_pkt pk = { .peer = 0, .hdr_len = MRC_ACK_HDR_LEN };
	struct mrc_ack_hdr ak = { .dqpn = qpn, .cum_psn = psn0, .sack_base = psn0, .token = 9 };
	mrce_wire_put_ack(pk.hdr, &ak);
	struct iovec body;
	assert_int_equal(mrcd_enc_seal(p.x1, &pk, 0, &body), 1);
	uint8_t ack[MRC_ACK_HDR_LEN + MRCD_ENC_TRAILER], ac[sizeof(ack)];
	memcpy(ack, pk.hdr, MRC_ACK_HDR_LEN);
	memcpy(ack + MRC_ACK_HDR_LEN, body.iov_base, body.iov_len);
	memcpy(ac, ack, sizeof(ack));
	len = sizeof(ac);
	CHECK(mrcd_enc_open(p.x0, 1, ac, &len) == 0 && len == MRC_ACK_HDR_LEN, "sealed ACK refused");
	memcpy(ac, ack, sizeof(ack));
	len = sizeof(ac);
	CHECK(mrcd_enc_open(p.x0, 1, ac, &len) == -EALREADY, "replayed ACK opened");
	struct mrce_seal_stats s0, s1;
	mrcd_enc_get_stats(p.x0, &s0);
	mrcd_enc_get_stats(p.x1, &s1);
	CHECK(s1.rx_replay == 3 && s0.rx_replay == 1, "rx_replay %llu / %llu",
	      (unsigned long long)s1.rx_replay, (unsigned long long)s0.rx_replay);
	pair_close(&p);
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
	struct pair p = pair_open(0x10005, 0x20009);
	uint8_t dg[MRC_DATA_HDR_LEN + MRCD_ENC_TRAILER];
	size_t len = 0;
	assert_int_equal(seal_write(p.x0, 0x20009, 77, p.tok, 5, NULL, 0, dg, &len), 1);
	CHECK(len == MRC_DATA_HDR_LEN + MRCD_ENC_TRAILER, "zero-length data unsealed (%zu)", len);
	len = mrce_wire_trim(dg, len);
	CHECK(len == MRC_DATA_HDR_LEN, "the trimmer left %zu bytes", len);
	CHECK(mrcd_enc_open(p.x1, 0, dg, &len) == -EBADMSG, "trimmed zero-length packet taken");
	struct mrce_seal_stats s1;
	mrcd_enc_get_stats(p.x1, &s1);
	CHECK(s1.rx_bad_len == 1 && s1.rx_trimmed == 0, "bad_len %llu trimmed %llu",
	      (unsigned long long)s1.rx_bad_len, (unsigned long long)s1.rx_trimmed);
	pair_close(&p);
}

int main(void)
{
	seed_init("test_enc_pkt");
	const struct CMUnitTest t[] = {
		cmocka_unit_test_setup(keys_survive_churn, reseed),
		cmocka_unit_test_setup(replay_after_wrap, reseed),
		cmocka_unit_test_setup(noqp_authenticated, reseed),
		cmocka_unit_test_setup(probe_mac, reseed),
		cmocka_unit_test_setup(trimmed_zero_length, reseed),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
