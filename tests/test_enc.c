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
#include <string.h>

#include "auth/auth.h"
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
	uint32_t n_tamper;         /* packets the wire hook still alters */
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
	assert_int_equal(mrcd_enc_set(r->x[n], qpn, r->t.ch->node[n].peer[1 - n], rqpn, &c,
				      &why), 0);
	mrc_auth_conn_wipe(&c);
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
	for (int n = 0; n < 2; n++)
		if (key & (1u << n))
			key_node(r, a, n);
	mrc_auth_free(a);
}

static void rig_fini(struct rig *r)
{
	mrcd_enc_free(r->x[0]);
	mrcd_enc_free(r->x[1]);
	etest_fini(&r->t);
}

/* One datagram as mrcd's flush builds it (sealed or not), through the
 * wire hook, opened as mrcd's receive path does, into the other engine. */
static void carry(struct rig *r, uint32_t n, struct mrce_tx_pkt *pk, unsigned slot)
{
	static uint8_t dg[MRC_DATA_HDR_LEN + MRC_MAX_PAYLOAD + MRCD_ENC_TRAILER];
	struct iovec body;
	size_t len = pk->hdr_len;
	int rc = mrcd_enc_seal(r->x[n], pk, slot, &body);
	assert_true(rc >= 0);
	if (rc == 1) {
		memcpy(dg, pk->hdr, pk->hdr_len);
		memcpy(dg + len, body.iov_base, body.iov_len);
		len += body.iov_len;
	} else {
		len = mrce_tx_pkt_copy(pk, dg);
	}
	if (mrc_op_is_data(dg[1]) && pk->plen) {
		r->data_pkts++;
		r->enc_pkts += !!(dg[3] & MRC_F_ENC);
		/* The payload as sent never shows the plaintext. */
		r->plain_leaks += rc == 1 && !memcmp(dg + MRC_DATA_HDR_LEN, pk->payload, pk->plen);
	}
	if (r->wire)
		r->wire(r, n, dg, &len);
	if (mrcd_enc_open(r->x[1 - n], dg, &len) == 0)
		mrce_rx(r->t.ch->node[1 - n].e, r->now, r->t.ch->node[1 - n].peer[n], dg, len, 0);
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
		if (mrce_poll_cq(r->t.ch->node[0].e, wc, 1) == 1)
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

static void expect_done(struct rig *r)
{
	struct mrce_wc wc;
	CHECK(run(r, 2000000, &wc) == 1, "no completion");
	CHECK(wc.status == 0, "completion status %d", wc.status);
	CHECK(!memcmp(r->t.src.p, r->t.dst.p, LEN), "target differs from source");
}

static struct mrcd_enc_stats stats(const struct rig *r, int n)
{
	struct mrcd_enc_stats s;
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
	struct mrcd_enc_stats s0 = stats(&r, 0), s1 = stats(&r, 1);
	CHECK(r.data_pkts >= LEN / 4096, "%llu data packets", (unsigned long long)r.data_pkts);
	CHECK(r.enc_pkts == r.data_pkts, "%llu of %llu data packets ENC",
	      (unsigned long long)r.enc_pkts, (unsigned long long)r.data_pkts);
	CHECK(r.plain_leaks == 0, "plaintext on the wire");
	CHECK(s0.tx_sealed == r.data_pkts && s1.rx_opened == s0.tx_sealed,
	      "sealed %llu opened %llu", (unsigned long long)s0.tx_sealed,
	      (unsigned long long)s1.rx_opened);
	CHECK(s1.rx_bad_auth + s1.rx_bad_pcrc + s1.rx_missing + s1.rx_nokey + s1.rx_bad_len == 0,
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
		uint32_t c = htobe32(mrc_crc32c(0, dg + MRC_DATA_HDR_LEN, plen + 24));
		memcpy(dg + *len - 4, &c, 4);
	}
}

static void forged_dropped(void **st)
{
	(void)st;
	NEED_AEAD();
	struct rig r;
	sealed_write(&r, forge_ciphertext, 6);
	struct mrcd_enc_stats s1 = stats(&r, 1);
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
		*len = mrc_wire_trim(dg, *len);
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
	struct mrcd_enc_stats s1 = stats(&r, 1);
	CHECK(s1.rx_trimmed == 2, "rx_trimmed %llu", (unsigned long long)s1.rx_trimmed);
	CHECK(qi.trims_rx == 2, "sender saw %llu trim NACKs", (unsigned long long)qi.trims_rx);
	rig_fini(&r);
}

/* Only one side keyed: plaintext into a QP that requires ENC is dropped
 * (rx_missing), and so is ENC into a QP without keys (rx_nokey); neither
 * reaches the engine, so nothing is placed. */
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
		struct mrcd_enc_stats s1 = stats(&r, 1);
		struct mrce_stats es;
		mrce_stats(r.t.ch->node[1].e, &es);
		if (key == 1)
			CHECK(s1.rx_nokey > 0 && s1.rx_missing == 0, "nokey %llu",
			      (unsigned long long)s1.rx_nokey);
		else
			CHECK(s1.rx_missing > 0 && s1.rx_nokey == 0, "missing %llu",
			      (unsigned long long)s1.rx_missing);
		CHECK(es.bytes_placed == 0, "%llu bytes placed", (unsigned long long)es.bytes_placed);
		rig_fini(&r);
	}
}

/* Cleared keys: the QP takes plaintext again; setting again replaces. */
static void clear_and_reset(void **st)
{
	(void)st;
	NEED_AEAD();
	struct rig r;
	rig_init(&r, 3);
	mrcd_enc_clear(r.x[0], r.t.qa);
	mrcd_enc_clear(r.x[1], r.t.qb);
	post_write(&r);
	expect_done(&r);
	CHECK(r.enc_pkts == 0, "ENC after clear");
	struct mrc_auth *a = test_key();
	key_node(&r, a, 0);
	key_node(&r, a, 0);   /* again: replaces, no duplicate */
	key_node(&r, a, 1);
	mrc_auth_free(a);
	r.data_pkts = 0;
	post_write(&r);
	expect_done(&r);
	CHECK(r.enc_pkts == r.data_pkts && r.data_pkts > 0, "not sealed after set");
	rig_fini(&r);
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
		cmocka_unit_test_setup(clear_and_reset, reseed),
		cmocka_unit_test(config_key),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
