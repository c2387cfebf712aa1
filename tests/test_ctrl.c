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

static struct mrce_ctrl req(void)
{
	struct mrce_ctrl m = { .type = MRCE_CTRL_REQ, .id = 0x0102030405060708ull, .sid = 77,
		.qpn = 0x10005, .psn = 0xabcdef, .arg = 9, .window = 64, .mtu = 1024 };
	for (int i = 0; i < MRC_AUTH_NONCE_BYTES; i++)
		m.nonce[i] = (uint8_t)(0xa0 + i);
	return m;
}

static void body_layout(void **state)
{
	(void)state;
	struct mrce_ctrl m = req(), o;
	uint8_t b[MRCE_CTRL_BODY];
	mrce_ctrl_encode(b, &m);
	assert_int_equal(b[0], MRCE_CTRL_REQ);
	assert_int_equal(b[7], 77);                      /* sid, big-endian at 4 */
	assert_int_equal(b[8], 0x01);                    /* id at 8 */
	assert_int_equal(b[32], 0xa0);                   /* nonce at 32 */
	assert_int_equal(b[51], 64);                     /* window at 48 */
	assert_int_equal(b[54], 0x04);                   /* mtu 1024 at 52 */
	assert_int_equal(mrce_ctrl_decode(b, sizeof(b), &o), 0);
	assert_memory_equal(&o.nonce, &m.nonce, sizeof(m.nonce));
	assert_true(o.id == m.id && o.sid == m.sid && o.qpn == m.qpn && o.psn == m.psn &&
		    o.arg == m.arg && o.window == 64 && o.mtu == 1024);
	assert_int_equal(mrce_ctrl_decode(b, sizeof(b) - 1, &o), -EBADMSG);
}

static void body_field_checks(void **state)
{
	(void)state;
	struct mrce_ctrl m = req(), o;
	uint8_t b[MRCE_CTRL_BODY];
	struct { int off; uint8_t v; const char *what; } bad[] = {
		{ 0, 0, "type 0" }, { 0, 5, "type 5" }, { 2, 1, "reserved byte" },
		{ 24, 0x7f, "positive err" }, { 48, 0, "window 0" /* with byte 51 below */ },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		mrce_ctrl_encode(b, &m);
		b[bad[i].off] = bad[i].v;
		if (bad[i].off == 48)
			b[51] = 0;
		assert_int_equal(mrce_ctrl_decode(b, sizeof(b), &o), -EBADMSG);
	}
	m = req();
	memset(m.nonce, 0, sizeof(m.nonce));
	mrce_ctrl_encode(b, &m);
	assert_int_equal(mrce_ctrl_decode(b, sizeof(b), &o), -EBADMSG);   /* REQ without nonce */
	m = req();
	m.window = 48;
	mrce_ctrl_encode(b, &m);
	assert_int_equal(mrce_ctrl_decode(b, sizeof(b), &o), -EBADMSG);   /* not a power of 2 */
	m = req();
	m.mtu = 9001;
	mrce_ctrl_encode(b, &m);
	assert_int_equal(mrce_ctrl_decode(b, sizeof(b), &o), -EBADMSG);
	m = (struct mrce_ctrl){ .type = MRCE_CTRL_PLANES, .arg = 3, .window = 4 };
	mrce_ctrl_encode(b, &m);
	assert_int_equal(mrce_ctrl_decode(b, sizeof(b), &o), -EBADMSG);   /* PLANES with a window */
	m.window = 0;
	mrce_ctrl_encode(b, &m);
	assert_int_equal(mrce_ctrl_decode(b, sizeof(b), &o), 0);
	assert_int_equal(o.arg, 3);
}

/* One daemon's CTRL state, as mrcd_auth_init makes it: its boot epoch
 * (tx), and the replay table that holds its sessions and the cookies
 * its peers issued it.  restart() is what a new mrcd process starts with. */
struct host {
	uint32_t id;
	struct mrc_auth_ctrl_tx tx;
	struct mrc_auth_replay *rp;
};
#define SKEW MRC_AUTH_CTRL_SKEW_NS

static void restart(struct host *h)
{
	mrc_auth_replay_free(h->rp);
	assert_int_equal(mrc_auth_ctrl_tx_init(&h->tx), 0);
	struct mrc_auth_replay_cfg rc = { .self_host = h->id, .max_hosts = 3,
		.window_ns = 5000000000ull, .max_skew_ns = SKEW, .epoch = h->tx.epoch };
	assert_int_equal(mrc_auth_replay_create(&rc, &h->rp), 0);
}

/* from seals m for to at its clock now; to opens it at its clock tnow.
 * Returns open's result (cm.c's mrcd_cm_rx); on -ENOTCONN, as mrcd does,
 * `to` challenges and `from` takes the cookie (when answer). */
static int deliver(const struct mrc_auth *a, struct host *from, struct host *to,
		   uint64_t now, uint64_t tnow, const uint8_t *pkt, size_t len,
		   struct mrce_ctrl *o, int answer)
{
	struct mrc_auth_ctrl_msg env;
	int rc = mrcd_ctrl_open(a, to->rp, tnow, from->id, pkt, len, &env, o);
	if (rc == -ENOTCONN && answer) {
		uint8_t ch[MRC_AUTH_CTRL_OVERHEAD + 8];
		size_t clen;
		struct mrce_ctrl x;
		assert_int_equal(mrc_auth_ctrl_challenge(a, &to->tx, to->rp, tnow, to->id, from->id,
							 env.src_epoch, ch, sizeof ch, &clen), 0);
		assert_int_equal(mrcd_ctrl_open(a, from->rp, now, to->id, ch, clen, &env, &x), 0);
		assert_true(env.challenge);
	}
	return rc;
}

static void seal_m(const struct mrc_auth *a, struct host *from, const struct host *to,
		   uint64_t now, const struct mrce_ctrl *m, uint8_t pkt[MRCD_CTRL_LEN])
{
	assert_int_equal(mrcd_ctrl_seal(a, &from->tx, from->rp, now, from->id, to->id, m, pkt), 0);
}

/* Sends m from `from` to `to` as mrcd does: challenged at first, then
 * sent again under the cookie; returns the final open's result. */
static int send_m(const struct mrc_auth *a, struct host *from, struct host *to, uint64_t now,
		  uint64_t tnow, const struct mrce_ctrl *m, uint8_t pkt[MRCD_CTRL_LEN],
		  struct mrce_ctrl *o)
{
	seal_m(a, from, to, now, m, pkt);
	int rc = deliver(a, from, to, now, tnow, pkt, MRCD_CTRL_LEN, o, 1);
	if (rc != -ENOTCONN)
		return rc;
	seal_m(a, from, to, now, m, pkt);
	return deliver(a, from, to, now, tnow, pkt, MRCD_CTRL_LEN, o, 0);
}

static void sealed(void **state)
{
	(void)state;
	struct mrc_auth *a = key(1), *other = key(2);
	struct host h0 = { .id = 0 }, h1 = { .id = 1 }, h2 = { .id = 2 }, h7 = { .id = 7 };
	restart(&h0);
	restart(&h1);
	restart(&h2);
	h7.tx = h0.tx;
	struct mrc_auth_ctrl_tx ftx;
	assert_int_equal(mrc_auth_ctrl_tx_init(&ftx), 0);
	struct mrce_ctrl m = req(), o;
	uint8_t pkt[MRCD_CTRL_LEN];
	struct mrc_auth_ctrl_msg env;
	uint64_t now = 1700000000000000000ull;

	/* A forger without the key: the MAC fails, nothing changes. */
	assert_int_equal(mrcd_ctrl_seal(other, &ftx, NULL, now, 0, 1, &m, pkt), 0);
	assert_int_equal(mrcd_ctrl_open(a, h1.rp, now, 0, pkt, sizeof(pkt), &env, &o), -EACCES);
	/* Without the receiver's cookie: not acted on (challenged); with it,
	 * the genuine message opens once, then is a replay. */
	assert_int_equal(send_m(a, &h0, &h1, now, now, &m, pkt, &o), 0);
	assert_memory_equal(o.nonce, m.nonce, sizeof(m.nonce));
	assert_int_equal(o.qpn, m.qpn);
	assert_int_equal(mrcd_ctrl_open(a, h1.rp, now, 0, pkt, sizeof(pkt), &env, &o), -EALREADY);
	/* Any bit changed: the MAC fails. */
	seal_m(a, &h0, &h1, now, &m, pkt);
	pkt[MRC_AUTH_CTRL_HDR + 16] ^= 1;                /* the body's qpn */
	assert_int_equal(mrcd_ctrl_open(a, h1.rp, now, 0, pkt, sizeof(pkt), &env, &o), -EACCES);
	/* For another host; from a host outside the table; truncated. */
	seal_m(a, &h0, &h2, now, &m, pkt);
	assert_int_equal(mrcd_ctrl_open(a, h1.rp, now, 0, pkt, sizeof(pkt), &env, &o), -EXDEV);
	seal_m(a, &h7, &h1, now, &m, pkt);
	assert_int_equal(mrcd_ctrl_open(a, h1.rp, now, 7, pkt, sizeof(pkt), &env, &o), -ERANGE);
	seal_m(a, &h2, &h1, now, &m, pkt);
	assert_int_equal(mrcd_ctrl_open(a, h1.rp, now, 2, pkt, sizeof(pkt) - 1, &env, &o), -EBADMSG);
	/* A key holder's malformed body: refused after the MAC, as EBADMSG. */
	m.window = 3;
	assert_int_equal(send_m(a, &h2, &h1, now, now, &m, pkt, &o), -EBADMSG);
	mrc_auth_replay_free(h0.rp);
	mrc_auth_replay_free(h1.rp);
	mrc_auth_replay_free(h2.rp);
	mrc_auth_free(a);
	mrc_auth_free(other);
}

/* Audit finding A: a REQ recorded earlier, replayed into a restarted
 * receiver (well within the clock skew), is not acted on: it carries the
 * cookie of the receiver's previous run.  The genuine sender, challenged
 * like the replay, gets through under the new cookie, and the recording
 * stays refused after that. */
/* The envelope has one codec, the engine's (mrce_ctrl_env_put/get): what
 * auth/ seals is laid out by it field for field, and every malformed
 * header is refused by it before any MAC is computed (auth's open then
 * says -EBADMSG). */
static void envelope_codec(void **state)
{
	(void)state;
	struct mrc_auth *a = key(1);
	struct host h0 = { .id = 0 }, h1 = { .id = 1 };
	restart(&h0);
	restart(&h1);
	struct mrce_ctrl m = req();
	uint8_t pkt[MRCD_CTRL_LEN];
	const uint64_t now = 1000000000000ull;
	seal_m(a, &h0, &h1, now, &m, pkt);
	struct mrce_ctrl_env e;
	assert_int_equal(mrce_ctrl_env_get(pkt, sizeof pkt, &e), 0);
	assert_int_equal(e.flags, 0);
	assert_int_equal(e.src_host, 0);
	assert_int_equal(e.dst_host, 1);
	assert_int_equal(e.blen, MRCE_CTRL_BODY);
	assert_true(e.stamp == now && e.src_epoch == h0.tx.epoch && e.dst_tag == 0);
	uint8_t hdr[MRCE_CTRL_ENV_HDR];
	mrce_ctrl_env_put(hdr, &e);
	assert_memory_equal(hdr, pkt, sizeof hdr);
	assert_true(mrce_is_ctrl(pkt, sizeof pkt));
	struct mrce_ctrl b;
	assert_int_equal(mrce_ctrl_decode(pkt + MRCE_CTRL_ENV_HDR, e.blen, &b), 0);
	assert_int_equal(b.qpn, m.qpn);

	/* Each byte of the header that must hold a fixed value: version,
	 * opcode, flags beyond CHALLENGE, reserved; then blen against len. */
	static const struct { size_t at; uint8_t x; } bad[] = {
		{ 0, 0xff }, { 1, 0xff }, { 2, 0x01 }, { 3, 0x02 }, { 14, 0x01 }, { 15, 0x80 },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		uint8_t c[MRCD_CTRL_LEN];
		memcpy(c, pkt, sizeof c);
		c[bad[i].at] ^= bad[i].x;
		assert_int_equal(mrce_ctrl_env_get(c, sizeof c, &e), -EBADMSG);
		struct mrc_auth_ctrl_msg env;
		assert_int_equal(mrc_auth_ctrl_open(a, h1.rp, now, 0, c, sizeof c, &env), -EBADMSG);
	}
	uint8_t c[MRCD_CTRL_LEN + 1];
	memcpy(c, pkt, MRCD_CTRL_LEN);
	c[MRCD_CTRL_LEN] = 0;
	assert_int_equal(mrce_ctrl_env_get(c, MRCD_CTRL_LEN + 1, &e), -EBADMSG);
	assert_int_equal(mrce_ctrl_env_get(pkt, MRCD_CTRL_LEN - 1, &e), -EBADMSG);
	assert_int_equal(mrce_ctrl_env_get(pkt, MRCE_CTRL_ENV_HDR, &e), -EBADMSG);
	c[12] = (uint8_t)((MRCE_CTRL_ENV_MAX_BODY + 1) >> 8);
	c[13] = (uint8_t)(MRCE_CTRL_ENV_MAX_BODY + 1);
	assert_int_equal(mrce_ctrl_env_get(c, MRCE_CTRL_ENV_HDR + MRCE_CTRL_ENV_MAX_BODY + 1 +
					   MRCE_CTRL_ENV_MAC, &e), -EBADMSG);
	/* The original still opens: nothing above touched receiver state. */
	struct mrc_auth_ctrl_msg env;
	assert_int_equal(mrc_auth_ctrl_open(a, h1.rp, now, 0, pkt, sizeof pkt, &env),
			 -ENOTCONN);
	mrc_auth_replay_free(h0.rp);
	mrc_auth_replay_free(h1.rp);
	mrc_auth_free(a);
}

static void replay_into_restarted_receiver(void **state)
{
	(void)state;
	struct mrc_auth *a = key(4);
	struct host h0 = { .id = 0 }, h1 = { .id = 1 };
	restart(&h0);
	restart(&h1);
	struct mrce_ctrl m = req(), o;
	uint8_t rec[MRCD_CTRL_LEN], pkt[MRCD_CTRL_LEN];
	uint64_t now = 1700000000000000000ull;
	assert_int_equal(send_m(a, &h0, &h1, now, now, &m, rec, &o), 0);
	restart(&h1);                                    /* mrcd restarted on host 1 */
	now += 1000000000ull;                            /* 1 s later: inside the skew */
	assert_int_equal(deliver(a, &h0, &h1, now, now, rec, sizeof rec, &o, 0), -ENOTCONN);
	m.id++;
	assert_int_equal(send_m(a, &h0, &h1, now, now, &m, pkt, &o), 0);
	assert_int_equal(o.id, m.id);
	assert_int_equal(deliver(a, &h0, &h1, now, now, rec, sizeof rec, &o, 0), -ENOTCONN);
	/* The replay's challenge goes to the epoch it named (host 0's, still
	 * current): harmless, host 0 keeps sending under the same session. */
	assert_int_equal(deliver(a, &h0, &h1, now, now, rec, sizeof rec, &o, 1), -ENOTCONN);
	m.id++;
	assert_int_equal(send_m(a, &h0, &h1, now, now, &m, pkt, &o), 0);
	mrc_auth_replay_free(h0.rp);
	mrc_auth_replay_free(h1.rp);
	mrc_auth_free(a);
}

/* Audit finding A, the converse: a sender restarted with its clock
 * stepped back (here by 10 s, inside the skew) is let in at once (one
 * challenge), not refused until its clock passes its old stamps; what it
 * sealed before the restart stays refused. */
static void sender_clock_stepped_back(void **state)
{
	(void)state;
	struct mrc_auth *a = key(5);
	struct host h0 = { .id = 0 }, h1 = { .id = 1 };
	restart(&h0);
	restart(&h1);
	struct mrce_ctrl m = { .type = MRCE_CTRL_PLANES, .arg = 1 }, o;
	uint8_t old[MRCD_CTRL_LEN], pkt[MRCD_CTRL_LEN];
	uint64_t now = 1700000000000000000ull;
	assert_int_equal(send_m(a, &h0, &h1, now, now, &m, old, &o), 0);
	restart(&h0);
	uint64_t back = now - 10000000000ull;
	m.arg = 2;
	assert_int_equal(send_m(a, &h0, &h1, back, now, &m, pkt, &o), 0);
	assert_int_equal(o.arg, 2);
	m.arg = 3;                                       /* and the next one */
	seal_m(a, &h0, &h1, back + 1000, &m, pkt);
	assert_int_equal(deliver(a, &h0, &h1, back + 1000, now, pkt, sizeof pkt, &o, 0), 0);
	/* The old run's message: a session that is gone. */
	assert_int_equal(deliver(a, &h0, &h1, back, now, old, sizeof old, &o, 0), -ENOTCONN);
	mrc_auth_replay_free(h0.rp);
	mrc_auth_replay_free(h1.rp);
	mrc_auth_free(a);
}

/* The clock bound: a stamp further than max_skew_ns from the receiver's
 * clock, either way, is -ESTALE before any session state is read or
 * changed; a replay table without a bound or an epoch is refused. */
static void clock_skew_bounded(void **state)
{
	(void)state;
	struct mrc_auth *a = key(6);
	struct host h0 = { .id = 0 }, h1 = { .id = 1 };
	restart(&h0);
	restart(&h1);
	struct mrce_ctrl m = { .type = MRCE_CTRL_PLANES }, o;
	uint8_t pkt[MRCD_CTRL_LEN];
	uint64_t now = 1700000000000000000ull;
	assert_int_equal(send_m(a, &h0, &h1, now, now, &m, pkt, &o), 0);
	/* Recorded now, replayed after the skew: stale, not a replay. */
	seal_m(a, &h0, &h1, now + 1, &m, pkt);
	assert_int_equal(deliver(a, &h0, &h1, now, now + SKEW + 100, pkt, sizeof pkt, &o, 0), -ESTALE);
	/* A sender ahead by more than the skew, and behind. */
	seal_m(a, &h0, &h1, now + SKEW + 10, &m, pkt);
	assert_int_equal(deliver(a, &h0, &h1, now, now, pkt, sizeof pkt, &o, 0), -ESTALE);
	struct host h2 = { .id = 2 };
	restart(&h2);
	assert_int_equal(send_m(a, &h2, &h1, now - SKEW - 10, now, &m, pkt, &o), -ESTALE);
	/* Within it: fine. */
	seal_m(a, &h0, &h1, now + SKEW + 20, &m, pkt);
	assert_int_equal(deliver(a, &h0, &h1, now, now + 30, pkt, sizeof pkt, &o, 0), 0);
	struct mrc_auth_replay *rp;
	struct mrc_auth_replay_cfg rc = { .self_host = 1, .max_hosts = 3, .window_ns = 1,
		.max_skew_ns = 0, .epoch = 5 };
	assert_int_equal(mrc_auth_replay_create(&rc, &rp), -EINVAL);
	rc.max_skew_ns = SKEW;
	rc.epoch = 0;
	assert_int_equal(mrc_auth_replay_create(&rc, &rp), -EINVAL);
	mrc_auth_replay_free(h0.rp);
	mrc_auth_replay_free(h1.rp);
	mrc_auth_replay_free(h2.rp);
	mrc_auth_free(a);
}

/* Audit finding C: a key holder's copy of a genuine message, sent from
 * another host's address first, burns nothing: refused as -ERANGE
 * before the replay state moves, and the genuine one still opens. */
static void sender_checked_before_replay_state(void **state)
{
	(void)state;
	struct mrc_auth *a = key(7);
	struct host h0 = { .id = 0 }, h1 = { .id = 1 };
	restart(&h0);
	restart(&h1);
	struct mrce_ctrl m = req(), o;
	struct mrc_auth_ctrl_msg env;
	uint8_t pkt[MRCD_CTRL_LEN];
	uint64_t now = 1700000000000000000ull;
	assert_int_equal(send_m(a, &h0, &h1, now, now, &m, pkt, &o), 0);
	m.id++;
	seal_m(a, &h0, &h1, now, &m, pkt);
	assert_int_equal(mrcd_ctrl_open(a, h1.rp, now, 2, pkt, sizeof pkt, &env, &o), -ERANGE);
	assert_int_equal(mrcd_ctrl_open(a, h1.rp, now, 0, pkt, sizeof pkt, &env, &o), 0);
	assert_int_equal(o.id, m.id);
	mrc_auth_replay_free(h0.rp);
	mrc_auth_replay_free(h1.rp);
	mrc_auth_free(a);
}

/* A CHALLENGE is taken only by the boot it names: one recorded for an
 * earlier run of host 0 changes nothing of the new one's; a sender's old
 * run, replayed, cannot displace its new session. */
static void challenges_bound_to_epoch(void **state)
{
	(void)state;
	struct mrc_auth *a = key(8);
	struct host h0 = { .id = 0 }, h1 = { .id = 1 };
	restart(&h0);
	restart(&h1);
	struct mrce_ctrl m = { .type = MRCE_CTRL_PLANES }, o;
	struct mrc_auth_ctrl_msg env;
	uint8_t pkt[MRCD_CTRL_LEN], old[MRCD_CTRL_LEN];
	uint8_t ch[MRC_AUTH_CTRL_OVERHEAD + 8];
	size_t clen;
	uint64_t now = 1700000000000000000ull;
	/* A challenge for host 0's first run, recorded. */
	seal_m(a, &h0, &h1, now, &m, old);
	assert_int_equal(mrcd_ctrl_open(a, h1.rp, now, 0, old, sizeof old, &env, &o), -ENOTCONN);
	assert_int_equal(mrc_auth_ctrl_challenge(a, &h1.tx, h1.rp, now, 1, 0, env.src_epoch, ch,
						 sizeof ch, &clen), 0);
	assert_int_equal(mrcd_ctrl_open(a, h0.rp, now, 1, ch, clen, &env, &o), 0);
	seal_m(a, &h0, &h1, now, &m, old);               /* the old run's, under its cookie */
	assert_int_equal(deliver(a, &h0, &h1, now, now, old, sizeof old, &o, 0), 0);
	restart(&h0);
	assert_int_equal(mrcd_ctrl_open(a, h0.rp, now, 1, ch, clen, &env, &o), -ESTALE);
	assert_int_equal(send_m(a, &h0, &h1, now, now, &m, pkt, &o), 0);
	/* The old run's message replayed: challenged (to the old epoch, which
	 * nobody answers), and the new session goes on. */
	assert_int_equal(deliver(a, &h0, &h1, now, now, old, sizeof old, &o, 0), -ENOTCONN);
	seal_m(a, &h0, &h1, now, &m, pkt);
	assert_int_equal(deliver(a, &h0, &h1, now, now, pkt, sizeof pkt, &o, 0), 0);
	mrc_auth_replay_free(h0.rp);
	mrc_auth_replay_free(h1.rp);
	mrc_auth_free(a);
}

/* Probe tokens bound to both boot epochs: one side's tx is the other's
 * rx, and a new epoch on either side gives new tokens (a recorded probe
 * reply fails the token check after a restart). */
static void probe_tokens_per_epoch(void **state)
{
	(void)state;
	struct mrc_auth *a = key(9);
	uint64_t t01, r01, t10, r10, t2, r2, t3, r3;
	assert_int_equal(mrc_auth_probe_tokens_epoch(a, 0, 1, 11, 22, &t01, &r01), 0);
	assert_int_equal(mrc_auth_probe_tokens_epoch(a, 1, 0, 22, 11, &t10, &r10), 0);
	assert_true(t01 && r01 && t01 != r01);
	assert_true(t01 == r10 && r01 == t10);
	assert_int_equal(mrc_auth_probe_tokens_epoch(a, 0, 1, 12, 22, &t2, &r2), 0);
	assert_int_equal(mrc_auth_probe_tokens_epoch(a, 0, 1, 11, 23, &t3, &r3), 0);
	assert_true(t2 != t01 && r2 != r01 && t3 != t01 && r3 != r01);
	mrc_auth_free(a);
}

/* The optional endpoint block (verbs first contact): laid out after the
 * 56 bytes, every byte checked, absent from a message without it (what a
 * udp mrcd and an older one send), refused on REJ. */
static void endpoint_block(void **state)
{
	(void)state;
	struct mrce_ctrl m = req(), o;
	uint8_t b[MRCE_CTRL_BODY_MAX];
	m.neps = 2;
	m.ep[0] = 0x12;
	m.ep[1] = 0xfffffe;
	size_t n = mrce_ctrl_encode(b, &m);
	assert_int_equal(n, MRCE_CTRL_BODY + 4 + 8);
	assert_int_equal(b[56], 2);
	assert_int_equal(b[63], 0x12);                   /* ep[0], big-endian at 60 */
	assert_int_equal(mrce_ctrl_decode(b, n, &o), 0);
	assert_int_equal(o.neps, 2);
	assert_int_equal(o.ep[0], 0x12);
	assert_int_equal(o.ep[1], 0xfffffe);
	/* Without it: the 56-byte message, neps 0. */
	m.neps = 0;
	assert_int_equal(mrce_ctrl_encode(b, &m), MRCE_CTRL_BODY);
	assert_int_equal(mrce_ctrl_decode(b, MRCE_CTRL_BODY, &o), 0);
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
		{ 0, MRCE_CTRL_REQ, 67, "truncated" },
		{ 0, MRCE_CTRL_REQ, 59, "block shorter than its header" },
		{ 0, MRCE_CTRL_REJ, 68, "on a REJ" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		mrce_ctrl_encode(b, &m);
		if (bad[i].off == 63)
			b[60] = b[61] = b[62] = 0;
		b[bad[i].off] = bad[i].v;
		if (bad[i].v == MRCE_CTRL_REJ)     /* a REJ carries no nonce/window/mtu */
			memset(b + 32, 0, 24);
		if (mrce_ctrl_decode(b, bad[i].len, &o) != -EBADMSG) {
			print_error("accepted: %s\n", bad[i].what);
			fail();
		}
	}
	/* PLANES carries it too. */
	struct mrce_ctrl pl = { .type = MRCE_CTRL_PLANES, .arg = 2, .neps = 1, .ep = { 77 } };
	n = mrce_ctrl_encode(b, &pl);
	assert_int_equal(mrce_ctrl_decode(b, n, &o), 0);
	assert_int_equal(o.ep[0], 77);
	/* Sealed: seal_len takes it, the fixed-size seal refuses it. */
	struct mrc_auth *a = key(3);
	struct host h0 = { .id = 0 }, h1 = { .id = 1 };
	restart(&h0);
	restart(&h1);
	uint8_t pkt[MRCD_CTRL_LEN_MAX];
	size_t len = 0;
	uint64_t now = 1700000000000000000ull;
	struct mrce_ctrl plain = { .type = MRCE_CTRL_PLANES };
	assert_int_equal(send_m(a, &h0, &h1, now, now, &plain, pkt, &o), 0);
	assert_int_equal(mrcd_ctrl_seal(a, &h0.tx, h0.rp, now, 0, 1, &m, pkt), -EINVAL);
	assert_int_equal(mrcd_ctrl_seal_len(a, &h0.tx, h0.rp, now, 0, 1, &m, pkt, &len), 0);
	assert_int_equal(len, MRC_AUTH_CTRL_OVERHEAD + 68);
	struct mrc_auth_ctrl_msg env;
	assert_int_equal(mrcd_ctrl_open(a, h1.rp, now, 0, pkt, len, &env, &o), 0);
	assert_int_equal(o.neps, 2);
	assert_int_equal(o.ep[1], 0xfffffe);
	mrc_auth_replay_free(h0.rp);
	mrc_auth_replay_free(h1.rp);
	mrc_auth_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(endpoint_block),
		cmocka_unit_test(body_layout),
		cmocka_unit_test(body_field_checks),
		cmocka_unit_test(sealed),
		cmocka_unit_test(envelope_codec),
		cmocka_unit_test(replay_into_restarted_receiver),
		cmocka_unit_test(sender_clock_stepped_back),
		cmocka_unit_test(clock_skew_bounded),
		cmocka_unit_test(sender_checked_before_replay_state),
		cmocka_unit_test(challenges_bound_to_epoch),
		cmocka_unit_test(probe_tokens_per_epoch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
