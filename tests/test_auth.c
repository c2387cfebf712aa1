/* auth/: cluster key files (permissions, length, O_EXCL generation),
 * per-connection derivation (both sides agree, every input matters,
 * directions differ), probe tokens, the CTRL envelope (round trip, every
 * tampered byte, replay, window, skew, destination) and the AEAD mode.
 * Seed: MRC_TEST_SEED=<n> replays a run; it is printed with every failure. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "tests/support/seeded.h"
#include "tests/support/skip.h"
#include "auth/auth.h"

static char g_dir[64];

static int mkdir_tmp(void **state)
{
	(void)state;
	reseed(state);
	snprintf(g_dir, sizeof g_dir, "/tmp/mrc-test-auth-XXXXXX");
	return mkdtemp(g_dir) ? 0 : -1;
}

static int rm_tmp(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void path_of(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", g_dir, name);
}

static void write_file(const char *path, const void *buf, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd();
}

static struct mrc_auth *key_rnd(void)
{
	uint8_t k[MRC_AUTH_KEY_BYTES];
	fill(k, sizeof k);
	struct mrc_auth *a = NULL;
	assert_int_equal(mrc_auth_key_parse(k, sizeof k, &a, NULL), 0);
	return a;
}

/* ---- key files ------------------------------------------------------ */

static void key_generate_and_load(void **state)
{
	(void)state;
	char p[128];
	const char *why = NULL;
	path_of(p, sizeof p, "cluster.key");
	mode_t old = umask(0);   /* generate must not depend on the umask */
	int rc = mrc_auth_key_generate(p, &why);
	umask(old);
	CHECK(rc == 0, "generate: %d %s", rc, why);
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	CHECK((st.st_mode & 0777) == 0600, "mode %o", st.st_mode & 0777);
	assert_int_equal(st.st_size, MRC_AUTH_KEY_BYTES);
	CHECK(mrc_auth_key_generate(p, &why) == -EEXIST && why, "O_EXCL");
	assert_int_equal(stat(p, &st), 0);   /* the existing key is kept */
	assert_int_equal(st.st_size, MRC_AUTH_KEY_BYTES);
	struct mrc_auth *a = NULL;
	rc = mrc_auth_key_load(p, &a, &why);
	CHECK(rc == 0 && a, "load: %d %s", rc, why);
	mrc_auth_free(a);
	/* Two generated keys differ (and so do their tokens). */
	char q[128];
	path_of(q, sizeof q, "other.key");
	assert_int_equal(mrc_auth_key_generate(q, NULL), 0);
	struct mrc_auth *b = NULL;
	assert_int_equal(mrc_auth_key_load(p, &a, NULL), 0);
	assert_int_equal(mrc_auth_key_load(q, &b, NULL), 0);
	uint64_t ta, tb, r;
	assert_int_equal(mrc_auth_probe_tokens(a, 1, 2, &ta, &r), 0);
	assert_int_equal(mrc_auth_probe_tokens(b, 1, 2, &tb, &r), 0);
	CHECK(ta != tb, "two generated keys gave one token");
	mrc_auth_free(a);
	mrc_auth_free(b);
}

static void key_permissions_refused(void **state)
{
	(void)state;
	uint8_t k[MRC_AUTH_KEY_BYTES];
	fill(k, sizeof k);
	char p[128];
	path_of(p, sizeof p, "perm.key");
	static const mode_t bad[] = { 0640, 0604, 0620, 0602, 0610, 0601, 0644, 0660, 0666 };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		write_file(p, k, sizeof k, bad[i]);
		struct mrc_auth *a = NULL;
		const char *why = NULL;
		int rc = mrc_auth_key_load(p, &a, &why);
		CHECK(rc == -EACCES && !a && why && strstr(why, "group or others"),
		      "mode %o: rc %d (%s)", bad[i], rc, why ? why : "");
	}
	static const mode_t good[] = { 0600, 0400 };
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		write_file(p, k, sizeof k, good[i]);
		struct mrc_auth *a = NULL;
		CHECK(mrc_auth_key_load(p, &a, NULL) == 0, "mode %o refused", good[i]);
		mrc_auth_free(a);
	}
	/* Owned by someone else (munge's rule): only root can set that up. */
	if (geteuid() == 0) {
		write_file(p, k, sizeof k, 0600);
		assert_int_equal(chown(p, 65534, (gid_t)-1), 0);
		struct mrc_auth *a = NULL;
		const char *why = NULL;
		CHECK(mrc_auth_key_load(p, &a, &why) == -EACCES && strstr(why, "owned"),
		      "foreign owner accepted");
		assert_int_equal(chown(p, 0, (gid_t)-1), 0);
	}
	/* Not a regular file, a symbolic link, missing. */
	const char *why = NULL;
	struct mrc_auth *a = NULL;
	CHECK(mrc_auth_key_load(g_dir, &a, &why) == -EINVAL && why, "directory");
	char l[128];
	path_of(l, sizeof l, "link.key");
	assert_int_equal(symlink(p, l), 0);
	CHECK(mrc_auth_key_load(l, &a, &why) == -ELOOP && strstr(why, "symbolic"), "symlink");
	path_of(l, sizeof l, "missing.key");
	CHECK(mrc_auth_key_load(l, &a, &why) == -ENOENT && why, "missing");
}

static void key_length_refused(void **state)
{
	(void)state;
	uint8_t k[MRC_AUTH_KEY_BYTES * 2];
	fill(k, sizeof k);
	char p[128];
	path_of(p, sizeof p, "len.key");
	static const size_t lens[] = { 0, 1, 16, 31, 33, 64 };
	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		write_file(p, k, lens[i], 0600);
		struct mrc_auth *a = NULL;
		const char *why = NULL;
		int rc = mrc_auth_key_load(p, &a, &why);
		CHECK(rc == -EINVAL && !a && why && strstr(why, "32 bytes"),
		      "length %zu: rc %d", lens[i], rc);
		CHECK(mrc_auth_key_parse(k, lens[i], &a, &why) == -EINVAL && !a,
		      "parse length %zu", lens[i]);
	}
	uint8_t zero[MRC_AUTH_KEY_BYTES] = { 0 };
	struct mrc_auth *a = NULL;
	const char *why = NULL;
	CHECK(mrc_auth_key_parse(zero, sizeof zero, &a, &why) == -EINVAL && strstr(why, "zeros"),
	      "all-zero key");
}

/* ---- connections and probes ----------------------------------------- */

static void rnd_conn_id(struct mrc_auth_conn_id *id)
{
	id->req_host = (uint32_t)rnd();
	id->req_qpn = (uint32_t)rnd();
	id->rep_host = (uint32_t)rnd();
	id->rep_qpn = (uint32_t)rnd();
	fill(id->req_nonce, sizeof id->req_nonce);
	fill(id->rep_nonce, sizeof id->rep_nonce);
	id->req_nonce[0] |= 1;
	id->rep_nonce[0] |= 1;
}

static void conn_both_sides_agree(void **state)
{
	(void)state;
	struct mrc_auth *a = key_rnd();
	for (int it = 0; it < 50; it++) {
		struct mrc_auth_conn_id id;
		rnd_conn_id(&id);
		if (it == 0)
			id.rep_host = id.req_host;   /* loopback: one host */
		struct mrc_auth_conn rq, rp, rq2;
		assert_int_equal(mrc_auth_conn_derive(a, &id, MRC_AUTH_REQUESTER, &rq), 0);
		assert_int_equal(mrc_auth_conn_derive(a, &id, MRC_AUTH_ACCEPTOR, &rp), 0);
		assert_int_equal(mrc_auth_conn_derive(a, &id, MRC_AUTH_REQUESTER, &rq2), 0);
		CHECK(!memcmp(&rq, &rq2, sizeof rq), "it %d: not deterministic", it);
		CHECK(rq.tx_token == rp.rx_token && rq.rx_token == rp.tx_token,
		      "it %d: sides disagree on tokens", it);
		CHECK(rq.tx_token != rq.rx_token, "it %d: one token both ways", it);
		CHECK(rq.tx_token && rq.rx_token, "it %d: zero token", it);
		CHECK(!memcmp(rq.tx_key, rp.rx_key, 32) && !memcmp(rq.rx_key, rp.tx_key, 32),
		      "it %d: sides disagree on keys", it);
		CHECK(memcmp(rq.tx_key, rq.rx_key, 32) != 0, "it %d: one key both ways", it);
		CHECK(rq.tx_dir == rp.rx_dir && rq.rx_dir == rp.tx_dir && rq.tx_dir != rq.rx_dir,
		      "it %d: directions", it);
		mrc_auth_conn_wipe(&rq);
		CHECK(rq.tx_token == 0 && rq.tx_key[0] == 0 && rq.tx_key[31] == 0, "wipe");
	}
	struct mrc_auth_conn_id id;
	struct mrc_auth_conn c;
	rnd_conn_id(&id);
	CHECK(mrc_auth_conn_derive(a, &id, (enum mrc_auth_role)2, &c) == -EINVAL, "role");
	memset(id.rep_nonce, 0, sizeof id.rep_nonce);
	CHECK(mrc_auth_conn_derive(a, &id, MRC_AUTH_REQUESTER, &c) == -EINVAL, "zero nonce");
	mrc_auth_free(a);
}

/* Every input changes both tokens: one field or one nonce bit at a time. */
static void conn_every_input_matters(void **state)
{
	(void)state;
	struct mrc_auth *a = key_rnd(), *b = key_rnd();
	struct mrc_auth_conn_id id;
	rnd_conn_id(&id);
	struct mrc_auth_conn base, c;
	assert_int_equal(mrc_auth_conn_derive(a, &id, MRC_AUTH_REQUESTER, &base), 0);
	for (int f = 0; f < 4; f++) {
		struct mrc_auth_conn_id m = id;
		uint32_t *fld[] = { &m.req_host, &m.req_qpn, &m.rep_host, &m.rep_qpn };
		*fld[f] ^= 1u << (rnd() % 32);
		assert_int_equal(mrc_auth_conn_derive(a, &m, MRC_AUTH_REQUESTER, &c), 0);
		CHECK(c.tx_token != base.tx_token && c.rx_token != base.rx_token &&
		      memcmp(c.tx_key, base.tx_key, 32), "field %d ignored", f);
	}
	for (size_t bit = 0; bit < 2 * 8 * MRC_AUTH_NONCE_BYTES; bit++) {
		struct mrc_auth_conn_id m = id;
		uint8_t *n = bit < 128 ? m.req_nonce : m.rep_nonce;
		n[(bit % 128) / 8] ^= (uint8_t)(1u << (bit % 8));
		if (bit % 128 == 0)
			n[0] |= 2;   /* keep it nonzero */
		assert_int_equal(mrc_auth_conn_derive(a, &m, MRC_AUTH_REQUESTER, &c), 0);
		CHECK(c.tx_token != base.tx_token && c.rx_token != base.rx_token,
		      "nonce bit %zu ignored", bit);
	}
	/* Swapped roles of the same two endpoints are another connection. */
	struct mrc_auth_conn_id s = { .req_host = id.rep_host, .req_qpn = id.rep_qpn,
		.rep_host = id.req_host, .rep_qpn = id.req_qpn };
	memcpy(s.req_nonce, id.rep_nonce, sizeof s.req_nonce);
	memcpy(s.rep_nonce, id.req_nonce, sizeof s.rep_nonce);
	assert_int_equal(mrc_auth_conn_derive(a, &s, MRC_AUTH_ACCEPTOR, &c), 0);
	CHECK(c.tx_token != base.tx_token && c.tx_token != base.rx_token, "roles swapped");
	assert_int_equal(mrc_auth_conn_derive(b, &id, MRC_AUTH_REQUESTER, &c), 0);
	CHECK(c.tx_token != base.tx_token && c.rx_token != base.rx_token, "key ignored");
	mrc_auth_free(a);
	mrc_auth_free(b);
}

static void probe_tokens(void **state)
{
	(void)state;
	struct mrc_auth *a = key_rnd();
	uint64_t tx[4][4], rx[4][4];
	for (uint32_t i = 0; i < 4; i++)
		for (uint32_t j = 0; j < 4; j++)
			assert_int_equal(mrc_auth_probe_tokens(a, i, j, &tx[i][j], &rx[i][j]), 0);
	for (uint32_t i = 0; i < 4; i++)
		for (uint32_t j = 0; j < 4; j++) {
			CHECK(tx[i][j] == rx[j][i], "%u->%u: sides disagree", i, j);
			CHECK(tx[i][j] != 0, "zero");
			if (i != j)
				CHECK(tx[i][j] != rx[i][j], "%u<->%u: one token both ways", i, j);
			for (uint32_t k = 0; k < 4; k++)
				for (uint32_t l = 0; l < 4; l++)
					if ((k != i || l != j))
						CHECK(tx[i][j] != tx[k][l], "pairs share a token");
		}
	mrc_auth_free(a);
}

/* ---- CTRL envelope -------------------------------------------------- */

#define SEC 1000000000ull
#define T0 (1700000000ull * SEC)

/* The receiver under test (g_r, host g_self, its boot epoch in g_rtx) and
 * each sender's own table (g_snd[src]: the cookie g_r issued it).  A
 * sender's first envelope to g_r goes through the challenge, as between
 * daemons (docs/wire.md, "CTRL envelope"); tests/test_ctrl.c tests the
 * sessions themselves. */
#define NSND 64
static struct mrc_auth_replay *g_r, *g_snd[NSND];
static struct mrc_auth_ctrl_tx g_rtx;
static uint32_t g_self;

static void senders_free(void)
{
	for (int i = 0; i < NSND; i++) {
		mrc_auth_replay_free(g_snd[i]);
		g_snd[i] = NULL;
	}
}

/* skew 0: no bound that matters here (the bound is mandatory now). */
static struct mrc_auth_replay *replay_new(uint32_t self, uint64_t window, uint64_t skew)
{
	senders_free();
	assert_int_equal(mrc_auth_ctrl_tx_init(&g_rtx), 0);
	struct mrc_auth_replay_cfg cfg = { .self_host = self, .max_hosts = 64,
		.window_ns = window, .max_skew_ns = skew ? skew : 1ull << 62,
		.epoch = g_rtx.epoch };
	struct mrc_auth_replay *r = NULL;
	assert_int_equal(mrc_auth_replay_create(&cfg, &r), 0);
	g_r = r;
	g_self = self;
	return r;
}

/* Sender src (tx) gets g_r's cookie: one refused envelope, a challenge. */
static void session(struct mrc_auth *a, struct mrc_auth_ctrl_tx *tx, uint64_t now,
		    uint32_t src)
{
	struct mrc_auth_replay_cfg cfg = { .self_host = src, .max_hosts = 64,
		.window_ns = SEC, .max_skew_ns = 1ull << 62, .epoch = tx->epoch };
	assert_int_equal(mrc_auth_replay_create(&cfg, &g_snd[src]), 0);
	uint8_t pkt[MRC_AUTH_CTRL_OVERHEAD + 8];
	size_t n = 0;
	struct mrc_auth_ctrl_msg m;
	assert_int_equal(mrc_auth_ctrl_seal(a, tx, g_snd[src], now, src, g_self, NULL, 0, pkt,
					    sizeof pkt, &n), 0);
	assert_int_equal(mrc_auth_ctrl_open(a, g_r, now, src, pkt, n, &m), -ENOTCONN);
	assert_int_equal(mrc_auth_ctrl_challenge(a, &g_rtx, g_r, now, g_self, src, m.src_epoch,
						 pkt, sizeof pkt, &n), 0);
	assert_int_equal(mrc_auth_ctrl_open(a, g_snd[src], now, g_self, pkt, n, &m), 0);
	assert_true(m.challenge);
}

static size_t seal(struct mrc_auth *a, struct mrc_auth_ctrl_tx *tx, uint64_t now,
		   uint32_t src, uint32_t dst, const uint8_t *body, size_t blen, uint8_t *out)
{
	size_t n = 0;
	if (!tx->epoch)
		assert_int_equal(mrc_auth_ctrl_tx_init(tx), 0);
	if (src < NSND && dst == g_self && !g_snd[src])
		session(a, tx, now, src);
	int rc = mrc_auth_ctrl_seal(a, tx, src < NSND ? g_snd[src] : NULL, now, src, dst, body,
				    blen, out, MRC_AUTH_CTRL_OVERHEAD + MRC_AUTH_CTRL_MAX_BODY, &n);
	CHECK(rc == 0, "seal: %d", rc);
	assert_int_equal(n, MRC_AUTH_CTRL_OVERHEAD + blen);
	return n;
}

static void ctrl_roundtrip(void **state)
{
	(void)state;
	struct mrc_auth *a = key_rnd();
	struct mrc_auth_replay *r = replay_new(2, SEC, 0);
	struct mrc_auth_ctrl_tx tx = { 0 };
	static uint8_t body[MRC_AUTH_CTRL_MAX_BODY], pkt[MRC_AUTH_CTRL_MAX_BODY + 64];
	uint64_t last = 0;
	static const size_t lens[] = { 0, 1, 40, 44, 100, MRC_AUTH_CTRL_MAX_BODY };
	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		fill(body, lens[i]);
		size_t n = seal(a, &tx, T0 + i, 7, 2, body, lens[i], pkt);
		assert_int_equal(pkt[0], 2);
		assert_int_equal(pkt[1], 48);
		struct mrc_auth_ctrl_msg m;
		int rc = mrc_auth_ctrl_open(a, r, T0 + i, UINT32_MAX, pkt, n, &m);
		CHECK(rc == 0, "len %zu: open %d", lens[i], rc);
		CHECK(m.src_host == 7 && m.dst_host == 2 && m.blen == lens[i] &&
		      (!lens[i] || !memcmp(m.body, body, lens[i])), "len %zu: fields", lens[i]);
		CHECK(m.stamp > last, "stamps grow");
		last = m.stamp;
	}
	/* The stamp grows even if the clock does not. */
	size_t n = seal(a, &tx, 5, 7, 2, body, 4, pkt);
	struct mrc_auth_ctrl_msg m;
	assert_int_equal(mrc_auth_ctrl_open(a, r, T0, UINT32_MAX, pkt, n, &m), 0);
	CHECK(m.stamp == last + 1, "stamp %llu after %llu", (unsigned long long)m.stamp,
	      (unsigned long long)last);
	size_t got = 0;
	CHECK(mrc_auth_ctrl_seal(a, &tx, NULL, T0, 1, 2, body, MRC_AUTH_CTRL_MAX_BODY + 1, pkt,
				 sizeof pkt, &got) == -EMSGSIZE, "body too long");
	CHECK(mrc_auth_ctrl_seal(a, &tx, NULL, T0, 1, 2, body, 10, pkt,
				 MRC_AUTH_CTRL_OVERHEAD + 9, &got) == -EMSGSIZE, "cap");
	struct mrc_auth_ctrl_tx none = { 0 };
	CHECK(mrc_auth_ctrl_seal(a, &none, NULL, T0, 1, 2, body, 10, pkt, sizeof pkt,
				 &got) == -EINVAL, "no epoch");
	senders_free();
	mrc_auth_replay_free(r);
	mrc_auth_free(a);
}

/* Every single-bit change anywhere is refused and leaves the replay state
 * as it was: the genuine envelope still opens afterwards. */
static void ctrl_tamper(void **state)
{
	(void)state;
	struct mrc_auth *a = key_rnd(), *other = key_rnd();
	struct mrc_auth_replay *r = replay_new(3, SEC, 0);
	struct mrc_auth_ctrl_tx tx = { 0 };
	uint8_t body[44], pkt[128];
	fill(body, sizeof body);
	size_t n = seal(a, &tx, T0, 9, 3, body, sizeof body, pkt);
	struct mrc_auth_ctrl_msg m;
	for (size_t bit = 0; bit < n * 8; bit++) {
		pkt[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		int rc = mrc_auth_ctrl_open(a, r, T0, UINT32_MAX, pkt, n, &m);
		CHECK(rc == -EACCES || rc == -EBADMSG, "bit %zu: rc %d", bit, rc);
		pkt[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	for (size_t l = 0; l < n; l++)
		CHECK(mrc_auth_ctrl_open(a, r, T0, UINT32_MAX, pkt, l, &m) == -EBADMSG, "prefix %zu", l);
	CHECK(mrc_auth_ctrl_open(other, r, T0, UINT32_MAX, pkt, n, &m) == -EACCES, "other key");
	CHECK(mrc_auth_ctrl_open(a, r, T0, UINT32_MAX, pkt, n, &m) == 0, "genuine after tampering");
	senders_free();
	mrc_auth_replay_free(r);
	mrc_auth_free(a);
	mrc_auth_free(other);
}

static void ctrl_replay_window(void **state)
{
	(void)state;
	struct mrc_auth *a = key_rnd();
	struct mrc_auth_replay *r = replay_new(1, SEC, 0);
	struct mrc_auth_ctrl_tx tx = { 0 };
	uint8_t body[8] = { 1 }, pkt[64], old[64];
	struct mrc_auth_ctrl_msg m;

	size_t n = seal(a, &tx, T0, 5, 1, body, sizeof body, pkt);
	assert_int_equal(mrc_auth_ctrl_open(a, r, T0, UINT32_MAX, pkt, n, &m), 0);
	CHECK(mrc_auth_ctrl_open(a, r, T0, UINT32_MAX, pkt, n, &m) == -EALREADY, "replay");

	/* Reordering inside the window: an older envelope arriving after a
	 * newer one is accepted once. */
	size_t n1 = seal(a, &tx, T0 + 100, 5, 1, body, sizeof body, old);
	size_t n2 = seal(a, &tx, T0 + 200, 5, 1, body, sizeof body, pkt);
	assert_int_equal(mrc_auth_ctrl_open(a, r, T0, UINT32_MAX, pkt, n2, &m), 0);
	assert_int_equal(mrc_auth_ctrl_open(a, r, T0, UINT32_MAX, old, n1, &m), 0);
	CHECK(mrc_auth_ctrl_open(a, r, T0, UINT32_MAX, old, n1, &m) == -EALREADY, "reordered replay");

	/* Older than the window behind the newest: refused. */
	n1 = seal(a, &tx, T0 + 300, 5, 1, body, sizeof body, old);
	n2 = seal(a, &tx, T0 + 300 + 2 * SEC, 5, 1, body, sizeof body, pkt);
	assert_int_equal(mrc_auth_ctrl_open(a, r, T0, UINT32_MAX, pkt, n2, &m), 0);
	CHECK(mrc_auth_ctrl_open(a, r, T0, UINT32_MAX, old, n1, &m) == -ESTALE, "outside the window");

	/* Inside the window but older than every stamp remembered (the ring
	 * is full of newer ones): cannot be proven unseen. */
	uint64_t t = T0 + 10 * SEC;
	n1 = seal(a, &tx, t, 5, 1, body, sizeof body, old);
	for (int i = 1; i <= MRC_AUTH_REPLAY_RING; i++) {
		n2 = seal(a, &tx, t + (uint64_t)i, 5, 1, body, sizeof body, pkt);
		assert_int_equal(mrc_auth_ctrl_open(a, r, T0, UINT32_MAX, pkt, n2, &m), 0);
	}
	CHECK(mrc_auth_ctrl_open(a, r, T0, UINT32_MAX, old, n1, &m) == -ESTALE, "older than the ring");

	/* Senders are independent; destination and sender range are checked. */
	n = seal(a, &tx, T0 + 1, 6, 1, body, sizeof body, pkt);
	assert_int_equal(mrc_auth_ctrl_open(a, r, T0, UINT32_MAX, pkt, n, &m), 0);
	n = seal(a, &tx, T0 + 20 * SEC, 6, 2, body, sizeof body, pkt);
	CHECK(mrc_auth_ctrl_open(a, r, T0, UINT32_MAX, pkt, n, &m) == -EXDEV, "other destination");
	n = seal(a, &tx, T0 + 21 * SEC, 64, 1, body, sizeof body, pkt);
	CHECK(mrc_auth_ctrl_open(a, r, T0, UINT32_MAX, pkt, n, &m) == -ERANGE, "sender out of range");
	/* The refused ones left sender 6 as it was: its next one opens. */
	n = seal(a, &tx, T0 + 22 * SEC, 6, 1, body, sizeof body, pkt);
	assert_int_equal(mrc_auth_ctrl_open(a, r, T0, UINT32_MAX, pkt, n, &m), 0);
	mrc_auth_replay_free(r);

	/* With a skew bound, stale or future stamps are refused even by a
	 * receiver that has no state for the sender (e.g. just restarted). */
	r = replay_new(1, SEC, 30 * SEC);
	struct mrc_auth_ctrl_tx tx2 = { 0 };
	n = seal(a, &tx2, T0, 5, 1, body, sizeof body, pkt);
	CHECK(mrc_auth_ctrl_open(a, r, T0 + 31 * SEC, UINT32_MAX, pkt, n, &m) == -ESTALE, "too old");
	CHECK(mrc_auth_ctrl_open(a, r, T0 - 31 * SEC, UINT32_MAX, pkt, n, &m) == -ESTALE, "from the future");
	assert_int_equal(mrc_auth_ctrl_open(a, r, T0 + 29 * SEC, UINT32_MAX, pkt, n, &m), 0);
	senders_free();
	mrc_auth_replay_free(r);

	struct mrc_auth_replay_cfg bad = { .max_hosts = 0 };
	CHECK(mrc_auth_replay_create(&bad, &r) == -EINVAL, "max_hosts 0");
	bad.max_hosts = (1u << 20) + 1;
	CHECK(mrc_auth_replay_create(&bad, &r) == -EINVAL, "max_hosts too big");
	mrc_auth_free(a);
}

/* ---- AEAD ------------------------------------------------------------ */

static void aead_roundtrip_and_tamper(void **state)
{
	(void)state;
	if (!mrc_auth_aead_available()) {
		struct mrc_auth_conn c = { 0 };
		struct mrc_auth_aead *s = NULL;
		const char *why = NULL;
		assert_int_equal(mrc_auth_aead_create(&c, 1, &s, &why), -ENOTSUP);
		assert_non_null(why);
		MRC_SKIP("AES-256-GCM unavailable on this CPU (no AES-NI/PCLMUL)");
		return;
	}
	struct mrc_auth *a = key_rnd();
	struct mrc_auth_conn_id id;
	rnd_conn_id(&id);
	struct mrc_auth_conn rq, rp;
	assert_int_equal(mrc_auth_conn_derive(a, &id, MRC_AUTH_REQUESTER, &rq), 0);
	assert_int_equal(mrc_auth_conn_derive(a, &id, MRC_AUTH_ACCEPTOR, &rp), 0);
	struct mrc_auth_aead *stx, *srx, *back;
	assert_int_equal(mrc_auth_aead_create(&rq, 1, &stx, NULL), 0);
	assert_int_equal(mrc_auth_aead_create(&rp, 0, &srx, NULL), 0);
	assert_int_equal(mrc_auth_aead_create(&rp, 1, &back, NULL), 0);
	static uint8_t msg[9000], buf[9000], first[64];
	uint8_t ad[68], tag[MRC_AUTH_TAG_BYTES], tag2[MRC_AUTH_TAG_BYTES];
	for (int it = 0; it < 20; it++) {
		size_t len = it == 0 ? 0 : (size_t)(rnd() % sizeof msg) + 1;
		fill(msg, len);
		fill(ad, sizeof ad);
		memcpy(buf, msg, len);
		uint64_t seq;
		assert_int_equal(mrc_auth_aead_seal(stx, ad, sizeof ad, buf, len, &seq, tag), 0);
		CHECK(seq == (uint64_t)it, "seq %llu at %d", (unsigned long long)seq, it);
		if (len >= 16)
			CHECK(memcmp(buf, msg, len) != 0, "not encrypted");
		assert_int_equal(mrc_auth_aead_open(srx, ad, sizeof ad, buf, len, seq, tag), 0);
		CHECK(!memcmp(buf, msg, len), "it %d: round trip", it);
	}
	/* The same plaintext twice: a new nonce, so another ciphertext. */
	uint64_t s1, s2;
	memset(buf, 7, 64);
	assert_int_equal(mrc_auth_aead_seal(stx, NULL, 0, buf, 64, &s1, tag), 0);
	memcpy(first, buf, 64);
	memset(buf, 7, 64);
	assert_int_equal(mrc_auth_aead_seal(stx, NULL, 0, buf, 64, &s2, tag2), 0);
	CHECK(s2 == s1 + 1 && memcmp(first, buf, 64) && memcmp(tag, tag2, sizeof tag),
	      "nonce reused");

	/* Tampering: every byte of the data, the tag, ad; the seq; the other
	 * direction's state. */
	size_t len = 300;
	fill(msg, len);
	fill(ad, sizeof ad);
	memcpy(buf, msg, len);
	uint64_t seq;
	assert_int_equal(mrc_auth_aead_seal(stx, ad, sizeof ad, buf, len, &seq, tag), 0);
	static uint8_t ct[300];
	memcpy(ct, buf, len);
	for (size_t i = 0; i < len + sizeof tag + sizeof ad; i++) {
		memcpy(buf, ct, len);
		uint8_t *p = i < len ? &buf[i] : i < len + sizeof tag ? &tag[i - len]
			   : &ad[i - len - sizeof tag];
		uint8_t bit = (uint8_t)(1u << (rnd() % 8));
		*p ^= bit;
		CHECK(mrc_auth_aead_open(srx, ad, sizeof ad, buf, len, seq, tag) == -EBADMSG,
		      "byte %zu tampered, accepted", i);
		*p ^= bit;
	}
	memcpy(buf, ct, len);
	CHECK(mrc_auth_aead_open(srx, ad, sizeof ad, buf, len, seq + 1, tag) == -EBADMSG,
	      "other seq accepted");
	memcpy(buf, ct, len);
	CHECK(mrc_auth_aead_open(srx, ad, sizeof ad - 1, buf, len, seq, tag) == -EBADMSG,
	      "shorter ad accepted");
	/* Reflected back: the acceptor's tx direction is another key. */
	struct mrc_auth_aead *rx_at_req;
	assert_int_equal(mrc_auth_aead_create(&rq, 0, &rx_at_req, NULL), 0);
	memcpy(buf, ct, len);
	CHECK(mrc_auth_aead_open(rx_at_req, ad, sizeof ad, buf, len, seq, tag) == -EBADMSG,
	      "reflected packet accepted");
	memcpy(buf, ct, len);
	assert_int_equal(mrc_auth_aead_open(srx, ad, sizeof ad, buf, len, seq, tag), 0);
	CHECK(!memcmp(buf, msg, len), "genuine after tampering");
	/* A tx state does not open, an rx state does not seal. */
	CHECK(mrc_auth_aead_open(stx, ad, sizeof ad, buf, len, seq, tag) == -EINVAL, "tx opens");
	CHECK(mrc_auth_aead_seal(srx, ad, sizeof ad, buf, len, &seq, tag) == -EINVAL, "rx seals");
	mrc_auth_aead_free(stx);
	mrc_auth_aead_free(srx);
	mrc_auth_aead_free(back);
	mrc_auth_aead_free(rx_at_req);
	mrc_auth_conn_wipe(&rq);
	mrc_auth_conn_wipe(&rp);
	mrc_auth_free(a);
}

int main(void)
{
	seed_init("test_auth");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(key_generate_and_load, mkdir_tmp, rm_tmp),
		cmocka_unit_test_setup_teardown(key_permissions_refused, mkdir_tmp, rm_tmp),
		cmocka_unit_test_setup_teardown(key_length_refused, mkdir_tmp, rm_tmp),
		cmocka_unit_test_setup(conn_both_sides_agree, reseed),
		cmocka_unit_test_setup(conn_every_input_matters, reseed),
		cmocka_unit_test_setup(probe_tokens, reseed),
		cmocka_unit_test_setup(ctrl_roundtrip, reseed),
		cmocka_unit_test_setup(ctrl_tamper, reseed),
		cmocka_unit_test_setup(ctrl_replay_window, reseed),
		cmocka_unit_test_setup(aead_roundtrip_and_tamper, reseed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
