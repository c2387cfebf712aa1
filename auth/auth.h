/* Authentication primitives between daemons (issue 12), on libsodium.
 *
 * A cluster key (a 32-byte file readable by its owner only, distributed by
 * the operator like munge's key) is the one secret.  From it:
 *   - per connection: a secret derived at connection setup from the key,
 *     both hosts, both QP numbers and a fresh nonce from each side, and from
 *     that secret the two tokens the engine checks (one per direction) and
 *     two AEAD keys for the optional encrypted-payload mode;
 *   - per host pair: the tokens of PROBE / PROBE_REPLY packets;
 *   - the MAC key of the CTRL envelope (daemon-to-daemon control datagrams),
 *     with replay protection by a per-sender timestamp counter.
 * docs/wire.md specifies the wire side, docs/security.md what it protects.
 * No hand-written crypto: BLAKE2b (crypto_generichash, crypto_kdf),
 * AES-256-GCM (crypto_aead_aes256gcm) and the CSPRNG are libsodium's.
 * Every function returns 0 or a negative errno; where a `why` is taken it
 * is set to a static, human-readable reason on failure.  Not thread-safe
 * per object (one thread drives one replay table / AEAD state). */
#ifndef MRC_AUTH_AUTH_H
#define MRC_AUTH_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define MRC_AUTH_KEY_BYTES   32    /* cluster key file: exactly this long */
#define MRC_AUTH_NONCE_BYTES 16    /* per-side connection nonce */
#define MRC_AUTH_MAC_BYTES   16    /* CTRL envelope MAC */
#define MRC_AUTH_TAG_BYTES   16    /* AEAD tag */

/* ---- cluster key ------------------------------------------------------ */
struct mrc_auth;                   /* the key and its subkeys (guarded memory) */

/* Writes a fresh random key to path: created with O_EXCL (an existing file
 * is never overwritten: -EEXIST), mode 0600, fsync'ed. */
int mrc_auth_key_generate(const char *path, const char **why);
/* Loads the key file.  Refused: not a regular file or a symbolic link
 * (-EINVAL / -ELOOP), not owned by the effective uid, or any permission
 * bit for group or others (-EACCES, as munge does), not exactly
 * MRC_AUTH_KEY_BYTES long (-EINVAL). */
int mrc_auth_key_load(const char *path, struct mrc_auth **out, const char **why);
/* The key from memory (what load does after its file checks): exactly
 * MRC_AUTH_KEY_BYTES, not all zero. */
int mrc_auth_key_parse(const void *buf, size_t len, struct mrc_auth **out,
		       const char **why);
void mrc_auth_free(struct mrc_auth *a);

/* ---- connections ------------------------------------------------------ */
/* A fresh random nonce; each side sends one at connection setup. */
int mrc_auth_nonce(uint8_t out[MRC_AUTH_NONCE_BYTES]);

/* What both sides of a connection know once REQ and REP were exchanged.
 * The requester sent REQ (its QP and nonce), the acceptor REP (its QP and
 * nonce); both sides fill this the same way, by role, not by "me/peer". */
struct mrc_auth_conn_id {
	uint32_t req_host, req_qpn;
	uint32_t rep_host, rep_qpn;
	uint8_t req_nonce[MRC_AUTH_NONCE_BYTES];
	uint8_t rep_nonce[MRC_AUTH_NONCE_BYTES];
};
enum mrc_auth_role { MRC_AUTH_REQUESTER = 0, MRC_AUTH_ACCEPTOR = 1 };

/* One side's view of a connection: tx_token for mrce_qp_set_tokens' tx (it
 * is the other side's rx_token), rx_token for its rx; never 0.  The keys
 * feed mrc_auth_aead_create.  Wipe with mrc_auth_conn_wipe. */
struct mrc_auth_conn {
	uint64_t tx_token, rx_token;
	uint32_t tx_dir, rx_dir;   /* nonce prefixes of the AEAD directions */
	uint8_t tx_key[32], rx_key[32];
	/* Header-tag keys of the AEAD mode (mrc_auth_htag), one per
	 * direction, independent of the AES keys (their own KDF subkeys). */
	uint8_t tx_hkey[16], rx_hkey[16];
};
/* -EINVAL for a bad role or an all-zero nonce (never fresh). */
int mrc_auth_conn_derive(const struct mrc_auth *a, const struct mrc_auth_conn_id *id,
			 enum mrc_auth_role role, struct mrc_auth_conn *out);
void mrc_auth_conn_wipe(struct mrc_auth_conn *c);

/* Probe tokens for the pair (self, peer): tx for what self sends to peer,
 * rx for what self accepts from peer (mrce_peer_set_probe_tokens).  Fixed
 * for the key and the pair: probes need no handshake.  Never 0. */
int mrc_auth_probe_tokens(const struct mrc_auth *a, uint32_t self_host,
			  uint32_t peer_host, uint64_t *tx, uint64_t *rx);

/* Per host pair and direction MAC keys of the AEAD mode (what it puts on
 * packets that no connection key covers: PROBE, PROBE_REPLY and NOQP,
 * answered by a host without the QP).  tx: what self sends to peer; rx:
 * what self accepts from peer.  Fixed for the key and the pair, like the
 * probe tokens, from the same subkey under another label. */
#define MRC_AUTH_PAIR_KEY_BYTES 32
#define MRC_AUTH_PAIR_TAG_BYTES 16
int mrc_auth_pair_keys(const struct mrc_auth *a, uint32_t self_host, uint32_t peer_host,
		       uint8_t tx[MRC_AUTH_PAIR_KEY_BYTES],
		       uint8_t rx[MRC_AUTH_PAIR_KEY_BYTES]);

/* ---- CTRL envelope ---------------------------------------------------- */
/* version 2, opcode CTRL (48), flags 0, src_host, dst_host, body length,
 * rsvd 0, stamp u64, body, MAC (docs/wire.md, "CTRL envelope"). */
#define MRC_AUTH_CTRL_HDR      24
#define MRC_AUTH_CTRL_OVERHEAD (MRC_AUTH_CTRL_HDR + MRC_AUTH_MAC_BYTES)
#define MRC_AUTH_CTRL_MAX_BODY 1024

/* A sender's stamp state (per daemon, shared by all destinations). */
struct mrc_auth_ctrl_tx {
	uint64_t last;             /* 0 at start */
};
/* Seals body[0..blen) for dst_host into out[0..cap), *outlen =
 * MRC_AUTH_CTRL_OVERHEAD + blen.  now_real_ns: CLOCK_REALTIME in ns; the
 * stamp is max(last + 1, now_real_ns), so it only grows, across restarts
 * too (unless the clock steps back).  -EMSGSIZE: body too long or cap too
 * small. */
int mrc_auth_ctrl_seal(const struct mrc_auth *a, struct mrc_auth_ctrl_tx *tx,
		       uint64_t now_real_ns, uint32_t src_host, uint32_t dst_host,
		       const void *body, size_t blen, uint8_t *out, size_t cap,
		       size_t *outlen);

/* A receiver's replay state: per sender host, the newest stamp accepted
 * and the MRC_AUTH_REPLAY_RING newest ones (bounded memory: max_hosts of
 * them, allocated at create). */
#define MRC_AUTH_REPLAY_RING 16
struct mrc_auth_replay_cfg {
	uint32_t self_host;        /* envelopes for another dst_host: -EXDEV */
	uint32_t max_hosts;        /* src_host >= this: -ERANGE (1..1<<20) */
	uint64_t window_ns;        /* how far behind the newest stamp of its
	                              sender an envelope may arrive (reorder) */
	uint64_t max_skew_ns;      /* 0: off; else a stamp further than this
	                              from now_real_ns is -ESTALE (also after a
	                              restart of the receiver, when it has no
	                              state yet) */
};
struct mrc_auth_replay;
int mrc_auth_replay_create(const struct mrc_auth_replay_cfg *cfg,
			   struct mrc_auth_replay **out);
void mrc_auth_replay_free(struct mrc_auth_replay *r);

struct mrc_auth_ctrl_msg {
	uint32_t src_host, dst_host;
	uint64_t stamp;
	const uint8_t *body;       /* points into the datagram */
	size_t blen;
};
/* Opens an envelope: checks its layout (-EBADMSG), its MAC (-EACCES), its
 * destination (-EXDEV), its sender (-ERANGE), then freshness: a stamp seen
 * before (-EALREADY), behind the window or older than every remembered one
 * (-ESTALE), or outside max_skew_ns (-ESTALE).  Only an envelope that
 * passes all of them changes the replay state.  The caller still checks
 * that src_host is the host its source address names. */
int mrc_auth_ctrl_open(const struct mrc_auth *a, struct mrc_auth_replay *r,
		       uint64_t now_real_ns, const void *pkt, size_t len,
		       struct mrc_auth_ctrl_msg *m);

/* ---- AEAD payload mode ------------------------------------------------ */
/* AES-256-GCM, only where the CPU has AES-NI and PCLMUL (libsodium's
 * requirement); elsewhere create says so (-ENOTSUP) rather than falling
 * back to something slow or different.  Nonce (12 bytes) = direction
 * (be32, from mrc_auth_conn) || seq (be64): seq counts the seals of this
 * state from 0, so a nonce never repeats under a key; keys are per
 * connection and direction, fresh with every connection's nonces.  Seq
 * travels with the packet; a retransmission is a new seal (new seq). */
int mrc_auth_aead_available(void);
struct mrc_auth_aead;
/* The tx (tx != 0) or rx state of a connection. */
int mrc_auth_aead_create(const struct mrc_auth_conn *c, int tx,
			 struct mrc_auth_aead **out, const char **why);
void mrc_auth_aead_free(struct mrc_auth_aead *s);
/* Encrypts buf[0..len) in place and authenticates it with ad[0..adlen);
 * *seq gets the sequence number to send.  -EOVERFLOW after 2^64-1 seals. */
int mrc_auth_aead_seal(struct mrc_auth_aead *s, const void *ad, size_t adlen,
		       void *buf, size_t len, uint64_t *seq,
		       uint8_t tag[MRC_AUTH_TAG_BYTES]);
/* Verifies and decrypts buf[0..len) in place; -EBADMSG (buf then holds
 * no plaintext) if the tag, the data, ad or seq was changed. */
int mrc_auth_aead_open(const struct mrc_auth_aead *s, const void *ad, size_t adlen,
		       void *buf, size_t len, uint64_t seq,
		       const uint8_t tag[MRC_AUTH_TAG_BYTES]);

/* The rx state's sliding replay window (IPsec-style, over seq): 0 when
 * seq was never accepted and is not MRC_AUTH_REPLAY_WINDOW or more behind
 * the newest accepted, else -EALREADY.  Commit only after a successful
 * open, so a forged seq never moves the window. */
#define MRC_AUTH_REPLAY_WINDOW 2048
int mrc_auth_aead_replay_check(const struct mrc_auth_aead *s, uint64_t seq);
void mrc_auth_aead_replay_commit(struct mrc_auth_aead *s, uint64_t seq);

/* Header tag of the AEAD mode: SipHash-2-4 (crypto_shorthash, a 64-bit
 * PRF) of m[0..len) under a connection's hkey: what a data header carries
 * so that a trimmed header (its payload and GCM tag cut by a switch) is
 * still authenticated.  verify: 0 or -EBADMSG (constant time). */
#define MRC_AUTH_HKEY_BYTES 16
#define MRC_AUTH_HTAG_BYTES 8
int mrc_auth_htag(const uint8_t key[MRC_AUTH_HKEY_BYTES], const void *m, size_t len,
		  uint8_t tag[MRC_AUTH_HTAG_BYTES]);
int mrc_auth_htag_verify(const uint8_t key[MRC_AUTH_HKEY_BYTES], const void *m, size_t len,
			 const uint8_t tag[MRC_AUTH_HTAG_BYTES]);

/* Host-pair MAC (keyed BLAKE2b-128, crypto_generichash) of m[0..len)
 * under a key of mrc_auth_pair_keys.  verify: 0 or -EBADMSG. */
int mrc_auth_pair_mac(const uint8_t key[MRC_AUTH_PAIR_KEY_BYTES], const void *m, size_t len,
		      uint8_t tag[MRC_AUTH_PAIR_TAG_BYTES]);
int mrc_auth_pair_verify(const uint8_t key[MRC_AUTH_PAIR_KEY_BYTES], const void *m,
			 size_t len, const uint8_t tag[MRC_AUTH_PAIR_TAG_BYTES]);

#endif
