/* The AEAD mode's packet framing (docs/wire.md, "ENC"; engine_wire.h,
 * "AEAD mode"): which bytes of which packet are sealed, tagged or MACed, where
 * the trailer goes, and what the engine gets back.  The crypto is not
 * here: every seal, open, tag and MAC is a call to the ops the caller
 * registers (auth/seal_ops.h provides them on libsodium), on the opaque
 * per-connection and per-host-pair contexts it installs, as ngtcp2 hands
 * its encrypt/decrypt to callbacks.  Allocates only when keys are
 * installed (control path), never per packet.
 *
 *   data (any plen)  ENC set; token field = header tag (SipHash-2-4 under
 *                    the connection's hkey, so a trimmed header stays
 *                    authenticated); payload = AES-256-GCM ciphertext with
 *                    the 68 header bytes as additional data; trailer seq,
 *                    tag, pcrc (MRCE_SEAL_TRAILER)
 *   ACK, NACK 1..4   token field 0; the same GCM trailer over an empty
 *                    plaintext (GMAC of the 76 header bytes)
 *   NOQP, PROBE,     the packet as the engine made it (opaque) followed by
 *   PROBE_REPLY      a host-pair MAC (MRCE_SEAL_PTAG): the sender
 *                    of these has no connection key
 *
 * GCM-sealed packets pass the rx key's replay window (seq), so a recorded
 * packet never opens twice, PSN wrap or not.  The receiver restores what
 * the engine expects (tokens, ENC clear, CRCs) after the checks.  A packet
 * the sender cannot seal (no key for its QP or peer) is dropped and
 * counted, never sent in clear. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/be.h"
#include "transport/crc32c.h"
#include "transport/engine.h"

#define NQP      65536u             /* local QPs by qpn & 0xffff, as the engine */
#define TX_BITS  17                 /* (peer, rqpn) map: twice NQP slots */
#define TX_CAP   (1u << TX_BITS)
#define EMPTY    UINT64_MAX         /* peer ids never reach 0xffffffff */
#define MAXBODY  (MRC_MAX_PAYLOAD + MRCE_SEAL_TRAILER)
#define PTAG     MRCE_SEAL_PTAG
#define ACK_HCRC 72                 /* offset of an ACK header's hcrc */
#define D_TOKEN  48                 /* offset of a data header's token */
#define A_TOKEN  32                 /* offset of an ACK header's token */

struct enc_qp {
	uint32_t qpn, peer, rqpn;
	uint8_t has_ts;
	uint64_t tx_token, rx_token;
	uint64_t first_ts, last_ts;     /* ts range of the data it sealed */
	void *keys;                     /* the ops' context: AEAD and hkeys */
};

struct enc_peer {
	void *keys;                     /* the ops' host-pair context; NULL: none */
};

struct tx_ent {
	uint64_t key;                   /* peer << 32 | rqpn, or EMPTY */
	uint32_t slot;                  /* index into qp[] */
};

struct mrce_seal {
	const struct mrce_crypto_ops *ops;
	struct enc_qp **qp;             /* [NQP]; NULL: no keys */
	struct tx_ent *tx;              /* [TX_CAP], linear probing */
	struct enc_peer *peer;          /* [npeer] */
	uint32_t npeer;
	uint8_t *buf;                   /* [MRCE_SEAL_SLOTS][MAXBODY] */
	struct mrce_seal_stats st;
};


/* hcrc of a data header as docs/wire.md defines it: TRIMMED taken as 0. */
static uint32_t data_hcrc(const uint8_t *p)
{
	uint8_t first[4] = { p[0], p[1], p[2], (uint8_t)(p[3] & ~MRC_F_TRIMMED) };
	return mrce_crc32c(mrce_crc32c(0, first, 4), p + 4, MRC_DATA_HDR_LEN - 8);
}

/* What a data header's tag covers: its first 64 bytes (hcrc is derived)
 * with TRIMMED clear (a switch sets it) and the token field, which the
 * tag takes the place of, zero. */
static int htag_of(const struct mrce_seal *x, const struct enc_qp *q, const uint8_t *h,
		   uint8_t tag[MRCE_SEAL_HTAG], int verify)
{
	uint8_t m[MRC_DATA_HDR_LEN - 4];
	memcpy(m, h, sizeof m);
	m[3] &= (uint8_t)~MRC_F_TRIMMED;
	memset(m + D_TOKEN, 0, 8);
	return x->ops->htag(q->keys, verify, m, sizeof m, tag);
}

static uint32_t tx_hash(uint64_t key)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> (64 - TX_BITS));
}

static uint32_t tx_find(const struct mrce_seal *x, uint64_t key)
{
	for (uint32_t i = tx_hash(key);; i = (i + 1) & (TX_CAP - 1)) {
		if (x->tx[i].key == key || x->tx[i].key == EMPTY)
			return i;
	}
}

/* The keyed QP that sends to (peer, rqpn), or NULL. */
static struct enc_qp *qp_to(const struct mrce_seal *x, uint32_t peer, uint32_t rqpn)
{
	uint32_t i = tx_find(x, (uint64_t)peer << 32 | rqpn);
	return x->tx[i].key == EMPTY ? NULL : x->qp[x->tx[i].slot];
}

/* The keyed local QP qpn (the whole number: a slot reused by a later QP
 * does not answer for an earlier one), or NULL. */
static struct enc_qp *qp_at(const struct mrce_seal *x, uint32_t qpn)
{
	struct enc_qp *q = x->qp[qpn & (NQP - 1)];
	return q && q->qpn == qpn ? q : NULL;
}

static const struct enc_peer *peer_at(const struct mrce_seal *x, uint32_t peer)
{
	return peer < x->npeer && x->peer[peer].keys ? &x->peer[peer] : NULL;
}

/* Backward-shift deletion keeps probe chains whole without tombstones. */
static void tx_del(struct mrce_seal *x, uint64_t key)
{
	uint32_t i = tx_find(x, key);
	if (x->tx[i].key == EMPTY)
		return;
	for (;;) {
		x->tx[i].key = EMPTY;
		uint32_t j = i;
		for (;;) {
			j = (j + 1) & (TX_CAP - 1);
			if (x->tx[j].key == EMPTY)
				return;
			uint32_t k = tx_hash(x->tx[j].key);
			/* Entry j may move to i when its home k is not in (i, j]. */
			if (i <= j ? (k <= i || k > j) : (k <= i && k > j))
				break;
		}
		x->tx[i] = x->tx[j];
		i = j;
	}
}

int mrce_seal_create(const struct mrce_crypto_ops *ops, struct mrce_seal **out)
{
	if (!ops || !ops->seal || !ops->open || !ops->htag || !ops->pair_mac ||
	    !ops->pair_verify || !ops->keys_free || !out)
		return -EINVAL;
	struct mrce_seal *x = calloc(1, sizeof(*x));
	if (x) {
		x->ops = ops;
		x->qp = calloc(NQP, sizeof(*x->qp));
		x->tx = malloc(sizeof(*x->tx) * TX_CAP);
		x->buf = malloc((size_t)MRCE_SEAL_SLOTS * MAXBODY);
	}
	if (!x || !x->qp || !x->tx || !x->buf) {
		mrce_seal_free(x);
		return -ENOMEM;
	}
	memset(x->tx, 0xff, sizeof(*x->tx) * TX_CAP);
	*out = x;
	return 0;
}

/* Empties slot s (by index, never by a qpn read from it: an empty slot's
 * qpn is 0, which is slot 0's, so clearing "its qpn" would wipe slot 0). */
static void slot_clear(struct mrce_seal *x, uint32_t s)
{
	struct enc_qp *q = x->qp[s];
	if (!q)
		return;
	tx_del(x, (uint64_t)q->peer << 32 | q->rqpn);
	x->ops->keys_free(q->keys);
	memset(q, 0, sizeof(*q));
	free(q);
	x->qp[s] = NULL;
}

void mrce_seal_qp_clear(struct mrce_seal *x, uint32_t qpn)
{
	if (x && qp_at(x, qpn))
		slot_clear(x, qpn & (NQP - 1));
}

void mrce_seal_free(struct mrce_seal *x)
{
	if (!x)
		return;
	for (uint32_t i = 0; x->qp && i < NQP; i++)
		slot_clear(x, i);
	for (uint32_t i = 0; i < x->npeer; i++)
		mrce_seal_peer_clear(x, i);
	free(x->peer);
	free(x->qp);
	free(x->tx);
	free(x->buf);
	free(x);
}

int mrce_seal_qp_set(struct mrce_seal *x, uint32_t qpn, uint32_t peer, uint32_t rqpn,
		     uint64_t tx_token, uint64_t rx_token, void *keys)
{
	struct enc_qp *n = x && peer != UINT32_MAX && keys ? calloc(1, sizeof(*n)) : NULL;
	if (!n) {
		if (x && keys)
			x->ops->keys_free(keys);
		return x && peer != UINT32_MAX && keys ? -ENOMEM : -EINVAL;
	}
	*n = (struct enc_qp){ .qpn = qpn, .peer = peer, .rqpn = rqpn,
			      .tx_token = tx_token, .rx_token = rx_token, .keys = keys };
	/* A stale setting of this slot (a QP destroyed without clear) or of
	 * this remote QP (a connection set up again) goes first. */
	uint64_t key = (uint64_t)peer << 32 | rqpn;
	slot_clear(x, qpn & (NQP - 1));
	uint32_t i = tx_find(x, key);
	if (x->tx[i].key == key)
		slot_clear(x, x->tx[i].slot);
	i = tx_find(x, key);
	x->tx[i] = (struct tx_ent){ key, qpn & (NQP - 1) };
	x->qp[qpn & (NQP - 1)] = n;
	return 0;
}

int mrce_seal_peer_set(struct mrce_seal *x, uint32_t peer, void *keys)
{
	if (!x || !keys || peer >= (1u << 20)) {
		if (x && keys)
			x->ops->keys_free(keys);
		return -EINVAL;
	}
	if (peer >= x->npeer) {
		uint32_t n = x->npeer ? x->npeer : 16;
		while (n <= peer)
			n *= 2;
		struct enc_peer *p = calloc(n, sizeof(*p));
		if (!p) {
			x->ops->keys_free(keys);
			return -ENOMEM;
		}
		if (x->peer)
			memcpy(p, x->peer, sizeof(*p) * x->npeer);
		free(x->peer);
		x->peer = p;
		x->npeer = n;
	}
	mrce_seal_peer_clear(x, peer);
	x->peer[peer].keys = keys;
	return 0;
}

void mrce_seal_peer_clear(struct mrce_seal *x, uint32_t peer)
{
	if (x && peer < x->npeer && x->peer[peer].keys) {
		x->ops->keys_free(x->peer[peer].keys);
		x->peer[peer].keys = NULL;
	}
}

/* GCM-seals c[0..plen) in place with ad[0..adlen) and writes the trailer
 * (seq, tag, pcrc over c, seq, tag) at c + plen. */
static int gcm_seal(struct mrce_seal *x, struct enc_qp *q, const uint8_t *ad, size_t adlen,
		    uint8_t *c, size_t plen)
{
	uint8_t *t = c + plen;
	uint64_t seq;
	int rc = x->ops->seal(q->keys, ad, adlen, c, plen, &seq, t + 8);
	if (rc) {
		x->st.tx_fail++;
		return rc;
	}
	st64(t, seq);
	st32(t + 24, mrce_crc32c(0, c, plen + 24));
	return 0;
}

static int seal_data(struct mrce_seal *x, struct mrce_tx_pkt *pk, uint8_t *c,
		     struct iovec *body)
{
	uint8_t *h = pk->hdr;
	struct enc_qp *q = qp_to(x, pk->peer, ld32(h + 4));
	if (!q) {
		x->st.tx_nokey++;          /* fail closed: never in clear */
		return -ENOKEY;
	}
	uint64_t ts = ld64(h + 32);
	if (!q->has_ts || ts < q->first_ts)
		q->first_ts = ts;
	if (!q->has_ts || ts > q->last_ts)
		q->last_ts = ts;
	q->has_ts = 1;
	h[3] |= MRC_F_ENC;                 /* low byte of the flags */
	if (htag_of(x, q, h, h + D_TOKEN, 0)) {
		x->st.tx_fail++;
		return -EIO;
	}
	st32(h + 64, data_hcrc(h));
	if (pk->plen)
		memcpy(c, pk->payload, pk->plen);  /* registered memory stays untouched */
	int rc = gcm_seal(x, q, h, MRC_DATA_HDR_LEN, c, pk->plen);
	if (rc)
		return rc;
	*body = (struct iovec){ c, (size_t)pk->plen + MRCE_SEAL_TRAILER };
	return 1;
}

/* A host-pair MAC over the packet as the engine made it (opaque bytes:
 * the probe layout is the engine's business), appended. */
static int seal_pair(struct mrce_seal *x, struct mrce_tx_pkt *pk, uint8_t *c,
		     struct iovec *body)
{
	const struct enc_peer *p = peer_at(x, pk->peer);
	if (!p) {
		x->st.tx_nokey++;
		return -ENOKEY;
	}
	if (pk->plen) {                    /* none of these has a payload */
		x->st.tx_fail++;
		return -EPROTO;
	}
	if (x->ops->pair_mac(p->keys, pk->hdr, pk->hdr_len, c)) {
		x->st.tx_fail++;
		return -EIO;
	}
	*body = (struct iovec){ c, PTAG };
	return 1;
}

int mrce_seal_tx(struct mrce_seal *x, struct mrce_tx_pkt *pk, unsigned slot,
		  struct iovec *body)
{
	uint8_t *h = pk->hdr, *c = x->buf + (size_t)(slot % MRCE_SEAL_SLOTS) * MAXBODY;
	int rc;
	if (slot >= MRCE_SEAL_SLOTS || pk->hdr_len < 2) {
		rc = -EINVAL;
		x->st.tx_fail++;
	} else if (mrc_op_is_data(h[1]) && pk->hdr_len == MRC_DATA_HDR_LEN &&
		   pk->plen <= MRC_MAX_PAYLOAD) {
		rc = seal_data(x, pk, c, body);
	} else if (h[1] == MRC_OP_ACK && pk->hdr_len == MRC_ACK_HDR_LEN && !pk->plen &&
		   h[14] != MRC_NACK_NOQP) {
		struct enc_qp *q = qp_to(x, pk->peer, ld32(h + 4));
		if (!q) {
			x->st.tx_nokey++;
			return -ENOKEY;
		}
		/* The token is the tag's job now, and stays off the wire. */
		memset(h + A_TOKEN, 0, 8);
		st32(h + ACK_HCRC, mrce_crc32c(0, h, ACK_HCRC));
		rc = gcm_seal(x, q, h, MRC_ACK_HDR_LEN, c, 0);
		if (!rc) {
			*body = (struct iovec){ c, MRCE_SEAL_TRAILER };
			rc = 1;
		}
	} else if (h[1] == MRC_OP_ACK || h[1] == MRC_OP_PROBE || h[1] == MRC_OP_PROBE_REPLY) {
		rc = seal_pair(x, pk, c, body);
	} else {
		x->st.tx_fail++;           /* nothing the mode knows: not sent */
		rc = -EPROTO;
	}
	x->st.tx_sealed += rc == 1;
	return rc;
}

/* Data for a QP without keys here: the engine answers NOQP when it has no
 * such QP, so it gets the header alone, stripped to what cannot act
 * (trimmed or zero-length, no piggybacked ACK), and its token field (a
 * header tag on the wire, never a token) fails any QP the engine has. */
static int open_unkeyed(struct mrce_seal *x, uint8_t *p, size_t *lenp, uint16_t plen)
{
	x->st.rx_nokey++;
	p[2] = 0;
	p[3] &= (uint8_t)(MRC_F_FIRST | MRC_F_LAST | MRC_F_RETX);
	if (plen)
		p[3] |= MRC_F_TRIMMED;
	memset(p + 56, 0, 8);
	st32(p + 64, data_hcrc(p));
	*lenp = MRC_DATA_HDR_LEN;
	return 0;
}

/* Checks a GCM trailer's CRC and seq, then opens c[0..plen). */
static int gcm_open(struct mrce_seal *x, struct enc_qp *q, const uint8_t *ad, size_t adlen,
		    uint8_t *c, size_t plen)
{
	const uint8_t *t = c + plen;
	if (mrce_crc32c(0, c, plen + 24) != ld32(t + 24)) {
		x->st.rx_bad_pcrc++;
		return -EBADMSG;
	}
	/* The ops check the replay window, open, then commit: a forged seq
	 * never moves the window. */
	int rc = x->ops->open(q->keys, ad, adlen, c, plen, ld64(t), t + 8);
	if (rc == -EALREADY) {
		x->st.rx_replay++;
		return -EALREADY;
	}
	if (rc) {
		x->st.rx_bad_auth++;
		return -EACCES;
	}
	return 0;
}

static int open_data(struct mrce_seal *x, uint32_t peer, uint8_t *p, size_t *lenp)
{
	size_t len = *lenp;
	/* A header that fails its CRC goes on unchanged: the engine drops
	 * and counts it (bad_hcrc) like any other. */
	if (len < MRC_DATA_HDR_LEN || data_hcrc(p) != ld32(p + 64))
		return 0;
	uint16_t flags = ld16(p + 2), plen = ld16(p + 14);
	struct enc_qp *q = qp_at(x, ld32(p + 4));
	if (!q)
		return open_unkeyed(x, p, lenp, plen);
	if (q->peer != peer) {
		x->st.rx_nokey++;
		return -ENOKEY;
	}
	if (!(flags & MRC_F_ENC)) {
		x->st.rx_missing++;
		return -EPERM;
	}
	if (flags & MRC_F_TRIMMED) {
		/* Payload and GCM tag are gone; the header tag is what is left. */
		if (len != MRC_DATA_HDR_LEN || !plen) {
			x->st.rx_bad_len++;
			return -EBADMSG;
		}
		if (htag_of(x, q, p, p + D_TOKEN, 1)) {
			x->st.rx_bad_auth++;
			return -EACCES;
		}
		/* A header tag has no seq, so a trimmed header could be a
		 * replay: its piggybacked ACK is not taken (a replay after a
		 * PSN wrap could acknowledge data that never arrived); what
		 * is left is a NACK that asks for a resend. */
		p[3] &= (uint8_t)~(MRC_F_ENC | MRC_F_PB_ACK | MRC_F_PB_ECN);
		memset(p + 56, 0, 8);
		st64(p + D_TOKEN, q->rx_token);
		st32(p + 64, data_hcrc(p));
		x->st.rx_trimmed++;
		return 0;
	}
	if (len != MRC_DATA_HDR_LEN + (size_t)plen + MRCE_SEAL_TRAILER) {
		x->st.rx_bad_len++;
		return -EBADMSG;
	}
	uint8_t *c = p + MRC_DATA_HDR_LEN;
	int rc = gcm_open(x, q, p, MRC_DATA_HDR_LEN, c, plen);
	if (rc)
		return rc;
	/* What the engine would have received without the mode. */
	p[3] &= (uint8_t)~MRC_F_ENC;
	st64(p + D_TOKEN, q->rx_token);
	st32(p + 64, data_hcrc(p));
	if (plen)
		mrce_wire_put_trailer(c + plen, c, plen);
	*lenp = MRC_DATA_HDR_LEN + (size_t)plen + (plen ? MRC_TRAILER_LEN : 0);
	x->st.rx_opened++;
	return 0;
}

static int open_ack(struct mrce_seal *x, uint32_t peer, uint8_t *p, size_t *lenp)
{
	size_t len = *lenp;
	if (len < MRC_ACK_HDR_LEN || mrce_crc32c(0, p, ACK_HCRC) != ld32(p + ACK_HCRC))
		return 0;                  /* the engine drops it (length, bad_hcrc) */
	uint32_t dqpn = ld32(p + 4);
	if (p[14] == MRC_NACK_NOQP) {
		const struct enc_peer *pp = peer_at(x, peer);
		if (!pp) {
			x->st.rx_nokey++;
			return -ENOKEY;
		}
		if (len != MRC_ACK_HDR_LEN + PTAG) {
			x->st.rx_missing++;
			return -EPERM;
		}
		if (x->ops->pair_verify(pp->keys, p, MRC_ACK_HDR_LEN, p + MRC_ACK_HDR_LEN)) {
			x->st.rx_bad_auth++;
			return -EACCES;
		}
		/* From the host, but about which packet?  It must answer one
		 * that this QP sealed (ts_echo in the range of their ts): a
		 * NOQP recorded for an earlier connection with the same QP
		 * numbers, or answering a forged ts, is refused. */
		struct enc_qp *q = qp_to(x, peer, dqpn);
		uint64_t te = ld64(p + 24);
		if (!q) {
			x->st.rx_nokey++;
			return -ENOKEY;
		}
		if (!q->has_ts || te < q->first_ts || te > q->last_ts) {
			x->st.rx_stale++;
			return -ESTALE;
		}
		/* The engine checks the echo against the QP's tx token; the
		 * wire echoed a header tag, so the token goes in its place. */
		st64(p + A_TOKEN, q->tx_token);
		st32(p + ACK_HCRC, mrce_crc32c(0, p, ACK_HCRC));
		*lenp = MRC_ACK_HDR_LEN;
		x->st.rx_opened++;
		return 0;
	}
	struct enc_qp *q = qp_at(x, dqpn);
	if (!q || q->peer != peer) {
		x->st.rx_nokey++;
		return -ENOKEY;
	}
	if (len != MRC_ACK_HDR_LEN + MRCE_SEAL_TRAILER) {
		if (len == MRC_ACK_HDR_LEN)
			x->st.rx_missing++;
		else
			x->st.rx_bad_len++;
		return -EBADMSG;
	}
	int rc = gcm_open(x, q, p, MRC_ACK_HDR_LEN, p + MRC_ACK_HDR_LEN, 0);
	if (rc)
		return rc;
	st64(p + A_TOKEN, q->rx_token);
	st32(p + ACK_HCRC, mrce_crc32c(0, p, ACK_HCRC));
	*lenp = MRC_ACK_HDR_LEN;
	x->st.rx_opened++;
	return 0;
}

static int open_pair(struct mrce_seal *x, uint32_t peer, uint8_t *p, size_t *lenp)
{
	const struct enc_peer *pp = peer_at(x, peer);
	if (!pp) {
		x->st.rx_nokey++;
		return -ENOKEY;
	}
	if (*lenp < PTAG + 4) {
		x->st.rx_bad_len++;
		return -EBADMSG;
	}
	size_t n = *lenp - PTAG;
	if (x->ops->pair_verify(pp->keys, p, n, p + n)) {
		x->st.rx_bad_auth++;
		return -EACCES;
	}
	*lenp = n;
	x->st.rx_opened++;
	return 0;
}

int mrce_seal_rx(struct mrce_seal *x, uint32_t peer, uint8_t *p, size_t *lenp)
{
	/* Not an MRC packet of this version: the engine drops it (its
	 * counters say why) and nothing in it can act. */
	if (*lenp < 4 || p[0] != MRC_WIRE_VERSION)
		return 0;
	if (mrc_op_is_data(p[1]))
		return open_data(x, peer, p, lenp);
	if (p[1] == MRC_OP_ACK)
		return open_ack(x, peer, p, lenp);
	if (p[1] == MRC_OP_PROBE || p[1] == MRC_OP_PROBE_REPLY)
		return open_pair(x, peer, p, lenp);
	return 0;                          /* bad_opcode in the engine */
}

void mrce_seal_get_stats(const struct mrce_seal *x, struct mrce_seal_stats *st)
{
	*st = x->st;
}
