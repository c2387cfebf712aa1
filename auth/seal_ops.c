/* The engine's AEAD-mode callbacks on libsodium; see seal_ops.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth_int.h"
#include "auth/seal_ops.h"

_Static_assert(MRCE_SEAL_TAG == MRC_AUTH_TAG_BYTES && MRCE_SEAL_HTAG == MRC_AUTH_HTAG_BYTES &&
	       MRCE_SEAL_PTAG == MRC_AUTH_PAIR_TAG_BYTES, "the engine's AEAD-mode sizes");

/* One allocation holds either kind; kind says which, so keys_free (one
 * callback for both) releases the right parts. */
enum { KIND_CONN = 1, KIND_PAIR = 2 };
struct seal_keys {
	int kind;
	struct mrc_auth_aead *tx, *rx;                  /* KIND_CONN */
	uint8_t tx_hkey[MRC_AUTH_HKEY_BYTES], rx_hkey[MRC_AUTH_HKEY_BYTES];
	uint8_t ptx[MRC_AUTH_PAIR_KEY_BYTES], prx[MRC_AUTH_PAIR_KEY_BYTES]; /* KIND_PAIR */
};

static void keys_free(void *p)
{
	struct seal_keys *k = p;
	if (!k)
		return;
	mrc_auth_aead_free(k->tx);
	mrc_auth_aead_free(k->rx);
	sodium_memzero(k, sizeof(*k));
	free(k);
}

int mrc_auth_seal_conn(const struct mrc_auth_conn *c, void **keys, const char **why)
{
	struct seal_keys *k = calloc(1, sizeof(*k));
	if (!k) {
		*why = "out of memory";
		return -ENOMEM;
	}
	k->kind = KIND_CONN;
	memcpy(k->tx_hkey, c->tx_hkey, sizeof k->tx_hkey);
	memcpy(k->rx_hkey, c->rx_hkey, sizeof k->rx_hkey);
	int rc = mrc_auth_aead_create(c, 1, &k->tx, why);
	if (!rc)
		rc = mrc_auth_aead_create(c, 0, &k->rx, why);
	if (rc) {
		keys_free(k);
		return rc;
	}
	*keys = k;
	return 0;
}

int mrc_auth_seal_pair(const uint8_t tx[MRC_AUTH_PAIR_KEY_BYTES],
		       const uint8_t rx[MRC_AUTH_PAIR_KEY_BYTES], void **keys)
{
	if (!tx || !rx || !keys)
		return -EINVAL;
	struct seal_keys *k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->kind = KIND_PAIR;
	memcpy(k->ptx, tx, sizeof k->ptx);
	memcpy(k->prx, rx, sizeof k->prx);
	*keys = k;
	return 0;
}

static int seal(void *p, const uint8_t *ad, size_t adlen, uint8_t *buf, size_t len,
		uint64_t *seq, uint8_t tag[MRCE_SEAL_TAG])
{
	struct seal_keys *k = p;
	return mrc_auth_aead_seal(k->tx, ad, adlen, buf, len, seq, tag);
}

static int open_(void *p, const uint8_t *ad, size_t adlen, uint8_t *buf, size_t len,
		 uint64_t seq, const uint8_t tag[MRCE_SEAL_TAG])
{
	struct seal_keys *k = p;
	if (mrc_auth_aead_replay_check(k->rx, seq))
		return -EALREADY;
	int rc = mrc_auth_aead_open(k->rx, ad, adlen, buf, len, seq, tag);
	if (rc)
		return rc;
	mrc_auth_aead_replay_commit(k->rx, seq);
	return 0;
}

static int htag(void *p, int verify, const uint8_t *m, size_t len,
		uint8_t tag[MRCE_SEAL_HTAG])
{
	struct seal_keys *k = p;
	return verify ? mrc_auth_htag_verify(k->rx_hkey, m, len, tag) :
			mrc_auth_htag(k->tx_hkey, m, len, tag);
}

static int pair_mac(void *p, const uint8_t *m, size_t len, uint8_t tag[MRCE_SEAL_PTAG])
{
	struct seal_keys *k = p;
	return mrc_auth_pair_mac(k->ptx, m, len, tag);
}

static int pair_verify(void *p, const uint8_t *m, size_t len,
		       const uint8_t tag[MRCE_SEAL_PTAG])
{
	struct seal_keys *k = p;
	return mrc_auth_pair_verify(k->prx, m, len, tag);
}

const struct mrce_crypto_ops mrc_auth_seal_ops = {
	.seal = seal, .open = open_, .htag = htag,
	.pair_mac = pair_mac, .pair_verify = pair_verify, .keys_free = keys_free,
};
