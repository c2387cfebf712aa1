/* The AEAD payload mode of the daemon's datapath (docs/wire.md, "ENC"):
 * data packets of a connection with AEAD keys are sealed between the
 * engine and the UDP datapath and opened between the datapath and the
 * engine, so the engine (transport/) stays crypto-free.
 *
 * On the wire (sealed): the 68-byte header with ENC set (hcrc recomputed),
 * the payload as AES-256-GCM ciphertext with the header as sent as
 * additional data, then seq (u64), tag[16] and pcrc = CRC-32C over
 * ciphertext || seq || tag.  The engine's pcrc (over the plaintext) is not
 * sent: the tag protects the plaintext end to end, and the outer pcrc lets
 * the receiver tell corruption (rx_bad_pcrc) from forgery (rx_bad_auth).
 * After a successful open the receiver gives the engine the packet it
 * would have got without ENC: ENC cleared, hcrc and the plaintext pcrc
 * recomputed (one extra CRC pass, an order of magnitude cheaper than the
 * GCM pass; bench/results/bench_auth.md).  Trimming is unchanged: a switch
 * keeps the 68-byte header (hcrc excludes TRIMMED), the receiver checks
 * that header's hcrc, clears ENC and hands the engine a trimmed packet, so
 * the sender is NACKed and resends at once as without ENC.
 *
 * Pure (no I/O, no loop): the unit tests drive it between two engines.
 * Everything returns 0 or a negative errno. */
#ifndef MRC_DAEMON_ENC_H
#define MRC_DAEMON_ENC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "auth/auth.h"
#include "transport/engine.h"

#define MRCD_ENC_TRAILER 28         /* seq u64, tag[16], pcrc u32 */
#define MRCD_ENC_SLOTS   64         /* sealed packets in hand at once */

struct mrcd_enc_stats {
	uint64_t tx_sealed, tx_fail;
	uint64_t rx_opened, rx_trimmed;
	uint64_t rx_bad_auth;   /* the tag did not verify: forged or altered */
	uint64_t rx_bad_pcrc;   /* outer CRC failed: corrupted on the way */
	uint64_t rx_bad_len;    /* ENC packet of the wrong length */
	uint64_t rx_missing;    /* payload without ENC on a QP that requires it */
	uint64_t rx_nokey;      /* ENC for a QP without AEAD keys */
};

struct mrcd_enc;
/* -ENOTSUP (why says so) where the CPU lacks AES-NI/PCLMUL. */
int mrcd_enc_create(struct mrcd_enc **out, const char **why);
void mrcd_enc_free(struct mrcd_enc *x);

/* Local QP qpn, connected to QP rqpn of engine peer `peer`, seals what it
 * sends with c's tx key and requires ENC on what it receives (c's rx key).
 * Replaces an earlier setting of the same qpn. */
int mrcd_enc_set(struct mrcd_enc *x, uint32_t qpn, uint32_t peer, uint32_t rqpn,
		 const struct mrc_auth_conn *c, const char **why);
void mrcd_enc_clear(struct mrcd_enc *x, uint32_t qpn);

/* A packet from mrce_tx: 1 when sealed (pk->hdr rewritten, *body =
 * ciphertext and trailer in slot `slot` < MRCD_ENC_SLOTS, valid until that
 * slot is sealed again), 0 to send it as it is, < 0 to drop it. */
int mrcd_enc_seal(struct mrcd_enc *x, struct mrce_tx_pkt *pk, unsigned slot,
		  struct iovec *body);
/* A received datagram, before mrce_rx: 0 to hand buf[0..*len) to the
 * engine (opened in place when it was ENC), < 0 to drop it (counted). */
int mrcd_enc_open(struct mrcd_enc *x, uint8_t *buf, size_t *len);

void mrcd_enc_get_stats(const struct mrcd_enc *x, struct mrcd_enc_stats *st);

#endif
