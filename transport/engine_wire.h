/* The engine's interface, continued (included by engine.h, which is the
 * one header to include): what the daemon, auth/ and the tools need of
 * the wire format, as typed calls, so that no file outside transport/
 * lays out or parses a header (docs/design.md, "The engine", and
 * scripts/check-layers.sh rule 4).  Implemented by transport/ctrl.c
 * (CTRL), seal.c (the AEAD mode) and pkt.c (single packets). */
#ifndef MRC_TRANSPORT_ENGINE_WIRE_H
#define MRC_TRANSPORT_ENGINE_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* ---- CTRL datagrams (daemon to daemon) -------------------------------- */
/* The one codec of opcode CTRL (transport/ctrl.c, docs/wire.md): the
 * receiver takes these before mrce_rx; auth/ MACs the envelope, the
 * daemon acts on the body.  Nonzero when buf[0..len) is one (the opcode
 * only: the decoders below check the rest). */
int mrce_is_ctrl(const void *buf, size_t len);

/* Envelope: a fixed header, body[blen], then a MAC of both. */
#define MRCE_CTRL_ENV_HDR      40
#define MRCE_CTRL_ENV_MAC      16
#define MRCE_CTRL_ENV_MAX_BODY 1024
#define MRCE_CTRL_F_CHALLENGE  1u  /* body: the 8-byte cookie (be64) */
struct mrce_ctrl_env {
	uint16_t flags;            /* 0 or MRCE_CTRL_F_CHALLENGE */
	uint16_t blen;
	uint32_t src_host, dst_host;
	uint64_t stamp, src_epoch, dst_tag;
};
/* Writes the header (version and opcode included). */
void mrce_ctrl_env_put(uint8_t out[MRCE_CTRL_ENV_HDR], const struct mrce_ctrl_env *h);
/* Reads the header of the datagram p[0..len): -EBADMSG for another
 * version or opcode, unknown flags, nonzero reserved bytes, blen over
 * the maximum or len other than header + blen + MAC. */
int mrce_ctrl_env_get(const uint8_t *p, size_t len, struct mrce_ctrl_env *h);

/* Body, v2: 56 bytes, then (REQ, REP, PLANES, optional) an endpoint
 * block of 4 + 4n bytes, sent only by a datapath with endpoints. */
#define MRCE_CTRL_BODY     56
#define MRCE_CTRL_NONCE    16
#define MRCE_CTRL_MAX_EPS  16      /* MRC_DP_MAX_PLANES */
#define MRCE_CTRL_BODY_MAX (MRCE_CTRL_BODY + 4 + 4 * MRCE_CTRL_MAX_EPS)
enum mrce_ctrl_type {
	MRCE_CTRL_REQ = 1,         /* connect to service sid: my QP is qpn/psn */
	MRCE_CTRL_REP = 2,         /* accepted: my QP is qpn/psn */
	MRCE_CTRL_REJ = 3,         /* refused: err */
	MRCE_CTRL_PLANES = 4,      /* arg: bitmask of my planes that are down */
	MRCE_CTRL_HEALTH = 5,      /* path outcomes: its own body, below */
};
struct mrce_ctrl {
	uint8_t type;
	uint64_t id;
	uint32_t sid, qpn, psn, arg;
	int32_t err;
	/* REQ/REP only (0 in the others): the sender's connection nonce, and
	 * the window and MTU it can take (the smaller of both sides wins). */
	uint8_t nonce[MRCE_CTRL_NONCE];
	uint32_t window, mtu;
	/* REQ/REP/PLANES, optional: the sender's endpoint per plane (neps 0:
	 * no block, the 56-byte message of a datapath without endpoints). */
	uint32_t neps;
	uint32_t ep[MRCE_CTRL_MAX_EPS];
};
/* Writes the body (out: MRCE_CTRL_BODY bytes, MRCE_CTRL_BODY_MAX when
 * m->neps > 0) and returns its length. */
size_t mrce_ctrl_encode(uint8_t *out, const struct mrce_ctrl *m);
/* 0, or -EBADMSG for a wrong length or a field out of range (nonzero
 * reserved bytes, unknown type, err outside -4095..0; in REQ/REP an
 * all-zero nonce, a window that is not a power of two in 4..256 or an MTU
 * outside 64..9000; elsewhere nonce, window or MTU not 0; an endpoint
 * block on REJ, with n outside 1..16, nonzero reserved bytes, a length
 * other than 60 + 4n, or an endpoint outside 2..2^24-1). */
int mrce_ctrl_decode(const uint8_t *buf, size_t len, struct mrce_ctrl *m);

/* HEALTH body (docs/wire.md "HEALTH", docs/health.md): the sender's own
 * path outcomes, never answered.  8-byte head (type 5, 3 reserved, n u16,
 * 2 reserved), then n records of 12 bytes: dst host u32, ev u16, ok u8
 * (0 failed, 1 worked), reserved u8, age in us u32 (how old when sent).
 * The sender is the envelope's authenticated src_host: no record names
 * another source. */
#define MRCE_CTRL_HEALTH_MAX 64
#define MRCE_CTRL_HEALTH_LEN(n) (8 + 12 * (size_t)(n))
struct mrce_ctrl_health {
	uint32_t n;
	struct mrce_ctrl_health_obs {
		uint32_t dst;
		uint16_t ev;
		uint8_t ok;
		uint32_t age_us;
	} obs[MRCE_CTRL_HEALTH_MAX];
};
/* Writes MRCE_CTRL_HEALTH_LEN(n) bytes (n capped at the maximum) and
 * returns the length. */
size_t mrce_ctrl_health_encode(uint8_t *out, const struct mrce_ctrl_health *m);
/* 0, or -EBADMSG: another type, nonzero reserved bytes, n outside
 * 1..MRCE_CTRL_HEALTH_MAX, a length other than MRCE_CTRL_HEALTH_LEN(n),
 * ok other than 0 or 1. */
int mrce_ctrl_health_decode(const uint8_t *buf, size_t len, struct mrce_ctrl_health *m);

/* ---- AEAD mode (docs/wire.md, "ENC") ---------------------------------- */
/* The framing of the daemon's payload encryption, between mrce_tx and the
 * datapath and between the datapath and mrce_rx (transport/seal.c): data
 * is AEAD-sealed with its header as additional data and a header tag in
 * the token field (so a trimmed header stays authenticated); ACKs carry
 * a tag over their header; NOQP, PROBE and PROBE_REPLY a host-pair MAC.
 * The crypto is the caller's, handed in as callbacks (as ngtcp2 takes its
 * encrypt/decrypt): auth/seal_ops.h provides them on libsodium.  The engine
 * keeps only the opaque key contexts the caller installs. */
#define MRCE_SEAL_TRAILER 28      /* seq u64, tag[16], pcrc u32 */
#define MRCE_SEAL_SLOTS   64      /* sealed packets in hand at once */
#define MRCE_SEAL_TAG     16      /* AEAD tag */
#define MRCE_SEAL_HTAG    8       /* data header tag (in the token field) */
#define MRCE_SEAL_PTAG    16      /* host-pair MAC */
struct mrce_crypto_ops {
	/* Per connection (keys from mrce_seal_qp_set): AEAD-seal buf[0..len)
	 * in place under the tx key with ad[0..adlen); *seq: the sequence
	 * number the nonce used, sent along. */
	int (*seal)(void *keys, const uint8_t *ad, size_t adlen, uint8_t *buf, size_t len,
		    uint64_t *seq, uint8_t tag[MRCE_SEAL_TAG]);
	/* The rx side: -EALREADY when seq fails the replay window, another
	 * error when the tag does not verify; on success the window takes
	 * seq (never before: a forgery does not move it). */
	int (*open)(void *keys, const uint8_t *ad, size_t adlen, uint8_t *buf, size_t len,
		    uint64_t seq, const uint8_t tag[MRCE_SEAL_TAG]);
	/* Header tag of m[0..len): written under the tx hkey, or (verify)
	 * checked under the rx hkey (0 or an error). */
	int (*htag)(void *keys, int verify, const uint8_t *m, size_t len,
		    uint8_t tag[MRCE_SEAL_HTAG]);
	/* Per host pair (keys from mrce_seal_peer_set): MAC under the tx
	 * key, verified under the rx key (0 or an error). */
	int (*pair_mac)(void *keys, const uint8_t *m, size_t len, uint8_t tag[MRCE_SEAL_PTAG]);
	int (*pair_verify)(void *keys, const uint8_t *m, size_t len,
			   const uint8_t tag[MRCE_SEAL_PTAG]);
	void (*keys_free)(void *keys);   /* either kind, when replaced or cleared */
};
struct mrce_seal_stats {
	uint64_t tx_sealed, tx_fail;
	uint64_t tx_nokey;      /* no key for the packet's QP or peer: dropped */
	uint64_t rx_opened, rx_trimmed;
	uint64_t rx_bad_auth;   /* a tag did not verify: forged or altered */
	uint64_t rx_bad_pcrc;   /* outer CRC failed: corrupted on the way */
	uint64_t rx_bad_len;    /* sealed packet of the wrong length */
	uint64_t rx_missing;    /* a packet of a keyed QP or peer without its seal */
	uint64_t rx_nokey;      /* no key for the QP or peer it names */
	uint64_t rx_replay;     /* seq seen before or behind the replay window */
	uint64_t rx_stale;      /* NOQP answering no packet this QP sent */
};
struct mrce_seal;
int mrce_seal_create(const struct mrce_crypto_ops *ops, struct mrce_seal **out);
void mrce_seal_free(struct mrce_seal *x);
/* Local QP qpn, connected to QP rqpn of engine peer `peer`, seals with
 * keys (taken over: freed by ops->keys_free, also on failure) and its
 * tokens are restored for the engine on what it receives.  Replaces an
 * earlier setting of the same qpn or (peer, rqpn). */
int mrce_seal_qp_set(struct mrce_seal *x, uint32_t qpn, uint32_t peer, uint32_t rqpn,
		     uint64_t tx_token, uint64_t rx_token, void *keys);
void mrce_seal_qp_clear(struct mrce_seal *x, uint32_t qpn);
/* Host-pair keys for engine peer `peer` (< 2^20), taken over likewise. */
int mrce_seal_peer_set(struct mrce_seal *x, uint32_t peer, void *keys);
void mrce_seal_peer_clear(struct mrce_seal *x, uint32_t peer);
/* A packet from mrce_tx: 1 when sealed (pk->hdr rewritten, *body = what
 * follows the header, in slot `slot` < MRCE_SEAL_SLOTS, valid until that
 * slot is sealed again), < 0 to drop it (counted).  Never 0: nothing
 * goes out unsealed. */
int mrce_seal_tx(struct mrce_seal *x, struct mrce_tx_pkt *pk, unsigned slot,
		 struct iovec *body);
/* A datagram received from engine peer `peer`, before mrce_rx: 0 to hand
 * buf[0..*len) to the engine (checked and restored in place), < 0 to drop
 * it (counted). */
int mrce_seal_rx(struct mrce_seal *x, uint32_t peer, uint8_t *buf, size_t *len);
void mrce_seal_get_stats(const struct mrce_seal *x, struct mrce_seal_stats *st);

/* ---- single packets ------------------------------------------------- */
/* Single packets from fields, framed as the engine frames them (CRCs
 * included), and their validating parse: for the tools that play a peer
 * (tools/fabric/probe, tools/forge), so they never lay out a header.
 * WRITE, WRITE_IMM: one whole message of plen payload bytes (FIRST|LAST,
 * mlen = plen); ACK, NOQP: cum_psn = trig_psn = sack_base = psn.  raw:
 * with an opcode no MRC receiver or trimmer takes (127), which
 * mrce_pkt_parse's raw undoes.  build returns the length, at most
 * MRCE_PKT_MAX(plen), or 0 for a bad kind or plen. */
enum mrce_pkt_kind { MRCE_PKT_WRITE = 1, MRCE_PKT_WRITE_IMM, MRCE_PKT_ACK, MRCE_PKT_NOQP };
struct mrce_pkt_desc {
	uint8_t kind;              /* enum mrce_pkt_kind */
	uint8_t raw;
	uint16_t ev, plen;
	uint32_t dqpn, psn, msn, rkey, imm;
	uint64_t token;
	const void *payload;       /* plen bytes */
};
#define MRCE_PKT_MAX(plen) (MRC_HDR_MAX + (size_t)(plen) + MRC_TRAILER_LEN)
size_t mrce_pkt_build(uint8_t *buf, const struct mrce_pkt_desc *d);
struct mrce_pkt_info {
	uint8_t kind;              /* enum mrce_pkt_kind; 0: another opcode */
	uint8_t trimmed;           /* a data packet whose payload a switch cut */
	uint16_t ev, plen;
	uint32_t dqpn;
};
/* 0 and *info when buf[0..len) passes every check of the engine's
 * decoder, else -EBADMSG.  raw: its opcode is set back first (in place). */
int mrce_pkt_parse(uint8_t *buf, size_t len, int raw, struct mrce_pkt_info *info);

#endif
