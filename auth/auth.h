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
 *     with replay protection by per-boot epochs, receiver-issued cookies,
 *     a bounded clock skew and a per-sender stamp window.
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
 * rx for what self accepts from peer (mrce_peer_set_probe_tokens).  Never
 * 0.  The epoch-free form: mrc_auth_probe_tokens_epoch with both epochs 0
 * (mrcd uses the epoch form). */
int mrc_auth_probe_tokens(const struct mrc_auth *a, uint32_t self_host,
			  uint32_t peer_host, uint64_t *tx, uint64_t *rx);
/* The same, bound to both sides' boot epochs (the CTRL envelope's, which
 * each side learns from the other's authenticated CTRL): they change
 * whenever either side restarts, so a probe or reply recorded earlier
 * never passes the token check again (docs/wire.md, "Probe tokens").
 * peer_epoch 0: not learnt yet (the peer's probes are refused until it
 * is). */
int mrc_auth_probe_tokens_epoch(const struct mrc_auth *a, uint32_t self_host,
				uint32_t peer_host, uint64_t self_epoch, uint64_t peer_epoch,
				uint64_t *tx, uint64_t *rx);

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
/* version 2, opcode CTRL (48), flags (0, or MRC_AUTH_CTRL_F_CHALLENGE),
 * src_host, dst_host, body length, rsvd 0, stamp u64, src_epoch u64,
 * dst_tag u64, body, MAC (docs/wire.md, "CTRL envelope").
 *
 * Freshness across restarts: every daemon draws a random epoch at start
 * (mrc_auth_ctrl_tx_init).  A receiver acts on an envelope only when its
 * dst_tag is the cookie the receiver itself issued, in a sealed
 * CHALLENGE, to that sender's epoch; anything else is answered with a
 * CHALLENGE (-ENOTCONN from open, then mrc_auth_ctrl_challenge).  A
 * cookie is random and drawn after the sender's epoch was seen, so an
 * envelope recorded before either side restarted never carries it, and a
 * sender whose clock stepped back starts with an empty replay state under
 * its new cookie instead of being locked out.  Stamps (the sender's
 * CLOCK_REALTIME) must also lie within max_skew_ns of the receiver's. */
#define MRC_AUTH_CTRL_HDR      40
#define MRC_AUTH_CTRL_OVERHEAD (MRC_AUTH_CTRL_HDR + MRC_AUTH_MAC_BYTES)
#define MRC_AUTH_CTRL_MAX_BODY 1024
#define MRC_AUTH_CTRL_F_CHALLENGE 1   /* body: the 8-byte cookie (be64) */
#define MRC_AUTH_CTRL_SKEW_NS  30000000000ull   /* default max_skew_ns */

/* A sender's stamp state and boot epoch (per daemon, shared by all
 * destinations). */
struct mrc_auth_ctrl_tx {
	uint64_t last;             /* 0 at start */
	uint64_t epoch;            /* this boot's, random, never 0 */
};
/* last = 0, epoch = a fresh random nonzero value. */
int mrc_auth_ctrl_tx_init(struct mrc_auth_ctrl_tx *tx);
struct mrc_auth_replay;
/* Seals body[0..blen) for dst_host into out[0..cap), *outlen =
 * MRC_AUTH_CTRL_OVERHEAD + blen.  now_real_ns: CLOCK_REALTIME in ns; the
 * stamp is max(last + 1, now_real_ns), so it only grows within a boot.
 * dst_tag: the cookie r holds from dst_host's last CHALLENGE (0 when r is
 * NULL or none came yet: the receiver then challenges).  -EINVAL: tx has
 * no epoch; -EMSGSIZE: body too long or cap too small. */
int mrc_auth_ctrl_seal(const struct mrc_auth *a, struct mrc_auth_ctrl_tx *tx,
		       const struct mrc_auth_replay *r, uint64_t now_real_ns,
		       uint32_t src_host, uint32_t dst_host, const void *body, size_t blen,
		       uint8_t *out, size_t cap, size_t *outlen);

/* A receiver's replay state: per sender host, the session (its epoch and
 * the cookie we gave it, or one pending), the newest stamp accepted and
 * the MRC_AUTH_REPLAY_RING newest ones, and the cookie it gave us
 * (bounded memory: max_hosts of them, allocated at create). */
#define MRC_AUTH_REPLAY_RING 16
struct mrc_auth_replay_cfg {
	uint32_t self_host;        /* envelopes for another dst_host: -EXDEV */
	uint32_t max_hosts;        /* src_host >= this: -ERANGE (1..1<<20) */
	uint64_t window_ns;        /* how far behind the newest stamp of its
	                              sender an envelope may arrive (reorder) */
	uint64_t max_skew_ns;      /* a stamp further than this from
	                              now_real_ns is -ESTALE; 0 is refused by
	                              create (clocks must be within it:
	                              NTP/PTP, docs/security.md) */
	uint64_t epoch;            /* this boot's (the tx's): CHALLENGEs for
	                              another epoch are -ESTALE; never 0 */
};
int mrc_auth_replay_create(const struct mrc_auth_replay_cfg *cfg,
			   struct mrc_auth_replay **out);
void mrc_auth_replay_free(struct mrc_auth_replay *r);

struct mrc_auth_ctrl_msg {
	uint32_t src_host, dst_host;
	uint64_t stamp;
	uint64_t src_epoch;        /* the sender's boot epoch */
	int challenge;             /* a CHALLENGE: its cookie is now the
	                              dst_tag for src_host (no body) */
	const uint8_t *body;       /* points into the datagram */
	size_t blen;
};
/* Opens an envelope: checks its layout (-EBADMSG), its MAC (-EACCES), its
 * destination (-EXDEV), its sender (-ERANGE: out of range, or not
 * from_host, the host its source address names; UINT32_MAX: not
 * checked), its stamp against the clock (-ESTALE), then its session: a
 * dst_tag that is not the cookie issued to this sender epoch is
 * -ENOTCONN (m->src_host and m->src_epoch are set: answer with
 * mrc_auth_ctrl_challenge); within the session a stamp seen before
 * (-EALREADY), behind the window or older than every remembered one
 * (-ESTALE).  A CHALLENGE is taken when its dst_tag is our epoch.  Only
 * an envelope that passes all of them changes the replay state. */
int mrc_auth_ctrl_open(const struct mrc_auth *a, struct mrc_auth_replay *r,
		       uint64_t now_real_ns, uint32_t from_host, const void *pkt,
		       size_t len, struct mrc_auth_ctrl_msg *m);
/* Seals a CHALLENGE from src_host to dst_host's epoch dst_epoch (what
 * open's -ENOTCONN gave): a cookie drawn now, or the one still pending
 * for that same epoch (so a burst of envelopes gets one cookie). */
int mrc_auth_ctrl_challenge(const struct mrc_auth *a, struct mrc_auth_ctrl_tx *tx,
			    struct mrc_auth_replay *r, uint64_t now_real_ns,
			    uint32_t src_host, uint32_t dst_host, uint64_t dst_epoch,
			    uint8_t *out, size_t cap, size_t *outlen);

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
