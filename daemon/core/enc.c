/* AEAD mode between the engine and the datapath; see enc.h.  The engine
 * frames (mrce_seal_*), auth/ seals (mrc_auth_seal_ops): this binds them. */
#include "daemon/core/enc.h"

#include <errno.h>
#include <stdlib.h>

#include "auth/seal_ops.h"

struct mrcd_enc {
	struct mrce_seal *s;
};

int mrcd_enc_create(struct mrcd_enc **out, const char **why)
{
	if (!mrc_auth_aead_available()) {
		*why = "payload_encryption = aes-gcm needs a CPU with AES-NI and PCLMUL "
		       "(libsodium's crypto_aead_aes256gcm_is_available() is false here); "
		       "set payload_encryption = off";
		return -ENOTSUP;
	}
	struct mrcd_enc *x = calloc(1, sizeof(*x));
	int rc = x ? mrce_seal_create(&mrc_auth_seal_ops, &x->s) : -ENOMEM;
	if (rc) {
		free(x);
		*why = "out of memory";
		return rc;
	}
	*out = x;
	return 0;
}

void mrcd_enc_free(struct mrcd_enc *x)
{
	if (!x)
		return;
	mrce_seal_free(x->s);
	free(x);
}

int mrcd_enc_set(struct mrcd_enc *x, uint32_t qpn, uint32_t peer, uint32_t rqpn,
		 const struct mrc_auth_conn *c, const char **why)
{
	if (peer == UINT32_MAX || !c) {
		*why = "bad peer";
		return -EINVAL;
	}
	void *keys;
	int rc = mrc_auth_seal_conn(c, &keys, why);
	if (!rc && (rc = mrce_seal_qp_set(x->s, qpn, peer, rqpn, c->tx_token, c->rx_token,
					  keys)))
		*why = "out of memory";
	return rc;
}

void mrcd_enc_clear(struct mrcd_enc *x, uint32_t qpn)
{
	if (x)
		mrce_seal_qp_clear(x->s, qpn);
}

int mrcd_enc_set_peer(struct mrcd_enc *x, uint32_t peer,
		      const uint8_t tx[MRC_AUTH_PAIR_KEY_BYTES],
		      const uint8_t rx[MRC_AUTH_PAIR_KEY_BYTES])
{
	if (!x || !tx || !rx || peer >= (1u << 20))
		return -EINVAL;
	void *keys;
	int rc = mrc_auth_seal_pair(tx, rx, &keys);
	return rc ? rc : mrce_seal_peer_set(x->s, peer, keys);
}

void mrcd_enc_clear_peer(struct mrcd_enc *x, uint32_t peer)
{
	if (x)
		mrce_seal_peer_clear(x->s, peer);
}

int mrcd_enc_seal(struct mrcd_enc *x, struct mrce_tx_pkt *pk, unsigned slot,
		  struct iovec *body)
{
	return mrce_seal_tx(x->s, pk, slot, body);
}

int mrcd_enc_open(struct mrcd_enc *x, uint32_t peer, uint8_t *buf, size_t *len)
{
	return mrce_seal_rx(x->s, peer, buf, len);
}

void mrcd_enc_get_stats(const struct mrcd_enc *x, struct mrce_seal_stats *st)
{
	mrce_seal_get_stats(x->s, st);
}
