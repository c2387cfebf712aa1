/* The AEAD mode of the daemon's datapath (docs/wire.md, "ENC"): every
 * packet the engine sends is sealed between the engine and the UDP
 * datapath and every packet received is checked between the datapath and
 * the engine, so the engine (transport/) stays crypto-free.  With the mode
 * on, nothing of a connection leaves in clear and nothing without a valid
 * tag reaches the engine.
 *
 * The framing (which bytes are sealed, where the trailer goes, what the
 * engine gets back) is the engine's (transport/seal.c, engine_wire.h
 * "AEAD mode"; docs/wire.md, "ENC"); the crypto is auth/'s
 * (auth/seal_ops.h), registered with it here.  This file only binds the
 * two: it knows no packet layout.
 *
 * Pure (no I/O, no loop): the unit tests drive it between two engines.
 * Everything returns 0 or a negative errno. */
#ifndef MRC_DAEMON_ENC_H
#define MRC_DAEMON_ENC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "auth/auth.h"
#include "daemon/core/mrcd.h"
#include "transport/engine.h"

#define MRCD_ENC_TRAILER MRCE_SEAL_TRAILER  /* seq u64, tag[16], pcrc u32 */
#define MRCD_ENC_SLOTS   MRCE_SEAL_SLOTS    /* sealed packets in hand at once */

/* Its counters: struct mrce_seal_stats (transport/engine_wire.h). */

struct mrcd_enc;
/* -ENOTSUP (why says so) where the CPU lacks AES-NI/PCLMUL. */
int mrcd_enc_create(struct mrcd_enc **out, const char **why);
void mrcd_enc_free(struct mrcd_enc *x);

/* Local QP qpn, connected to QP rqpn of engine peer `peer`, seals what it
 * sends with c's tx keys and requires them on what it receives (c's rx
 * keys and tokens).  Replaces an earlier setting of the same qpn or of the
 * same (peer, rqpn); other QPs keep theirs. */
int mrcd_enc_set(struct mrcd_enc *x, uint32_t qpn, uint32_t peer, uint32_t rqpn,
		 const struct mrc_auth_conn *c, const char **why);
/* Forgets qpn's keys (its QP is destroyed); a qpn not set is a no-op. */
void mrcd_enc_clear(struct mrcd_enc *x, uint32_t qpn);
/* Host-pair MAC keys for engine peer `peer` (mrc_auth_pair_keys). */
int mrcd_enc_set_peer(struct mrcd_enc *x, uint32_t peer,
		      const uint8_t tx[MRC_AUTH_PAIR_KEY_BYTES],
		      const uint8_t rx[MRC_AUTH_PAIR_KEY_BYTES]);
void mrcd_enc_clear_peer(struct mrcd_enc *x, uint32_t peer);

/* A packet from mrce_tx: 1 when sealed (pk->hdr rewritten, *body = what
 * follows the header, in slot `slot` < MRCD_ENC_SLOTS, valid until that
 * slot is sealed again), < 0 to drop it (counted).  Never 0: nothing
 * goes out unsealed. */
int mrcd_enc_seal(struct mrcd_enc *x, struct mrce_tx_pkt *pk, unsigned slot,
		  struct iovec *body);
/* A datagram received from engine peer `peer`, before mrce_rx: 0 to hand
 * buf[0..*len) to the engine (checked and restored in place), < 0 to drop
 * it (counted). */
int mrcd_enc_open(struct mrcd_enc *x, uint32_t peer, uint8_t *buf, size_t *len);

void mrcd_enc_get_stats(const struct mrcd_enc *x, struct mrce_seal_stats *st);

#endif
