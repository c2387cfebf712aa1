/* The crypto of the engine's AEAD mode (transport/engine_wire.h, "AEAD mode"):
 * the callbacks the engine's framing calls, on libsodium (auth/aead.c:
 * AES-256-GCM with its replay window, the SipHash header tag, the
 * BLAKE2b host-pair MAC), and the key contexts they take. */
#ifndef MRC_AUTH_SEAL_OPS_H
#define MRC_AUTH_SEAL_OPS_H

#include "auth/auth.h"
#include "transport/engine.h"

/* What mrce_seal_create takes. */
extern const struct mrce_crypto_ops mrc_auth_seal_ops;

/* One connection's context for mrce_seal_qp_set: its tx and rx AEAD
 * states and header-tag keys (copied from c).  -ENOTSUP without AES-NI. */
int mrc_auth_seal_conn(const struct mrc_auth_conn *c, void **keys, const char **why);
/* One host pair's context for mrce_seal_peer_set (mrc_auth_pair_keys). */
int mrc_auth_seal_pair(const uint8_t tx[MRC_AUTH_PAIR_KEY_BYTES],
		       const uint8_t rx[MRC_AUTH_PAIR_KEY_BYTES], void **keys);

#endif
