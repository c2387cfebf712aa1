/* Daemon CTRL messages (daemon/core/ctrl.h): the v2 body's layout and
 * field checks, and the sealed envelope as mrcd uses it: what a peer with
 * the key sends opens once, and a forger without the key, a replay, a
 * message for another host or from a host outside the table is refused
 * with the errno mrcd counts it under (docs/security.md). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "daemon/core/ctrl.h"

static struct mrc_auth *key(uint8_t seed)
{
	uint8_t k[MRC_AUTH_KEY_BYTES];
	for (int i = 0; i < MRC_AUTH_KEY_BYTES; i++)
		k[i] = (uint8_t)(seed + i);
	struct mrc_auth *a = NULL;
	assert_int_equal(mrc_auth_key_parse(k, sizeof(k), &a, NULL), 0);
	return a;
}

static struct mrcd_ctrl req(void)
{
	struct mrcd_ctrl m = { .type = MRCD_CTRL_REQ, .id = 0x0102030405060708ull, .sid = 77,
		.qpn = 0x10005, .psn = 0xabcdef, .arg = 9, .window = 64, .mtu = 1024 };
	for (int i = 0; i < MRC_AUTH_NONCE_BYTES; i++)
		m.nonce[i] = (uint8_t)(0xa0 + i);
	return m;
}

static void body_layout(void **state)
{
	(void)state;
	struct mrcd_ctrl m = req(), o;
	uint8_t b[MRCD_CTRL_BODY];
	mrcd_ctrl_encode(b, &m);
	assert_int_equal(b[0], MRCD_CTRL_REQ);
	assert_int_equal(b[7], 77);                      /* sid, big-endian at 4 */
	assert_int_equal(b[8], 0x01);                    /* id at 8 */
	assert_int_equal(b[32], 0xa0);                   /* nonce at 32 */
	assert_int_equal(b[51], 64);                     /* window at 48 */
	assert_int_equal(b[54], 0x04);                   /* mtu 1024 at 52 */
	assert_int_equal(mrcd_ctrl_decode(b, sizeof(b), &o), 0);
	assert_memory_equal(&o.nonce, &m.nonce, sizeof(m.nonce));
	assert_true(o.id == m.id && o.sid == m.sid && o.qpn == m.qpn && o.psn == m.psn &&
		    o.arg == m.arg && o.window == 64 && o.mtu == 1024);
	assert_int_equal(mrcd_ctrl_decode(b, sizeof(b) - 1, &o), -EBADMSG);
}

static void body_field_checks(void **state)
{
	(void)state;
	struct mrcd_ctrl m = req(), o;
	uint8_t b[MRCD_CTRL_BODY];
	struct { int off; uint8_t v; const char *what; } bad[] = {
		{ 0, 0, "type 0" }, { 0, 5, "type 5" }, { 2, 1, "reserved byte" },
		{ 24, 0x7f, "positive err" }, { 48, 0, "window 0" /* with byte 51 below */ },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		mrcd_ctrl_encode(b, &m);
		b[bad[i].off] = bad[i].v;
		if (bad[i].off == 48)
			b[51] = 0;
		assert_int_equal(mrcd_ctrl_decode(b, sizeof(b), &o), -EBADMSG);
	}
	m = req();
	memset(m.nonce, 0, sizeof(m.nonce));
	mrcd_ctrl_encode(b, &m);
	assert_int_equal(mrcd_ctrl_decode(b, sizeof(b), &o), -EBADMSG);   /* REQ without nonce */
	m = req();
	m.window = 48;
	mrcd_ctrl_encode(b, &m);
	assert_int_equal(mrcd_ctrl_decode(b, sizeof(b), &o), -EBADMSG);   /* not a power of 2 */
	m = req();
	m.mtu = 9001;
	mrcd_ctrl_encode(b, &m);
	assert_int_equal(mrcd_ctrl_decode(b, sizeof(b), &o), -EBADMSG);
	m = (struct mrcd_ctrl){ .type = MRCD_CTRL_PLANES, .arg = 3, .window = 4 };
	mrcd_ctrl_encode(b, &m);
	assert_int_equal(mrcd_ctrl_decode(b, sizeof(b), &o), -EBADMSG);   /* PLANES with a window */
	m.window = 0;
	mrcd_ctrl_encode(b, &m);
	assert_int_equal(mrcd_ctrl_decode(b, sizeof(b), &o), 0);
	assert_int_equal(o.arg, 3);
}

static void sealed(void **state)
{
	(void)state;
	struct mrc_auth *a = key(1), *other = key(2);
	struct mrc_auth_replay *rp;
	struct mrc_auth_replay_cfg rc = { .self_host = 1, .max_hosts = 3,
		.window_ns = 5000000000ull };
	assert_int_equal(mrc_auth_replay_create(&rc, &rp), 0);
	struct mrc_auth_ctrl_tx tx = { 0 }, ftx = { 0 };
	struct mrcd_ctrl m = req(), o;
	uint8_t pkt[MRCD_CTRL_LEN];
	uint32_t src = 99;
	uint64_t now = 1700000000000000000ull;

	/* A forger without the key: the MAC fails, nothing changes. */
	assert_int_equal(mrcd_ctrl_seal(other, &ftx, now, 0, 1, &m, pkt), 0);
	assert_int_equal(mrcd_ctrl_open(a, rp, now, pkt, sizeof(pkt), &src, &o), -EACCES);
	/* The genuine message opens once, then is a replay. */
	assert_int_equal(mrcd_ctrl_seal(a, &tx, now, 0, 1, &m, pkt), 0);
	assert_int_equal(mrcd_ctrl_open(a, rp, now, pkt, sizeof(pkt), &src, &o), 0);
	assert_int_equal(src, 0);
	assert_memory_equal(o.nonce, m.nonce, sizeof(m.nonce));
	assert_int_equal(o.qpn, m.qpn);
	assert_int_equal(mrcd_ctrl_open(a, rp, now, pkt, sizeof(pkt), &src, &o), -EALREADY);
	/* Any bit changed: the MAC fails. */
	assert_int_equal(mrcd_ctrl_seal(a, &tx, now, 0, 1, &m, pkt), 0);
	pkt[MRC_AUTH_CTRL_HDR + 16] ^= 1;                /* the body's qpn */
	assert_int_equal(mrcd_ctrl_open(a, rp, now, pkt, sizeof(pkt), &src, &o), -EACCES);
	/* For another host; from a host outside the table; truncated. */
	assert_int_equal(mrcd_ctrl_seal(a, &tx, now, 0, 2, &m, pkt), 0);
	assert_int_equal(mrcd_ctrl_open(a, rp, now, pkt, sizeof(pkt), &src, &o), -EXDEV);
	assert_int_equal(mrcd_ctrl_seal(a, &tx, now, 7, 1, &m, pkt), 0);
	assert_int_equal(mrcd_ctrl_open(a, rp, now, pkt, sizeof(pkt), &src, &o), -ERANGE);
	assert_int_equal(mrcd_ctrl_seal(a, &tx, now, 2, 1, &m, pkt), 0);
	assert_int_equal(mrcd_ctrl_open(a, rp, now, pkt, sizeof(pkt) - 1, &src, &o), -EBADMSG);
	/* A key holder's malformed body: refused after the MAC, as EBADMSG. */
	m.window = 3;
	assert_int_equal(mrcd_ctrl_seal(a, &tx, now, 2, 1, &m, pkt), 0);
	assert_int_equal(mrcd_ctrl_open(a, rp, now, pkt, sizeof(pkt), &src, &o), -EBADMSG);
	mrc_auth_replay_free(rp);
	mrc_auth_free(a);
	mrc_auth_free(other);
}

/* The optional endpoint block (verbs first contact): laid out after the
 * 56 bytes, every byte checked, absent from a message without it (what a
 * udp mrcd and an older one send), refused on REJ. */
static void endpoint_block(void **state)
{
	(void)state;
	struct mrcd_ctrl m = req(), o;
	uint8_t b[MRCD_CTRL_BODY_MAX];
	m.neps = 2;
	m.ep[0] = 0x12;
	m.ep[1] = 0xfffffe;
	size_t n = mrcd_ctrl_encode(b, &m);
	assert_int_equal(n, MRCD_CTRL_BODY + 4 + 8);
	assert_int_equal(b[56], 2);
	assert_int_equal(b[63], 0x12);                   /* ep[0], big-endian at 60 */
	assert_int_equal(mrcd_ctrl_decode(b, n, &o), 0);
	assert_int_equal(o.neps, 2);
	assert_int_equal(o.ep[0], 0x12);
	assert_int_equal(o.ep[1], 0xfffffe);
	/* Without it: the 56-byte message, neps 0. */
	m.neps = 0;
	assert_int_equal(mrcd_ctrl_encode(b, &m), MRCD_CTRL_BODY);
	assert_int_equal(mrcd_ctrl_decode(b, MRCD_CTRL_BODY, &o), 0);
	assert_int_equal(o.neps, 0);
	/* Each malformation alone is refused. */
	m.neps = 2;
	struct { int off; uint8_t v; size_t len; const char *what; } bad[] = {
		{ 56, 0, 68, "n = 0" },
		{ 56, 17, 68, "n > 16" },
		{ 56, 3, 68, "n says 3, length says 2" },
		{ 57, 1, 68, "reserved byte" },
		{ 59, 1, 68, "reserved byte" },
		{ 63, 1, 68, "ep 1 (GSI)" },
		{ 60, 1, 68, "ep >= 2^24" },
		{ 0, MRCD_CTRL_REQ, 67, "truncated" },
		{ 0, MRCD_CTRL_REQ, 59, "block shorter than its header" },
		{ 0, MRCD_CTRL_REJ, 68, "on a REJ" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		mrcd_ctrl_encode(b, &m);
		if (bad[i].off == 63)
			b[60] = b[61] = b[62] = 0;
		b[bad[i].off] = bad[i].v;
		if (bad[i].v == MRCD_CTRL_REJ)     /* a REJ carries no nonce/window/mtu */
			memset(b + 32, 0, 24);
		if (mrcd_ctrl_decode(b, bad[i].len, &o) != -EBADMSG) {
			print_error("accepted: %s\n", bad[i].what);
			fail();
		}
	}
	/* PLANES carries it too. */
	struct mrcd_ctrl pl = { .type = MRCD_CTRL_PLANES, .arg = 2, .neps = 1, .ep = { 77 } };
	n = mrcd_ctrl_encode(b, &pl);
	assert_int_equal(mrcd_ctrl_decode(b, n, &o), 0);
	assert_int_equal(o.ep[0], 77);
	/* Sealed: seal_len takes it, the fixed-size seal refuses it. */
	struct mrc_auth *a = key(3);
	struct mrc_auth_replay *rp;
	struct mrc_auth_replay_cfg rc = { .self_host = 1, .max_hosts = 3,
		.window_ns = 5000000000ull };
	assert_int_equal(mrc_auth_replay_create(&rc, &rp), 0);
	struct mrc_auth_ctrl_tx tx = { 0 };
	uint8_t pkt[MRCD_CTRL_LEN_MAX];
	size_t len = 0;
	uint32_t src;
	uint64_t now = 1700000000000000000ull;
	assert_int_equal(mrcd_ctrl_seal(a, &tx, now, 0, 1, &m, pkt), -EINVAL);
	assert_int_equal(mrcd_ctrl_seal_len(a, &tx, now, 0, 1, &m, pkt, &len), 0);
	assert_int_equal(len, MRC_AUTH_CTRL_OVERHEAD + 68);
	assert_int_equal(mrcd_ctrl_open(a, rp, now, pkt, len, &src, &o), 0);
	assert_int_equal(o.neps, 2);
	assert_int_equal(o.ep[1], 0xfffffe);
	mrc_auth_replay_free(rp);
	mrc_auth_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(endpoint_block),
		cmocka_unit_test(body_layout),
		cmocka_unit_test(body_field_checks),
		cmocka_unit_test(sealed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
