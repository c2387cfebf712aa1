/* libFuzzer target for auth/: the cluster key parser and the CTRL envelope
 * opener.  The first byte picks what the rest is:
 *   0: a key (accepted only when exactly 32 bytes, not all zero);
 *   1: a received datagram: never accepted (no forger knows the key), and
 *      the replay state never changes;
 *   2: a body, sealed and opened (must round trip), then with one bit
 *      flipped (chosen by the input) opened again (must be refused), then
 *      replayed (must be refused). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"

#define ENSURE(c) do { if (!(c)) abort(); } while (0)
#define SELF 3u

static struct mrc_auth *g_key;
static struct mrc_auth_replay *g_rp;           /* SELF's */
static struct mrc_auth_replay *g_snd[256];     /* each sender's, made at first use */
static struct mrc_auth_ctrl_tx g_tx, g_stx;    /* the senders', SELF's */
#define SKEW (1ull << 62)                      /* the stamps here start at 0 */

static void init(void)
{
	if (g_key)
		return;
	uint8_t k[MRC_AUTH_KEY_BYTES];
	for (size_t i = 0; i < sizeof k; i++)
		k[i] = (uint8_t)(i * 37 + 1);
	ENSURE(mrc_auth_key_parse(k, sizeof k, &g_key, NULL) == 0);
	ENSURE(mrc_auth_ctrl_tx_init(&g_tx) == 0 && mrc_auth_ctrl_tx_init(&g_stx) == 0);
	struct mrc_auth_replay_cfg cfg = { .self_host = SELF, .max_hosts = 256,
		.window_ns = 1000000000ull, .max_skew_ns = SKEW, .epoch = g_stx.epoch };
	ENSURE(mrc_auth_replay_create(&cfg, &g_rp) == 0);
}

/* Sender src gets SELF's cookie (one challenge) the first time. */
static void session(uint32_t src)
{
	if (g_snd[src])
		return;
	struct mrc_auth_replay_cfg cfg = { .self_host = src, .max_hosts = 256,
		.window_ns = 1000000000ull, .max_skew_ns = SKEW, .epoch = g_tx.epoch };
	ENSURE(mrc_auth_replay_create(&cfg, &g_snd[src]) == 0);
	uint8_t out[MRC_AUTH_CTRL_OVERHEAD + 8];
	size_t len = 0;
	struct mrc_auth_ctrl_msg m;
	ENSURE(mrc_auth_ctrl_seal(g_key, &g_tx, g_snd[src], 0, src, SELF, NULL, 0, out,
				  sizeof out, &len) == 0);
	ENSURE(mrc_auth_ctrl_open(g_key, g_rp, 0, src, out, len, &m) == -ENOTCONN);
	ENSURE(mrc_auth_ctrl_challenge(g_key, &g_stx, g_rp, 0, SELF, src, m.src_epoch, out,
				       sizeof out, &len) == 0);
	ENSURE(mrc_auth_ctrl_open(g_key, g_snd[src], 0, SELF, out, len, &m) == 0 && m.challenge);
}

static void key(const uint8_t *d, size_t n)
{
	struct mrc_auth *a = NULL;
	const char *why = NULL;
	int rc = mrc_auth_key_parse(d, n, &a, &why);
	if (rc == 0) {
		int zero = 1;
		for (size_t i = 0; i < n; i++)
			zero &= d[i] == 0;
		ENSURE(n == MRC_AUTH_KEY_BYTES && !zero && a);
		uint64_t tx, rx;
		ENSURE(mrc_auth_probe_tokens(a, 1, 2, &tx, &rx) == 0 && tx && rx);
		mrc_auth_free(a);
	} else {
		ENSURE(rc == -EINVAL && !a && why);
	}
}

static void forged(const uint8_t *d, size_t n)
{
	struct mrc_auth_ctrl_msg m;
	int rc = mrc_auth_ctrl_open(g_key, g_rp, 0, UINT32_MAX, d, n, &m);
	ENSURE(rc == -EBADMSG || rc == -EACCES);
}

static void sealed(const uint8_t *d, size_t n)
{
	static uint8_t out[MRC_AUTH_CTRL_OVERHEAD + MRC_AUTH_CTRL_MAX_BODY];
	uint32_t flip = 0, src = 0;
	if (n >= 4) {
		flip = (uint32_t)d[0] << 8 | d[1];
		src = d[2];
		d += 3;
		n -= 3;
	}
	if (n > MRC_AUTH_CTRL_MAX_BODY)
		n = MRC_AUTH_CTRL_MAX_BODY;
	size_t len = 0;
	session(src);
	ENSURE(mrc_auth_ctrl_seal(g_key, &g_tx, g_snd[src], 0, src, SELF, d, n, out, sizeof out,
				  &len) == 0);
	ENSURE(len == MRC_AUTH_CTRL_OVERHEAD + n);
	struct mrc_auth_ctrl_msg m;
	out[flip / 8 % len] ^= (uint8_t)(1u << (flip % 8));
	int rc = mrc_auth_ctrl_open(g_key, g_rp, 0, src, out, len, &m);
	ENSURE(rc == -EBADMSG || rc == -EACCES);
	out[flip / 8 % len] ^= (uint8_t)(1u << (flip % 8));
	ENSURE(mrc_auth_ctrl_open(g_key, g_rp, 0, src, out, len, &m) == 0);
	ENSURE(m.src_host == src && m.dst_host == SELF && m.blen == n &&
	       m.stamp == g_tx.last && (!n || !memcmp(m.body, d, n)));
	ENSURE(mrc_auth_ctrl_open(g_key, g_rp, 0, src, out, len, &m) == -EALREADY);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	init();
	if (size == 0)
		return 0;
	switch (data[0] % 3) {
	case 0:
		key(data + 1, size - 1);
		break;
	case 1:
		forged(data + 1, size - 1);
		break;
	default:
		sealed(data + 1, size - 1);
		break;
	}
	return 0;
}
